"""Find `nsys stats` tables inside any text file: console output, job logs, Markdown documents.

What users paste is the text `nsys stats` (or `nsys profile --stats=true`) printed, with everything
around it: NOTICE blocks, `Processing [...]` and ` ** Title (report):` lines, `[n/8] Executing 'x'
stats report` steps, progress bars (one per line or joined with `\\r`), `SKIPPED:` lines, the
application's own output, Markdown fences and indentation (input-formats.md 1.2 and 4).

Three table layouts are recognised, wherever they start:
- *column* (the console default): a header line, a line of dashes, rows; a blank line ends it. The
  dash groups give the column boundaries, so cells with spaces inside (kernel names, GridXYZ values
  such as ``  32    1    1``) stay whole;
- *table* (``--format table``): ``+---+`` borders, ``|`` separators;
- Markdown pipe tables (``| a | b |`` over ``|---|---|``), what people make of the two above.

A header is accepted only when its cells match a known report signature (``schema.match_header``);
the cells are mapped and converted exactly as in the CSV path (``schema.column_plan``, the unit
factors, ``csv_reports._scale``). Which report a table is comes from its header, and, where two
reports share one header (cuda_api_sum / osrt_sum), from the nearest title line before it
(``[5/8] Executing 'cuda_api_sum'``, `` ** CUDA API Summary (cuda_api_sum):``,
``Processing [...] with [.../cuda_api_sum.py]``, 2020-2021 ``CUDA API Statistics:``), failing that
from the row names (``normalize.looks_like_api_names``).

Numbers: thousands separators ``,`` ``’`` ``'`` and narrow / no-break spaces are removed; a file whose
numbers use a decimal comma (``33.024,0``, ``50,0``) is read as European throughout.

Several runs in one file (a README that pastes five ``--stats=true`` outputs): a run ends when a
report seen already comes again, when a new ``--stats=true`` run starts (``[1/8]``, ``Generating
'....qdstrm'``) or when the ``Processing [x.sqlite]`` file changes. The first run is diagnosed and
a warning names the others (where they start) and asks to split the file: one profile per diagnosis,
as everywhere else in nsys-expert, but a pasted README still gives a report.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import polars as pl

from . import Part, csv_reports, normalize, schema

# ------------------------------------------------------------------------------ lines around tables
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_QUOTED = re.compile(r"^(\s*)(#+|//|>+)(?=\s|$)")
_EXECUTING = re.compile(r"Executing '([\w.:-]+)' stats report")
_TITLE = re.compile(r"^\s*\*\*\s+.*\(([\w.:-]+)\):\s*$")                # ' ** CUDA API Summary (cuda_api_sum):'
_SCRIPT = re.compile(r"reports[/\\]([\w-]+)\.py")                        # 'Processing [x] with [.../osrt_sum.py]'
_PROCESSING = re.compile(r"Processing \[(.+?)\] with \[")
_SKIPPED = re.compile(r"^\s*SKIPPED:")
# a new `nsys profile --stats=true` run: '[1/8] [===100%] x.nsys-rep', "Generating '/tmp/nsys-report-2ee6.qdstrm'"
_RUN_START = re.compile(r"^\s*\[1/\d+\]|\.qdstrm['\"]")
# fast pre-check: a line with none of these is no marker (most lines of a log)
_ANY_MARKER = re.compile(r"\[1/|qdstrm|Processing \[|Executing '|\*\*|reports[/\\]|Statistics|SKIPPED")
# 2020-2021 `--stats=true` section titles (no report name); the size title may carry its unit
_OLD_TITLES = [
    (re.compile(r"^\s*CUDA API Statistics:\s*$"), "api_sum"),
    (re.compile(r"^\s*CUDA Kernel Statistics:\s*$"), "kern_sum"),
    (re.compile(r"^\s*CUDA Memory Operation Statistics \(by time\):\s*$"), "mem_time_sum"),
    (re.compile(r"^\s*CUDA Memory Operation Statistics \(by size(?: in (\w+))?\):\s*$"), "mem_size_sum"),
    (re.compile(r"^\s*Operating System Runtime API Statistics:\s*$"), "osrt_sum"),
    (re.compile(r"^\s*NVTX Push-Pop Range Statistics:\s*$"), "nvtx_pushpop_sum"),
]
_TITLE_SIZE_UNITS = {"kib": 1024.0, "kb": 1e3, "mib": 1024.0 ** 2, "mb": 1e6, "b": 1.0, "bytes": 1.0}

# ------------------------------------------------------------------------------ table layouts
_DASHES = re.compile(r"^[ -]*-[ -]*$")                                    # ' --------  -----  ----'
_BORDER = re.compile(r"^\s*\+(?:-+\+)+\s*$")                              # '+------+-----+'
_MD_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")  # '|---|:---:|'
_FENCE = re.compile(r"^\s*(```|~~~)")

# ------------------------------------------------------------------------------ numbers
_NUMBER = re.compile(r"^[+-]?[\d.,’'\u202f\u00a0 ]*\d(?:[eE][+-]?\d+)?$")
_NULLS = {"", "-", "n/a", "none", "nan"}
# a decimal comma: '33.024,0' or '50,0' / '861,25' (US output never ends in a comma and 1-2 digits)
_EUROPEAN = re.compile(r"^[+-]?\d{1,3}(?:\.\d{3})+,\d+$|^[+-]?\d+,\d{1,2}$")
_GROUPING = str.maketrans("", "", "’'\u202f\u00a0 ")
_TRUNCATED = "…"
_NAME_COLS = ("name", "kernel_name", "api_name")


@dataclass
class _Table:
    """One table as printed: header cells, row cells (text), where it was and what preceded it."""
    line: int                      # line number of the header in the file
    cells: list[str]
    rows: list[list[str]]
    context: str | None            # report name or canonical table named by the nearest title line
    size_factor: float | None = None   # 2020 '(by size in KiB)' titles: the unit of unit-less size columns
    skipped_lines: int = 0         # non-table lines found between rows (application output)
    end: int = 0                   # line number of the last line read


@dataclass
class _Run:
    start: int
    tables: dict[str, tuple[pl.DataFrame, _Table | None]] = field(default_factory=dict)
    sqlite: str | None = None
    eras: set[str] = field(default_factory=set)
    end: int = 0


def read_console(path: str) -> Part | None:
    """-> Part with one canonical frame per table of the first run, or None when no table is found."""
    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8", errors="replace")
    events = list(_scan(*_split_lines(text)))
    tables = [e for e in events if isinstance(e, _Table)]
    european = _is_european(tables)
    base = os.path.basename(path)
    file_report = schema.report_name_from_filename(base)  # 'prof_cuda_api_sum.txt' (-f column -o prof)
    runs: list[_Run] = [_Run(start=0)]
    unused: list[str] = []
    for ev in events:
        run = runs[-1]
        if isinstance(ev, tuple):
            what, line_no, arg = ev
            if what == "start" and run.tables:
                runs.append(_Run(start=line_no))
            elif what == "sqlite":
                if run.tables and run.sqlite and arg != run.sqlite:
                    runs.append(_Run(start=line_no, sqlite=arg))
                else:
                    run.sqlite = arg
            elif what == "skipped" and arg in schema.SPEC_BY_TABLE:   # the report ran and found nothing
                if arg in run.tables:
                    run = _new_run(runs, line_no)
                run.tables[arg] = (normalize.empty_frame(arg), None)
                run.end = line_no
            continue
        table, frame, era = _convert(ev, european, file_report)
        if table is None:
            unused.append(ev.context)
            continue
        if table in run.tables:
            run = _new_run(runs, ev.line)
        run.tables[table] = (frame, ev)
        run.eras.add(era)
        run.end = ev.end
    runs = [r for r in runs if r.tables]
    if not runs:
        return None
    first = runs[0]
    warnings = _warnings(base, first, runs, unused)
    frames = {t: f for t, (f, _) in first.tables.items()}
    era = next((e for e in ("2020-2021", "2021-2022", "2023+") if e in first.eras), "2023+")
    return Part(kind="nsys-console", path=path, tables=frames, version=era, warnings=warnings)


def _warnings(base: str, first: _Run, runs: list[_Run], unused: list[str]) -> list[str]:
    out = []
    if len(runs) > 1:
        others = ", ".join(str(_first_line(r)) for r in runs[1:])
        out.append(f"{base} holds {len(runs)} runs of nsys output (separate sets of stats tables; the others "
                   f"start at lines {others}): only the first (lines {_first_line(first)}-{first.end}) was "
                   f"diagnosed; split the file, one run per file, to diagnose the others")
    truncated = 0
    for table, (frame, t) in first.tables.items():
        truncated += sum(int(frame[c].str.ends_with(_TRUNCATED).sum()) for c in _NAME_COLS
                         if c in frame.columns and frame[c].dtype == pl.String)
        if t is not None and t.skipped_lines:
            out.append(f"{base}: {t.skipped_lines} line(s) inside the {table} table (line {t.line}) are not "
                       f"table rows (application output?) and were skipped")
    if truncated:
        out.append(f"{base}: {truncated} name(s) were cut by nsys with '…' (column/table output keeps 100 "
                   f"characters); they are kept as printed, so matching them with Nsight Compute kernel names "
                   f"may miss (print with --format column:nolimit or export --format csv for full names)")
    if unused:
        out.append(f"{base}: tables of reports nsys-expert does not use were skipped: "
                   + ", ".join(sorted(set(unused))))
    return out


def _new_run(runs: list[_Run], line_no: int) -> _Run:
    runs.append(_Run(start=line_no))
    return runs[-1]


def _first_line(run: _Run) -> int:
    lines = [t.line for _, t in run.tables.values() if t is not None]
    return min(lines) if lines else run.start


def _split_lines(text: str) -> tuple[list[str], list[int]]:
    """Lines, with progress bars joined by '\\r' split apart, terminal colour codes removed, and
    comment / quote markers that prefix pasted output ('# ', '// ', '> ') blanked out (replaced by
    spaces, so the column positions of a quoted table do not move); with each line's number in the
    file (as an editor counts them, so a '\\r'-joined line keeps one number)."""
    lines, numbers = [], []
    for no, line in enumerate(_ANSI.sub("", text.replace("\r\n", "\n")).split("\n"), 1):
        for part in line.split("\r"):
            if part.lstrip().startswith(("#", "//", ">")):
                part = _QUOTED.sub(lambda m: m.group(1) + " " * len(m.group(2)), part)
            lines.append(part)
            numbers.append(no)
    return lines, numbers


# ------------------------------------------------------------------------------ scanning
def _scan(lines: list[str], numbers: list[int]):
    """Yield _Table objects and marker tuples (kind, line number, argument) in file order."""
    context: str | None = None
    size_factor: float | None = None
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if _ANY_MARKER.search(line):            # most lines of a log are none of these: skip the regexes
            if _RUN_START.search(line):
                yield ("start", numbers[i], None)
            m = _PROCESSING.search(line)
            if m:
                yield ("sqlite", numbers[i], m.group(1))
            m = _EXECUTING.search(line) or _TITLE.match(line) or _SCRIPT.search(line)
            if m:
                context, size_factor = m.group(1).split(":")[0].lower(), None
            for rx, table in _OLD_TITLES:
                mt = rx.match(line)
                if mt:
                    context = table
                    unit = mt.group(1).lower() if mt.groups() and mt.group(1) else None
                    size_factor = _TITLE_SIZE_UNITS.get(unit) if unit else None
            if _SKIPPED.match(line):
                if context:
                    yield ("skipped", numbers[i], _table_of(context))
                context = None
        found = _table_at(lines, i)
        if found is None:
            i += 1
            continue
        table, j = found
        table.line, table.end = numbers[table.line], numbers[j - 1]
        table.context, table.size_factor = context, size_factor
        context, size_factor = None, None
        yield table
        i = j


def _table_of(context: str) -> str | None:
    """Canonical table for a report name or a title's table (None for reports not used)."""
    if context in schema.SPEC_BY_TABLE:
        return context
    spec = schema.SPEC_BY_NAME.get(context)
    return spec.table if spec else None


