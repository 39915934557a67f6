"""Speed and memory of `nsys-expert diagnose` on a torch.profiler (Kineto) trace, against HTA's load.

    python benchmarks/bench_kineto.py [--source PATH.pt.trace.json.gz] [--tile N] [--repeat 3]
                                      [--hta PYTHON] [--before ROOT] [--sides json,load,diagnose,hta]

Default source: the largest shared trace (../shared/cases/kineto/launch_bound.pt.trace.json.gz,
57 MB of JSON, 40,000 kernels). ``--tile N`` measures instead a trace of N copies of the source laid
end to end (``--tile 9``: 517 MB), written as plain JSON into a temporary folder under /tmp (removed
at the end, never committed). How it is built, from the source's own text (its layout kept, so the
bytes per event are a real trace's): the header before ``"traceEvents": [`` and the tail after its
``]`` once; the events N times, copy k with every ``ts`` shifted by k x (the source's span from its
first ``ts`` to its last ``ts + dur``, plus 1 ms), every ``correlation``, flow ``id`` and
``External id`` by k x (the largest id + 1), and ``ProfilerStep#i`` renamed ``ProfilerStep#(i + k x
steps)``: one process that ran N times as many steps, each launch still joined to its kernel.

For each side, fresh processes in alternating rounds after one warm-up round, medians of wall time,
CPU time and peak RSS (benchmarks/_measure.py):
  - json: the standard library's json.loads of the file (what a dict-per-event parse costs);
  - load: nsys_expert.load.load_paths on the file (parse + frames + summaries);
  - diagnose: `nsys-expert diagnose TRACE -o report.md` (this checkout's code);
  - hta: HolisticTraceAnalysis' ``TraceAnalysis(trace_dir=...)`` on a folder holding the trace, run by
    ``--hta PYTHON`` (an interpreter where ``holistictraceanalysis`` 0.5.0 is installed; left out if none);
  - load@before / diagnose@before: the same with the code tree at ``--before ROOT`` (e.g. a
    ``git archive`` of an earlier commit), for before / after in the same run.
The peak RSS is also given against the JSON's size (issue 33: under 2x). Numbers are printed, never
asserted: speed is not a unit test.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure  # noqa: E402

DEFAULT = os.path.join(ROOT, "..", "shared", "cases", "kineto", "launch_bound.pt.trace.json.gz")
JSON = ("import gzip, json, sys; p = sys.argv[1]; f = gzip.open(p) if p.endswith('.gz') else open(p, 'rb'); "
        "d = json.loads(f.read()); assert d['traceEvents']")
LOAD = ("import sys; sys.path.insert(0, sys.argv[2]); from nsys_expert.load import load_paths; "
        "p = load_paths([sys.argv[1]]); assert p.tables['gpu_trace'].height")
DIAGNOSE = ("import sys, runpy; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'nsys-expert'; "
            "runpy.run_module('nsys_expert', run_name='__main__')")
HTA = ("import sys, logging; logging.disable(logging.CRITICAL); from hta.trace_analysis import TraceAnalysis; "
       "a = TraceAnalysis(trace_dir=sys.argv[1]); assert len(a.t.get_all_traces())")
_SHIFTED = re.compile(rb'"(ts|correlation|id|External id)": (-?\d+(?:\.\d+)?)')
_STEP = re.compile(rb"ProfilerStep#(\d+)")


def tile(src: str, copies: int, out: str) -> None:
    """Write ``copies`` copies of the trace ``src`` end to end into ``out`` (see the docstring)."""
    data = (gzip.open(src) if src.endswith(".gz") else open(src, "rb")).read()
    doc = json.loads(data)
    ev = [e for e in doc["traceEvents"] if isinstance(e.get("ts"), (int, float))]
    first = min(e["ts"] for e in ev)
    span = max(e["ts"] + e.get("dur", 0) for e in ev) - first + 1000.0
    ids = [v for e in ev for v in (e.get("id"), (e.get("args") or {}).get("correlation"),
                                   (e.get("args") or {}).get("External id")) if isinstance(v, int)]
    id_step = max(ids, default=0) + 1
    steps = max((int(m) for m in _STEP.findall(data)), default=-1) + 1
    del doc, ev, ids
    m = re.search(rb'"traceEvents"\s*:\s*\[', data)
    end = data.rindex(b"]")
    head, body, tail = data[:m.end()], data[m.end():end].rstrip(), data[end:]
    with open(out, "wb") as fh:
        fh.write(head)
        for k in range(copies):
            if k:
                def shift(mt, k=k):
                    key, v = mt.group(1), mt.group(2)
                    if key == b"ts":
                        return b'"ts": %.3f' % (float(v) + k * span)
                    return b'"%s": %d' % (key, int(v) + k * id_step) if b"." not in v else mt.group(0)
                part = _SHIFTED.sub(shift, body)
                if steps:
                    part = _STEP.sub(lambda mt, k=k: b"ProfilerStep#%d" % (int(mt.group(1)) + k * steps), part)
                fh.write(b",")
            else:
                part = body
            fh.write(part)
        fh.write(b"\n  " + tail)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=DEFAULT)
    ap.add_argument("--tile", type=int, default=0, help="measure N copies of the source end to end")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hta", default=None, help="a Python with holistictraceanalysis installed")
    ap.add_argument("--before", default=None, help="a code tree to measure beside this one")
    ap.add_argument("--sides", default="json,load,diagnose,hta")
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    tmp = tempfile.mkdtemp(prefix="nsx-kineto-bench-")
    try:
        folder = os.path.join(tmp, "trace")      # HTA reads a folder of rank traces
        os.mkdir(folder)
        if a.tile:
            trace = os.path.join(folder, "rank-0.pt.trace.json")
            tile(src, a.tile, trace)
        else:
            trace = os.path.join(folder, "rank-0." + os.path.basename(src).split(".", 1)[1])
            shutil.copy(src, trace)
        opened = gzip.open(trace) if trace.endswith(".gz") else open(trace, "rb")
        with opened as fh:
            json_mb = sum(len(b) for b in iter(lambda: fh.read(1 << 24), b"")) / 1e6
        report = os.path.join(tmp, "report.md")
        cmds = {"json": [sys.executable, "-c", JSON, trace],
                "load": [sys.executable, "-c", LOAD, trace, ROOT],
                "diagnose": [sys.executable, "-c", DIAGNOSE, ROOT, "diagnose", trace, "-o", report]}
        if a.before:
            before = os.path.abspath(a.before)
            cmds["load@before"] = [sys.executable, "-c", LOAD, trace, before]
            cmds["diagnose@before"] = [sys.executable, "-c", DIAGNOSE, before, "diagnose", trace, "-o", report]
        if a.hta:
            cmds["hta"] = [a.hta, "-c", HTA, folder]
        sides = a.sides.split(",") + (["load@before", "diagnose@before"] if a.before else [])
        cmds = {k: v for k, v in cmds.items() if k in sides}
        print(f"{os.path.basename(src)}" + (f" x {a.tile}" if a.tile else "")
              + f": {os.path.getsize(trace) / 1e6:.1f} MB on disk, {json_mb:.1f} MB of JSON; "
              f"medians of {a.repeat} runs; {_measure.load()}", flush=True)
        res = _measure.alternate(cmds, a.repeat)
        med = {k: tuple(statistics.median(r[i] for r in v) for i in range(3)) for k, v in res.items()}
        for k, (wall, rss, cpu) in med.items():
            print(f"  {k:16s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak RSS {rss:7.0f} MB "
                  f"({rss / json_mb:4.2f}x the JSON)")
        if "hta" in med:
            for k in ("diagnose", "diagnose@before"):
                if k in med:
                    print(f"  {k} / HTA load: {med[k][0] / med['hta'][0]:.2f} (wall), "
                          f"{med[k][2] / med['hta'][2]:.2f} (cpu)")
        print(f"  after: {_measure.load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
