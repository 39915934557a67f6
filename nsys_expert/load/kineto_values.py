"""The values of a torch.profiler trace checked for type and range (load/kineto.py's events).

A JSON trace may hold anything where a number belongs: ``1e400`` (infinite), ``NaN``, 2**70, a string
correlation id, a lone UTF-16 surrogate in a name, a list as a pid. The fast path builds each piece's
columns as they come; only when polars refuses a column is the piece checked value by value here:
what does not fit (a non-integer id, a number past 64 bits, a non-finite byte count) becomes null,
a name with a lone surrogate keeps a replacement character, and each kind is counted. An event
whose time is not a finite number of ns within ±2**62 is left out. :func:`notes` turns the counts
into the warnings that name what was dropped and why; :func:`dedupe` drops exact copies of a GPU event
and unties correlation ids that collide (both would flip the launch join); :func:`device` reads a GPU
event's device id.
"""
from __future__ import annotations

import math
from collections import Counter

import polars as pl

from ..notes import CODES, Note

LIMIT_NS = 1 << 62
_I64 = (-(1 << 63), (1 << 63) - 1)
ERRORS = (TypeError, ValueError, OverflowError, UnicodeEncodeError, pl.exceptions.PolarsError)


def time_ns(us, dropped: Counter, what: str) -> int | None:
    """``us`` (µs) as integer ns, or None (counted in ``dropped``) when it is no finite number in range."""
    try:
        x = float(us) * 1000.0
    except (TypeError, ValueError, OverflowError):
        dropped[(what, "kineto.time_not_number", "")] += 1
        return None
    if not math.isfinite(x) or abs(x) >= LIMIT_NS:
        dropped[(what, "kineto.time_out_of_range", "")] += 1
        return None
    return int(round(x))


def _int(v, col: str, dropped: Counter):
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        if _I64[0] <= v <= _I64[1]:
            return v
        dropped[(col, "kineto.past_int64", "")] += 1
        return None
    dropped[(col, "kineto.not_integer", type(v).__name__)] += 1
    return None


def _float(v, col: str, dropped: Counter):
    if v is None:
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            x = float(v)
        except OverflowError:
            x = math.inf
        if math.isfinite(x):
            return x
        dropped[(col, "kineto.not_finite", "")] += 1
        return None
    dropped[(col, "kineto.not_number", type(v).__name__)] += 1
    return None


def _str(v, col: str, dropped: Counter):
    if v is None:
        return None
    s = v if isinstance(v, str) else str(v)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        dropped[(col, "kineto.surrogate", "")] += 1
        s = s.encode("utf-8", "replace").decode("utf-8")
    return s


_CHECK = {pl.Int64: _int, pl.Float64: _float, pl.String: _str}


def frame(cols: dict, schema: dict, dropped: Counter) -> pl.DataFrame:
    """``pl.DataFrame(cols, schema=schema)``; when polars refuses a value, every value checked first."""
    try:
        df = pl.DataFrame(cols, schema=schema)
    except ERRORS:
        clean = {}
        for k, vals in cols.items():
            check = _CHECK.get(schema[k], _str)
            clean[k] = [check(v, k, dropped) for v in vals]
        df = pl.DataFrame(clean, schema=schema)
    for k in (k for k, t in schema.items() if t == pl.Float64):   # 1e400 reads as inf, and polars takes it
        bad = int((~df[k].is_finite()).sum())
        if bad:
            dropped[(k, "kineto.not_finite", "")] += bad
            df = df.with_columns(pl.when(pl.col(k).is_finite()).then(pl.col(k)).alias(k))
    return df


def key(*parts):
    """A hashable key from event fields (a list as a pid is made a tuple's text, never a crash)."""
    try:
        hash(parts)
        return parts
    except TypeError:
        return tuple(repr(p) for p in parts)


