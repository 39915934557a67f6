"""The tables of an nsys SQLite export as canonical frames: GPU operations (kernels, copies, sets, graphs),
CUDA API calls, NVTX ranges with their nesting, the OS runtime calls; with the helpers they share (string
ids, enum labels, GPU names, optional columns). ``export.py`` opens the export and orchestrates the reads."""
from __future__ import annotations

import sqlite3

import polars as pl

from .. import chunks, normalize
from .reading import NAME_KEPT, NAME_MAX, BigTables, derived_columns, read_frame, pid_of, tid_of, cut_text, cut_value, long_inline, long_strings  # noqa: F401

# nsys event types in NVTX_EVENTS (ENUM_NSYS_EVENT_TYPE): ranges and the domain-create event
NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 59, 60, 75

# Fallbacks for exports without the ENUM tables (2020): the values of ENUM_CUDA_MEMCPY_OPER and
# ENUM_CUDA_MEM_KIND in every export that has them. Note: memory kind 0 is Pageable, 1 Pinned.
MEMCPY_OPER = {0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
               5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
               9: "Host-to-Host", 10: "Peer-to-Peer", 11: "Unified Host-to-Device", 12: "Unified Device-to-Host",
               13: "Unified Device-to-Device"}
MEM_KIND = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
            6: "Managed Static", 7: "Unknown"}

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
GRAPH = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
OSRT = "OSRT_API"
# OS runtime calls that block a thread until something arrives (a queue, a pipe, a socket, a file):
# sleeps are not waits for data (a sleep is the program's own choice): they are kept apart, OSRT_SLEEPS
OSRT_WAITS = {"poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect", "pselect6", "pthread_cond_wait",
              "pthread_cond_timedwait", "pthread_join", "futex", "sem_wait", "sem_timedwait", "sem_clockwait",
              "recv", "recvfrom", "recvmsg", "read", "pread", "pread64", "readv", "preadv", "accept", "accept4",
              "waitpid", "wait4", "msgrcv", "fread"}
OSRT_SLEEPS = {"clock_nanosleep", "nanosleep", "usleep", "sleep"}
# what a missing table means, for the warning
MEANING = {KERNEL: "phrase.kernels", MEMCPY: "phrase.memory_copies", RUNTIME: "phrase.cuda_api_calls",
           NVTX: "phrase.nvtx_ranges", OSRT: "phrase.os_runtime_calls"}   # what each holds: notes/codes.py

# the domain-create rows' process id, in SQL (the big tables' ids are taken apart in Polars: sqlite_read)
PID_SQL = "(({col} >> 24) & 16777215)"   # for the few domain-create rows only


