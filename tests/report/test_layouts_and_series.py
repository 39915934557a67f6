"""The report's layouts and what it is handed: the Markdown and HTML sections in Chinese and English, the chart
series against the facts, the CLI's HTML and piped Markdown, the terminal summary and spinner, a multi-rank
job's timeline rows."""
from __future__ import annotations

import io
import json
import re
import time

import pytest

from conftest import FIXTURES, SHARED, fixture_cases, diagnosed
from nsys_expert import config, facts, load, pipeline, report
from nsys_expert.facts.series import series
from nsys_expert.report import html, terminal

ZH_SECTIONS = ["采集环境", "总体 GPU 利用率", "Top 10 CUDA Kernel", "CUDA API 耗时分布", "通信分析", "瓶颈诊断", "优化建议"]
EN_SECTIONS = ["Collection environment", "Overall GPU utilization", "Top 10 CUDA kernels", "CUDA API time",
               "Communication", "Bottleneck diagnosis", "Optimization advice by priority"]


def render(paths, lang="en") -> tuple[dict, dict, str]:
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(p) for p in paths], config.Settings(lang=lang)))
    return doc, ser, html.render_html(doc, ser, lang, zoom)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_sections_follow_the_report_layout(lang):
    _, _, page = render([FIXTURES / "sync_bound" / "input"], lang)
    h2 = [re.sub(r"^\d+\.\s*", "", h) for h in re.findall(r"<h2>(.*?)</h2>", page)]
    want = ZH_SECTIONS if lang == "zh" else EN_SECTIONS
    found = [next((h for h in h2 if h.startswith(w)), None) for w in want]
    assert None not in found, (want, h2)
    assert [h2.index(x) for x in found] == sorted(h2.index(x) for x in found)


# ------------------------------------------------------------------------------ Markdown zh / en
def _sections(md: str) -> list[str]:
    return [re.sub(r"^##\s+(\d+\.\s+)?", "", ln) for ln in md.splitlines() if ln.startswith("## ")]


def test_zh_markdown_has_the_seven_playbook_sections_in_order():
    doc = diagnosed(FIXTURES / "sync_bound" / "input", lang="zh")
    md = report.render_markdown(doc, "zh")
    secs = _sections(md)
    pos = []
    for name in ZH_SECTIONS:
        hits = [i for i, s in enumerate(secs) if s.startswith(name)]
        assert hits, f"section {name} missing: {secs}"
        pos.append(hits[0])
    assert pos == sorted(pos), secs
    assert md.startswith("# Nsight Systems 性能分析报告")
    playbook = SHARED / "playbook.zh.txt"
    if playbook.is_file():   # the headings are the playbook's own, word for word
        text = playbook.read_text(encoding="utf-8")
        layout = text[text.index("第五步"):]
        heads = [ln[3:].strip() for ln in layout.splitlines() if ln.startswith("## ")][:7]
        assert [secs[i] for i in pos] == heads


def test_en_markdown_has_the_same_sections_in_english():
    en = _sections(report.render_markdown(diagnosed(FIXTURES / "sync_bound" / "input"), "en"))
    zh = _sections(report.render_markdown(
        diagnosed(FIXTURES / "sync_bound" / "input", lang="zh"), "zh"))
    assert len(en) == len(zh)
    pos = [en.index(name) for name in EN_SECTIONS]
    assert pos == sorted(pos)
    zpos = [next(i for i, s in enumerate(zh) if s.startswith(name)) for name in ZH_SECTIONS]
    assert pos == zpos    # the same section at the same place in both languages


