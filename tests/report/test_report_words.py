"""What the report says and how it writes numbers (issue 22): Babel's number formatting, window
times from the profile's start, a share's change in points, the noise left out or folded, rule ids
in headings, and the HTML saying the same as the Markdown."""
from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, diagnosed
from nsys_expert.engine.missing import NotEvaluated
from nsys_expert import pipeline, report
from nsys_expert.report import html, number_text, split_warnings


@pytest.mark.parametrize("value, nd, text", [
    (9e-06, 1, "0.000009"), (0.00406, 2, "0.00406"), (1.0, 2, "1"), (4.7213, 1, "4.7"), (95.24, 2, "95.24"),
    (692.3, 1, "692"), (39799, 1, "39,799"), (12345.678, 2, "12,346"), (0.0, 1, "0"), (-0.5, 1, "-0.5"),
    (None, 1, "–"), (True, 1, "true"), (1e20, 1, "100,000,000,000,000,000,000"), ("x", 1, "x")])
def test_numbers_read_as_numbers(value, nd, text):
    assert number_text(value, nd) == text
    assert "e-" not in number_text(value, nd) and "e+" not in number_text(value, nd)


@pytest.fixture(scope="module")
def launch():
    doc = diagnosed(FIXTURES / "launch_bound" / "input")
    return doc, report.render_markdown(doc)


def test_window_times_count_from_the_profile_start(launch):
    doc, md = launch
    w = doc["window"]
    line = next(ln for ln in md.splitlines() if ln.startswith("- Start "))
    start, end = (float(x) for x in re.findall(r"(?:Start|End) ([\d.]+) s", line))
    assert start == pytest.approx((w["start_ns"] - w["span_start_ns"]) / 1e9, abs=1e-3)
    assert end == pytest.approx((w["end_ns"] - w["span_start_ns"]) / 1e9, abs=1e-3)
    assert end <= (w["span_end_ns"] - w["span_start_ns"]) / 1e9 + 1e-3          # inside the profile span
    assert f"{w['start_ns'] / 1e9:.3f}–{w['end_ns'] / 1e9:.3f} s on the nsys timeline" in line


def test_headings_name_the_rule_and_evidence_has_no_stray_space(launch):
    doc, md = launch
    assert "### 1. Launch-bound: the GPU waits between many tiny kernels (high, `launch-bound`)" in md
    assert "### 2. The first iteration is much slower than the rest (warm-up) (info, `slow-first-iteration`, startup)" in md
    assert "| `kernels_per_iter` | 200 | – |" in md and "  |" not in md


def test_single_gpu_run_lists_no_rank_rules_and_each_need_once(launch):
    doc, md = launch
    assert {"rank-imbalance", "rank-straggler"} <= {n["rule"] for n in doc["not_evaluated"]}   # the JSON keeps them
    section = md.split("## Not evaluated")[1].split("##")[0]
    assert "rank-" not in section and "several ranks" not in section
    for line in section.strip().splitlines():
        needs = line.split(": ", 1)[1].split("; ")
        assert len(needs) == len(set(needs)), line


def test_multi_rank_run_keeps_its_rank_rules():
    doc = diagnosed(FIXTURES / "ddp_derived_4rank" / "input")
    groups = report.group_not_evaluated(doc.not_evaluated + [
        NotEvaluated("rank-imbalance", "comm-bound", "run", "medium",
                     ["needs several ranks of one job (per-rank CSV sets or SQLite files, or one export with several "
                      "processes)"])], doc)
    assert any("rank-imbalance" in rules for rules, _ in groups)


def test_notes_on_the_inputs_fold_into_one_collapsed_line():
    doc = diagnosed(FIXTURES / "cupy_nsys2020_sqlite" / "input")
    important, notes = split_warnings(doc["warnings"])
    assert notes and all("nsys writes a table only when it recorded" in str(n) for n in notes)
    md = report.render_markdown(doc)
    warn = md.split("## Warnings")[1]
    folded = [ln for ln in warn.splitlines() if ln.startswith("- <details><summary>")]
    assert len(folded) == 1 and folded[0].endswith("</details>") and f"{len(notes)} note(s)" in folded[0]
    assert len([ln for ln in warn.splitlines() if ln.startswith("- ")]) == len(important) + 1


