"""Find the `nsys stats` sections and tables in a text file (used by ``console.py``, which turns
them into frames and runs).

The text is first cleaned (``split_lines``): ``\\r``-joined progress bars are split, colour codes and
comment / quote prefixes removed, and nsys's own notices left out, wherever they are: the
``NOTICE:`` / ``WARNING: Existing SQLite export found`` blocks (with their indented lines),
``Generating SQLite file``, ``Exporting N events``, ``Exported successfully to``, ``Using x.sqlite
for SQL queries``. Such a line (stderr, interleaved with stdout in a captured log) may fall between
a header and its dashes or among the rows; it neither ends nor eats a table.

Sections are found by their report header in every era: ``Processing [x.sqlite] with
[.../reports/cuda_api_sum.py]...`` (2022+), `` ** CUDA API Summary (cuda_api_sum):`` (2022+),
``[5/8] Executing 'cuda_api_sum' stats report`` (``--stats=true``, 2022.4+), ``Running
[.../reports/cudaapisum.py x.sqlite]...`` (2021), ``CUDA API Statistics:`` (2020-2021
``--stats=true``), ``CUDA API Statistics (nanoseconds)`` (2019.5-2020.1; these titles are in
``console_eras``). Tables are found by their header, in four layouts: *column* (header, dashes),
*table* (``+---+`` borders), Markdown pipe tables, and *CSV / TSV* (``nsys stats --format csv``
printed to the console, its sections between the same Processing / title lines).

``scan`` yields, in file order: ``Table`` objects and marker tuples ``(kind, line, argument)``:
``start`` (a new ``--stats=true`` run), ``sqlite`` (the file a ``Processing`` line names),
``skipped`` (a ``SKIPPED:`` report), ``lost`` (a section of a used report, or a table-like block,
that gave no table: argument ``(report, why)``). Line numbers are the file's, as an editor counts them.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass

import polars as pl

from ..notes import Note
from . import console_eras, schema

# ------------------------------------------------------------------------------ lines around tables
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_QUOTED = re.compile(r"^(\s*)(#+|//|>+)(?=\s|$)")
_EXECUTING = re.compile(r"Executing '([\w.:-]+)' stats report")
_TITLE = re.compile(r"^\s*\*\*\s+.*\(([\w.:-]+)\):\s*$")                # ' ** CUDA API Summary (cuda_api_sum):'
_SCRIPT = re.compile(r"reports[/\\]([\w-]+)\.py")                        # 'Processing [x] with [.../osrt_sum.py]'
_PROCESSING = re.compile(r"Processing \[(.+?)\] with \[")
_RUNNING = re.compile(r"^\s*Running \[")                                 # 2021: 'Running [.../cudaapisum.py x.sqlite]...'
# a section line as nsys prints it (at the start of the line): only such a section is missed aloud
# (a README that mentions "`[6/8] Executing 'gpukernsum' stats report`" in its prose is no section)
_AS_PRINTED = re.compile(r"^\s*(?:\[\d+/\d+\]\s*)?(?:Executing '|Processing \[|Running \[|\*\*\s)")
_SKIPPED = re.compile(r"^\s*SKIPPED:|\]\.\.\.\s*SKIPPED:")        # 2021: 'Running [...]... SKIPPED: ...'
_NOISE = re.compile(r"^\s*(?:NOTICE:|WARNING:|Generating SQLite file\b|Exporting \d+ events|Exported successfully to\b"
                    r"|Using \S+ for SQL queries|Processing \d+ events)")
_NOISE_GOES_ON = re.compile(r"^\s{4,}\S(?:(?! {2}|\|).)*$")               # indented prose, no column gaps
# a new `nsys profile --stats=true` run: '[1/8] [===100%] x.nsys-rep', "Generating '/tmp/nsys-report-2ee6.qdstrm'"
_RUN_START = re.compile(r"^\s*\[1/\d+\]|\.qdstrm['\"]")
# fast pre-check: a line with none of these is no marker (most lines of a log)
_ANY_MARKER = re.compile(r"\[1/|qdstrm|Processing \[|Executing '|\*\*|reports[/\\]|Statistics|SKIPPED")
# ------------------------------------------------------------------------------ table layouts
# the layouts are matched on every line of a user's text: no two quantifiers may share characters (a
# possessive '*+' never gives back), or one 400 KB line of spaces / dashes backtracks for minutes
_DASHES = re.compile(r"^ *+-[ -]*+$")                                      # ' --------  -----  ----'
_BORDER = re.compile(r"^\s*\+(?:-+\+)+\s*$")                              # '+------+-----+'
_MD_RULE = re.compile(r"^\s*+\|?\s*+:?-{3,}+:?\s*+(?:\|\s*+:?-{3,}+:?\s*+)++\|?\s*+$")  # '|---|:---:|'
_FENCE = re.compile(r"^\s*(```|~~~)")
_CSV_START = re.compile(r'^\s*["A-Za-z]')                                  # a CSV header starts with a label
_NUMBER = re.compile(r"^[+-]?[\d.,’'\u202f\u00a0 ]*\d(?:[eE][+-]?\d+)?$")
NULLS = {"", "-", "n/a", "none", "nan"}
# header labels of nsys summaries: a dashed / bordered block with three of them is an nsys table, read or not
_NSYS_LABELS = {"time", "totaltime", "numcalls", "instances", "avg", "average", "med", "min", "minimum", "max",
                "maximum", "stddev", "total", "count", "operation", "start", "duration", "corrid"}


@dataclass
class Table:
    """One table as printed: header cells, row cells (text), where it was and what preceded it."""
    line: int                      # line number of the header in the file
    cells: list[str]
    rows: list[list[str]]
    fmt: str                       # column / table / markdown / csv
    context: str | None = None     # report name or canonical table named by the nearest title line
    size_factor: float | None = None   # 2020 '(by size in KiB)' titles: the unit of unit-less size columns
    skipped_lines: int = 0         # non-table lines found between rows (application output)
    first_skipped: int = 0         # line number of the first of them
    bad_lines: int = 0             # lines under the header that are not rows (between rows or after them)
    end: int = 0                   # line number of the last line read


def split_lines(text: str) -> tuple[list[str], list[int]]:
    """Lines, with progress bars joined by '\\r' split apart, terminal colour codes removed,
    comment / quote markers that prefix pasted output ('# ', '// ', '> ') blanked out (replaced by
    spaces, so the column positions of a quoted table do not move) and nsys's own notices left out
    (see the module text); with each line's number in the file (as an editor counts them, so a
    '\\r'-joined line keeps one number)."""
    lines, numbers = [], []
    in_notice = False
    for no, line in enumerate(_ANSI.sub("", text.replace("\r\n", "\n")).split("\n"), 1):
        for part in line.split("\r"):
            if part.lstrip().startswith(("#", "//", ">")):
                part = _QUOTED.sub(lambda m: m.group(1) + " " * len(m.group(2)), part)
            if _NOISE.match(part):
                in_notice = part.lstrip().startswith(("NOTICE:", "WARNING:"))
                continue
            if in_notice and _NOISE_GOES_ON.match(part):
                continue
            in_notice = False
            lines.append(part)
            numbers.append(no)
    return lines, numbers


def table_of(context: str) -> str | None:
    """Canonical table for a report name or a title's table (None for reports not used)."""
    if context in schema.SPEC_BY_TABLE:
        return context
    spec = schema.SPEC_BY_NAME.get(context)
    return spec.table if spec else None