# --------------------------------------------------------------------------------------- series
@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in fixture_cases() if c != "launch_bound_summaries"])
def test_series_agree_with_the_facts(case):
    from nsys_expert.errors import InputError

    try:
        prof = load.load_paths([str(FIXTURES / case / "input")])
    except InputError:   # only a multi-rank job may not load as one profile: its page has no timeline
        doc, ser, _ = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / case / "input")]))
        assert doc.get("ranks") and not ser["available"]
        return
    fs = facts.compute(prof, facts.Options())
    s = series(prof, fs, bins=400)
    if "gpu_trace" not in prof.tables:   # console text / summaries only: nothing to bin, said so
        assert not s["available"] and s["reason"]
        return
    assert s["available"] and s["bins"] == len(s["busy_pct"]) == len(s["idle_cause"])
    span = s["span_end_ns"] - s["span_start_ns"]
    if "gpu_active_pct_span" in fs.run:
        assert abs(100 * s["busy_ns_total"] / span - fs.run["gpu_active_pct_span"]) < 1e-3
    if s.get("nccl_pct") is None:
        for v in zip(s["busy_pct"], s["compute_pct"], s["copy_pct"]):
            assert 0 <= v[0] <= 100.0001 and abs(v[0] - v[1] - v[2]) < 0.02
    else:   # NCCL kernels are their own series (compute leaves them out), overlapping compute on other streams
        for b, c, cp, n in zip(s["busy_pct"], s["compute_pct"], s["copy_pct"], s["nccl_pct"]):
            assert 0 <= b <= 100.0001 and max(c, cp, n) - 0.02 <= b <= c + cp + n + 0.02
    got = {c: ns / 1e6 for c, ns in s.get("idle_ns_total", {}).items()}
    want = {r["cause"]: r["ms"] for r in fs.tables.get("idle_breakdown", [])}
    assert set(got) == set(want)
    for c in want:
        assert abs(got[c] - want[c]) < 1e-6 * max(1.0, want[c]), (c, got[c], want[c])
    assert [r["ms"] for r in s["iterations"]] == [r["ms"] for r in fs.tables.get("iterations", [])]


def test_series_nccl_and_zoom(tmp_case):
    d = tmp_case("sync_bound")
    for p in d.iterdir():
        if p.name.endswith(("gpu_trace.csv", "kern_sum.csv")):
            s = re.sub(r'"void at::native::reduce_kernel<[^"]*"',
                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
                       p.read_text(encoding="utf-8"))
            p.write_text(s, encoding="utf-8")
    doc, ser, page = render([d])
    assert doc["facts"]["nccl_kernel_count"] > 0
    assert ser["nccl_pct"] is not None and sum(ser["nccl_pct"]) > 0
    assert 'data-chart="nccl"' in page and 'data-series="nccl' in page
    prof = load.load_paths([str(d)])
    fs = facts.compute(prof, facts.Options())
    w = fs.window
    z = series(prof, fs, bins=100, between=(w.start_ns, w.end_ns))
    assert z["bins"] == 100 and z["span_start_ns"] == w.start_ns and z["startup"] is None
    # inside the window every bin is busy or idle with an attributed cause
    assert all(c is not None for c, b in zip(z["idle_cause"], z["busy_pct"]) if b < 99.9)


def test_html_report_is_the_pipeline_report_and_the_charts_match_it():
    """The page's report is pipeline.diagnose's; the chart series, computed again from the same inputs,
    have its window."""
    a = json.loads(report.to_json(diagnosed(FIXTURES / "sync_bound" / "input")))
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / "sync_bound" / "input")]))
    assert json.loads(report.to_json(doc)) == a
    assert (ser["window"]["start_ns"], ser["window"]["end_ns"]) == (a["window"]["start_ns"], a["window"]["end_ns"])
    assert zoom is None   # the window is most of this profile: no zoom


def test_graphed_profile_says_the_gaps_are_unseen():
    doc, ser, page = render([FIXTURES / "launch_bound_graphed" / "input"])
    assert ser["graph_hidden"]
    assert html.HTML_LABELS["en"]["graph_hidden"] in page


def test_summary_reports_without_timeline():
    doc, ser, page = render([FIXTURES / "launch_bound_summaries" / "input"])
    assert not ser["available"]
    assert 'data-chart="timeline"' not in page and html.HTML_LABELS["en"]["no_timeline"] in page


# ---------------------------------------------------------------------------------------- CLI
def test_cli_html_output(tmp_path):
    from click.testing import CliRunner

    from nsys_expert.cli import main

    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "--format", "html", "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'data-chart="timeline"' in page and 'data-chart="timeline_zoom"' in page
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "sync_bound" / "input"), "--format", "html", "--lang", "zh",
                                  "-o", str(out), "--force"])   # another run's report (issue 35)
    assert r.exit_code == 0 and '<html lang="zh-CN">' in out.read_text(encoding="utf-8")


