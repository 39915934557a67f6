"""Console text in every form nsys prints it, with nsys's own lines among the tables (issue 14, item 4).

The inputs are real `nsys stats` captures (tests/data/nsys_stats_captures, made with nsys 2025.3.1 on the
sync_bound export) and the real fixtures, edited only as tests/console_variants.py says for each variant
(nsys's NOTICE / WARNING / Generating / Exporting lines inserted where nsys prints them, older eras'
layouts, several runs in one file, blocks that cannot be read). Every variant must give the tables of its
real source, row for row; the numbers are compared with the CSV reports of the same profile.

Before this change, 13 of these 29 variants came out wrong: every CSV / TSV capture (`nsys stats -f csv`
printed to the console, with or without NOTICE lines ahead of the second section) lost its cuda_api_sum
table and merged its rows into kern_sum (27 "kernels"), the default report set became one 71-row
nvtx_sum, and a NOTICE between a header and its dashes lost cuda_api_sum without a word.
"""
import re
import shutil
import subprocess

import polars as pl
import pytest

import console_variants as cv
from conftest import FIXTURES
from nsys_expert.errors import InputError
from nsys_expert.load import console, load_paths

VARIANTS = {v.name: v for v in cv.variants()}
SYNC_CSV = FIXTURES / "sync_bound" / "input"
NUMBERS = ("total_ns", "count", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns")


def write(tmp_path, v):
    p = tmp_path / v.name / v.file
    p.parent.mkdir()
    p.write_bytes(v.text.encode("utf-8"))
    return p


@pytest.fixture(scope="module")
def sync_csv():
    prof = load_paths([str(SYNC_CSV / "sync_bound_cuda_gpu_kern_sum.csv"), str(SYNC_CSV / "sync_bound_cuda_api_sum.csv")])
    return prof.tables


def runs_warning(warnings):
    return [str(w) for w in warnings if "runs of nsys output" in str(w)]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_table_of_every_variant(tmp_path, name):
    v = VARIANTS[name]
    p = write(tmp_path, v)
    if not v.expect:                      # nothing readable: one error that names the section
        with pytest.raises(InputError) as e:
            load_paths([str(p)])
        for text in v.warns:
            assert text in str(e.value)
        return
    prof = load_paths([str(p)])
    assert {t: f.height for t, f in prof.tables.items()} == v.expect, v.how
    assert {i["kind"] for i in prof.inputs} == {"nsys-console"}
    for text in v.warns:
        assert any(text in str(w) for w in prof.warnings), (text, prof.warnings)
    runs = runs_warning(prof.warnings)
    assert len(runs) == (1 if v.runs > 1 else 0), prof.warnings
    if v.runs > 1:
        assert f"holds {v.runs} runs" in runs[0]
    # nsys's own lines are neither table rows nor application output
    assert not any("not table rows" in str(w) for w in prof.warnings), prof.warnings


@pytest.mark.parametrize("name", [n for n, v in VARIANTS.items() if v.expect == cv.SYNC])
def test_sync_variants_hold_the_csv_numbers(tmp_path, sync_csv, name):
    """Each table read from console text holds the numbers of the CSV report of the same profile."""
    prof = load_paths([str(write(tmp_path, VARIANTS[name]))])
    for table in ("kern_sum", "api_sum"):
        got, ref = prof.tables[table], sync_csv[table]
        for col in NUMBERS:
            assert got[col].to_list() == ref[col].to_list(), (table, col)
        for short, full in zip(got["name"], ref["name"]):      # column / table output cuts names with '…'
            assert short == full or (short.endswith("…") and full.startswith(short[:-1]))
    sync = prof.tables["api_sum"].filter(pl.col("name") == "cudaStreamSynchronize").row(0, named=True)
    assert (sync["total_ns"], sync["count"], sync["med_ns"]) == (101_250_249, 400, 255_631.5)


def test_the_default_report_set_as_csv_on_the_console(tmp_path):
    prof = load_paths([str(write(tmp_path, VARIANTS["real_csv_default"]))])
    nvtx = prof.tables["nvtx_sum"].row(0, named=True)
    assert (nvtx["name"], nvtx["style"], nvtx["total_ns"], nvtx["count"]) == ("step", "PushPop", 1_239_134_041, 400)   # ":step" (no domain) normalised
    poll = prof.tables["osrt_sum"].filter(pl.col("name") == "poll").row(0, named=True)
    assert (poll["total_ns"], poll["count"]) == (2_334_150_902, 33)
    size = prof.tables["mem_size_sum"]
    assert size["count"].to_list() == [400, 400] and size["total_bytes"].to_list() == [2000.0, 2000.0]
    assert prof.warnings == []           # openmp_sum: SKIPPED, no warning; nothing else dropped


def test_old_report_names_in_a_csv_capture(tmp_path):
    prof = load_paths([str(write(tmp_path, VARIANTS["csv_2022_names"]))])
    k = prof.tables["kern_sum"]
    assert k["grid"].to_list()[0] == "128    1    1" and k["block"].to_list()[0] == "256    1    1"
    assert {i["version"] for i in prof.inputs} == {"2021-2022"}


def test_section_lines_count_as_the_file_counts_them(tmp_path):
    """The broken API header of broken_header sits on line 17 (Processing on 13): what an editor shows."""
    v = VARIANTS["broken_header"]
    lines = v.text.split("\n")
    assert lines[12].startswith("Processing [") and "Num Cals" in lines[16]
    prof = load_paths([str(write(tmp_path, v))])
    w = [str(w) for w in prof.warnings if "nothing was read" in str(w)]
    assert len(w) == 1 and "line 13" in w[0] and "the table at line 17" in w[0] and "Num Cals" in w[0]


def test_a_lost_section_in_a_file_that_gave_other_tables_is_one_warning(tmp_path):
    prof = load_paths([str(write(tmp_path, VARIANTS["broken_semicolons"]))])
    assert list(prof.tables) == ["kern_sum"]
    assert [str(w) for w in prof.warnings if "cuda_api_sum" in str(w)] == [
        "console.txt: nothing was read from the cuda_api_sum section (line 9): no table follows its title"]


def test_rows_that_are_not_rows_are_a_warning_not_an_empty_table(tmp_path):
    # derived: the API rows of the real column capture with every number replaced by 'n/a'
    text = cv.capture("column.txt")
    head, api = text.split(" ** CUDA API Summary", 1)
    api = re.sub(r"(?m)^( +)[\d.,]+(?= )", lambda m: m.group(1) + "n/a", api)
    api = re.sub(r"(?<= )[\d][\d.,]*(?= )", "n/a", api)
    p = tmp_path / "c.txt"
    p.write_text(head + " ** CUDA API Summary" + api)
    prof = load_paths([str(p)])
    assert list(prof.tables) == ["kern_sum"]              # not an api_sum of 0 rows
    w = [str(w) for w in prof.warnings if "nothing was read" in str(w)]
    assert len(w) == 1 and "cuda_api_sum section (line 13)" in w[0] and "none of the 22 line(s)" in w[0]


def test_a_table_like_block_outside_any_section_is_named(tmp_path):
    # derived: the real column capture without its Processing / title lines, API header mistyped
    text = re.sub(r"Processing \[.*\n\n .*\n", "", cv.capture("column.txt")).replace("Num Calls", "Num Cals")
    p = tmp_path / "c.txt"
    p.write_text(text)
    prof = load_paths([str(p)])
    assert list(prof.tables) == ["kern_sum"]
    w = [str(w) for w in prof.warnings if "nothing was read" in str(w)]
    assert len(w) == 1 and w[0].startswith("c.txt: nothing was read from line 11: the table at line 11: its header")


# ------------------------------------------------------------------------------------ several runs
SPLITS = {   # variant or real file -> the tables of each run, in order
    "runs_csv": [cv.SYNC, cv.LAUNCH],
    "runs_column": [cv.SYNC, cv.LAUNCH],
    "runs_same_export_twice": [cv.SYNC, cv.SYNC],
    "runs_2020_titles": [cv.SYNC, cv.SYNC],
    "runs_stats_true_2022_2024": [dict(cv.ALCF, osrt_sum=22, api_sum=5), dict(cv.ALCF, osrt_sum=24, api_sum=6)],
}


def _split(tmp_path, src, warning):
    cmd = warning.split(" split the file into one file per run with: ", 1)[1].split(" (writes ", 1)[0]
    out = tmp_path / "split"
    out.mkdir()
    p = subprocess.run(cmd, shell=True, cwd=out, capture_output=True, text=True)
    assert p.returncode == 0, (cmd, p.stderr)
    return sorted(out.iterdir())


@pytest.mark.skipif(shutil.which("csplit") is None, reason="no csplit")
@pytest.mark.parametrize("name", sorted(SPLITS))
def test_several_runs_split_as_the_warning_says(tmp_path, name):
    """The first run is diagnosed; the warning's csplit command, run as printed, writes one file per run,
    and each file gives that run's tables and no several-runs warning."""
    p = write(tmp_path, VARIANTS[name])
    prof = load_paths([str(p)])
    (w,) = runs_warning(prof.warnings)
    pieces = _split(tmp_path, p, w)
    assert len(pieces) == len(SPLITS[name])
    for piece, expect in zip(pieces, SPLITS[name]):
        got = load_paths([str(piece)])
        assert {t: f.height for t, f in got.tables.items()} == expect, piece.name
        assert not runs_warning(got.warnings)
    # the first piece is exactly what was diagnosed
    first = load_paths([str(pieces[0])])
    for t, f in prof.tables.items():
        assert first.tables[t].equals(f), t


@pytest.mark.skipif(shutil.which("csplit") is None, reason="no csplit")
@pytest.mark.parametrize("fixture,n", [("console_deep_dive", 5), ("console_laplace", 12)])
def test_real_readmes_split_into_their_runs(tmp_path, fixture, n):
    src = next((FIXTURES / fixture / "input").iterdir())
    prof = load_paths([str(src)])
    (w,) = runs_warning(prof.warnings)
    pieces = _split(tmp_path, src, w)
    assert len(pieces) == n
    tables = [load_paths([str(x)]) for x in pieces]
    assert all(not runs_warning(t.warnings) for t in tables)
    assert all(t.tables["kern_sum"].height >= 1 for t in tables)
    if fixture == "console_deep_dive":     # every run: the vectorAdd kernel; run 5 has 10 API names
        assert [t.tables["api_sum"].height for t in tables] == [6, 6, 6, 6, 10]


def test_the_split_advice_of_a_gzipped_log(tmp_path):
    w = str(console.split_advice(str(tmp_path / "job 7.log.gz"), [1, 40, 90]))
    assert "run 1: lines 1-39; run 2: lines 40-89; run 3: lines 90-end" in w
    assert f"gzip -dc '{tmp_path / 'job 7.log.gz'}' | csplit -s -f job_7_run -b '%02d.txt' - 40 90" in w


def test_big_tables_are_checked_as_small_ones(tmp_path):
    """Tables of 64 rows or more are checked in one Polars pass: the same rows as the per-row check."""
    from nsys_expert.load import console_scan as scan
    text = cv.capture("column.txt")
    lines = text.split("\n")
    header, dashes, rows = lines[16], lines[17], lines[18:40]
    assert dashes.lstrip().startswith("-") and len(rows) == 22
    junk = ["Rank 0: step 10 done", "   n/a  n/a", "  12.5  x,y  3", "", "   -  -  -  -"]
    body = [r for k in range(4) for r in rows + [junk[k]]] + rows
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]
    cells = [scan._cut(s, spans) for s in body] + [["1"] * 3]
    plan = [k for k in range(8)]
    assert scan._rows_ok(cells, plan, 9) == [scan._row_ok(c, plan, 9) for c in cells]
    # and through the loader: 5 x 22 rows, the 3 junk lines after the third copy (lines 85-87) named
    p = tmp_path / "big.txt"
    p.write_text("\n".join(lines[:18] + [r for k in range(5) for r in rows + (junk[:3] if k == 2 else [])]) + "\n")
    prof = load_paths([str(p)])
    assert prof.tables["api_sum"].height == 110 and prof.tables["api_sum"]["count"].sum() == 5 * 4_985   # 4,985 calls: the rows of sync_bound_cuda_api_trace.csv
    assert any("3 line(s) inside the api_sum table (line 17; the first at line 85)" in str(w) for w in prof.warnings)