_SUMMARY = ["time_pct", "total_ns", "count", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns"]




# ------------------------------------------------------------------------------------------ helpers
def read_schema(con: sqlite3.Connection) -> dict[str, set[str]]:
    """Table name -> its column names (one PRAGMA per table: exports have ~100 tables). Real tables
    only: a view could run any query (sqlite_open.check names views that look like nsys tables)."""
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    # a '"' in a table name is doubled: an intact export with an odd extra table is no "damaged" file
    return {n: {r[1] for r in con.execute('PRAGMA table_info("{}")'.format(str(n).replace('"', '""')))} for n in names}


def _strings(con: sqlite3.Connection, cols: dict, ids: pl.Series, dtype=pl.String) -> pl.DataFrame:
    """StringIds rows for these ids (the distinct ids of a frame already read): (``sid``, ``value``)."""
    schema = {"sid": pl.Int64, "value": dtype}
    uniq = ids.drop_nulls().unique().sort().to_list()
    if "StringIds" not in cols or not uniq:
        return pl.DataFrame(schema=schema)
    parts = [read_frame(con, f"SELECT id, {cut_value('value', 'id')} FROM StringIds WHERE id IN "
                         f"({', '.join(str(int(i)) for i in chunk)})",
                    schema) for chunk in (uniq[k:k + 20_000] for k in range(0, len(uniq), 20_000))]
    return pl.concat(parts) if len(parts) > 1 else parts[0]


def _named(frame: pl.DataFrame, names: pl.DataFrame, id_col: str = "name_id") -> pl.Expr:
    """The name of each row's string id, as a category (a code per row: the text is stored once)."""
    lookup = dict(zip(names["sid"].to_list(), names["value"].cast(pl.String).to_list()))
    return pl.col(id_col).replace_strict(lookup, default=None, return_dtype=pl.Categorical)


def table_pairs(con: sqlite3.Connection, cols: dict, table: str) -> dict[str, str]:
    if table not in cols or not {"name", "value"} <= cols[table]:
        return {}
    return {str(k): str(v) for k, v in con.execute(f'SELECT name, value FROM "{table}"')}


def first_column(cols: set[str], *names: str, default: str = "NULL") -> str:
    """The first of ``names`` the table has (quoted), else ``default``."""
    for n in names:
        if n in cols:
            return f'"{n}"'
    return default


def enum_labels(con: sqlite3.Connection, cols: dict, enum: str, fallback: dict[int, str]) -> dict[int, str]:
    out = dict(fallback)
    if enum in cols and {"id", "label"} <= cols[enum]:
        out.update({int(i): str(v) for i, v in con.execute(f'SELECT id, label FROM "{enum}"') if v is not None})
    return out


def gpu_names(con: sqlite3.Connection, cols: dict) -> dict[int, str]:
    """CUDA device id -> GPU name (TARGET_INFO_GPU; 2020: deviceId column or TARGET_INFO_CUDA_GPU)."""
    for table in ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU"):
        c = cols.get(table, set())
        dev = first_column(c, "id", "deviceId", default="")
        if dev and "name" in c:
            rows = con.execute(f'SELECT {dev}, name FROM "{table}" WHERE {dev} IS NOT NULL').fetchall()
            if rows:
                return {int(d): str(n) for d, n in reversed(rows)}   # the first row of an id wins
    return {}


def gpu_capabilities(con: sqlite3.Connection, cols: dict) -> dict[int, str]:
    """CUDA device id -> compute capability ``"9.0"`` (TARGET_INFO_GPU's computeMajor / computeMinor,
    2021 and later; empty when the export has none)."""
    c = cols.get("TARGET_INFO_GPU", set())
    dev = first_column(c, "id", "deviceId", default="")
    if not dev or "computeMajor" not in c or "computeMinor" not in c:
        return {}
    rows = con.execute(f'SELECT {dev}, computeMajor, computeMinor FROM TARGET_INFO_GPU WHERE {dev} IS NOT NULL').fetchall()
    return {int(d): f"{int(a)}.{int(b)}" for d, a, b in reversed(rows)
            if isinstance(a, int) and isinstance(b, int) and 0 < a < 100 and 0 <= b < 100}


# -------------------------------------------------------------------------------------------- GPU
# Read per operation: what the facts use. Grid / block / register columns are left out: no fact
# needs them and they would make the kernel read (the big one) about 1.6 times slower.
_GPU_SCHEMA = {"start_ns": pl.Int64, "end_ns": pl.Int64, "corr_id": pl.Int64, "device_id": pl.Int64,
               "stream": pl.Int64, "gpid": pl.Int64}


_KIND = pl.Enum(["kernel", "memcpy", "memset", "graph"])   # which table a GPU operation came from


def _common_sql(c: set[str]) -> str:
    return (f'start, "end", {first_column(c, "correlationId")}, {first_column(c, "deviceId", default="0")}, '
            f'{first_column(c, "streamId")}, {first_column(c, "globalPid")}')


def big_jobs(cols: dict) -> dict[str, tuple[str, dict]]:
    """The queries of the big tables this export has (the two biggest first): key -> (SQL, schema)."""
    jobs = {}
    if KERNEL in cols:
        c = cols[KERNEL]
        jobs[KERNEL] = (f'SELECT {_common_sql(c)}, {first_column(c, "demangledName", "shortName")} FROM {KERNEL}',
                        {**_GPU_SCHEMA, "name_id": pl.Int64})
    if RUNTIME in cols:
        c = cols[RUNTIME]
        # returnValue is not read: no fact uses it, and this table is as long as the kernel table or longer
        jobs[RUNTIME] = (f'SELECT start, "end", {first_column(c, "nameId")}, {first_column(c, "correlationId")}, '
                         f'{first_column(c, "globalTid")} FROM {RUNTIME}',
                         {"start_ns": pl.Int64, "end_ns": pl.Int64, "name_id": pl.Int64, "corr_id": pl.Int64,
                          "gtid": pl.Int64})
    if MEMCPY in cols:
        c = cols[MEMCPY]
        jobs[MEMCPY] = (f'SELECT {_common_sql(c)}, {first_column(c, "bytes")}, {first_column(c, "copyKind")}, '
                        f'{first_column(c, "srcKind")}, {first_column(c, "dstKind")} FROM {MEMCPY}',
                        {**_GPU_SCHEMA, "bytes": pl.Float64, "copy_oper": pl.Int64, "src": pl.Int64, "dst": pl.Int64})
    if MEMSET in cols:
        c = cols[MEMSET]
        jobs[MEMSET] = (f'SELECT {_common_sql(c)}, {first_column(c, "bytes")}, {first_column(c, "memKind")} FROM {MEMSET}',
                        {**_GPU_SCHEMA, "bytes": pl.Float64, "mem": pl.Int64})
    if GRAPH in cols:
        jobs[GRAPH] = (f"SELECT {_common_sql(cols[GRAPH])} FROM {GRAPH}", _GPU_SCHEMA)
    if OSRT in cols:
        c = cols[OSRT]
        # event classes 31 / 32 mark thread start and finish ("[Unknown]", zero length): not calls
        where = "WHERE eventClass NOT IN (31, 32)" if "eventClass" in c else ""
        jobs[OSRT] = (f'SELECT start, "end", {first_column(c, "nameId")}, {first_column(c, "globalTid")} FROM {OSRT} {where}',
                      {"start_ns": pl.Int64, "end_ns": pl.Int64, "name_id": pl.Int64, "gtid": pl.Int64})
    return jobs


def read_gpu_trace(con: sqlite3.Connection, cols: dict, gpus: dict[int, str], big: BigTables) -> tuple[pl.DataFrame, int]:
    """Kernels, copies, memsets and graph executions in one frame, named as ``nsys stats`` names them."""
    parts = []
    if KERNEL in cols:
        k = big.get(KERNEL)
        names = _strings(con, cols, k["name_id"], pl.Categorical)
        k = k.with_columns(_named(k, names).alias("name"), pl.lit("kernel", _KIND).alias("kind")).drop("name_id")
        parts.append(k)
    if MEMCPY in cols:
        oper = enum_labels(con, cols, "ENUM_CUDA_MEMCPY_OPER", MEMCPY_OPER)
        names = {i: f"[CUDA memcpy {v}]" for i, v in oper.items()}
        if "ENUM_CUDA_MEMCPY_OPER" not in cols and "MemcpyOperationStrings" in cols:
            # 2020: the label table of that era ("[CUDA memcpy HtoD]"); normalize reads both spellings
            names.update({int(i): str(v) for i, v in con.execute("SELECT id, name FROM MemcpyOperationStrings")})
        kinds = enum_labels(con, cols, "ENUM_CUDA_MEM_KIND", MEM_KIND)
        m = big.get(MEMCPY)
        m = m.with_columns(
            pl.col("copy_oper").replace_strict(names, default="[CUDA memcpy Unknown]", return_dtype=pl.String)
              .cast(pl.Categorical).alias("name"),
            pl.col("src").replace_strict(kinds, default=None, return_dtype=pl.String).alias("src_kind"),
            pl.col("dst").replace_strict(kinds, default=None, return_dtype=pl.String).alias("dst_kind"),
            pl.lit("memcpy", _KIND).alias("kind")).drop("copy_oper", "src", "dst")
        parts.append(m)
    if MEMSET in cols:
        kinds = enum_labels(con, cols, "ENUM_CUDA_MEM_KIND", MEM_KIND)
        s = big.get(MEMSET)
        # nsys stats shows a memset's memory kind as its source kind
        s = s.with_columns(pl.lit("[CUDA memset]").cast(pl.Categorical).alias("name"),
                           pl.col("mem").replace_strict(kinds, default=None, return_dtype=pl.String).alias("src_kind"),
                           pl.lit("memset", _KIND).alias("kind")).drop("mem")
        parts.append(s)
    n_graph = 0
    if GRAPH in cols:
        g = big.get(GRAPH)
        n_graph = g.height
        parts.append(g.with_columns(pl.lit("[CUDA graph]").cast(pl.Categorical).alias("name"),
                                    pl.lit("graph", _KIND).alias("kind")))
    parts = [f for f in parts if f.height] or parts[:1]   # no copy of a million kernels to append nothing
    if not parts:
        frame = derived_columns(pl.DataFrame(schema={**_GPU_SCHEMA, "name": pl.Categorical, "kind": _KIND}))
    elif len(parts) == 1:
        frame = parts[0]
    else:
        frame = pl.concat(parts, how="diagonal_relaxed")
    for col, dtype in (("bytes", pl.Float64), ("src_kind", pl.String), ("dst_kind", pl.String)):
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype).alias(col))
    # the GPU names stay in the part's meta (gpus): not repeated per operation; durations and pids: derived_columns
    frame = frame.select("start_ns", "end_ns", "dur_ns", "corr_id", "bytes", "src_kind", "dst_kind", "device_id",
                         "stream", "pid", "name", "kind")
    return chunks.by_start(frame), n_graph


