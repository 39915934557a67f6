"""`nsys stats` tables found inside text files (nsys_expert/load/console.py).

The real inputs are the fixtures `console_*` (copies of ../shared files, fixtures/README.md). Every
expected number below was read off the text by hand. The synthetic variants (table format, `\\r`
progress bars, European decimals, --timeunit, old titles, ...) are derived in this file from the
real text, byte for byte where possible, and must parse to the same tables as the real text.
"""
import re

import polars as pl
import pytest

from conftest import FIXTURES, SHARED, needs_shared, produced
from nsys_expert.errors import InputError
from nsys_expert.load import console, load_paths

LAUNCH = FIXTURES / "console_launch_bound" / "input" / "stats_column.txt"
ALCF22 = (FIXTURES / "console_alcf_nsys2022" / "input"
          / "ALCFBeginnersGuide__polaris_02_profiling__nsys2022.4.2_rev79889b5.md")
ALCF24 = FIXTURES / "console_alcf_nsys2024" / "input" / "ALCFBeginnersGuide__polaris_02_profiling__nsys2024.2.3.md"
DEEP = FIXTURES / "console_deep_dive" / "input" / "nsight-systems-deep-dive__README_nsys_stats_console.md"
LAPLACE = FIXTURES / "console_laplace" / "input" / "laplace_vector__README_nsys_kernsum_console.md"


def read(path):
    return console.read_console(str(path))


def text_of(path):
    return path.read_text(encoding="utf-8")


def parse_text(tmp_path, text, name="console.txt"):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8"))
    return console.read_console(str(p))


def row(frame, name):
    r = frame.filter(pl.col("name") == name)
    assert r.height == 1, (name, frame["name"].to_list())
    return r.row(0, named=True)


def same_tables(a, b):
    assert sorted(a.tables) == sorted(b.tables)
    for t in a.tables:
        assert a.tables[t].equals(b.tables[t]), t


# ------------------------------------------------------------------------------------ real files
def test_launch_bound_stats_column():
    part = read(LAUNCH)
    assert part.kind == "nsys-console" and part.version == "2023+"
    assert sorted(part.tables) == ["api_sum", "kern_sum"]
    k = part.tables["kern_sum"]
    assert k.height == 4 and k["count"].to_list() == [20000, 20000, 1, 1]
    first = k.row(0, named=True)
    assert (first["time_pct"], first["total_ns"], first["avg_ns"], first["med_ns"], first["min_ns"], first["max_ns"],
            first["std_ns"]) == (50.0, 17_223_661, 861.2, 864.0, 831, 896, 12.3)
    # names cut by nsys at 100 characters are kept as printed, and one warning says so
    assert first["name"].endswith("…")
    assert first["name"].startswith("void at::native::vectorized_elementwise_kernel<(int)4, at::native::AUnaryFunctor")
    assert len(first["name"]) == 100
    assert k.row(2, named=True)["total_ns"] == 1_376 and k.row(2, named=True)["avg_ns"] == 1376.0
    assert sum("cut by nsys" in str(w) for w in part.warnings) == 1
    a = part.tables["api_sum"]
    assert a.height == 9
    lk = row(a, "cudaLaunchKernel")
    assert (lk["total_ns"], lk["count"], lk["avg_ns"], lk["med_ns"], lk["min_ns"], lk["max_ns"]) == \
        (279_535_463, 40_002, 6988.0, 6165.0, 3_422, 5_687_190)
    assert row(a, "cudaGetDeviceProperties_v12000")["count"] == 2
    assert row(a, "cuLibraryLoadData")["std_ns"] == 3_952_666.8


@needs_shared
@pytest.mark.parametrize("case", ["launch_bound", "sync_bound", "compute_bound", "healthy", "nccl_single"])
def test_shared_stats_column_matches_the_csv_reports(case):
    """The column output and the CSV reports of one profile hold the same numbers."""
    part = read(SHARED / "cases" / case / "stats_column.txt")
    prof = load_paths([str(SHARED / "cases" / case / f"{case}_cuda_gpu_kern_sum.csv"),
                       str(SHARED / "cases" / case / f"{case}_cuda_api_sum.csv")])
    for table in ("kern_sum", "api_sum"):
        got, csv = part.tables[table], prof.tables[table]
        assert got.height == csv.height
        for col in ("total_ns", "count", "min_ns", "max_ns", "avg_ns", "std_ns"):
            assert got[col].to_list() == csv[col].to_list(), (table, col)
        for short, full in zip(got["name"], csv["name"]):   # a cut name is the start of the full one
            assert short == full or (short.endswith("…") and full.startswith(short[:-1]))


