"""Numbers and units as damaged or re-saved CSV reports write them: read what is unambiguous, say so.

``nsys stats --format csv`` writes plain numbers (``12704``) and units it knows (``ns``, ``MB``). A
report that went through a spreadsheet or another tool may hold thousands separators (``"12,704"``),
scientific notation (``5.51e+09``) or units nsys does not write (``µs``, ``MiB``): each is read as
the number it means and named in a warning. A unit nobody knows is an error: a factor guessed wrong
would make every number in the column wrong.
"""
from __future__ import annotations

import os

import polars as pl

from ..errors import InputError
from ..notes import Note
from . import schema

THOUSANDS = r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$"
SCIENTIFIC = r"^[+-]?(?:\d+\.?\d*|\.\d+)[eE][+-]?\d+$"
# units nsys never writes but whose meaning is not in doubt (binary sizes are 1024-based)
EXTRA_TIME = {"µs": 1e3, "μs": 1e3}
EXTRA_SIZE = {"kib": 1024.0, "mib": float(1 << 20), "gib": float(1 << 30)}
_NUMERIC = {"dur", "ts", "bytes", "bps"}
# the units nsys stats writes in its CSV reports (every real export of ours: ns, MB, MB/s, MBps, %)
_WRITTEN = {"ns", "mb", "mb/s", "mbps", "%"}


def parse(cell: str, dtype, clamp: bool = False) -> pl.Expr:
    """The text column ``cell`` as ``dtype``: separators removed where they are thousands separators,
    and an integer column also read from scientific notation (rounded to the nearest unit). ``clamp`` (time
    columns): a number past the 64-bit range is read as the range's end, which ``sanity.time_range`` and
    ``sanity.totals`` then say is past any clock, rather than as a cell that is "not a number"."""
    s = pl.col(cell).str.strip_chars()
    s = pl.when(s.str.contains(THOUSANDS)).then(s.str.replace_all(",", "", literal=True)).otherwise(s)
    if dtype == pl.Int64:
        f = s.cast(pl.Float64, strict=False)
        from_float = pl.when(f.is_finite() & (f.abs() < 9.2e18)).then(f.round(0)).otherwise(None).cast(pl.Int64)
        if clamp:
            top = (1 << 63) - 1
            from_float = pl.coalesce(from_float, pl.when(f >= 9.2e18).then(pl.lit(top, pl.Int64))
                                     .when(f <= -9.2e18).then(pl.lit(-top, pl.Int64)))
        return pl.coalesce(s.cast(pl.Int64, strict=False), from_float)
    return s.cast(dtype, strict=False)


def notes(raw: pl.DataFrame, plan, path: str) -> list[Note]:
    """One warning per column that held thousands separators or scientific notation."""
    base = os.path.basename(path)
    out = []
    for cell, name, cls, _ in plan:
        if cls == "str" or cell not in raw.columns:
            continue
        s = raw[cell].str.strip_chars()
        n_sep = int(s.str.contains(THOUSANDS).sum() or 0)
        n_sci = int(s.str.contains(SCIENTIFIC).sum() or 0)
        if n_sep:
            ex = s.filter(s.str.contains(THOUSANDS)).head(1).item()
            out.append(Note("load.thousands", {"file": base, "n": n_sep, "column": cell, "example": ex}))
        if n_sci:
            ex = s.filter(s.str.contains(SCIENTIFIC)).head(1).item()
            out.append(Note("load.scientific", {"file": base, "n": n_sci, "column": cell, "example": ex}))
    return out


def check_units(cells: list[str], path: str) -> list[Note]:
    """One warning naming the columns in units nsys does not write in CSV reports but whose meaning is
    unambiguous (µs, us, ms, s, KiB, MiB, ...: converted); an InputError for a unit no one can convert in
    a time or size column."""
    odd = []
    for cell in cells:
        label, unit = schema.split_header_cell(cell)
        if unit is None or label not in schema.ALIASES:
            continue
        cls = schema.ALIASES[label][1]
        if unit in EXTRA_TIME or unit in EXTRA_SIZE or unit not in _WRITTEN and (
                unit in schema.TIME_UNITS and cls in _NUMERIC or unit in schema.SIZE_UNITS):
            odd.append((cell.strip(), unit))
            continue
        known = (unit in schema.TIME_UNITS or unit in schema.SIZE_UNITS or unit in schema.RATE_UNITS
                 or unit == "%")
        if cls in _NUMERIC and not known:
            raise InputError(f"column '{cell.strip()}' is in a unit nsys-expert does not know ({unit}); its numbers "
                             f"cannot be converted", path,
                             "re-export it with nsys stats --format csv (times in ns, sizes in MB)")
    if not odd:
        return []
    units = sorted({u for _, u in odd})
    how = tuple(Note("phrase.unit_as", {"unit": u, "factor": Note("phrase.unit_1000_ns") if u in EXTRA_TIME
                                        else _factor(u)}) for u in units)
    cols = tuple(f"'{c}'" for c, _ in odd[:3])
    if len(odd) > 3:
        return [Note("load.units_more", {"file": os.path.basename(path), "columns": cols, "others": len(odd) - 3,
                                         "how": how})]
    return [Note("load.units", {"file": os.path.basename(path), "columns": cols, "how": how})]


def _factor(unit: str) -> Note:
    if unit in schema.TIME_UNITS:
        return Note("phrase.unit_ns", {"f": schema.TIME_UNITS[unit]})
    f = schema.SIZE_UNITS[unit]
    return Note("phrase.unit_1024") if unit in EXTRA_SIZE else Note("phrase.unit_bytes", {"f": f})
