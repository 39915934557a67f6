"""Read `nsys stats` tables found inside any text file: console output, job logs, Markdown documents.

What users paste is the text `nsys stats` (or `nsys profile --stats=true`) printed, with everything
around it: NOTICE / WARNING blocks, `Processing [...]` and ` ** Title (report):` lines, `[n/8]
Executing 'x' stats report` steps, progress bars (one per line or joined with `\\r`), `SKIPPED:`
lines, the application's own output, Markdown fences and indentation (input-formats.md 1.2 and 4).
``console_scan`` finds the sections and tables (column, ``--format table``, Markdown pipe tables,
CSV / TSV printed to the console); this module turns them into canonical frames and runs.

A header is accepted only when its cells match a known report signature (``schema.match_header``);
the cells are mapped and converted exactly as in the CSV path (``schema.column_plan``, the unit
factors, ``csv_reports.scaled``). Which report a table is comes from its header, and, where two
reports share one header (cuda_api_sum / osrt_sum), from the section it is in
(``[5/8] Executing 'cuda_api_sum'``, `` ** CUDA API Summary (cuda_api_sum):``,
``Processing [...] with [.../cuda_api_sum.py]``, 2020-2021 ``CUDA API Statistics:``), failing that
from the row names (``normalize.looks_like_api_names``). A section of a used report that gives no
table, and a table-like block that cannot be read, are warnings naming the section and the line.

Numbers: thousands separators ``,`` ``’`` ``'`` and narrow / no-break spaces are removed; a file whose
numbers use a decimal comma (``33.024,0``, ``50,0``) is read as European throughout.

Several runs in one file (a README that pastes five ``--stats=true`` outputs): a run ends when a
report seen already comes again, when a new ``--stats=true`` run starts (``[1/8]``, ``Generating
'....qdstrm'``) or when the ``Processing [x.sqlite]`` file changes. The first run is diagnosed and
a warning gives every run's lines and the ``csplit`` command that writes one file per run: one
profile per diagnosis, as everywhere else in nsys-expert, but a pasted README still gives a report.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

import polars as pl

from ..notes import Note
from . import compressed, console_eras, csv_reports, normalize, schema
from .profile import Part
from .console_scan import NULLS, Table, scan, split_lines, table_of

# a decimal comma: '33.024,0' or '50,0' / '861,25' (US output never ends in a comma and 1-2 digits)
_EUROPEAN = re.compile(r"^[+-]?\d{1,3}(?:\.\d{3})+,\d+$|^[+-]?\d+,\d{1,2}$")
_GROUPING_RX = "[’'\u202f\u00a0 ]"           # thousands separators: apostrophes, narrow / no-break spaces
_TRUNCATED = "…"
_NAME_COLS = ("name", "kernel_name", "api_name")


@dataclass
class _Run:
    start: int                     # first line of the run (the line after the previous run's last table)
    tables: dict[str, tuple[pl.DataFrame, Table | None]] = field(default_factory=dict)
    sqlite: str | None = None
    eras: set[str] = field(default_factory=set)
    end: int = 0                   # last line of its last table
    lost: list[Note] = field(default_factory=list)


def console_max() -> int:
    """The largest console text read (``NSX_CONSOLE_MAX_BYTES``, 512 MiB): it is held whole, as text and
    as lines (about 5x its size); a 2.5 GB log took more than 6 GiB."""
    return int(float(os.environ.get("NSX_CONSOLE_MAX_BYTES") or (512 << 20)))


def read_console(path: str) -> Part | None:
    """-> Part with one canonical frame per table of the first run; a Part without tables (its
    warnings say why) when sections were found but none of their tables could be read; None when
    the text holds no nsys stats output at all."""
    text = compressed.read_all(path, console_max(), "console text").decode("utf-8", errors="replace")
    events = list(scan(*split_lines(text)))
    tables = [e for e in events if isinstance(e, Table)]
    european = _is_european(tables)
    base = os.path.basename(path)
    file_report = schema.report_name_from_filename(compressed.logical_name(path))  # 'prof_cuda_api_sum.txt'
    runs: list[_Run] = [_Run(start=1)]
    unused: list[str] = []
    for ev in events:
        run = runs[-1]
        if isinstance(ev, tuple):
            what, line_no, arg = ev
            if what == "start" and run.tables:
                _new_run(runs)
            elif what == "sqlite":
                if run.tables and run.sqlite and arg != run.sqlite:
                    _new_run(runs).sqlite = arg
                else:
                    run.sqlite = arg
            elif what == "skipped" and arg in schema.SPEC_BY_TABLE:   # the report ran and found nothing
                if arg in run.tables:
                    run = _new_run(runs)
                run.tables[arg] = (normalize.empty_frame(arg), None)
                run.end = line_no
            elif what == "lost":
                report, why = arg
                run.lost.append(Note("load.console_lost_section", {"file": base, "report": report, "line": line_no,
                                                                   "why": why}) if report else
                                Note("load.console_lost_line", {"file": base, "line": line_no, "why": why}))
            continue
        table, frame, era = _convert(ev, european, file_report)
        if table is None:
            unused.append(ev.context)
            continue
        if table.endswith("_sum") and "name" in frame.columns and frame["name"].null_count():
            # nsys prints a summary row's name last: a row without one was cut inside its numbers
            n = frame["name"].null_count()
            frame = frame.filter(pl.col("name").is_not_null())
            run.lost.append(Note("load.console_cut_rows", {"file": base, "n": n, "table": table, "line": ev.line + 1}))
        if table in run.tables:
            run = _new_run(runs)
        run.tables[table] = (frame, ev)
        run.eras.add(era)
        run.end = ev.end
    if not any(r.tables for r in runs):
        lost = [w for r in runs for w in r.lost]
        # sections of used reports whose tables could not be read: say so (the loader names the file)
        return Part(kind="nsys-console", path=path, warnings=lost) if lost else None
    # a run that read nothing hands its warnings to the one before (or after) it
    for k, r in enumerate(runs):
        if not r.tables and r.lost:
            (runs[k - 1] if k else next(x for x in runs if x.tables)).lost += r.lost
    runs = [r for r in runs if r.tables]
    first = runs[0]
    warnings = first.lost + _warnings(path, first, runs, unused)
    frames = {t: f for t, (f, _) in first.tables.items()}
    era = next((e for e in ("2020-2021", "2021-2022", "2023+") if e in first.eras), "2023+")
    return Part(kind="nsys-console", path=path, tables=frames, version=era, warnings=warnings)


def _warnings(path: str, first: _Run, runs: list[_Run], unused: list[str]) -> list[Note]:
    base = os.path.basename(path)
    out = []
    if len(runs) > 1:
        out.append(split_advice(path, [r.start for r in runs]))
    truncated, cut = 0, []
    for table, (frame, t) in first.tables.items():
        n = sum(int(frame[c].str.ends_with(_TRUNCATED).sum()) for c in _NAME_COLS
                if c in frame.columns and frame[c].dtype == pl.String)
        truncated += n
        if n:
            cut.append(table)
        if t is not None and t.skipped_lines:
            out.append(Note("load.console_skipped_lines", {"file": base, "n": t.skipped_lines, "table": table,
                                                           "line": t.line, "first": t.first_skipped}))
    if truncated:
        # the tables with cut names: said only where one of them is used (load/__init__.py, _said_of_parts)
        out.append(Note("load.console_truncated", {"file": base, "n": truncated, "k": 100, "tables": tuple(cut)}))
    if unused:
        out.append(Note("load.console_unused", {"file": base, "tables": tuple(sorted(set(unused)))}))
    return out


def split_advice(path: str, starts: list[int]) -> Note:
    """The several-runs warning: each run's lines, and a csplit command that writes one file per run
    (csplit splits before each line number given: run00 is lines 1 to starts[1] - 1, and so on)."""
    base = os.path.basename(path)
    n = len(starts)
    bounds = [Note("phrase.run_lines", {"n": k + 1, "lines": f"{a}-{starts[k + 1] - 1}"})
              for k, a in enumerate(starts[:-1])]
    bounds.append(Note("phrase.run_lines", {"n": n, "lines": f"{starts[-1]}-end"}))
    stem = re.sub(r"[^\w.-]", "_", os.path.splitext(compressed.logical_name(path))[0]) + "_run"
    cuts = " ".join(str(a) for a in starts[1:])
    src = shlex.quote(path)
    if compressed.is_gzip(path):
        cmd = f"gzip -dc {src} | csplit -s -f {stem} -b '%02d.txt' - {cuts}"
        one = f"gzip -dc {src} | sed -n '{starts[1]},{(starts[2] - 1) if n > 2 else '$'}p' > {stem}01.txt"
    else:
        cmd = f"csplit -s -f {stem} -b '%02d.txt' {src} {cuts}"
        one = f"sed -n '{starts[1]},{(starts[2] - 1) if n > 2 else '$'}p' {src} > {stem}01.txt"
    return Note("load.console_runs", {"file": base, "n": n, "bounds_clauses": tuple(bounds), "csplit": cmd,
                                      "first": f"{stem}00.txt", "last": f"{stem}{n - 1:02d}.txt", "sed": one})


def _new_run(runs: list[_Run]) -> _Run:
    """A new run starts on the line after the previous run's last table (its title, its preamble and
    the application output before it belong to it)."""
    prev = runs[-1]
    runs.append(_Run(start=prev.end + 1 if prev.end else prev.start))
    return runs[-1]


def _columns(t: Table, ks: list[int]) -> pl.DataFrame:
    """The text cells of columns ``ks`` of a table, one String column each (c<k>)."""
    return pl.DataFrame({f"c{k}": pl.Series([r[k] for r in t.rows], dtype=pl.String) for k in ks})


def _is_european(tables: list[Table]) -> bool:
    """One decimal comma anywhere decides for the whole file (one nsys run writes one locale)."""
    cells = []
    for t in tables:
        numeric = [k for k, p in enumerate(schema.column_plan(t.cells)) if p[2] != "str"]
        # a row cut inside its numbers ('1,07' of '1,075.7') has no name: it must not decide the locale
        cells += [row[k] for row in t.rows if row and row[-1].strip() for k in numeric]
    return bool(cells) and bool(pl.Series(cells, dtype=pl.String).str.replace_all(_GROUPING_RX, "")
                                .str.contains(_EUROPEAN.pattern).any())


def _number_text(cols: list[str], european: bool) -> pl.Expr:
    """Text of numbers as Polars parses it (one expression for all the columns): separators out,
    decimal comma to point, nulls for blank / n/a (numbers have no letters but e, so lower case is safe)."""
    v = pl.col(cols).str.strip_chars().str.replace_all(_GROUPING_RX, "").str.to_lowercase()
    v = v.replace(sorted(NULLS), None)
    if european:
        return v.str.replace_all(".", "", literal=True).str.replace_all(",", ".", literal=True)
    return v.str.replace_all(",", "", literal=True)


# ------------------------------------------------------------------------------ frames
def _convert(t: Table, european: bool, file_report: str | None):
    """(canonical table or None, frame, era) for one parsed table."""
    labels = [schema.split_header_cell(c)[0] for c in t.cells]
    cands = schema.match_header(labels)
    context = t.context or file_report
    if context and context in schema.UNUSED_REPORT_NAMES:
        return None, None, None      # e.g. syscall_sum / openacc_sum share osrt_sum's / cuda_api_sum's header
    named = table_of(context) if context else None
    spec = schema.SPEC_BY_TABLE.get(named) if named else None
    if spec not in cands:
        spec = cands[0]
    plan = schema.column_plan(t.cells)
    if spec.table == "mem_size_sum":          # unit-less sizes: the title's unit, else KiB (console_eras)
        plan = [_size_column(p, t.size_factor or console_eras.UNITLESS_SIZE) for p in plan]
    raw = _columns(t, list(range(len(plan))))
    texts = [f"c{k}" for k, p in enumerate(plan) if p[2] == "str"]
    numbers = [f"c{k}" for k, p in enumerate(plan) if p[2] != "str"]
    clean = [pl.col(texts).str.strip_chars().replace("", None)] if texts else []
    raw = raw.with_columns(clean + ([_number_text(numbers, european)] if numbers else []))
    exprs = []
    for k, (cell, name, cls, factor) in enumerate(plan):
        col = pl.col(f"c{k}")
        if cls == "str":
            exprs.append(col.alias(name))
        else:
            dtype = csv_reports.column_dtype(name, cls, factor)
            if dtype == pl.Int64:   # integers printed as '1,376.0' or '20.000' (European) still parse
                col = col.cast(pl.Float64, strict=False).round(0)
            exprs.append(csv_reports.scaled(col.cast(dtype, strict=False), name, cls, factor))
    frame = raw.select(exprs)
    table = spec.table
    if table in ("api_sum", "osrt_sum") and named not in ("api_sum", "osrt_sum"):
        table = "api_sum" if normalize.looks_like_api_names(frame) else "osrt_sum"
    return table, frame, _era(t, context)


def _size_column(p: tuple, factor: float) -> tuple:
    """2019.5-2021 size tables print unit-less 'Total  Operations  Average ...' columns: the sizes
    take the title's unit ('(KiB)', '(by size in KiB):'), KiB without a title (2021 `nsys stats`);
    the count stays a count."""
    cell, name, cls, f = p
    if cls == "str" or name == "count" or schema.split_header_cell(cell)[1] is not None:
        return p
    return cell, "total_bytes" if name == "total_bytes" else name.replace("_ns", "_bytes"), "bytes", factor


def _era(t: Table, context: str | None) -> str:
    """Which generation of `nsys stats` printed this table (the CSV path's eras)."""
    cells = [c.strip() for c in t.cells]
    if "Time(%)" in cells or any(c.startswith(("Average", "Minimum")) for c in cells):
        return "2020-2021"
    spec = schema.SPEC_BY_NAME.get(context or "")
    old_name = spec is not None and context != spec.names[0]
    if old_name or "GridXYZ" in cells or "Throughput (MBps)" in cells:
        return "2021-2022"
    return "2023+"