@needs_shared
@pytest.mark.parametrize("case", ["memcpy_bound", "memory_bound", "launch_bound_graphed"])
def test_failed_nsys_stats_output_is_not_a_report(case):
    """These three files hold only nsys's usage message (the stats command failed): nothing to read."""
    assert read(SHARED / "cases" / case / "stats_column.txt") is None
    with pytest.raises(InputError, match="usage message, not a profile: the run that wrote it failed"):
        load_paths([str(SHARED / "cases" / case / "stats_column.txt")])


def test_alcf_nsys2022_old_report_names():
    part = read(ALCF22)
    assert part.version == "2021-2022"      # 'gpukernsum', 'cudaapisum' ... and GridXYZ columns
    assert sorted(part.tables) == ["api_sum", "kern_sum", "mem_size_sum", "mem_time_sum", "nvtx_sum", "osrt_sum"]
    assert part.tables["nvtx_sum"].height == 0          # "SKIPPED: ... does not contain NVTX data"
    k = part.tables["kern_sum"]
    add = row(k, "void add_kernel<double>(const T1 *, const T1 *, T1 *)")
    assert (add["total_ns"], add["count"], add["med_ns"], add["std_ns"]) == (58_455_846, 100, 584_109.0, 2_238.9)
    # GridXYZ / BlockXYZ cells contain spaces: the dashes line keeps them whole
    dot = row(k, "void dot_kernel<double>(const T1 *, const T1 *, T1 *, int)")
    assert (dot["grid"], dot["block"], dot["total_ns"]) == ("256    1    1", "1024    1    1", 43_518_576)
    assert row(k, "void init_kernel<double>(T1 *, T1 *, T1 *, T1, T1, T1)")["grid"] == "32768    1    1"
    assert row(part.tables["osrt_sum"], "poll")["total_ns"] == 600_324_911
    assert row(part.tables["osrt_sum"], "ioctl")["count"] == 1_201
    assert row(part.tables["api_sum"], "cudaDeviceSynchronize")["count"] == 401
    assert row(part.tables["api_sum"], "cudaLaunchKernel")["total_ns"] == 1_754_850
    m = row(part.tables["mem_time_sum"], "[CUDA memcpy DtoH]")
    assert (m["total_ns"], m["count"], m["max_ns"]) == (61_381_882, 103, 20_467_582)
    s = row(part.tables["mem_size_sum"], "[CUDA memcpy DtoH]")
    assert s["total_bytes"] == pytest.approx(805.511e6) and s["max_bytes"] == pytest.approx(268.435e6)
    assert part.warnings == []


def test_alcf_two_nsys_versions_give_the_same_kernel_table():
    old, new = read(ALCF22), read(ALCF24)
    assert new.version == "2023+"
    assert sorted(old.tables) == sorted(new.tables)
    ko, kn = old.tables["kern_sum"], new.tables["kern_sum"]
    assert sorted(ko["name"]) == sorted(kn["name"])
    assert dict(zip(ko["name"], ko["count"])) == dict(zip(kn["name"], kn["count"]))
    common = ["time_pct", "total_ns", "count", "avg_ns", "med_ns", "min_ns", "max_ns", "std_ns", "name"]
    assert kn.columns == common and ko.columns == common[:-1] + ["grid", "block", "name"]
    assert row(kn, "void add_kernel<double>(const T1 *, const T1 *, T1 *)")["total_ns"] == 58_234_880
    assert row(kn, "void init_kernel<double>(T1 *, T1 *, T1 *, T1, T1, T1)")["count"] == 1
    assert row(new.tables["api_sum"], "cudaLaunchKernel")["count"] == 501
    assert row(new.tables["mem_size_sum"], "[CUDA memcpy Device-to-Host]")["total_bytes"] == pytest.approx(805.652e6)
    # both spellings of the copy direction normalise to the same kind in the loader
    for path in (ALCF22, ALCF24):
        prof = load_paths([str(path)])
        assert prof.tables["mem_time_sum"]["name"].str.contains("memcpy").all()
        assert {i["kind"] for i in prof.inputs} == {"nsys-console"}