def _section_name(line: str) -> tuple[str, float | None] | None:
    """(report name or table, size unit) when this line opens a report's section."""
    m = _EXECUTING.search(line) or _TITLE.match(line) or _SCRIPT.search(line)
    if m:
        return m.group(1).split(":")[0].lower(), None
    old = console_eras.title(line)
    return old[:2] if old else None


# ------------------------------------------------------------------------------ scanning
def scan(lines: list[str], numbers: list[int]):
    """Yield Table objects and marker tuples (kind, line number, argument) in file order.

    Past ~60 lines on purpose: one state machine over the lines (the open section, the line that opened
    it, why a table-like block in it was not read), whose state every branch reads and sets."""
    context: str | None = None          # the open section's report (None: no section, or its table was read)
    opened = 0                          # the line that opened it
    printed = False                     # ... and whether that line is as nsys prints it
    why: Note | None = None             # why a table-like block in it was not read
    size_factor: float | None = None
    empty_ok = False                    # a 2019.5 title: no table under it is an empty report
    i = 0
    n = len(lines)

    def lost():
        if context and empty_ok and why is None and table_of(context):
            return ("skipped", opened, table_of(context))
        if context and printed and table_of(context):
            return ("lost", opened, (context, why or Note("phrase.console_no_table")))
        return None

    while i < n:
        line = lines[i]
        if _ANY_MARKER.search(line):            # most lines of a log are none of these: skip the regexes
            sec = _section_name(line)
            if (sec and sec[0] != context) or _RUN_START.search(line):
                ev = lost()                     # the open section ends here without a table
                if ev:
                    yield ev
                context = None
            if _RUN_START.search(line):
                yield ("start", numbers[i], None)
            m = _PROCESSING.search(line)
            if m:
                yield ("sqlite", numbers[i], m.group(1))
            if sec:
                old = console_eras.title(line)
                as_printed = bool(_AS_PRINTED.match(line)) or old is not None
                if sec[0] != context:           # 'Processing [.../x.py]' then ' ** Title (x):' open one section
                    opened, why, printed = numbers[i], None, as_printed
                    empty_ok = old is not None and old[2] == "2019"
                printed = printed or as_printed
                context, size_factor = sec
            if _SKIPPED.search(line):
                if context:
                    yield ("skipped", numbers[i], table_of(context))
                context = None
        found = _table_at(lines, i)
        if found is None:
            i += 1
            continue
        table, j = found
        if isinstance(table, Note):             # looks like a table, is not one nsys-expert can read
            at = Note("phrase.console_table_at", {"line": numbers[i], "why": table})
            if context:
                why = why or at
            else:
                yield ("lost", numbers[i], (None, at))
            i = j
            continue
        table.line, table.end = numbers[table.line], numbers[j - 1]
        table.first_skipped = numbers[table.first_skipped] if table.skipped_lines else 0
        if not table.rows and table.bad_lines:  # a header over lines that are none of its rows
            reason = Note("phrase.console_no_rows", {"line": table.line, "n": table.bad_lines})
            if context:
                why = why or reason
            else:
                yield ("lost", table.line, (None, reason))
            i = j
            continue
        table.context, table.size_factor = context, size_factor
        context, size_factor, why = None, None, None
        yield table
        i = j
    ev = lost()
    if ev:
        yield ev


