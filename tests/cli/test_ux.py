"""What a new user trips over (issue 35), each on the real fixtures: ``-o`` never replaces a file
nsys-expert did not write, HTML carries the Markdown's sections, printed commands run as printed,
verdicts agree with their findings, readable diffs, one-line errors."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, needs_shared
from nsys_expert.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_error(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


# 1. -o overwrite guard ------------------------------------------------------------------------

@pytest.mark.parametrize("name,body", [pytest.param("pack.yaml", "rules: []\n", marks=pytest.mark.slow),   # 0.6-0.7 s each
                                       pytest.param("pyproject.toml", "[tool.nsys-expert]\n", marks=pytest.mark.slow),  # (issue
                                       ("notes.md", "my notes\n")])                                                   # 56, item 14)
def test_o_refuses_a_file_nsys_expert_did_not_write(tmp_path, name, body):
    target = tmp_path / name
    target.write_text(body)
    r = run("diagnose", FIXTURES / "launch_bound" / "input", "-o", target)
    one_line_error(r, name, "refusing to overwrite", "--force")
    assert target.read_text() == body
    r = run("diagnose", FIXTURES / "launch_bound" / "input", "-o", target, "--force")
    assert r.exit_code == 0 and target.read_text().startswith("# nsys-expert")


@pytest.mark.parametrize("fmt", ["md", pytest.param("json", marks=pytest.mark.slow),   # 1 s each (issue 56, item 14)
                                 pytest.param("html", marks=pytest.mark.slow)])
def test_o_replaces_its_own_report_of_another_run(tmp_path, fmt):
    """Issue 48, item 5 (issue 35 had refused another run's report: every profile -> fix -> profile
    again loop then needed --force)."""
    target = tmp_path / f"report.{fmt}"
    assert run("diagnose", FIXTURES / "launch_bound" / "input", "--format", fmt, "-o", target).exit_code == 0
    first = target.read_text()
    assert run("diagnose", FIXTURES / "launch_bound" / "input", "--format", fmt, "-o", target).exit_code == 0
    r = run("diagnose", FIXTURES / "sync_bound" / "input", "--format", fmt, "-o", target)
    assert r.exit_code == 0 and target.read_text() != first
    assert ("sync_bound" in target.read_text()) and "launch_bound_cuda" not in target.read_text()


def test_o_refuses_a_file_that_only_mentions_nsys_expert(tmp_path):
    target = tmp_path / "notes.md"
    target.write_text("My notes on nsys-expert: the launch-bound finding was right.\n")
    r = run("diagnose", FIXTURES / "launch_bound" / "input", "-o", target)
    one_line_error(r, "notes.md", "not an nsys-expert report", "--force")
    assert r.stderr.count("refusing") == 1     # said once


def test_o_rewrites_its_own_listing(tmp_path):
    target = tmp_path / "rules.txt"
    assert run("rules", "-o", target).exit_code == 0
    assert run("rules", "-o", target).exit_code == 0


# 2. HTML carries what the Markdown has ---------------------------------------------------------

def _sections(fixture):
    import re

    from nsys_expert import pipeline, report
    from nsys_expert.report import html

    req = pipeline.Request([str(FIXTURES / fixture / "input")])
    doc, series, zoom = pipeline.diagnose_with_series(req)
    md = report.render_markdown(doc)
    page = html.render_html(doc, series, "en", zoom)
    md_heads = [re.sub(r"\s+", " ", h).strip() for h in re.findall(r"^## (.+)$", md, re.M)]
    html_heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page, re.S)]
    return doc, md, page, md_heads, html_heads


@pytest.mark.parametrize("fixture", ["launch_bound", "dataloader_bound", "compute_bound_ncu", "launch_bound_summaries"])
def test_html_and_markdown_carry_the_same_sections(fixture):
    import html as _html

    doc, md, page, md_heads, html_heads = _sections(fixture)
    assert md_heads == [_html.unescape(h) for h in html_heads]
    for words in ("Total recoverable time", "Supporting evidence"):
        assert (words in md) == (words in page), words
    n = len({p["path"].replace("\\", "/").rsplit("/", 1)[-1] for p in doc["inputs"]})
    assert f"Inputs: {n}</footer>" in page


# 2 and 5. diff: HTML that is HTML; changed rows first, counts as counts, whole kernel names ----

def _diff(fmt, a="compute_bound_ncu", b="memory_bound_ncu"):
    r = run("diff", FIXTURES / a / "input", FIXTURES / b / "input", "--format", fmt)
    assert r.exit_code == 0, r.stderr
    return r.stdout


def test_diff_html_is_html_not_markdown_in_pre():
    page = _diff("html")
    assert "<pre" not in page and "<table>" in page and "<h2>Facts</h2>" in page and "|---" not in page


def test_diff_shows_changed_facts_and_counts_the_unchanged_in_one_line():
    import re

    md = _diff("md", "launch_bound", "launch_bound_graphed")
    rows = [r for r in md.splitlines() if r.startswith("| `")]
    assert rows and all(not re.search(r"\| (0\.00|0) \| (0\.00|0) \|", r) for r in rows), rows
    assert re.search(r"^\d+ facts unchanged: `", md, re.M)
    assert "| `graph_launch_count` | 0 | 199 | +199 |" in md          # a count has no decimals
    assert "| fact | before | after | change | verdict |" in md        # every column has a header
    assert "**Resolved** (0)" not in md


def test_diff_cut_kernel_names_are_given_whole():
    md = _diff("md")
    assert "…`" in md and "## Kernel names in full" in md
    assert "`void at::native::vectorized_elementwise_kernel<(int)4, at::native::" in md


# 3. printed commands run as printed -------------------------------------------------------------

def _torchrun_parser():
    """torchrun's own rules for these options (torch.distributed.run): several nodes need a
    rendezvous endpoint (c10d) or a node rank with the master address."""
    import argparse

    p = argparse.ArgumentParser(prog="torchrun")
    for o in ("--nnodes", "--nproc-per-node", "--rdzv-id", "--rdzv-backend", "--rdzv-endpoint", "--node-rank",
              "--master-addr", "--master-port"):
        p.add_argument(o)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


@pytest.mark.parametrize("nnodes", [1, 2])
def test_torchrun_launch_parses_and_can_meet_across_nodes(nnodes):
    import os
    import shlex

    from nsys_expert import scenarios as sc

    plan = sc.build("torchrun", sc.Options(app=("train.py",), nnodes=nnodes))
    line = plan.commands[0].line()
    words = shlex.split(os.path.expandvars(line.replace("${MASTER_ADDR}", "node0")))
    a = _torchrun_parser().parse_args(words[1:])
    assert a.script == "run_nsys.py" and int(a.nnodes) == nnodes
    if nnodes > 1:
        assert (a.rdzv_backend == "c10d" and a.rdzv_endpoint == "node0:29500") or a.node_rank is not None, line
    assert "osrt" in plan.files[0].content.split('"-t", "')[1].split('"')[0]


def test_ncu_kernel_without_kernel_does_not_filter_on_a_made_up_name():
    from nsys_expert import scenarios as sc

    for name in ("ncu-kernel", "ncu-roofline"):
        plan = sc.build(name, sc.Options())
        assert "--kernel-name" not in plan.commands[0].argv and "--kernel" in plan.notes[0]
        assert "--kernel-name" in sc.build(name, sc.Options(kernel="gemm")).commands[0].argv


def test_command_stats_diagnoses_what_keeps_the_os_runtime_trace():
    from nsys_expert import scenarios as sc

    last = sc.build("stats", sc.Options()).commands[-1].argv
    assert last[:2] == ["nsys-expert", "diagnose"] and last[2].endswith(".sqlite")


# 4. verdicts agree with their findings ----------------------------------------------------------

def _verdict_line(fixture):
    from nsys_expert import pipeline, report

    md = report.render_markdown(pipeline.diagnose(pipeline.Request([str(FIXTURES / fixture / "input")])))
    return next(line for line in md.splitlines() if line.startswith("**Verdict"))


def test_a_measured_trace_is_never_called_summary_reports():
    line = _verdict_line("nccl_single")
    assert "measured on the GPU trace" in line and "from summary reports" not in line


@pytest.mark.parametrize("fixture", ["compute_bound", "healthy"])
def test_compute_bound_is_not_no_bottleneck(fixture):
    line = _verdict_line(fixture)
    assert "No system-level bottleneck" not in line and "Compute-bound" in line and "kernels or the algorithm" in line


# 6. words that read right -----------------------------------------------------------------------

def test_one_block_on_132_sms_is_not_zero_percent_of_a_wave():
    import yaml

    from nsys_expert.engine.rules import ENV

    rule = yaml.safe_load((FIXTURES.parent / "rules" / "kernel" / "tail-effect.yaml").read_text())
    text = ENV.from_string(rule["message"]["en"]).render(waves_per_sm=1 / 132 / 16, grid_size=1, sm_count=132,
                                                          tail_idle_pct=99.9, time_share_pct=3.0)
    assert "0.0 %" not in text and "131 SMs get no block" in text and "1 block on" in text


def test_no_doubled_parentheses_when_the_gpu_trace_is_missing():
    from nsys_expert import pipeline, report

    md = report.render_markdown(pipeline.diagnose(pipeline.Request([str(FIXTURES / "console_deep_dive" / "input")])))
    active = next(line for line in md.splitlines() if line.startswith("- GPU active"))
    assert "))" not in active and "cuda_gpu_trace" in active


def test_markdown_at_a_terminal_shows_no_raw_details_html():
    from nsys_expert import pipeline, report
    from nsys_expert.report import terminal

    md = report.render_markdown(pipeline.diagnose(pipeline.Request([str(FIXTURES / "gil_contention_sqlite" / "input")])))
    assert "<details>" in md
    shown = terminal.plain_details(md)
    assert "<details>" not in shown and "<summary>" not in shown and "note(s) on the inputs (" in shown


# 7. errors: one line that says what to do -------------------------------------------------------

@pytest.mark.parametrize("args", [["diagnose", "x", "--formt", "md"], ["diagnoze", "x"], ["diagnose", "x", "--format", "mdd"]])
def test_a_usage_error_is_one_line_with_the_help_hint(args):
    r = run(*args)
    one_line_error(r, "nsys-expert: error:", "--help")


def test_an_unknown_iteration_range_is_an_error_naming_the_ranges():
    r = run("diagnose", FIXTURES / "launch_bound" / "input", "--iteration-range", "stp")
    one_line_error(r, "--iteration-range stp", "step")


@pytest.mark.parametrize("name,body,kind", [("shot.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "PNG image"),
                                            ("notes.txt", b"just some notes\n", "text file")])
def test_a_file_that_is_no_profile_says_what_it_is(tmp_path, name, body, kind):
    p = tmp_path / name
    p.write_bytes(body)
    one_line_error(run("diagnose", p), name, kind, "not a profile")


# 8. two case folders, each with its own ncu/ ----------------------------------------------------

def test_two_case_folders_with_ncu_name_the_runs(tmp_path):
    import shutil

    for name, case in (("a", "compute_bound_ncu"), ("b", "memory_bound_ncu")):
        shutil.copytree(FIXTURES / case / "input", tmp_path / name)
    r = run("diagnose", tmp_path / "a", tmp_path / "b")
    one_line_error(r, "compute_bound", "memory_bound", "different runs")
    assert "two different ncu reports" not in r.stderr


# 10. README's test counts are the suite's -------------------------------------------------------

@pytest.mark.slow
@needs_shared   # the cases of ../shared parametrize tests: without it fewer are collected
def test_readme_test_counts_are_the_collected_counts():
    import re
    import subprocess
    import sys

    root = FIXTURES.parent
    m = re.search(r"([\d,]+) of ([\d,]+) tests", (root / "README.md").read_text(encoding="utf-8"))
    assert m, "README names the fast set's size"
    fast, total = (int(x.replace(",", "")) for x in m.groups())
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow"], cwd=root,
                         capture_output=True, text=True, timeout=300).stdout
    got = re.search(r"(\d+)/(\d+) tests collected", out)
    assert got and (int(got.group(1)), int(got.group(2))) == (fast, total), \
        f"README says {fast} of {total}; pytest collects {got.groups() if got else out[-300:]}"


def test_window_takes_the_reports_own_seconds_and_says_so():
    import json

    def window(spec):
        r = run("diagnose", FIXTURES / "launch_bound" / "input", "--window", spec, "--format", "json")
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)

    absolute, relative = window("4.279s:5.005s"), window("0.212s:0.938s")
    assert abs(absolute["facts"]["window_ms"] - relative["facts"]["window_ms"]) < 1.0
    assert "first event" in relative["window"]["reason"] and "nsys timeline" in relative["window"]["reason"]