def test_deep_dive_five_runs_first_diagnosed_with_a_warning():
    part = read(DEEP)
    assert sorted(part.tables) == ["api_sum", "kern_sum", "mem_size_sum", "mem_time_sum", "nvtx_sum", "osrt_sum"]
    k = part.tables["kern_sum"].row(0, named=True)
    assert (k["name"], k["total_ns"], k["count"], k["max_ns"]) == \
        ("vectorAdd(const float *, const float *, float *, int)", 1_831_281, 1_010, 4_705)
    lk = row(part.tables["api_sum"], "cudaLaunchKernel")
    assert (lk["total_ns"], lk["count"], lk["min_ns"]) == (3_201_638, 1_010, 0)
    assert row(part.tables["api_sum"], "cudaMalloc")["total_ns"] == 106_912_410
    n = row(part.tables["nvtx_sum"], "Profile_Loop")
    assert (n["total_ns"], n["style"]) == (3_481_709, "PushPop")
    assert row(part.tables["osrt_sum"], "sem_wait")["total_ns"] == 335_987_431
    assert row(part.tables["mem_time_sum"], "[CUDA memcpy HtoD]")["count"] == 2
    assert part.tables["mem_size_sum"]["total_bytes"].to_list() == [0.0, 0.0]
    runs = [str(w) for w in part.warnings if "runs of nsys output" in str(w)]
    # each run starts on the line after the previous run's last table (its `nsys profile` preamble is its own)
    assert len(runs) == 1 and "holds 5 runs" in runs[0]
    assert "run 1: lines 1-86; run 2: lines 87-170; run 3: lines 171-252; run 4: lines 253-337; run 5: lines 338-end" \
        in runs[0]
    assert f"csplit -s -f {DEEP.stem}_run -b '%02d.txt' {DEEP} 87 171 253 338" in runs[0]


def test_laplace_twelve_kernel_tables():
    part = read(LAPLACE)
    assert list(part.tables) == ["kern_sum"]
    k = part.tables["kern_sum"]
    st = row(k, "stencil(int, int, float *, float *)")
    assert (st["total_ns"], st["count"], st["med_ns"], st["std_ns"]) == (919_138, 2, 459_569.0, 1_199.3)
    assert row(k, "copy(int, int, float *, float *)")["total_ns"] == 881_603
    assert any("holds 12 runs" in str(w) for w in part.warnings)


def test_laplace_h100_tables_without_separators_or_padding(tmp_path):
    # derived: the H100 half of the real file, whose tables have no thousands separators and no trailing padding
    text = text_of(LAPLACE)
    part = parse_text(tmp_path, text[text.index("# Results from H100"):])
    st = row(part.tables["kern_sum"], "stencil(int, int, float *, float *)")
    assert (st["total_ns"], st["avg_ns"], st["max_ns"], st["std_ns"]) == (730_788, 365_394.0, 368_162, 3_914.5)


def test_text_without_tables_is_not_read(tmp_path):
    assert parse_text(tmp_path, "hello\n Time (%)  Total\n --------  -----\n") is None
    assert parse_text(tmp_path, text_of(FIXTURES / "README.md"), "README.md") is None


# ------------------------------------------------------------------------------------ derived variants
def _spans(dashes):
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _tables(lines):
    """(header index, spans, row indexes) of each column-format table, found the simple way."""
    out = []
    for i in range(len(lines) - 1):
        if lines[i].strip() and re.fullmatch(r" *-[ -]*", lines[i + 1]) and "Time" in lines[i] + lines[i + 1] \
                or (lines[i].lstrip().startswith("Total (MB)") and re.fullmatch(r" *-[ -]*", lines[i + 1])):
            j = i + 2
            while j < len(lines) and lines[j].strip():
                j += 1
            out.append((i, _spans(lines[i + 1]), list(range(i + 2, j))))
    return out