def _header_matches(cells: list[str]) -> bool:
    return bool(schema.match_header([schema.split_header_cell(c)[0] for c in cells]))


def _table_at(lines: list[str], i: int):
    """(_Table, index after it) when a table's header starts at line i, else None."""
    line = lines[i]
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    if not (nxt.lstrip().startswith("-") or line.lstrip().startswith("+") or "|" in line):
        return None
    # column format: header, then dashes whose groups give the column boundaries
    if line.strip() and _DASHES.match(nxt) and len(re.findall(r"-+", nxt)) >= 2:
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", nxt)]
        cells = _cut(line, spans)
        if _header_matches(cells):
            return _rows(lines, i, i + 2, lambda s: _cut(s, spans), cells, "column")
    # table format: border, header, border
    if _BORDER.match(line) and i + 2 < len(lines) and _BORDER.match(lines[i + 2]):
        plus = [k for k, c in enumerate(line) if c == "+"]

        def cut(s):
            # cells between the positions of the border's '+' (a '|' inside a name is kept); a row whose
            # separators are elsewhere (edited by hand) is split on '|'
            if all(k < len(s) and s[k] == "|" for k in plus):
                return [s[a + 1:b].strip() for a, b in zip(plus, plus[1:])]
            return _pipe_cells(s)
        cells = cut(lines[i + 1])
        if _header_matches(cells):
            return _rows(lines, i + 1, i + 3, cut, cells, "table")
    # Markdown pipe table: header, then |---|---|
    if "|" in line and _MD_RULE.match(nxt):
        cells = _pipe_cells(line)
        if _header_matches(cells):
            return _rows(lines, i, i + 2, _pipe_cells, cells, "markdown")
    return None