def test_html_says_what_the_markdown_says():
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / "sync_bound_sqlite" / "input")]))
    page = html.render_html(doc, ser, "en", zoom)
    md = report.render_markdown(doc)
    inputs = re.search(r"<li>Inputs: (.*?)</li>", page).group(1)
    assert inputs.count("sync_bound.sqlite") == 1 and len(doc["inputs"]) > 1   # one file, several tables
    gpus_md = re.search(r"^- GPUs: (.*)$", md, re.M).group(1)
    gpus_html = re.search(r"<li>GPUs: (.*?)</li>", page).group(1)
    assert gpus_html == gpus_md
    start_md = re.search(r"^- (Start .*)$", md, re.M).group(1)
    assert start_md.replace("'", "&#39;") in page


def test_diff_shows_a_share_change_in_points():
    from nsys_expert import diff
    from nsys_expert.diff import render

    d = diff.compare({"facts": {"gpu_active_pct": 4.7, "iter_median_ms": 3.0}},
                     {"facts": {"gpu_active_pct": 98.5, "iter_median_ms": 1.5}}, None)
    text = render.render_markdown(d)
    assert "| `gpu_active_pct` | 4.70 | 98.50 | +93.8 pp |" in text
    assert "| `iter_median_ms` | 3.00 | 1.50 | -1.50 (-50.0 %) |" in text
    assert "1995" not in text


def test_the_window_on_the_profile_clock_is_a_window_argument():
    """Issue 56, item 10: a torch.profiler trace's clock reads millions of seconds, and the report printed
    '5,656,674–5,656,674 s' (start = end, with separators --window does not read). In every golden, the
    range 'as --window takes them' is two plain numbers, start before end."""
    seen = 0
    for md in sorted(FIXTURES.glob("*/expected.md")):
        m = re.search(r"; (\S+)–(\S+) s on the (?:nsys timeline|trace's clock), as --window takes them", md.read_text(encoding="utf-8"))
        if m:
            a, b = float(m.group(1)), float(m.group(2))     # no thousands separator
            assert a < b, (md.parent.name, m.group(0))
            seen += 1
    assert seen >= 100


def test_the_printed_window_gives_the_same_window_back():
    import json

    from nsys_expert import config
    from nsys_expert.cli.diagnose import _parse_time
    case = FIXTURES / "kineto_rocm_mi250"
    md = (case / "expected.md").read_text(encoding="utf-8")
    a, b = md.split(" s on the trace's clock, as --window takes them")[0].rsplit("; ", 1)[1].split("–")
    doc = pipeline.diagnose(pipeline.Request([str(case / "input")],
                                             config.Settings(window=(_parse_time(a + "s"), _parse_time(b + "s")))))
    w = json.loads((case / "expected.json").read_text(encoding="utf-8"))["window"]
    assert doc["window"]["source"] == "user"
    assert abs(doc["window"]["start_ns"] - w["start_ns"]) < 1_000_000 and abs(doc["window"]["end_ns"] - w["end_ns"]) < 1_000_000


def test_a_torch_profiler_report_names_nsys_for_an_nsys_flag():
    """Issue 56, item 10: host-bound on a torch.profiler trace said "profile with --trace=osrt" (an nsys
    flag) and offered nsys's Python sampling; now it says torch.profiler records no OS calls and names nsys."""
    lines = [ln for md in sorted(FIXTURES.glob("kineto_*/expected.md"))
             for ln in md.read_text(encoding="utf-8").splitlines() if "--trace=" in ln]
    assert lines and all("nsys" in ln for ln in lines), [ln for ln in lines if "nsys" not in ln]
    ddp = (FIXTURES / "kineto_hta_ddp_v100" / "expected.md").read_text(encoding="utf-8")
    assert "torch.profiler records no OS calls" in ddp and "torch.profiler(with_stack=True)" in ddp


def test_a_copy_with_no_memory_kind_is_not_unknown_to_unknown():
    """Issue 56, item 11: unified-memory copies were labelled 'Unknown→Unknown'."""
    from nsys_expert.report import shaping
    assert shaping.memkind("Unknown→Unknown", {}) == "–" and shaping.memkind("Pageable→Device", {}) == "Pageable→Device"