def to_table_format(text, plain=False):
    """`--format table` layout: the same cells (sliced from the real text) between '|', in '+---+' borders;
    plain: without thousands separators (numbers re-aligned right in the same widths)."""
    lines = text.split("\n")
    for h, spans, rows in reversed(_tables(lines)):
        def cells(s):
            return "|" + "|".join(" " + cell(s[a:b], k).ljust(b - a) + " " for k, (a, b) in enumerate(spans)) + "|"

        def cell(c, k):
            return c.replace(",", "").rjust(len(c)) if plain and k < len(spans) - 1 else c
        border = "+" + "+".join("-" * (b - a + 2) for a, b in spans) + "+"
        new = [border, cells(lines[h]), border] + [cells(lines[r]) for r in rows] + [border]
        lines[h:rows[-1] + 1 if rows else h + 2] = new
    return "\n".join(lines)


def to_markdown(text):
    """What people make of the console output in a README: a pipe table with backticked names."""
    lines = text.split("\n")
    for h, spans, rows in reversed(_tables(lines)):
        def cut(s):
            return [s[(spans[k - 1][1] if k else 0):(b if k < len(spans) - 1 else len(s))].strip()
                    for k, (a, b) in enumerate(spans)]
        body = ["| " + " | ".join(cut(lines[h])) + " |", "|" + "---:|" * (len(spans) - 1) + ":---|"]
        body += ["| " + " | ".join(c[:-1] + [f"`{c[-1]}`"]) + " |" for c in map(cut, (lines[r] for r in rows))]
        lines[h:rows[-1] + 1] = body
    return "\n".join(lines)


def in_numbers(text, fn):
    """Apply fn to the numeric part of every table row (all columns but the last, the name)."""
    lines = text.split("\n")
    for h, spans, rows in _tables(lines):
        cut = spans[-1][0]
        for r in rows:
            lines[r] = fn(lines[r][:cut]) + lines[r][cut:]
    return "\n".join(lines)


def test_table_format(tmp_path):
    real = read(LAUNCH)
    text = to_table_format(text_of(LAUNCH))
    assert "+----------+-----------------+" in text and "|     90.5 |     279,535,463 |" in text
    same_tables(parse_text(tmp_path, text), real)


def test_table_format_without_thousands_separators(tmp_path):
    # nsys bundled with ncu 2025.1 prints plain numbers; the '+' borders still give the columns
    text = to_table_format(text_of(LAUNCH), plain=True)
    assert "|       279535463 |" in text
    same_tables(parse_text(tmp_path, text), read(LAUNCH))


def test_table_format_edited_by_hand(tmp_path):
    # cells no longer under the '+' of the borders (commas deleted in an editor): the '|' still separate them
    text = re.sub(r"(?<=\d),(?=\d{3})", "", to_table_format(text_of(ALCF24)))
    assert "|     601029880 |        19 |" in text
    same_tables(parse_text(tmp_path, text), read(ALCF24))


def test_markdown_pipe_table(tmp_path):
    text = to_markdown(text_of(ALCF24))
    assert "| 25.0 | 58,234,880 | 100 |" in text
    same_tables(parse_text(tmp_path, text, "notes.md"), read(ALCF24))


@pytest.mark.parametrize("how", ["indented", "quoted", "commented", "fenced-crlf"])
def test_quoted_in_documents(tmp_path, how):
    text = text_of(LAUNCH)
    if how == "indented":        # a Markdown code block by indentation
        doc = "# Profile\n\nWe ran nsys:\n\n" + "\n".join("    " + s for s in text.split("\n")) + "\nThat is all.\n"
    elif how == "quoted":
        doc = "Output:\n" + "\n".join("> " + s for s in text.split("\n"))
    elif how == "commented":     # pasted below a job script, as '#  ...' comment lines
        doc = "#!/bin/sh\nnsys stats -r cuda_gpu_kern_sum,cuda_api_sum rep.nsys-rep\n\n" + \
              "\n".join("# " + s for s in text.split("\n"))
    else:
        doc = ("## Results\n```text\n" + text + "```\nThe GPU is mostly idle.\n").replace("\n", "\r\n")
    same_tables(parse_text(tmp_path, doc, "README.md"), read(LAUNCH))


@pytest.mark.parametrize("sep", ["’", "'", "\u202f"])
def test_thousands_separators(tmp_path, sep):
    text = in_numbers(text_of(LAUNCH), lambda s: s.replace(",", sep))
    assert f"17{sep}223{sep}661" in text
    same_tables(parse_text(tmp_path, text), read(LAUNCH))


