"""Console-text variants of real `nsys stats` output, for tests/load/test_console_variants.py (and for
measuring the loader before / after a change: `python tests/console_variants.py OUTDIR` writes them).

Every variant starts from real text and says how it was derived. The real texts:
- ``tests/data/nsys_stats_captures/*`` : nsys 2025.3.1 on the sync_bound export, captured with
  ``> file 2>&1`` in every console format (README there);
- ``fixtures/console_launch_bound/input/stats_column.txt`` (= ``../shared/cases/launch_bound/stats_column.txt``):
  nsys 2025.3.1 on a ``.nsys-rep`` whose export existed, with its NOTICE block;
- the shared cases' CSV reports (``fixtures/sync_bound/input``, ``fixtures/launch_bound/input``) and
  their nsys 2022.4.2 CSVs (``fixtures/sync_bound_nsys2022/input``);
- the public samples (``fixtures/console_*``), 2022.4.2 and 2024.2.3 ``--stats=true`` logs.
Lines inserted are nsys's own, quoted from those files or from ../shared/notes/input-formats.md 1.2.

``expect``: table -> row count the variant must give (the row counts of the real source).
"""
from __future__ import annotations

import pathlib
import re
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "tests" / "data" / "nsys_stats_captures"
FIX = ROOT / "fixtures"
LAUNCH_COLUMN = FIX / "console_launch_bound" / "input" / "stats_column.txt"
ALCF22 = FIX / "console_alcf_nsys2022" / "input" / "ALCFBeginnersGuide__polaris_02_profiling__nsys2022.4.2_rev79889b5.md"
ALCF24 = FIX / "console_alcf_nsys2024" / "input" / "ALCFBeginnersGuide__polaris_02_profiling__nsys2024.2.3.md"

SYNC = {"kern_sum": 5, "api_sum": 22}             # the sync_bound captures: 5 kernels, 22 API names
LAUNCH = {"kern_sum": 4, "api_sum": 9}            # launch_bound: 4 kernels, 9 API names
ALCF = {"nvtx_sum": 0, "kern_sum": 6, "mem_time_sum": 1, "mem_size_sum": 1}

# nsys's own lines (where each comes from)
NOTICE = ("NOTICE: Existing SQLite export found: {sq}\n"          # ../shared/cases/healthy/stats_column.txt l.2-4
          "        It is assumed file was previously exported from: {rep}\n"
          "        Consider using --force-export=true if needed.\n")
WARNING = ("WARNING: Existing SQLite export found: {sq}\n"        # ../shared/cases/memcpy_bound/stats_column.txt l.2-4
           "         File is older than input file: {rep}\n"
           "         Use --force-export=true to update export file.\n")
GENERATING = "Generating SQLite file {sq} from {rep}\n"          # ../shared/cases/sync_bound/stats_column.txt l.1
EXPORTING = "Exporting 4366 events: [=======================================100%]\n"   # input-formats.md 1.2 [real]
TITLES = {"cuda_gpu_kern_sum": " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):",
          "cuda_api_sum": " ** CUDA API Summary (cuda_api_sum):"}


@dataclass
class Variant:
    name: str
    text: str
    how: str
    expect: dict[str, int]
    runs: int = 1
    file: str = "console.txt"
    warns: list[str] = field(default_factory=list)   # texts a warning must contain


def read(p: pathlib.Path) -> str:
    return p.read_text(encoding="utf-8")


def capture(name: str) -> str:
    return read(CAPTURES / name)


def _block(tmpl: str, sq="s.sqlite") -> str:
    return tmpl.format(sq=sq, rep=sq[:-len(".sqlite")] + ".nsys-rep")


def before_each_processing(text: str, block: str) -> str:
    return re.sub(r"^(?=Processing \[)", lambda m: block, text, flags=re.M)


def nth_processing_end(text: str, n: int) -> int:
    """Offset just after the n-th (1-based) 'Processing [...]' line."""
    ms = list(re.finditer(r"^Processing \[.*\n", text, flags=re.M))
    return ms[n - 1].end()


def csv_log(csvs: list[tuple[str, pathlib.Path]], sq: str, reports_dir: str) -> str:
    """What `nsys stats -f csv` prints to the console (layout of the real csv_stdout.txt capture):
    per report its Processing line, the CSV file's text as nsys wrote it, one blank line."""
    out = ""
    for report, path in csvs:
        out += f"Processing [{sq}] with [{reports_dir}/{report}.py]... \n" + read(path) + "\n"
    return out


def old_headers(text: str) -> str:
    """2020-2021 column headers: 'Time(%)', 'Average', 'Minimum', 'Maximum' (same widths, so the
    dashes still fit), as in tests/load/test_console.py::test_old_section_titles."""
    return text.replace("Time (%)", " Time(%)").replace("Avg (ns)", " Average").replace("Min (ns)", " Minimum") \
        .replace("Max (ns)", " Maximum")


