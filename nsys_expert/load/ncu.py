"""Nsight Compute exports (``ncu --csv``), found by content (notes/input-formats.md 2.1-2.5).

Two pages, one canonical long frame each (same columns):
- ``--page details`` -> table ``ncu``: one row per (launch, section, metric). Columns are mapped by
  header name, so every column set from 2020 to 2026 reads (12 to 21 columns: with or without
  ``Kernel Time``, ``Block Size`` ... ``CC``, the ``Rule ...`` columns, ``Body Item Label``). Metric
  rows of 2023+ files are shorter than the header (16 of 20 fields). Rule rows (ncu's own guided
  analysis: name, OPT / INF / WRN, estimated speedup) go to a second table, ``ncu_rules``.
- ``--page raw`` -> table ``ncu_raw``: one row per launch and one column per raw metric, with a
  units row under the header; it is turned long (metric = the raw metric name, section empty).
  It has a table of its own because the details and raw pages of one report usually sit in the
  same folder and hold different things (only the raw page has the warp-stall breakdown and the
  tensor-pipe metrics); ``facts.ncu`` reads both.

Sections are keyed by identifier (``SpeedOfLight``): metric rows name the display name ("GPU Speed
Of Light Throughput"), rule rows the identifier; unknown display names are kept as they are. One
label can occur in two sections with different units ("Memory Throughput" is % in SpeedOfLight
and byte/s in MemoryWorkloadAnalysis), so a metric is identified by (section, label).

Values: ``value`` is a float in a canonical unit (time ns, size byte, rate byte/s, frequency Hz,
percent %; other units as printed), None for text (``text`` keeps the raw cell). Each cell is
converted with its own unit cell (auto-scaling picks ``us`` in one row and ``ms`` in the next),
thousands separators are removed, ``n/a`` is None, and a file written with decimal commas (a
European-locale capture) is detected and read as such.

What surrounds the CSV in a live run (``==PROF==`` / ``==WARNING==`` lines, the application's own
stdout) is skipped: the table starts at the ``"ID","Process ID",...`` header. A run that failed
(``==ERROR== ERR_NVGPUCTRPERM``: no access to the performance counters) is an InputError that names
the fix. The text form of a report (``ncu -i X.ncu-rep`` without ``--csv``) is recognised and not
read: a warning says how to export the CSV.
"""
from __future__ import annotations

import csv
import io
import os
import operator
import re

import polars as pl

from .. import budget
from ..notes import Note
from ..errors import InputError
from . import compressed
from .profile import Part

SNIFF_BYTES = 64 * 1024

# section display name (metric rows) -> identifier (rule rows, --section); ncu --list-sections
# 2025.1.1 plus the 2020-era "GPU Speed Of Light"
SECTION_IDS = {
    "GPU Speed Of Light Throughput": "SpeedOfLight",
    "GPU Speed Of Light": "SpeedOfLight",
    "GPU Speed Of Light Roofline Chart": "SpeedOfLight_RooflineChart",
    "GPU Speed Of Light Hierarchical Roofline Chart (Double Precision)": "SpeedOfLight_HierarchicalDoubleRooflineChart",
    "GPU Speed Of Light Hierarchical Roofline Chart (Half Precision)": "SpeedOfLight_HierarchicalHalfRooflineChart",
    "GPU Speed Of Light Hierarchical Roofline Chart (Single Precision)": "SpeedOfLight_HierarchicalSingleRooflineChart",
    "GPU Speed Of Light Hierarchical Roofline Chart (Tensor Core)": "SpeedOfLight_HierarchicalTensorRooflineChart",
    "Launch Statistics": "LaunchStats",
    "Occupancy": "Occupancy",
    "Memory Workload Analysis": "MemoryWorkloadAnalysis",
    "Memory Workload Analysis Chart": "MemoryWorkloadAnalysis_Chart",
    "Memory Workload Analysis Tables": "MemoryWorkloadAnalysis_Tables",
    "Compute Workload Analysis": "ComputeWorkloadAnalysis",
    "Scheduler Statistics": "SchedulerStats",
    "Warp State Statistics": "WarpStateStats",
    "Instruction Statistics": "InstructionStats",
    "GPU and Memory Workload Distribution": "WorkloadDistribution",
    "Source Counters": "SourceCounters",
    "PM Sampling": "PmSampling",
    "PM Sampling: Warp States": "PmSampling_WarpStates",
    "NVLink": "Nvlink",
    "NVLink Tables": "Nvlink_Tables",
    "NVLink Topology": "Nvlink_Topology",
    "NUMA Affinity": "NumaAffinity",
    "C2CLink": "C2CLink",
}