def test_european_decimals(tmp_path):
    # '17,223,661' -> '17.223.661', '861.2' -> '861,2', '1,376.0' -> '1.376,0' (the names keep their commas)
    text = in_numbers(text_of(LAUNCH), lambda s: s.translate(str.maketrans(",.", ".,")))
    assert "17.223.661" in text and "   20.000" in text and "5.892.677,3" in text
    same_tables(parse_text(tmp_path, text), read(LAUNCH))


def test_european_decimals_decided_per_file(tmp_path):
    # a size table alone is ambiguous ('805,652' could be US thousands): the time tables of the same file decide
    text = in_numbers(text_of(ALCF24), lambda s: s.translate(str.maketrans(",.", ".,")))
    assert "805,652" in text
    part = parse_text(tmp_path, text)
    assert row(part.tables["mem_size_sum"], "[CUDA memcpy Device-to-Host]")["total_bytes"] == pytest.approx(805.652e6)
    same_tables(part, read(ALCF24))


def test_progress_bars_joined_with_carriage_returns(tmp_path):
    def bars(m):
        steps = [f"[{m.group(1)}] [{'=' * (p // 4):<24}{p}%] {m.group(2)}" for p in (0, 25, 50, 75)]
        return "\r".join(steps + [m.group(0)])
    text = re.sub(r"^\[(\d/8)\] \[=+100%\] (.*)$", bars, text_of(ALCF24), flags=re.M)
    assert "\r[1/8] [======" in text
    same_tables(parse_text(tmp_path, text), read(ALCF24))
    same_tables(parse_text(tmp_path, text.replace("\n", "\r\n")), read(ALCF24))


def test_run_lines_are_file_lines_with_carriage_returns(tmp_path):
    # '\r'-joined progress bars add no lines: the several-runs warning names the lines an editor shows
    def bars(m):
        return "\r".join([f"[{m.group(1)}] [{p}%] {m.group(2)}" for p in (0, 50)] + [m.group(0)])
    text = re.sub(r"^\[(\d/8)\] \[=+100%\] (.*)$", bars, text_of(DEEP), flags=re.M)
    got = [str(w).replace(str(tmp_path / DEEP.name), str(DEEP)) for w in parse_text(tmp_path, text, DEEP.name).warnings]
    assert got == [str(w) for w in read(DEEP).warnings]


def test_application_output_inside_a_table_is_skipped(tmp_path):
    text = text_of(ALCF24).replace("  ioctl         \n", "  ioctl         \nRank 0: step 10 done\n", 1)
    part = parse_text(tmp_path, text)
    same_tables(part, read(ALCF24))
    assert any("1 line(s) inside the osrt_sum table" in str(w) for w in part.warnings)


def test_misaligned_rows_fall_back_to_whitespace_split(tmp_path):
    # a copy that lost the leading spaces of its rows: numbers first, then the name
    lines = text_of(ALCF24).split("\n")
    for h, spans, rows in _tables(lines):
        for r in rows:
            lines[r] = lines[r].lstrip()
    same_tables(parse_text(tmp_path, "\n".join(lines)), read(ALCF24))


def _relayout(header, rows):
    """nsys column layout: header centred, numbers right-aligned, the name column left-aligned."""
    widths = [max(len(c) for c in col) for col in zip(header, *rows)]
    def line(cells, head):
        out = [c.center(w) if head else (c.ljust(w) if k == len(cells) - 1 else c.rjust(w))
               for k, (c, w) in enumerate(zip(cells, widths))]
        return " " + "  ".join(out)
    return "\n".join([line(header, True), " " + "  ".join("-" * w for w in widths)] + [line(r, False) for r in rows])