# -------------------------------------------------------------------------------------------- API
def read_api_trace(con: sqlite3.Connection, cols: dict, big: BigTables) -> pl.DataFrame:
    """CUDA runtime and driver calls (both live in CUPTI_ACTIVITY_KIND_RUNTIME).

    Names as ``nsys stats`` prints them: a six-character ``_vNNNN`` suffix is dropped
    (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``), longer ones stay (``cudaGetDeviceProperties_v12000``).
    The name is a category: millions of calls, a few hundred distinct names.
    """
    # in its pieces: by_start joins them in the copy that puts the calls in start order (when they must be)
    a = chunks.by_start(big.get(RUNTIME, joined=False))
    names = _strings(con, cols, a["name_id"])
    names = names.with_columns(pl.col("value").str.replace(r"_v\d{4}$", ""))
    # the base name of every call, as normalize makes it (no _vNNNN suffix of any length), so that normalize
    # need not map ten million calls again: the name itself unless a longer suffix is left. Mapped after the
    # names, not beside them (each mapping stands 110 MB above its result at ten million calls, and the
    # load's peak is here)
    bases = names.with_columns(pl.col("value").str.replace(normalize.VERSION_SUFFIX, ""))
    a = a.with_columns(_named(a, names).alias("name"))
    a = a.with_columns((pl.col("name") if bases["value"].equals(names["value"]) else _named(a, bases)).alias("base_name"))
    return a.select("start_ns", "end_ns", "dur_ns", "name", "corr_id", "pid", "tid", "base_name")