def _header_matches(cells: list[str]) -> bool:
    return bool(schema.match_header([schema.split_header_cell(c)[0] for c in cells]))


def _unknown_header(cells: list[str]) -> Note | None:
    """Why a dashed / bordered header is not read, when it is an nsys-looking one (else None)."""
    labels = {schema.split_header_cell(c)[0] for c in cells}
    if len(labels & _NSYS_LABELS) >= 3:
        shown = " | ".join(c for c in cells if c)[:120]
        return Note("phrase.console_unknown_header", {"header": shown})
    return None


def _csv_cells(line: str, delim: str) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=delim))
    except (csv.Error, StopIteration):
        return []


def _table_at(lines: list[str], i: int):
    """(Table, index after it) when a table's header starts at line i; (why, index after the header)
    for an nsys-looking block that cannot be read; else None."""
    line = lines[i]
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    is_csv = ("," in line or "\t" in line) and _CSV_START.match(line) is not None
    if not (is_csv or nxt.lstrip().startswith("-") or line.lstrip().startswith("+") or "|" in line):
        return None
    # column format padded with tabs (re-saved by an editor or `unexpand`): cells between tabs when the
    # header and the dashes have as many; else the tabs expanded to 8-column stops (_tabbed)
    if "\t" in line and "\t" in nxt and line.strip() and _DASHES.match(nxt.replace("\t", " ")):
        hit = _tabbed(lines, i, line, nxt)
        if hit is not None:
            return hit
    # column format: header, then dashes whose groups give the column boundaries
    if line.strip() and _DASHES.match(nxt) and len(re.findall(r"-+", nxt)) >= 2:
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", nxt)]
        cells = _cut(line, spans)
        if _header_matches(cells):
            return _rows(lines, i, i + 2, lambda s: _cut(s, spans), cells, "column")
        why = _unknown_header(cells)
        if why:
            return why, i + 2
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
        why = _unknown_header(cells)
        if why:
            return why, i + 3
    # Markdown pipe table: header, then |---|---|
    if "|" in line and _MD_RULE.match(nxt):
        cells = _pipe_cells(line)
        if _header_matches(cells):
            return _rows(lines, i, i + 2, _pipe_cells, cells, "markdown")
        why = _unknown_header(cells)
        if why:
            return why, i + 2
    # CSV / TSV (`nsys stats --format csv` on the console): a header line, rows up to a blank line
    if is_csv:
        for delim in (",", "\t"):
            if delim in line:
                cells = _csv_cells(line, delim)
                if len(cells) >= 3 and _header_matches(cells):
                    return _rows(lines, i, i + 1, lambda s, d=delim: _csv_cells(s, d), cells, "csv",
                                 cut_all=lambda block, d=delim: list(csv.reader(block, delimiter=d)))
    return None