# unit (lower case) -> (factor, canonical unit). K, M, G, T are powers of 1000 (input-formats 2.5).
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
UNITS: dict[str, tuple[float, str]] = {
    "ns": (1.0, "ns"), "nsecond": (1.0, "ns"), "us": (1e3, "ns"), "usecond": (1e3, "ns"),
    "ms": (1e6, "ns"), "msecond": (1e6, "ns"), "s": (1e9, "ns"), "second": (1e9, "ns"),
    "%": (1.0, "%"),
    "cycle/second": (1.0, "Hz"), "cycle/nsecond": (1e9, "Hz"), "cycle/usecond": (1e6, "Hz"),
}
for _p, _f in _PREFIX.items():
    UNITS[f"{_p}byte"] = (_f, "byte")
    UNITS[f"{_p}byte/block"] = (_f, "byte/block")
    UNITS[f"{_p}byte/s"] = (_f, "byte/s")
    UNITS[f"{_p}byte/second"] = (_f, "byte/s")
    UNITS[f"{_p}byte/ns"] = (_f * 1e9, "byte/s")
    UNITS[f"{_p}byte/us"] = (_f * 1e6, "byte/s")
    UNITS[f"{_p}hz"] = (_f, "Hz")
    if _p:  # counts that auto-scaling may print with a prefix (Kcycle, Minst, ...)
        for _base in ("cycle", "inst", "sector", "request", "warp", "thread", "block", "wavefront"):
            UNITS[f"{_p}{_base}"] = (_f, _base)

NCU_HINT = ("export it with: ncu -i REPORT.ncu-rep --csv --page details > REPORT_details.csv "
            "(and --page raw > REPORT_raw.csv for the warp-stall and tensor-pipe metrics)")
PERM_HINT = ("run ncu as root (sudo), or let every user read the counters: add 'options nvidia "
             "NVreg_RestrictProfilingToAdminUsers=0' to /etc/modprobe.d/nvidia-profiling.conf and reboot "
             "(or reload the driver); in a container, run it with --cap-add SYS_ADMIN; "
             "see https://developer.nvidia.com/ERR_NVGPUCTRPERM")

# header name -> canonical column (launch identity columns, shared by both pages)
_IDENT = {"ID": "launch_id", "Process ID": "process_id", "Process Name": "process_name", "Host Name": "host",
          "Kernel Name": "kernel_name", "Kernel Time": "kernel_time", "Context": "context", "Stream": "stream",
          "Block Size": "block_size", "Grid Size": "grid_size", "Device": "device", "CC": "cc"}
_INT_IDENT = ("launch_id", "process_id", "context", "stream", "device")
_DETAIL_COLS = {"Section Name": "section", "Metric Name": "metric", "Metric Unit": "unit", "Metric Value": "value",
                "Rule Name": "rule", "Rule Type": "type", "Rule Description": "description",
                "Estimated Speedup Type": "speedup_type", "Estimated Speedup": "speedup"}

# columns of every ncu / ncu_raw frame, in order
COLUMNS = ["launch_id", "process_id", "process_name", "kernel_name", "context", "stream", "block_size", "grid_size",
           "device", "cc", "section", "metric", "unit", "value", "text"]
RULE_COLUMNS = ["launch_id", "kernel_name", "section", "rule", "type", "description", "speedup_type", "speedup_pct"]
_SCHEMA = {c: (pl.Int64 if c in _INT_IDENT else pl.Float64 if c == "value" else pl.String) for c in COLUMNS}
_RULE_SCHEMA = {"launch_id": pl.Int64, "kernel_name": pl.String, "section": pl.String, "rule": pl.String,
                "type": pl.String, "description": pl.String, "speedup_type": pl.String, "speedup_pct": pl.Float64}