# ------------------------------------------------------------------------------------------- NVTX
def read_nvtx_trace(con: sqlite3.Connection, cols: dict) -> pl.DataFrame:
    """Push/pop and start/end ranges named like ``nsys stats`` (``DOMAIN:text``; the default domain
    has no prefix), with ``level``: the nesting depth of a push/pop range on its thread (0 = top)."""
    c = cols[NVTX]
    # the text is stored inline (``text``) or registered (``textId`` -> StringIds): coalesce both
    # registered texts are looked up once per distinct id, never joined to each range: ten million ranges of one
    # name are ten million ids, not ten million copies of the name
    join = ""
    texts = []
    if "text" in c:   # (an inline text past NAME_MAX is cut where SQLite reads it, as a registered one)
        texts.append(cut_text("e.text"))
    if "textId" in c and "StringIds" in cols:
        join = "LEFT JOIN StringIds s ON s.id = e.textId"
        texts.append(cut_value("s.value", "s.id"))
    text = f"coalesce({', '.join(texts)})" if len(texts) > 1 else (texts[0] if texts else "NULL")
    did = "e.domainId" if "domainId" in c else "0"
    gtid = "e.globalTid" if "globalTid" in c else "NULL"
    tid_col = "e.textId" if "textId" in c and "StringIds" in cols else "NULL"
    n = read_frame(con, f'SELECT e.start, e."end", e.eventType, {cut_text("e.text") if "text" in c else "NULL"}, {tid_col}, {did}, '
                    f'{gtid} FROM {NVTX} e WHERE e.eventType IN ({NVTX_PUSHPOP}, {NVTX_STARTEND})',
               {"start_ns": pl.Int64, "end_ns": pl.Int64, "event": pl.Int64, "text": pl.String, "text_id": pl.Int64,
                "did": pl.Int64, "gtid": pl.Int64})
    if n["text_id"].null_count() < n.height:
        names = _named(n, _strings(con, cols, n["text_id"]), "text_id").cast(pl.String)
        n = n.with_columns(pl.coalesce("text", names).alias("text"))
    n = n.drop("text_id")
    n = n.with_columns(pid_of("gtid").alias("pid"), tid_of("gtid").alias("tid")).sort("start_ns", maintain_order=True)
    # domain names: the domain-create events of the same process (2020: the DomainStrings table)
    doms = read_frame(con, f"SELECT {PID_SQL.format(col=gtid)}, {did}, {text} FROM {NVTX} e {join} "
                       f"WHERE e.eventType = {NVTX_DOMAIN_CREATE}",
                  {"pid": pl.Int64, "did": pl.Int64, "domain": pl.String}).unique(["pid", "did"], keep="first")
    n = n.join(doms, on=["pid", "did"], how="left", maintain_order="left")
    if "DomainStrings" in cols and {"id", "domainName"} <= cols["DomainStrings"]:
        old = {int(i): str(v) for i, v in con.execute("SELECT id, domainName FROM DomainStrings") if v is not None}
        if old:
            n = n.with_columns(pl.coalesce("domain", pl.col("did").replace_strict(old, default=None,
                                                                                  return_dtype=pl.String)))
    n = n.with_row_index("range_id", offset=1).with_columns(pl.col("range_id").cast(pl.Int64))
    name = pl.col("text").fill_null("")
    n = n.with_columns(
        pl.when(pl.col("domain").fill_null("") != "").then(pl.col("domain") + ":" + name).otherwise(name).alias("name"),
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.when(pl.col("event") == NVTX_PUSHPOP).then(pl.lit("PushPop")).otherwise(pl.lit("StartEnd")).alias("style"))
    n = n.with_columns(_level_column(n))
    return n.select("start_ns", "end_ns", "dur_ns", "name", "style", "pid", "tid", "level", "range_id")