def dedupe(g: pl.DataFrame, a: pl.DataFrame, dropped: Counter) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Exact copies of a GPU event left out; correlation ids that collide untied (:func:`_untie`)."""
    if g.height and g.n_unique() < g.height:
        kept = g.unique(keep="first", maintain_order=True)
        dropped[("gpu_events", "kineto.exact_copy", "")] += g.height - kept.height
        g = kept
    return _untie(g, a, dropped)


def _untie(g: pl.DataFrame, a: pl.DataFrame, dropped: Counter) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A correlation id that two runtime calls hold, or two kernels whose call is no graph launch (a graph
    launch runs many kernels under its one id), ties GPU work to a call no one can tell: the calls and the
    GPU work keep their times (a synchronization stays one) but lose that id, so no launch is joined by
    a guess; each kind counted (a warning). Keeping the first call instead dropped the others: a sync
    call gone turned a sync-bound trace host-bound."""
    ids = a["corr_id"]
    bad = []
    if ids.len() and ids.drop_nulls().n_unique() < ids.len() - ids.null_count():
        twice = ids.filter(ids.is_duplicated()).drop_nulls().unique()
        dropped[("runtime_calls", "kineto.corr_id_shared", "")] += int(ids.is_in(twice.implode()).sum())
        bad.append(twice)
    kernel = pl.col("corr_id").is_not_null() & ~pl.col("name").str.starts_with("[CUDA ")
    kid = g.select(pl.col("corr_id").filter(kernel))["corr_id"]
    if kid.len() and kid.n_unique() < kid.len():
        dup = kid.filter(kid.is_duplicated()).unique()
        # only where the call is in the trace and launches no graph (a graph launch just before the trace
        # began leaves its kernels without their call: kineto_hta_torchrec_16rank's rank 0 has three)
        calls = a.filter(pl.col("corr_id").is_in(dup.implode()))
        graph = calls.filter(pl.col("name").str.contains("Graph", literal=True))
        dup = dup.filter(dup.is_in(calls["corr_id"].implode()) & ~dup.is_in(graph["corr_id"].implode()))
        if dup.len():
            dropped[("gpu_events", "kineto.corr_id_kernels", "")] += int(kid.is_in(dup.implode()).sum())
            bad.append(dup)
    if not bad:
        return g, a
    gone = pl.concat(bad).unique().implode()
    untie = pl.when(pl.col("corr_id").is_in(gone)).then(None).otherwise(pl.col("corr_id")).alias("corr_id")
    return g.with_columns(untie), a.with_columns(untie)


def device(v, pid, dropped: Counter) -> int:
    """A GPU event's device id: an integer from 0 to MAX_DEVICE. A number written as text (``"0"``) is read
    as that number; anything else (another text, a negative id, 2**40) is the event's pid where that is
    one (Kineto's GPU events have the device as their pid), else 0; each counted for a warning."""
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_DEVICE:
        return v
    if isinstance(v, str) and v.strip().isdigit() and int(v) <= MAX_DEVICE:
        dropped[("device_id", "kineto.device_text", "")] += 1
        return int(v)
    dropped[("device_id", "kineto.device_bad", type(v).__name__)] += 1
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and 0 <= pid <= MAX_DEVICE else 0


MAX_DEVICE = 4095


# what was dropped, in words (notes/codes.py): events, or a column's values
_WORDS = {"src_kind": "copy_kind", "dst_kind": "copy_kind"}
_DONE = {"kineto.corr_id_shared": "kineto.kept_untied", "kineto.corr_id_kernels": "kineto.kept_untied",
         "kineto.device_text": "kineto.read_as_number", "kineto.device_bad": "kineto.read_as_pid"}


def notes(base: str, dropped: Counter) -> list[Note]:
    """One warning per kind of value dropped: how many, what, why, and what became of it. ``dropped``
    counts (what: an event kind or a column, why: a ``kineto.*`` code, the type name it speaks of)."""
    out = []
    for (what, why, type_name), n in sorted(dropped.items()):
        done = (_DONE.get(why) or ("kineto.left_out" if what in ("events", "runtime_calls", "gpu_events")
                else "kineto.kept_as_question" if why == "kineto.surrogate" else "kineto.read_as_unknown"))
        word = "kineto." + _WORDS.get(what, what)
        out.append(Note("load.kineto_dropped", {
            "file": base, "n": n, "what": Note(word) if word in CODES else what,
            "why": Note(why, {"type": type_name} if type_name else {}), "done": Note(done)}))
    return out