def head_text(path: str) -> str:
    try:
        return compressed.head(path, SNIFF_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff")
    except InputError:          # unreadable or bad gzip: the loader's sniff says so
        return ""


def _is_header(line: str) -> bool:
    return line.lstrip("\ufeff").startswith('"ID","Process ID"')


def _is_text_page(lines: list[str]) -> bool:
    """``ncu -i X.ncu-rep`` without --csv: ``[PID] process@host`` then kernels and ``Section:`` blocks."""
    first = next((ln for ln in lines if ln.strip()), "")
    return bool(re.match(r"^\[\d+\] \S.*@\S+\s*$", first)) and any(ln.lstrip().startswith("Section: ") for ln in lines)


def looks_like(path: str) -> bool:
    """An ncu CSV (details or raw page, with or without ncu's console lines around it), the console
    output of a failed ncu run, or the text form of a report."""
    lines = head_text(path).splitlines()
    if any(_is_header(ln) for ln in lines):
        return True
    first = next((ln for ln in lines if ln.strip()), "")
    if first.startswith(("==PROF==", "==ERROR==", "==WARNING==")):
        return True
    return _is_text_page(lines)


# ------------------------------------------------------------------------------------- numbers
_DECIMAL_COMMA = re.compile(r"^-?\d+,\d{1,2}$|^-?\d{1,3}(\.\d{3})+,\d+$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def _number(cell: str, decimal_comma: bool) -> float | None:
    """``"13,485"`` -> 13485.0, ``"9,495.42"`` -> 9495.42, ``"n/a"`` / text -> None."""
    s = cell.strip()
    if not s:
        return None
    s = s.replace(".", "").replace(",", ".") if decimal_comma else s.replace(",", "")
    s = s.replace("\u2019", "").replace("'", "").replace(" ", "")
    if not _NUMBER.match(s):
        return None
    return float(s)


def _convert(value: float | None, unit: str) -> tuple[float | None, str]:
    """A value and its unit cell -> (value in the canonical unit, canonical unit)."""
    u = (unit or "").strip()
    hit = UNITS.get(u.lower())
    if hit is None:
        return value, u
    factor, canon = hit
    return (value * factor if value is not None else None), canon


# ---------------------------------------------------------------------------------------- read
def _failure(path: str, lines: list[str]) -> InputError:
    errors = [ln.strip() for ln in lines if ln.startswith("==ERROR==")]
    if any("ERR_NVGPUCTRPERM" in e for e in errors):
        return InputError("Nsight Compute had no permission to read the GPU performance counters "
                          "(ERR_NVGPUCTRPERM), so this run holds no data", path, PERM_HINT)
    if errors:
        return InputError(f"Nsight Compute failed and wrote no CSV: {errors[0][len('==ERROR=='):].strip()[:200]}",
                          path, "fix the error above and profile again")
    return InputError("Nsight Compute output without a CSV table (no \"ID\",\"Process ID\",... header)", path,
                      "profile with ncu --csv, or " + NCU_HINT)


NCU_SHARE = 10


def read_ncu(path: str) -> Part:
    """Read one ncu export -> Part (kind ncu-details or ncu-raw)."""
    # read whole, then held as Python rows (about ten times the text): a tenth of the memory budget at most
    text = compressed.read_all(path, budget.limit() // NCU_SHARE, "Nsight Compute output", budget.hint()) \
        .decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _is_header(ln)), None)
    if start is None:
        if _is_text_page(lines[:2000]):
            return Part("ncu-text", path, warnings=[Note("load.ncu_text_form", {
                "file": os.path.basename(path), "hint": Note("phrase.ncu_export_hint")})])
        raise _failure(path, lines)
    # from the header on, ncu's own messages (==PROF== ...) and blank lines are not part of the table
    body = [ln for ln in lines[start:] if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = [h.strip() for h in rows[0]]
    warnings: list[str] = []
    # metric rows are shorter than the header (16 of 20 fields), rule rows full: a last row shorter than
    # every other row, or with a quote left open, was cut
    last_line = next((ln for ln in reversed(body) if ln.strip()), "")
    if len(rows) > 2 and (len(rows[-1]) < min(len(r) for r in rows[1:-1]) or last_line.count('"') % 2):
        # cut inside a row (then perhaps ended with a newline): that row's metric is not what ncu wrote
        at = len(lines) - next(i for i, ln in enumerate(reversed(lines)) if ln.strip())
        launch = rows[-1][0].strip() if rows[-1] else "?"
        rows = rows[:-1]
        warnings.append(Note("load.ncu_cut", {"file": os.path.basename(path), "line": at, "launch": launch}))
    skipped = sum(1 for ln in lines[:start] if ln.strip() and not ln.startswith("=="))
    if skipped:
        warnings.append(Note("load.ncu_other_output", {"file": os.path.basename(path), "n": skipped}))
    if "Metric Name" in header:
        part = _read_details(path, header, rows[1:], warnings)
    else:
        part = _read_raw(path, header, rows[1:], warnings)
    errors = [ln.strip() for ln in lines if ln.startswith("==ERROR==")]
    if errors:
        part.warnings.append(Note("load.ncu_error", {"file": os.path.basename(path), "error": errors[0][:200]}))
    return part


def _decimal_comma(cells) -> bool:
    """A European-locale capture writes 1.234,5: a comma followed by 1-2 digits cannot be a thousands separator."""
    # both patterns need a comma: the test for one skips the regex on almost every cell
    return any(_DECIMAL_COMMA.match(c.strip()) for c in cells if c and "," in c)


_INT = re.compile(r"-?\d+")
_ROW_ID = re.compile(r"\s*\d+\s*")     # a data row starts with the launch ID


def _ident_positions(header: list[str]) -> list[tuple[int, str]]:
    """(column index, identity column) of a header: worked out once per file, not per row (a raw page's
    header has 9,000 columns)."""
    return [(i, _IDENT[h]) for i, h in enumerate(header) if _IDENT.get(h) and _IDENT[h] not in ("kernel_time", "host")]


def _ident(header: list[str], row: list[str], pos: list[tuple[int, str]] | None = None) -> dict:
    out = {}
    n = len(row)
    for i, col in (pos if pos is not None else _ident_positions(header)):
        out[col] = row[i].strip() if i < n else ""
    for col in _INT_IDENT:
        v = out.get(col)
        out[col] = int(v) if v and _INT.fullmatch(v) else None
    for col in ("process_name", "kernel_name", "block_size", "grid_size", "cc"):
        out[col] = out.get(col) or None
    return out


def _era(header: list[str]) -> str:
    """The column set, as a version label (input-formats 2.2; the exact versions are not verified)."""
    if "Kernel Time" in header:
        return "ncu-2020"
    if "Rule Name" in header:
        return "ncu-2023+"
    if "Block Size" in header:
        return "ncu-2022+" if "Metric Name" not in header else "ncu-2022"
    return "ncu-2021"


def _read_details(path: str, header: list[str], rows: list[list[str]], warnings: list[str]) -> Part:
    base = os.path.basename(path)
    col = {h: i for i, h in enumerate(header)}
    idx = {c: col.get(h) for h, c in _DETAIL_COLS.items()}
    if idx["section"] is None or idx["metric"] is None or idx["value"] is None:
        raise InputError("this ncu details CSV has no Section Name / Metric Name / Metric Value column", path,
                         NCU_HINT)

    def cell(row, c):
        i = idx[c]
        return row[i] if i is not None and i < len(row) else ""

    dec = _decimal_comma(cell(r, "value") for r in rows[:5000])
    pos = _ident_positions(header)
    metrics, rules, bad = [], [], 0
    for row in rows:
        if not row or not _ROW_ID.fullmatch(row[0] or ""):
            bad += 1   # application output after the header, a cut line
            continue
        ident = _ident(header, row, pos)
        section = cell(row, "section").strip()
        section = SECTION_IDS.get(section, section)
        rule = cell(row, "rule").strip()
        if rule:
            sp = _number(cell(row, "speedup"), dec)
            rules.append({"launch_id": ident["launch_id"], "kernel_name": ident["kernel_name"], "section": section,
                          "rule": rule, "type": cell(row, "type").strip() or None,
                          "description": " ".join(cell(row, "description").split()) or None,
                          "speedup_type": cell(row, "speedup_type").strip() or None, "speedup_pct": sp})
            if not cell(row, "metric").strip():
                continue
        raw = cell(row, "value")
        value, unit = _convert(_number(raw, dec), cell(row, "unit"))
        metrics.append({**ident, "section": section, "metric": cell(row, "metric").strip(), "unit": unit,
                        "value": value, "text": raw.strip()})
    if bad:
        warnings.append(Note("load.ncu_not_data", {"file": base, "n": bad}))
    if not metrics and not rules:
        raise InputError("this ncu details CSV has a header but no data rows", path,
                         "profile again: was any kernel matched by --kernel-name / --launch-skip?")
    frame = pl.DataFrame(metrics, schema=_SCHEMA, orient="row") if metrics else pl.DataFrame(schema=_SCHEMA)
    tables = {"ncu": frame}
    if "Rule Name" in header:
        tables["ncu_rules"] = pl.DataFrame(rules, schema=_RULE_SCHEMA, orient="row") if rules \
            else pl.DataFrame(schema=_RULE_SCHEMA)
    return Part("ncu-details", path, tables, version=_era(header), report="ncu details page", warnings=warnings,
                meta=_meta(frame))


def _read_raw(path: str, header: list[str], rows: list[list[str]], warnings: list[str]) -> Part:
    """The raw page: one row per launch, one column per metric (9,000 of them), made long.

    The cells are gathered launch by launch into one long column (a list comprehension: a few
    launches, thousands of metrics) and converted column-wise by Polars with the rules of
    ``_number`` and ``_convert``; a frame 9,000 columns wide would cost more than the cells."""
    if "Kernel Name" not in header:
        raise InputError("an ncu CSV without a Kernel Name column", path, NCU_HINT)
    units = [""] * len(header)
    if rows and rows[0] and not rows[0][0].strip():   # the units row: empty under the identity columns
        units, rows = rows[0], rows[1:]
    data = [r for r in rows if r and _ROW_ID.fullmatch(r[0] or "")]
    if len(data) < len(rows):
        warnings.append(Note("load.ncu_not_data", {"file": os.path.basename(path), "n": len(rows) - len(data)}))
    if not data:
        raise InputError("this ncu raw CSV has a header but no launches", path,
                         "profile again: was any kernel matched by --kernel-name / --launch-skip?")
    mcols = [i for i, h in enumerate(header) if h not in _IDENT]
    # the metric cells of the first 50 launches (itemgetter: a raw row has 9,000 of them)
    take = operator.itemgetter(*mcols) if len(mcols) > 1 else None
    last = max(mcols, default=-1)
    dec = _decimal_comma(c for r in data[:50]
                         for c in (take(r) if take is not None and len(r) > last else
                                   [r[i] for i in mcols if i < len(r)]))
    raw = pl.Series("raw", [r[i] if i < len(r) else "" for r in data for i in mcols], dtype=pl.String)
    n = len(mcols)
    launch = pl.Series("launch", [k for k in range(len(data)) for _ in range(n)], dtype=pl.UInt32)
    pos = _ident_positions(header)
    idents = pl.DataFrame([_ident(header, r, pos) for r in data],
                          schema={c: _SCHEMA[c] for c in COLUMNS[:COLUMNS.index("section")]}, orient="row")
    long = pl.DataFrame({
        "raw": raw,
        "metric": pl.Series([header[i] for i in mcols] * len(data), dtype=pl.String),
        "unit_cell": pl.Series([units[i] if i < len(units) else "" for i in mcols] * len(data), dtype=pl.String)})
    frame = pl.concat([idents[launch], long.select(
        pl.lit(None, pl.String).alias("section"), "metric", *_value_exprs(pl.col("raw"), pl.col("unit_cell"), dec),
        pl.col("raw").str.strip_chars().alias("text"))], how="horizontal").select(COLUMNS)
    return Part("ncu-raw", path, {"ncu_raw": frame}, version=_era(header), report="ncu raw page",
                warnings=warnings, meta=_meta(frame))


def _value_exprs(raw: pl.Expr, unit: pl.Expr, decimal_comma: bool) -> list[pl.Expr]:
    """``_convert(_number(raw), unit)`` column-wise -> the ``value`` and ``unit`` columns."""
    s = raw.str.strip_chars()
    s = s.str.replace_all(".", "", literal=True).str.replace_all(",", ".", literal=True) if decimal_comma \
        else s.str.replace_all(",", "", literal=True)
    s = s.str.replace_all("\u2019", "", literal=True).str.replace_all("'", "", literal=True) \
         .str.replace_all(" ", "", literal=True)
    number = pl.when(s.str.contains(_NUMBER.pattern)).then(s).otherwise(None).cast(pl.Float64, strict=False)
    u = unit.str.strip_chars()
    factor = u.str.to_lowercase().replace_strict({k: f for k, (f, _) in UNITS.items()}, default=None,
                                                  return_dtype=pl.Float64)
    canon = u.str.to_lowercase().replace_strict({k: c for k, (_, c) in UNITS.items()}, default=None,
                                                 return_dtype=pl.String)
    return [pl.coalesce(canon, u).alias("unit"),
            pl.when(factor.is_not_null()).then(number * factor).otherwise(number).alias("value")]


def _meta(frame: pl.DataFrame) -> dict:
    """What the report says about the GPU (compute capability, device name on the raw page)."""
    meta: dict = {}
    cc = frame["cc"].drop_nulls().unique().sort().to_list() if frame.height else []
    if cc:
        meta["ncu_compute_capability"] = cc
    name = frame.filter(pl.col("metric") == "device__attribute_display_name")["text"].unique().to_list() \
        if frame.height else []
    if name:
        meta["ncu_device"] = name
    return meta
