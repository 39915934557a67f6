"""A torch.profiler trace that holds only a stub (issue 56, item 3, the part left open): "A trace that caught only a
stub (160 events) gets 'compute-bound' instead of 'too little to judge'". Each input is a real trace cut here, the way
the profiler cuts one when it stops inside a step: every timed event (``ph`` X, i, s, f) that starts outside
[BEGIN, BEGIN + KEEP) is dropped, a complete event running past the end is shortened to it, and the metadata events
(``ph`` M) and the ``Trace`` span are kept. The verdict must be "too little to judge" in the terminal summary, the JSON
and the Markdown, never a bottleneck or "no bottleneck":

- ``kineto_optimizer`` (H100, AdamW(foreach=False)) cut to the first 1.8 ms of ProfilerStep#9 (the issue's 1.8 ms
  stub): 0.14 ms of GPU work, under the pack's ``min_gpu_busy_ms``;
- ``kineto_dataloader_bound`` (H100) cut to the first 1.8 ms of ProfilerStep#9: its GEMMs keep the GPU 98 % busy for
  1.7 ms, while the whole trace's steps are 84 % idle waiting for data. Before: "No system-level bottleneck found ...
  busy 98.0 %". One step cannot be told from a stub: ``profiler_step_count`` 1 decides;
- ``kineto_optimizer`` cut to the profiler's start-up and the first 0.3 ms of ProfilerStep#4 (20 events with a time);
- the shared H200 compute_bound torch.profiler trace cut to its first 84 ms (the profiler's start-up and one 1.4 ms
  GEMM, 245 events; the window is that GEMM). Before: "Compute-bound: the GPU is doing useful work". One kernel shows
  what it is, not where a run's time goes: the pack's ``min_gpu_ops`` decides;
- ``kineto_optimizer`` cut to the profiler's start-up alone (nothing before ProfilerStep#4 but metadata): nothing was
  recorded, said as such, and the command to profile again is torch.profiler's, not an nsys flag."""
from __future__ import annotations

import functools
import gzip
import json

import pytest
from rich.console import Console

from conftest import FIXTURES, SHARED, needs_shared
from nsys_expert import config, pipeline, report
from nsys_expert.report import terminal


@functools.cache
def _trace(src) -> dict:
    """The real trace, parsed once for the module (1.1 s for kineto_optimizer, cut three times): ``_cut`` makes a
    new document and changes none of its events."""
    return json.loads(gzip.open(src, "rt").read())


def _cut(src, out, begin_step: str | None, keep_us: float, first_event: bool = False):
    """``src`` cut to [BEGIN, BEGIN + keep_us): BEGIN is the start of the ``begin_step`` ProfilerStep range, or of
    the first timed event (``first_event``); written to ``out``."""
    doc = _trace(src)
    ev = doc["traceEvents"]
    timed = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "Trace" and isinstance(e.get("ts"), (int, float))]
    if first_event:
        begin = min(e["ts"] for e in timed)
    else:
        begin = next(e["ts"] for e in timed if e.get("name") == begin_step and e.get("cat") == "user_annotation")
    stop = begin + keep_us
    keep = []
    for e in ev:
        ts = e.get("ts")
        if e.get("cat") != "Trace" and e.get("ph") in ("X", "i", "f", "s") and isinstance(ts, (int, float)) \
                and not begin <= ts < stop:
            continue
        if e.get("ph") == "X" and e.get("cat") != "Trace" and isinstance(ts, (int, float)) \
                and ts + e.get("dur", 0) > stop:
            e = dict(e, dur=stop - ts)       # what ran on when the profiler stopped is cut there
        keep.append(e)
    out.write_text(json.dumps(dict(doc, traceEvents=keep)))
    return out


OPTIMIZER = FIXTURES / "kineto_optimizer" / "input" / "optimizer.pt.trace.json.gz"
LOADER = FIXTURES / "kineto_dataloader_bound" / "input" / "dataloader_bound.pt.trace.json.gz"
COMPUTE = SHARED / "cases" / "kineto" / "compute_bound.pt.trace.json.gz"