@pytest.mark.parametrize("unit,factor,decimals", [("us", 1e3, 3), ("ms", 1e6, 4), ("sec", 1e9, 6)])
def test_timeunit(tmp_path, unit, factor, decimals):
    # the real cuda_api_sum table printed again as `nsys stats --timeunit <unit>` would (ms: 4 decimals in 2022.4.2)
    lines = text_of(LAUNCH).split("\n")
    h, spans, rows = _tables(lines)[1]
    header = [c.replace("(ns)", f"({unit})") for c in re.split(r"\s{2,}", lines[h].strip())]
    cells = [lines[r].split(None, 8) for r in rows]
    def conv(k, v):
        if k in (0, 2, 8):          # Time (%), Num Calls, Name
            return v
        return f"{float(v.replace(',', '')) / factor:,.{decimals}f}"
    text = " ** CUDA API Summary (cuda_api_sum):\n\n" + _relayout(header, [[conv(k, v) for k, v in enumerate(c)]
                                                                          for c in cells]) + "\n"
    assert f"Total Time ({unit})" in text
    part = parse_text(tmp_path, text)
    got, real = part.tables["api_sum"], read(LAUNCH).tables["api_sum"]
    tol = factor * 10 ** -decimals / 2 + 1
    for col in ("total_ns", "min_ns", "max_ns", "avg_ns"):
        assert all(abs(a - b) <= tol for a, b in zip(got[col], real[col])), col
    assert got["count"].to_list() == real["count"].to_list()
    assert got["total_ns"].dtype == pl.Int64
    if unit == "ms":
        assert "279.5355" in text and row(got, "cudaLaunchKernel")["total_ns"] == 279_535_500


def _old_titles(text, kern_title, api_title):
    """2020-2021 `--stats=true` layout: no Processing / ' ** ' lines, a bare section title instead."""
    text = re.sub(r"NOTICE:.*\n.*\n.*\n", "", text)
    text = re.sub(r"Processing \[.*\n", "", text)
    text = text.replace(" ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):", kern_title)
    return text.replace(" ** CUDA API Summary (cuda_api_sum):", api_title)


def test_old_section_titles(tmp_path):
    text = _old_titles(text_of(LAUNCH), "CUDA Kernel Statistics:", "CUDA API Statistics:")
    # 2020 headers: 'Time(%)', 'Average', 'Minimum', 'Maximum' (same width, so the dashes still fit)
    text = text.replace("Time (%)", " Time(%)").replace("Avg (ns)", " Average").replace("Min (ns)", " Minimum") \
        .replace("Max (ns)", " Maximum")
    assert "(cuda_api_sum)" not in text and "Processing" not in text
    part = parse_text(tmp_path, text)
    assert part.version == "2020-2021"
    same_tables(part, read(LAUNCH))


def test_api_or_osrt_by_title_then_by_names(tmp_path):
    # the title decides (even against the names) ...
    text = _old_titles(text_of(LAUNCH), "CUDA Kernel Statistics:", "Operating System Runtime API Statistics:")
    part = parse_text(tmp_path, text)
    assert sorted(part.tables) == ["kern_sum", "osrt_sum"]
    # ... and without any title the names do: cu*/cuda* names are CUDA API calls, poll/ioctl are OS runtime
    assert sorted(parse_text(tmp_path, _old_titles(text_of(LAUNCH), "", "")).tables) == ["api_sum", "kern_sum"]
    text = text_of(ALCF24)
    text = re.sub(r"\[\d/8\] Executing.*\n", "", text)
    assert sorted(parse_text(tmp_path, text).tables) == ["api_sum", "kern_sum", "mem_size_sum", "mem_time_sum",
                                                         "osrt_sum"]


def test_reports_not_used_are_skipped(tmp_path):
    # syscall_sum (2024+) prints osrt_sum's header: its table must not be read as osrt_sum
    text = text_of(ALCF24).replace("Executing 'osrt_sum' stats report", "Executing 'syscall_sum' stats report")
    part = parse_text(tmp_path, text)
    assert "osrt_sum" not in part.tables and "api_sum" in part.tables
    assert any("syscall_sum" in str(w) for w in part.warnings)


def test_report_name_from_file_name(tmp_path):
    # `nsys stats -f column -o prof` writes prof_<report>.txt: the name decides between api and osrt
    lines = text_of(LAUNCH).split("\n")
    h, spans, rows = _tables(lines)[1]
    table = "\n".join(lines[h:rows[-1] + 1]) + "\n"
    assert list(parse_text(tmp_path, table, "prof_osrt_sum.txt").tables) == ["osrt_sum"]
    assert list(parse_text(tmp_path, table, "prof.txt").tables) == ["api_sum"]