def _cut(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Cells of a column-format line: column k runs from the end of dash group k-1 to the end of
    group k (numbers are right-aligned to the group's end, text starts at its start); the last
    column runs to the end of the line."""
    cells = []
    for k, (_, end) in enumerate(spans):
        a = spans[k - 1][1] if k else 0
        b = end if k < len(spans) - 1 else len(line)
        cells.append(line[a:b].strip())
    return cells


def _pipe_cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip().strip("`").replace("**", "").strip() for c in s.split("|")]


def _rows(lines, header_idx, first_row, cut, cells, fmt):
    """Collect rows from first_row until a blank line, a border, a fence or another section."""
    plan = schema.column_plan(cells)
    numeric = [k for k, p in enumerate(plan) if p[2] != "str"]
    text_last = numeric == list(range(len(cells) - 1))  # only the last column is text: whitespace split works
    rows: list[list[str]] = []
    skipped = pending = 0
    j = first_row
    while j < len(lines):
        s = lines[j]
        if (not s.strip() or _BORDER.match(s) or _FENCE.match(s) or _MD_RULE.match(s) or _SKIPPED.match(s)
                or _EXECUTING.search(s) or _TITLE.match(s) or _PROCESSING.search(s)
                or (j + 1 < len(lines) and _DASHES.match(lines[j + 1]) and len(re.findall(r"-+", lines[j + 1])) >= 2)):
            break
        row = cut(s)
        if not _row_ok(row, numeric, len(cells)) and text_last and fmt == "column":
            row = s.split(None, len(cells) - 1)     # misaligned copy: numbers first, then the name
        if _row_ok(row, numeric, len(cells)):
            rows.append(row)
            skipped += pending
            pending = 0
        else:
            pending += 1
        j += 1
    t = _Table(line=header_idx, cells=cells, rows=rows, context=None, skipped_lines=skipped)  # index; _scan numbers it
    return t, max(j, first_row)


def _row_ok(row: list[str], numeric: list[int], width: int) -> bool:
    if len(row) != width:
        return False
    filled = 0
    for k in numeric:
        v = row[k].strip()
        if v.lower() in _NULLS:
            continue
        if not _NUMBER.match(v):
            return False
        filled += 1
    return filled > 0


def _is_european(tables: list[_Table]) -> bool:
    """One decimal comma anywhere decides for the whole file (one nsys run writes one locale)."""
    for t in tables:
        numeric = [k for k, p in enumerate(schema.column_plan(t.cells)) if p[2] != "str"]
        for row in t.rows:
            if any(_EUROPEAN.match(row[k].translate(_GROUPING)) for k in numeric):
                return True
    return False


def _number_text(v: str, european: bool) -> str | None:
    v = v.strip().translate(_GROUPING)
    if v.lower() in _NULLS:
        return None
    return v.replace(".", "").replace(",", ".") if european else v.replace(",", "")


# ------------------------------------------------------------------------------ frames
def _convert(t: _Table, european: bool, file_report: str | None):
    """(canonical table or None, frame, era) for one parsed table."""
    labels = [schema.split_header_cell(c)[0] for c in t.cells]
    cands = schema.match_header(labels)
    context = t.context or file_report
    if context and context in schema.UNUSED_REPORT_NAMES:
        return None, None, None      # e.g. syscall_sum / openacc_sum share osrt_sum's / cuda_api_sum's header
    named = _table_of(context) if context else None
    spec = schema.SPEC_BY_TABLE.get(named) if named else None
    if spec not in cands:
        spec = cands[0]
    plan = schema.column_plan(t.cells)
    if spec.table == "mem_size_sum" and t.size_factor:
        plan = [_size_column(p, t.size_factor) for p in plan]
    data = {}
    for k, (cell, name, cls, factor) in enumerate(plan):
        col = [r[k].strip() or None for r in t.rows]
        if cls != "str":
            col = [_number_text(v, european) if v is not None else None for v in col]
        data[f"c{k}"] = pl.Series(f"c{k}", col, dtype=pl.String)
    raw = pl.DataFrame(data) if t.rows else pl.DataFrame({f"c{k}": pl.Series([], dtype=pl.String)
                                                          for k in range(len(plan))})
    exprs = []
    for k, (cell, name, cls, factor) in enumerate(plan):
        col = pl.col(f"c{k}")
        if cls == "str":
            exprs.append(col.alias(name))
        else:
            dtype = csv_reports._dtype(name, cls, factor)
            if dtype == pl.Int64:   # integers printed as '1,376.0' or '20.000' (European) still parse
                col = col.cast(pl.Float64, strict=False).round(0)
            exprs.append(csv_reports._scale(col.cast(dtype, strict=False), name, cls, factor))
    frame = raw.select(exprs)
    table = spec.table
    if table in ("api_sum", "osrt_sum") and named not in ("api_sum", "osrt_sum"):
        table = "api_sum" if normalize.looks_like_api_names(frame) else "osrt_sum"
    return table, frame, _era(t, context)


def _size_column(p: tuple, factor: float) -> tuple:
    """2020 '... (by size in KiB):' tables print unit-less 'Total  Operations  Average ...' columns:
    the sizes take the title's unit (the count stays a count)."""
    cell, name, cls, f = p
    if cls == "str" or name == "count" or schema.split_header_cell(cell)[1] is not None:
        return p
    return cell, "total_bytes" if name == "total_bytes" else name.replace("_ns", "_bytes"), "bytes", factor


def _era(t: _Table, context: str | None) -> str:
    """Which generation of `nsys stats` printed this table (the CSV path's eras)."""
    cells = [c.strip() for c in t.cells]
    if "Time(%)" in cells or any(c.startswith(("Average", "Minimum")) for c in cells):
        return "2020-2021"
    spec = schema.SPEC_BY_NAME.get(context or "")
    old_name = spec is not None and context != spec.names[0]
    if old_name or "GridXYZ" in cells or "Throughput (MBps)" in cells:
        return "2021-2022"
    return "2023+"