def _outputs(path, lang="en"):
    doc = pipeline.diagnose(pipeline.Request([str(path)], config.Settings(lang=lang)))
    con = Console(record=True, width=400)
    terminal.summary(doc, lang, console=con)
    return json.loads(report.to_json(doc)), report.render_markdown(doc, lang), con.export_text()


def _too_little(path, words: str):
    js, md, term = _outputs(path)
    v = js["verdict"]
    assert (v["state"], v["reason"], v["rule"]) == ("undetermined", "too_little_work", None), v
    assert js["too_little_work"] is not None
    assert all(f["severity"] in ("info", "low") for f in js["findings"]), [(f["rule"], f["severity"]) for f in js["findings"]]
    verdict_md = next(line for line in md.splitlines() if line.startswith("**Verdict"))
    assert verdict_md.startswith("**Verdict (undetermined):** Too little") and words in verdict_md, verdict_md
    assert "Too little" in term and words in term, term
    # profile more steps with torch.profiler, not ncu on the stub's kernels nor an nsys flag
    assert v["next_command"] == "nsys-expert command quick --out-dir .", v["next_command"]
    return js, md, term


def test_a_stub_step_with_almost_no_gpu_work(tmp_path):
    js, _, _ = _too_little(_cut(OPTIMIZER, tmp_path / "stub.pt.trace.json", "ProfilerStep#9", 1_800),
                           "the GPU is busy 9.0 % of a short window")
    assert js["too_little_work"]["gpu_busy_ms"] < 1.0 and "profiler_steps" not in js["too_little_work"]
    assert js["facts"]["profiler_step_count"] == 1


def test_a_stub_step_of_busy_gemms_is_not_no_bottleneck(tmp_path):
    js, md, term = _too_little(_cut(LOADER, tmp_path / "stub.pt.trace.json", "ProfilerStep#9", 1_800),
                               "the trace holds one torch.profiler step")
    assert js["facts"]["gpu_active_pct"] > 90          # busy, and still not a verdict
    assert js["too_little_work"]["profiler_steps"] == 1 and js["too_little_work"]["gpu_busy_ms"] > 1.0
    assert "No system-level bottleneck" not in md and "No system-level bottleneck" not in term
    assert any("one torch.profiler step" in str(w) for w in js["warnings"])
    _, md_zh, _ = _outputs(tmp_path / "stub.pt.trace.json", "zh")
    assert "只有一个 torch.profiler 步" in md_zh


def test_the_profilers_start_up_and_a_sliver_of_its_first_step(tmp_path):
    js, _, _ = _too_little(_cut(OPTIMIZER, tmp_path / "startup.pt.trace.json", "ProfilerStep#4", 300),
                           "of a short window")
    assert js["too_little_work"]["gpu_busy_ms"] < 0.1


@needs_shared
def test_start_up_and_one_long_gemm_is_not_compute_bound(tmp_path):
    js, md, term = _too_little(_cut(COMPUTE, tmp_path / "cb.pt.trace.json", None, 84_000, first_event=True),
                               "only 1 GPU kernel(s) in 1.41 ms")
    assert js["facts"]["kernel_count"] == 1 and js["facts"]["gpu_active_pct"] > 90
    assert (js["too_little_work"]["gpu_ops"], js["too_little_work"]["min_gpu_ops"]) == (1, 5)
    assert "Compute-bound: the GPU is doing useful work" not in md
    _, md_zh, _ = _outputs(tmp_path / "cb.pt.trace.json", "zh")
    assert "只有 1 个 GPU kernel" in md_zh


def test_the_profilers_start_up_alone_is_nothing_recorded(tmp_path):
    js, md, term = _outputs(_cut(OPTIMIZER, tmp_path / "nothing.pt.trace.json", "ProfilerStep#4", 0))
    v = js["verdict"]
    assert (v["state"], v["reason"]) == ("undetermined", "no_rows"), v
    assert v["next_command"] == "nsys-expert command quick --out-dir ." and "nsys profile" not in md.split("\n## ")[0]
    assert "Nothing to judge" in term