def levels(n: pl.DataFrame) -> pl.DataFrame:
    """(range_id, level) of each push/pop range of ``n`` (see :func:`_level_column`)."""
    lv = _level_column(n)
    return n.select("range_id", lv.alias("level")).filter(pl.col("level").is_not_null())


def _level_column(n: pl.DataFrame) -> pl.Series:
    """Nesting depth of each push/pop range on its thread (null for the other rows), as one sorted sweep
    of start/end events would give it.

    At one time stamp, ends come before starts (a range that ends when the next begins does not
    contain it), starts of longer ranges before shorter ones, and a zero-length range ends last. A
    range's depth is then the starts before it on its thread less the ends before it: its rank among
    the starts ordered by (thread, start, longest first) less the ends whose (thread, end, order) key
    is below its start's, one binary search each (560 k ranges: ~0.05 s; a sort of the 1.1 M events
    and a join back by range id: 0.16 s). Exactly tied ranges (same thread, start and end) are
    ranked in their row order.
    """
    pp = n.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), "gtid", "start_ns", "end_ns", "event").filter(
        (pl.col("event") == NVTX_PUSHPOP) & pl.col("end_ns").is_not_null() & (pl.col("end_ns") >= pl.col("start_ns")))
    out = pl.repeat(None, n.height, dtype=pl.Int64, eager=True).alias("level")
    if pp.height == 0:
        return out
    t0, t1 = pp["start_ns"].min(), pp["end_ns"].max()
    g = pp["gtid"].rank("dense").fill_null(0).cast(pl.Int64)
    span = 3 * (t1 - t0) + 3
    if (int(g.max()) + 1) * span >= 2 ** 62:   # keys would overflow: the sweep itself
        return _level_sweep(n, pp)
    base = g * span
    # starts at 3t + 1; ends at 3t, or 3t + 2 for a zero-length range (it ends after the starts at t)
    q = base + 3 * (pp["start_ns"] - t0) + 1
    ends = (base + 3 * (pp["end_ns"] - t0) + (pp["end_ns"] == pp["start_ns"]).cast(pl.Int64) * 2).sort()
    order = pl.DataFrame({"q": q, "ne": -pp["end_ns"]}).with_row_index("i").sort(["q", "ne"], maintain_order=True)["i"]
    rank = pl.Series(dtype=pl.Int64).extend_constant(0, pp.height).scatter(order, pl.int_range(pp.height, eager=True))
    level = rank - ends.search_sorted(q, side="left").cast(pl.Int64)
    return out.scatter(pp["_r"], level)


def _level_sweep(n: pl.DataFrame, pp: pl.DataFrame) -> pl.Series:
    """:func:`_level_column` as a sort of every start and end event (times too far apart for one key)."""
    pp = pp.with_columns(pl.col("_r").alias("range_id"))
    starts = pp.select("range_id", "gtid", pl.col("start_ns").alias("t"), pl.lit(1).alias("order"),
                       (-pl.col("end_ns")).alias("tie"), pl.lit(1).alias("step"))
    ends = pp.select("range_id", "gtid", pl.col("end_ns").alias("t"),
                     pl.when(pl.col("end_ns") == pl.col("start_ns")).then(2).otherwise(0).alias("order"),
                     pl.lit(0, pl.Int64).alias("tie"), pl.lit(-1).alias("step"))
    ev = pl.concat([starts, ends]).sort(["gtid", "t", "order", "tie"], maintain_order=True)
    ev = ev.with_columns(pl.col("step").cum_sum().over("gtid").alias("depth")).filter(pl.col("step") == 1)
    return pl.repeat(None, n.height, dtype=pl.Int64, eager=True).alias("level").scatter(ev["range_id"], (ev["depth"] - 1).cast(pl.Int64))


