"""Big frames laid out for the facts: one chunk per column, rows in start order.

A big table arrives in pieces (the CSV reader's ~1,200 chunks at ten million rows, the SQLite reader's
500,000-row pieces). Left so, every later operation that lines columns up (a filter, an expression
over two columns, a column added by the facts) rechunks the whole frame first, on each call: two
copies of every column at once (+800 MB at ten million CSV rows; +290 MB per fact group at five
million SQLite kernels). Moved here one column at a time, each old column freed once copied.

Exports are mostly written in start order, but not always: a few calls may be written late (the
tiled benchmark export has 2,223 of 10 M), or a second process's rows after the first's.
:func:`by_start` puts such a frame in order (stably); when few rows are late, in the same single
copy that joins its pieces (10 M calls: 0.45 -> 0.24 s), else by a sort and a gather per column.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import polars as pl

MIN_ROWS = 100_000   # below this a copy costs more than the chunks do
COPIERS = max(1, min(4, os.cpu_count() or 1))
LATE_SHARE = 100     # at most one row in this many out of place: placed by binary search, no sort
MAX_RUNS = 16384     # and at most this many slices to join


def one_chunk(frame: pl.DataFrame | list[pl.DataFrame]) -> pl.DataFrame:
    """``frame`` in one chunk per column. Each old column is freed as soon as it is copied only if nothing
    else holds the frame: a caller that names it passes it in a list, which is emptied (a frame still
    named by the caller stays whole until the copy is done, two copies at once)."""
    if isinstance(frame, list):
        frame = frame.pop()
    cols: list = frame.get_columns()
    del frame
    todo = [i for i, c in enumerate(cols) if c.len() >= MIN_ROWS and c.n_chunks() > 1]
    # the columns are copied side by side (a copy of fresh memory is mostly page faults, which the
    # cores take in parallel: 10 M CSV rows, 0.53 -> 0.28 s on two cores); each task holds its old
    # column until its copy is made, then frees it
    with ThreadPoolExecutor(max_workers=max(1, min(len(todo), COPIERS))) as pool:
        futures = {}
        for i in todo:
            futures[i], cols[i] = pool.submit(pl.Series.rechunk, cols[i]), None
        for i, fut in futures.items():
            cols[i] = fut.result()
    return pl.DataFrame(cols)


def by_start(frame: pl.DataFrame, col: str = "start_ns") -> pl.DataFrame:
    """``frame`` (in pieces or not) sorted by ``col``, stably, in one chunk per column."""
    s = frame[col]
    box = [frame]
    del frame
    if s.is_sorted():
        del s
        return one_chunk(box)
    runs = few_late(s)
    if runs is not None:
        # a few late rows: the rows in order are copied as runs of slices, the late ones slipped in
        # between, all joined into one chunk: the only copy
        parts = [box[0].slice(a, k) for a, k in runs]
        box[0] = pl.concat(parts, rechunk=False)
        del parts, s   # (each piece is freed as one_chunk moves its column)
        return one_chunk(box)
    order = stable_order(s)
    del s
    cols = one_chunk(box).get_columns()   # a gather per column, each old column freed once moved
    out = []
    while cols:
        out.append(cols.pop(0).gather(order))
    return pl.DataFrame(out)


def stable_order(s: pl.Series) -> pl.Series:
    """Row numbers (UInt32) in the stable sort order of ``s`` (nulls first); not a copy of any column."""
    return pl.DataFrame({"k": s}).select(pl.int_range(pl.len(), dtype=pl.UInt32).sort_by("k", maintain_order=True)) \
             .to_series()


def few_late(s: pl.Series) -> list[tuple[int, int]] | None:
    """The stable sort order of ``s`` as runs of rows (first row, count), when few rows are late (below the
    running maximum of the rows before them); else None. The other rows are in order already; each late
    row goes after the in-order rows of an equal or smaller value (every in-order row of its value
    comes before it in the frame, so this is the stable order)."""
    n = s.len()
    if s.null_count():
        return None
    late = (s < s.cum_max().shift(1)).fill_null(False)   # (s in its pieces: no copy of it)
    n_late = int(late.sum())
    if n_late * LATE_SHARE > n or 2 * n_late + 1 > MAX_RUNS:
        return None
    late_rows = late.arg_true()                 # in frame order
    kept = (~late).arg_true()                   # the in-order rows
    moved = pl.DataFrame({"r": late_rows, "k": s.gather(late_rows)}).sort("k", maintain_order=True)
    at = s.filter(~late).search_sorted(moved["k"], side="right").to_list()   # in-order rows before each
    # the in-order rows are cut where a late row is slipped in, and where one was taken out
    out_at = (late_rows - pl.int_range(n_late, dtype=late_rows.dtype, eager=True)).to_list()
    n_kept = kept.len()
    cuts = sorted({0, n_kept, *at, *out_at})
    first = kept.gather([c for c in cuts if c < n_kept]).to_list()
    runs: list[tuple[int, int]] = []
    moved_rows, i = moved["r"].to_list(), 0
    for t, c in enumerate(cuts):
        while i < n_late and at[i] == c:
            runs.append((moved_rows[i], 1))
            i += 1
        if c < n_kept:
            runs.append((first[t], cuts[t + 1] - c))
    merged: list[tuple[int, int]] = []
    for a, k in runs:   # neighbours in the frame become one slice
        if merged and merged[-1][0] + merged[-1][1] == a:
            merged[-1] = (merged[-1][0], merged[-1][1] + k)
        else:
            merged.append((a, k))
    return merged