def _tab_cells(line: str, width: int) -> list[str]:
    return [c.strip() for c in re.split(r"\t+", line.strip(), maxsplit=width - 1)]


def _tabbed(lines: list[str], i: int, line: str, nxt: str):
    """A column-format table whose padding is tabs: (Table, index after it), or None."""
    groups = [g for g in re.split(r"\t+", nxt.strip()) if g.strip()]
    cells = _tab_cells(line, len(groups))
    if len(groups) >= 2 and len(cells) == len(groups) and all(set(g.strip()) == {"-"} for g in groups) \
            and _header_matches(cells):
        return _rows(lines, i, i + 2, lambda s, w=len(cells): _tab_cells(s, w), cells, "column-tabs")
    wide = nxt.expandtabs(8)
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", wide)]
    cells = _cut(line.expandtabs(8), spans)
    if len(spans) >= 2 and _header_matches(cells):
        return _rows(lines, i, i + 2, lambda s: _cut(s.expandtabs(8), spans), cells, "column")
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


def _ends_table(lines: list[str], j: int) -> bool:
    """A blank line, a border, a fence, a rule, another section or another column header."""
    s = lines[j]
    t = s.lstrip()
    if not t:
        return True
    # a row starts with a number (most lines here): borders, fences, rules and SKIPPED do not
    if not t[0].isdigit() and (_BORDER.match(s) or _FENCE.match(s) or _MD_RULE.match(s) or _SKIPPED.search(s)
                               or _RUNNING.match(s)):
        return True
    if _ANY_MARKER.search(s) and (_PROCESSING.search(s) or _section_name(s)):
        return True
    nxt = lines[j + 1] if j + 1 < len(lines) else ""
    return nxt.lstrip().startswith("-") and _DASHES.match(nxt) is not None and len(re.findall(r"-+", nxt)) >= 2


def _rows(lines, header_idx, first_row, cut, cells, fmt, cut_all=None):
    """Collect rows from first_row until the table ends (``_ends_table``). The lines are cut first and
    checked together (``_rows_ok``): a big table costs one Polars pass, not a regex per cell."""
    plan = schema.column_plan(cells)
    numeric = [k for k, p in enumerate(plan) if p[2] != "str"]
    width = len(cells)
    j = first_row
    while j < len(lines) and not _ends_table(lines, j):
        j += 1
    cand = cut_all(lines[first_row:j]) if cut_all else [cut(lines[x]) for x in range(first_row, j)]
    ok = _rows_ok(cand, numeric, width)
    if fmt == "column" and numeric == list(range(width - 1)):    # only the last column is text:
        for x, good in enumerate(ok):                            # a misaligned copy splits on blanks
            if not good:
                row = lines[first_row + x].split(None, width - 1)
                if _row_ok(row, numeric, width):
                    cand[x], ok[x] = row, True
    rows = [r for r, good in zip(cand, ok) if good]
    last = max((x for x, good in enumerate(ok) if good), default=-1)
    between = [x for x in range(last) if not ok[x]]              # not rows, with rows after them
    # line indexes here; scan turns them into line numbers
    t = Table(line=header_idx, cells=cells, rows=rows, fmt=fmt, skipped_lines=len(between),
              first_skipped=first_row + between[0] if between else 0, bad_lines=ok.count(False))
    return t, max(j, first_row)


def _rows_ok(rows: list[list[str]], numeric: list[int], width: int) -> list[bool]:
    """``_row_ok`` of every row at once."""
    if len(rows) < 64:
        return [_row_ok(r, numeric, width) for r in rows]
    fits = [len(r) == width for r in rows]
    if not numeric:
        return fits
    frame = pl.DataFrame({f"c{k}": pl.Series([r[k] if f else "x" for r, f in zip(rows, fits)], dtype=pl.String)
                          for k in numeric})
    checks = []
    for c in frame.columns:
        v = pl.col(c).str.strip_chars()
        null = v.str.to_lowercase().is_in(list(NULLS))
        checks.append((null, v.str.contains(_NUMBER.pattern)))
    good = pl.all_horizontal([n | m for n, m in checks]) & pl.any_horizontal([~n & m for n, m in checks])
    res = frame.select(good.alias("ok"))["ok"].to_list()
    return [bool(f and g) for f, g in zip(fits, res)]


def _row_ok(row: list[str], numeric: list[int], width: int) -> bool:
    if len(row) != width:
        return False
    filled = 0
    for k in numeric:
        v = row[k].strip()
        if v.lower() in NULLS:
            continue
        if not _NUMBER.match(v):
            return False
        filled += 1
    return filled > 0