# ------------------------------------------------------------------------------------------- OSRT
def read_osrt(con: sqlite3.Connection, cols: dict, big: BigTables) -> pl.DataFrame:
    o = big.get(OSRT)
    names = _strings(con, cols, o["name_id"])
    return o.with_columns(_named(o, names).alias("name")).drop("name_id")


# -------------------------------------------------------------------------------------- summaries
def summary(frame: pl.DataFrame, col: str, style: bool = False) -> pl.DataFrame:
    """A ``*_sum`` report from trace rows: one row per name (and style), sorted by total time.

    Same columns as the CSV reports; the standard deviation is the sample one (0 for one instance).
    """
    keys = ["name", "style"] if style else ["name"]
    schema = {c: (pl.Float64 if c in ("time_pct", "avg_ns", "med_ns", "std_ns") else pl.Int64) for c in _SUMMARY}
    if frame.height == 0:
        return pl.DataFrame(schema={**schema, **{k: pl.String for k in keys}})
    v = pl.col(col)
    if frame["name"].null_count():
        frame = frame.with_columns(pl.col("name").fill_null(""))
    # grouped by the category code (a million kernels, a few hundred names); the names become text after
    # a total past sanity.MAX_TOTAL (a damaged time: an int64 sum would wrap around to a plausible number) is
    # missing, so normalize leaves its row out and says so (load.summary_bad), as the trace's row is
    from ..sanity import MAX_TOTAL
    g = frame.group_by(keys).agg(
        pl.when(v.cast(pl.Float64).abs().sum() <= MAX_TOTAL).then(v.sum()).alias("total_ns"),
        pl.len().cast(pl.Int64).alias("count"), v.mean().alias("avg_ns"),
        v.median().cast(pl.Float64).alias("med_ns"), v.min().alias("min_ns"), v.max().alias("max_ns"),
        v.std().fill_null(0.0).alias("std_ns"))
    total = g["total_ns"].cast(pl.Float64).sum() or 1
    g = g.with_columns((100.0 * pl.col("total_ns") / total).alias("time_pct"), pl.col("name").cast(pl.String))
    return g.sort(["total_ns", "name"], descending=[True, False]).select(*_SUMMARY, *keys[::-1])


def size_summary(mem: pl.DataFrame) -> pl.DataFrame:
    """cuda_gpu_mem_size_sum: bytes per copy / memset kind."""
    out = ["total_bytes", "count", "avg_bytes", "med_bytes", "min_bytes", "max_bytes", "std_bytes", "name"]
    if mem.height == 0:
        return pl.DataFrame(schema={c: (pl.Int64 if c == "count" else pl.String if c == "name" else pl.Float64)
                                    for c in out})
    b = pl.col("bytes").fill_null(0.0)
    g = mem.group_by("name").agg(b.sum().alias("total_bytes"), pl.len().cast(pl.Int64).alias("count"),
                                 b.mean().alias("avg_bytes"), b.median().alias("med_bytes"),
                                 b.min().alias("min_bytes"), b.max().alias("max_bytes"),
                                 b.std().fill_null(0.0).alias("std_bytes"))
    return g.sort(["total_bytes", "name"], descending=[True, False]).select(out)


def processes(con: sqlite3.Connection, cols: dict, tables: dict) -> list[dict]:
    """The processes that did CUDA work (pid, name), for the report's environment and later per-rank work."""
    pids: set[int] = set()
    for t in ("gpu_trace", "api_trace"):
        f = tables.get(t)
        if f is not None and "pid" in f.columns:
            pids.update(int(p) for p in f["pid"].drop_nulls().unique().to_list())
    names = {}
    if "PROCESSES" in cols and {"pid", "name"} <= cols["PROCESSES"]:
        names = {int(p): str(n) for p, n in con.execute("SELECT pid, name FROM PROCESSES") if p is not None}
    return [{"pid": p, "name": names.get(p)} for p in sorted(pids)]