def test_piped_markdown_is_unchanged():
    from click.testing import CliRunner

    from nsys_expert.cli import main

    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "sync_bound" / "input")])
    assert r.exit_code == 0
    # piped: the Markdown report itself, byte for byte (test_golden pins it to expected.md)
    doc = diagnosed(FIXTURES / "sync_bound" / "input")
    assert r.output == report.render_markdown(doc, "en")
    assert r.stderr_bytes in (None, b"")   # no spinner on a pipe


# ---------------------------------------------------------------------------------- terminal
def test_terminal_summary_is_compact_and_coloured():
    from rich.console import Console

    doc = diagnosed(FIXTURES / "sync_bound" / "input")
    con = Console(record=True, force_terminal=True, color_system="truecolor", width=110)
    terminal.summary(doc, "en", console=con)
    text = con.export_text(clear=False)
    assert "Verdict: Sync-bound" in text and "GPU active 13.7 %" in text and "HIGH" in text
    assert "after a blocking sync" in text and len(text.splitlines()) <= 13   # + the limiter (issue 48)
    assert "  limiter: host work no finding names, 85.0 % of the critical path" in text
    ansi = con.export_text(styles=True)
    assert "\x1b[1;31m" in ansi or "\x1b[31;1m" in ansi     # high in bold red
    con = Console(record=True, force_terminal=True, width=110)
    terminal.summary(diagnosed(FIXTURES / "sync_bound" / "input", lang="zh"), "zh",
                     console=con)
    zh = con.export_text()
    assert "结论" in zh and "高" in zh


def test_terminal_summary_only_for_a_person_who_asked_for_nothing():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert terminal.wants_summary(None, False, Tty())
    assert not terminal.wants_summary(None, False, io.StringIO())       # piped
    assert not terminal.wants_summary("r.md", False, Tty())             # -o
    assert not terminal.wants_summary(None, True, Tty())                # --format md


def test_progress_spinner_only_on_a_terminal_and_only_when_slow():
    quiet = io.StringIO()
    with terminal.progress(["a", "b", "c"], "en", delay=0.0, stream=quiet) as step:
        step("facts")
        time.sleep(0.2)
    assert quiet.getvalue() == ""                                       # not a terminal: nothing
    fast = io.StringIO()
    with terminal.progress(["a", "b", "c"], "en", delay=5.0, stream=fast, force=True):
        pass
    assert fast.getvalue() == ""                                        # quicker than the delay: nothing
    slow = io.StringIO()
    with terminal.progress(["a", "b", "c"], "en", delay=0.0, stream=slow, force=True) as step:
        time.sleep(0.3)
        step("facts")
        time.sleep(0.7)
    assert "computing facts" in slow.getvalue() and "a (+2)" in slow.getvalue()


def test_multi_rank_job_draws_one_timeline_row_per_rank(tmp_path):
    """A multi-rank job has no single timeline: one row per rank (compute, NCCL, copies; the rest idle)
    over each rank's window, from the ranks' own traces."""
    doc, ser, page_html = render([FIXTURES / "ddp_derived_4rank" / "input"])
    ranks = [r["rank"] for r in doc["ranks"]]
    assert len(ranks) == 4 and "_rank_rows" not in doc and len(ser["ranks"]) == 4
    chart = html.charts(doc, ser, None, "en")["ranks"]
    labels = [e["text"] for e in chart["elements"] if e["tag"] == "text" and e["attrs"].get("text-anchor") == "end"]
    assert labels == ranks
    drawn = {e["attrs"]["data-series"] for e in chart["elements"] if "series" in str(e["attrs"].get("class"))}
    assert {"compute", "nccl"} <= drawn
    for row in ser["ranks"]:   # each row bins that rank's own window; busy never exceeds the bin
        assert row["start_ns"] < row["end_ns"] and len(row["compute_pct"]) == len(row["bin_start_ns"])
        assert all(0 <= c + (n or 0) + p <= 100.01 for c, n, p in zip(row["compute_pct"], row["nccl_pct"], row["copy_pct"]))
    # the straggler's row is busier with compute than the others (it is what the others wait for)
    mean = {r["rank"]: sum(r["compute_pct"]) / len(r["compute_pct"]) for r in ser["ranks"]}
    assert max(mean, key=mean.get) == doc["facts"]["straggler_rank"]
    assert 'data-chart="ranks"' in page_html and "one row per rank" not in page_html
    assert "_rank_rows" not in report.to_json(doc)
