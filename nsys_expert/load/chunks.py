"""Frames in one chunk per column, made one column at a time.

A big table arrives in pieces (the CSV reader's ~1,200 chunks at ten million rows, the SQLite reader's
500,000-row pieces). Left so, every later operation that lines columns up (a filter, an expression
over two columns, a column added by the facts) rechunks the whole frame first, on each call: two
copies of every column at once (+800 MB at ten million CSV rows; +290 MB per fact group at five
million SQLite kernels). Moved here one column at a time, each old column freed once copied.
"""
from __future__ import annotations

import polars as pl

MIN_ROWS = 100_000   # below this a copy costs more than the chunks do


def one_chunk(frame: pl.DataFrame) -> pl.DataFrame:
    cols = frame.get_columns()
    del frame
    out = []
    while cols:
        c = cols.pop(0)
        out.append(c.rechunk() if c.len() >= MIN_ROWS and c.n_chunks() > 1 else c)
        del c
    return pl.DataFrame(out)