def fold(text: str, width: int = 80) -> str:
    """`fold -w 80`: every line longer than 80 characters hard-wrapped (an e-mail client, a pager)."""
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def variants() -> list[Variant]:
    """Every console form the tests read. Past ~60 lines on purpose: a table of cases, one block each."""
    v: list[Variant] = []
    csv_cap, tsv_cap, table_cap, col_cap = (capture(n) for n in ("csv_stdout.txt", "tsv_stdout.txt", "table.txt",
                                                                 "column.txt"))
    notice = _block(NOTICE)
    # ---- the real captures, unedited
    v.append(Variant("real_csv_stdout", csv_cap, "real: nsys stats -f csv, console", SYNC))
    v.append(Variant("real_tsv_stdout", tsv_cap, "real: nsys stats -f tsv, console", SYNC))
    v.append(Variant("real_table", table_cap, "real: nsys stats -f table", SYNC))
    v.append(Variant("real_column", col_cap, "real: nsys stats (column)", SYNC))
    v.append(Variant("real_csv_default", capture("csv_default.txt"), "real: the default report set, -f csv",
                     {"nvtx_sum": 2, "osrt_sum": 38, "api_sum": 22, "kern_sum": 5, "mem_time_sum": 2,
                      "mem_size_sum": 2}))
    # ---- the bug report: a NOTICE / Processing pair ahead of the second section
    v.append(Variant("csv_notice_top", notice + "\n" + csv_cap,
                     "real csv capture + the NOTICE block nsys prints first for a .nsys-rep (as in healthy)", SYNC))
    v.append(Variant("csv_notice_each", before_each_processing(csv_cap, notice + "\n"),
                     "real csv capture + the NOTICE block before every Processing line (once per report)", SYNC))
    k = nth_processing_end(csv_cap, 2)
    v.append(Variant("csv_notice_after_2nd_processing", csv_cap[:k] + notice + csv_cap[k:],
                     "real csv capture, the NOTICE block (stderr) landing between the 2nd Processing line "
                     "and its header", SYNC))
    v.append(Variant("csv_crlf", (notice + "\n" + csv_cap).replace("\n", "\r\n"),
                     "csv_notice_top with Windows line ends (copied through a Windows editor)", SYNC))
    v.append(Variant("tsv_notice_each", before_each_processing(tsv_cap, notice + "\n"),
                     "real tsv capture + the NOTICE block before every Processing line", SYNC))
    v.append(Variant("csv_gen_export", _block(GENERATING) + EXPORTING + csv_cap,
                     "real csv capture + 'Generating SQLite file' and 'Exporting N events' (first run on a .nsys-rep)",
                     SYNC))
    v.append(Variant("csv_warning_each", before_each_processing(csv_cap, _block(WARNING) + "\n"),
                     "real csv capture + the WARNING block of memcpy_bound before every Processing line", SYNC))
    s22 = FIX / "sync_bound_nsys2022" / "input"
    v.append(Variant("csv_2022_names", notice + "\n" + csv_log(
        [("gpukernsum", s22 / "sync_bound_gpukernsum.csv"), ("cudaapisum", s22 / "sync_bound_cudaapisum.csv")],
        "s.sqlite", "/opt/nvidia/nsight-systems/2022.4.2/host-linux-x64/reports"),
        "nsys 2022.4.2's real CSVs of sync_bound (GridXYZ, old names) in the console layout of the real capture",
        SYNC))
    # ---- column / table forms with nsys's lines among them
    v.append(Variant("column_notice_each", before_each_processing(col_cap, notice + "\n"),
                     "real column capture + the NOTICE block before every Processing line", SYNC))
    v.append(Variant("table_notice_each", before_each_processing(table_cap, notice + "\n"),
                     "real table capture + the NOTICE block before every Processing line", SYNC))
    lines = col_cap.split("\n")
    dash = [i for i, s in enumerate(lines) if re.fullmatch(r" -[- ]*", s)]
    between = lines[:dash[1]] + notice.rstrip("\n").split("\n") + lines[dash[1]:]
    v.append(Variant("column_notice_header_dashes", "\n".join(between),
                     "real column capture, the NOTICE block between the 2nd header and its dashes", SYNC))
    among = lines[:dash[1] + 6] + notice.rstrip("\n").split("\n") + lines[dash[1] + 6:]
    v.append(Variant("column_notice_among_rows", "\n".join(among),
                     "real column capture, the NOTICE block after the 5th row of the API table", SYNC))
    v.append(Variant("column_no_blank_lines", "\n".join(s for s in (notice + col_cap).split("\n") if s.strip()),
                     "NOTICE + real column capture with every blank line removed (a paste that dropped them)", SYNC))
    v.append(Variant("launch_notice_each", before_each_processing(read(LAUNCH_COLUMN).split("\n\n", 2)[2],
                                                                  _block(NOTICE, "/tmp/rep_launch_bound.sqlite") + "\n"),
                     "shared launch_bound stats_column.txt, its NOTICE block repeated before every Processing line",
                     LAUNCH))
    # ---- older eras
    running = col_cap
    for rep, old in (("cuda_gpu_kern_sum", "gpukernsum"), ("cuda_api_sum", "cudaapisum")):
        running = running.replace(
            f"Processing [s.sqlite] with [/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/reports/{rep}.py]... \n"
            f"\n{TITLES[rep]}\n",
            f"Running [/opt/nvidia/nsight-systems/2021.3.1/target-linux-x64/reports/{old}.py s.sqlite]... \n")
    running = "Using s.sqlite for SQL queries.\n" + old_headers(running)
    v.append(Variant("running_2021", running,
                     "real column capture in the 2021 `nsys stats` layout: 'Using x.sqlite for SQL queries.', "
                     "'Running [.../reports/gpukernsum.py x.sqlite]...', 2021 headers (Time(%), Average ...)", SYNC))
    titles20 = old_headers(col_cap)
    titles20 = re.sub(r"Processing \[.*\n\n", "", titles20)
    titles20 = titles20.replace(TITLES["cuda_gpu_kern_sum"], "CUDA Kernel Statistics:") \
        .replace(TITLES["cuda_api_sum"], "CUDA API Statistics:")
    titles20 = "Exported successfully to /tmp/nsys-report-4f2a.sqlite\n\n" + titles20
    v.append(Variant("stats_true_2020", titles20,
                     "real column capture in the 2020-2021 --stats=true layout: 'Exported successfully to', "
                     "'CUDA Kernel Statistics:' / 'CUDA API Statistics:' titles, 2020 headers", SYNC))
    # ---- several runs in one file (one per era)
    lb = FIX / "launch_bound" / "input"
    csv_launch = csv_log([("cuda_gpu_kern_sum", lb / "launch_bound_cuda_gpu_kern_sum.csv"),
                          ("cuda_api_sum", lb / "launch_bound_cuda_api_sum.csv")], "/tmp/rep_launch_bound.sqlite",
                         "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/reports")
    v.append(Variant("runs_csv", csv_cap + "\n" + csv_launch,
                     "real sync_bound csv capture, then launch_bound's real CSVs in the same layout "
                     "(another Processing [x.sqlite])", SYNC, runs=2))
    v.append(Variant("runs_column", col_cap + "\n" + read(LAUNCH_COLUMN),
                     "real sync_bound column capture, then the shared launch_bound stats_column.txt", SYNC, runs=2))
    v.append(Variant("runs_same_export_twice", col_cap + "\n" + col_cap,
                     "the real column capture twice (nsys stats run twice into one log)", SYNC, runs=2))
    v.append(Variant("runs_stats_true_2022_2024", read(ALCF22) + "\n" + read(ALCF24),
                     "the two ALCF tutorials (nsys 2022.4.2, 2024.2.3 --stats=true) one after the other",
                     dict(ALCF, osrt_sum=22, api_sum=5), runs=2))
    v.append(Variant("runs_2020_titles", titles20 + "\n" + titles20,
                     "stats_true_2020 twice (two --stats=true runs of 2020 in one job log)", SYNC, runs=2))
    # ---- blocks that look like tables and do not parse: warnings naming the section and line
    v.append(Variant("broken_header", col_cap.replace("Num Calls", "Num Cals"),
                     "real column capture with the API header cell 'Num Calls' mistyped 'Num Cals'",
                     {"kern_sum": 5}, warns=["the cuda_api_sum section (line 13)", "header"]))
    k = nth_processing_end(csv_cap, 2)
    v.append(Variant("broken_semicolons", csv_cap[:k] + csv_cap[k:].replace(",", ";"),
                     "real csv capture, the API section's rows and header re-saved with ';' separators (a "
                     "spreadsheet in a European locale)", {"kern_sum": 5},
                     warns=["the cuda_api_sum section (line 9)", "no table"]))
    v.append(Variant("folded_80", fold(col_cap),
                     "real column capture hard-wrapped at 80 columns (fold -w 80, a mail client)", {},
                     warns=["the cuda_gpu_kern_sum section (line 2)", "no table follows its title"]))
    return v


def write_all(out: pathlib.Path) -> list[Variant]:
    out.mkdir(parents=True, exist_ok=True)
    vs = variants()
    for x in vs:
        (out / f"{x.name}.txt").write_bytes(x.text.encode("utf-8"))
    return vs


if __name__ == "__main__":
    for x in write_all(pathlib.Path(sys.argv[1])):
        print(x.name, x.expect, x.runs)