def test_size_title_with_its_unit(tmp_path):
    # 2020: 'CUDA Memory Operation Statistics (by size in KiB):' over unit-less columns
    text = text_of(ALCF24)
    start = text.index("[8/8]")
    block = text[start:text.index("Generated:")].replace("(MB)", "    ")
    block = block.replace("[8/8] Executing 'cuda_gpu_mem_size_sum' stats report",
                          "CUDA Memory Operation Statistics (by size in KiB):")
    part = parse_text(tmp_path, block)
    s = row(part.tables["mem_size_sum"], "[CUDA memcpy Device-to-Host]")
    assert s["total_bytes"] == pytest.approx(805.652 * 1024) and s["count"] == 103
    assert s["max_bytes"] == pytest.approx(268.435 * 1024)


# ------------------------------------------------------------------------------------ through the loader
def test_loader_and_diagnosis_from_console_summaries():
    doc, _ = produced("console_launch_bound")
    assert doc["window"]["source"] == "whole"
    top = doc["findings"][0]
    assert (top["rule"], top["severity"]) == ("launch-bound", "medium")
    kernel_ns = 17_223_661 + 17_209_519 + 1_376 + 864
    assert doc["facts"]["launch_to_kernel_time_ratio"] == pytest.approx(279_535_463 / kernel_ns, rel=1e-4)
    assert "gpu_active_pct" not in doc["facts"]
    # the same diagnosis as the CSV summaries, and every rule these two tables cannot feed is "not evaluated"
    ref, _ = produced("launch_bound_summaries")
    # the CSV summaries also hold nvtx_sum: its step ranges add the starved-GPU estimate, which the two
    # console tables cannot give
    assert [f["rule"] for f in doc["findings"]] == [f["rule"] for f in ref["findings"]]
    # (there, the starved-GPU estimate is folded into launch-bound: no trace attributes the gaps)
    assert "gpu-starved" in [s["rule"] for s in ref["findings"][0].get("supporting", [])]
    missing = {n["rule"] for n in doc["not_evaluated"]}
    assert {n["rule"] for n in ref["not_evaluated"]} <= missing | {"gpu-starved"} and "gpu-starved" in missing
    assert {"compute-bound", "host-bound"} <= missing  # no mem_time_sum, no trace
    # memcpy-bound runs on the API summary's shares (issue 31): copy calls are no part of its API time here
    assert "memcpy-bound" not in missing and "memcpy-bound" not in [f["rule"] for f in doc["findings"]]
    assert doc["facts"]["api_time_memcpy_pct"] == 0
    assert {i["kind"] for i in doc["inputs"]} == {"nsys-console"}


def test_console_loses_to_csv_for_the_same_table(tmp_path):
    import shutil
    shutil.copy(LAUNCH, tmp_path / "stats_column.txt")
    shutil.copy(FIXTURES / "launch_bound_summaries" / "input" / "launch_bound_cuda_gpu_kern_sum.csv", tmp_path)
    prof = load_paths([str(tmp_path)])
    assert prof.source_name("kern_sum") == "launch_bound_cuda_gpu_kern_sum.csv"
    assert prof.source_name("api_sum") == "stats_column.txt"
    assert any("richest source" in str(w) for w in prof.warnings)


def test_names_cut_in_a_table_a_richer_source_gave_are_not_warned_about(tmp_path):
    """Issue 56, item 11: the "names were cut by nsys" warning was said of a console file whose cut table
    the report took from the CSVs beside it. launch_bound's console text (its kernel summary cut, its API
    summary whole) beside launch_bound's CSVs but their API summary: the kernel table comes from the CSV and
    the API summary from the console text, the warning goes; alone, it stays."""
    import shutil

    from nsys_expert import config, pipeline
    console = FIXTURES / "console_launch_bound" / "input" / "stats_column.txt"
    alone = pipeline.diagnose(pipeline.Request([str(console)], config.Settings()))
    assert any("were cut by nsys" in str(w) for w in alone["warnings"])
    for f in (FIXTURES / "launch_bound" / "input").glob("*.csv"):
        if not f.name.endswith("_cuda_api_sum.csv"):
            shutil.copy(f, tmp_path / f.name)
    shutil.copy(console, tmp_path / "stats_column.txt")
    both = pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings()))
    used = {(i["table"], i["path"].rsplit("/", 1)[-1]) for i in both["inputs"]}
    assert ("api_sum", "stats_column.txt") in used and ("kern_sum", "launch_bound_cuda_gpu_kern_sum.csv") in used
    assert not any("were cut by nsys" in str(w) for w in both["warnings"])
