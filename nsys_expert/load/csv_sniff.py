"""What the first bytes of a file say about it (:func:`sniff`): an SQLite export, binary data, console
text, an Nsight Compute table or an nsys stats CSV report (found by its header's content, not its line
number: `nsys stats` writes NOTICE / Processing / title lines ahead of it when its output is
redirected, input-formats.md 1.2), and which report."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field

from . import compressed, repair, schema

SNIFF_BYTES = 256 * 1024
MAX_PREAMBLE_LINES = 200
NCU_HEADER = '"ID","Process ID"'     # how an Nsight Compute CSV table begins (details and raw pages)
@dataclass
class Sniff:
    """What the first bytes of a file say about it."""
    path: str
    kind: str                      # "csv-report", "empty", "binary", "text", "sqlite", "unknown-csv"
    report: str | None = None      # report name from the file name, if any
    spec: schema.ReportSpec | None = None
    header_line: int = 0
    delimiter: str = ","
    cells: list[str] = field(default_factory=list)
    candidates: list[schema.ReportSpec] = field(default_factory=list)


def sniff(path: str) -> Sniff:
    fname = compressed.logical_name(path)      # 'x_cuda_api_sum.csv.gz' says what 'x_cuda_api_sum.csv' says
    report = schema.report_name_from_filename(fname)
    head = compressed.head(path, SNIFF_BYTES)
    if head.startswith(b"SQLite format 3\x00"):
        return Sniff(path, "sqlite", report)
    if not head.strip():
        return Sniff(path, "empty", report, spec=schema.SPEC_BY_NAME.get(report or ""))
    if b"\x00" in head or _mostly_binary(head):
        # a small report with junk after its rows: the clean lines before the junk are sniffed
        head = repair.clean_prefix(head) if len(head) < SNIFF_BYTES else b""
        if not head.strip() or _mostly_binary(head):
            return Sniff(path, "binary", report)
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")   # a byte-order mark: load/repair.py
    lines = text.splitlines()
    if any(line.lstrip("\ufeff").startswith(NCU_HEADER) for line in lines[:MAX_PREAMBLE_LINES]):
        # an Nsight Compute table (load/ncu.py): never an nsys report; its raw page's header has 9,000
        # cells, which matching against every report's signature would split one by one
        return Sniff(path, "text" if report is None else "unknown-csv", report)
    if len(head) == SNIFF_BYTES and lines:
        lines = lines[:-1]  # the last line of the sniffed block may be cut
    for i, line in enumerate(lines[:MAX_PREAMBLE_LINES]):
        for delim in (",", "\t"):
            if delim not in line:
                continue
            try:
                cells = next(csv.reader([line], delimiter=delim))
            except (csv.Error, StopIteration):
                continue
            labels = [schema.split_header_cell(c)[0] for c in cells]
            cands = schema.match_header(labels)
            if cands:
                spec = _choose(cands, report)
                return Sniff(path, "csv-report", report, spec, i, delim, cells, cands)
    return Sniff(path, "text" if report is None else "unknown-csv", report)


def has_rows(sn: Sniff) -> bool:
    """Whether a sniffed report has a line of data after its header (from the file's first bytes)."""
    head = compressed.head(sn.path, SNIFF_BYTES)
    lines = head.decode("utf-8", errors="replace").splitlines()[sn.header_line + 1:]
    return any(line.strip(" \t\r" + sn.delimiter) for line in lines)


def _mostly_binary(head: bytes) -> bool:
    sample = head[:4096]
    bad = sum(1 for b in sample if b < 9 or (13 < b < 32))
    if bad > len(sample) * 0.05:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as e:
        # a cut multi-byte character at the end of the sample is fine; junk in the middle is not
        text = sample.decode("utf-8", errors="replace")
        return text.count("\ufffd") > max(8, len(text) * 0.05) and e.start < len(sample) - 4


def _choose(cands: list[schema.ReportSpec], report: str | None) -> schema.ReportSpec:
    if len(cands) == 1:
        return cands[0]
    by_name = schema.SPEC_BY_NAME.get(report or "")
    if by_name in cands:
        return by_name
    return cands[0]  # api_sum vs osrt_sum without a telling file name: decided from the rows later
