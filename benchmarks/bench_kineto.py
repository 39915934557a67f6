"""Speed and memory of `nsys-expert diagnose` on a torch.profiler (Kineto) trace, against HTA's load.

    python benchmarks/bench_kineto.py [--source PATH.pt.trace.json.gz] [--repeat 3] [--hta PYTHON]

Default source: the largest shared trace (../shared/cases/kineto/launch_bound.pt.trace.json.gz,
40,000 kernels). For each side, fresh processes in alternating rounds after one warm-up round,
medians of wall time, CPU time and peak RSS (benchmarks/_measure.py):
  - json: the standard library's json.loads of the decompressed file (the parse floor of this loader);
  - load: nsys_expert.load.load_paths on the file (parse + frames + summaries);
  - diagnose: `nsys-expert diagnose TRACE -o report.md`;
  - hta: HolisticTraceAnalysis' ``TraceAnalysis(trace_dir=...)`` on a folder holding the trace, run by
    ``--hta PYTHON`` (an interpreter where ``holistictraceanalysis`` 0.5.0 is installed; left out if none).
Numbers are printed, never asserted: speed is not a unit test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure  # noqa: E402

DEFAULT = os.path.join(ROOT, "..", "shared", "cases", "kineto", "launch_bound.pt.trace.json.gz")
JSON = "import gzip, json, sys; d = json.loads(gzip.open(sys.argv[1]).read()); assert d['traceEvents']"
LOAD = ("import sys; sys.path.insert(0, sys.argv[2]); from nsys_expert.load import load_paths; "
        "p = load_paths([sys.argv[1]]); assert p.tables['gpu_trace'].height")
HTA = ("import sys, logging; logging.disable(logging.CRITICAL); from hta.trace_analysis import TraceAnalysis; "
       "a = TraceAnalysis(trace_dir=sys.argv[1]); assert len(a.t.get_all_traces())")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hta", default=None, help="a Python with holistictraceanalysis installed")
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    tmp = tempfile.mkdtemp(prefix="nsx-kineto-bench-")
    try:
        folder = os.path.join(tmp, "trace")      # HTA reads a folder of rank traces
        os.mkdir(folder)
        shutil.copy(src, os.path.join(folder, "rank-0." + os.path.basename(src).split(".", 1)[1]))
        exe = os.path.join(os.path.dirname(sys.executable), "nsys-expert")
        cmds = {"json": [sys.executable, "-c", JSON, src],
                "load": [sys.executable, "-c", LOAD, src, ROOT],
                "diagnose": [exe, "diagnose", src, "-o", os.path.join(tmp, "report.md")]}
        if a.hta:
            cmds["hta"] = [a.hta, "-c", HTA, folder]
        res = _measure.alternate(cmds, a.repeat)
        mb = os.path.getsize(src) / 1e6
        print(f"{os.path.basename(src)}: {mb:.1f} MB on disk; medians of {a.repeat} runs")
        med = {k: tuple(statistics.median(r[i] for r in v) for i in range(3)) for k, v in res.items()}
        for k, (wall, rss, cpu) in med.items():
            print(f"  {k:9s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak RSS {rss:7.0f} MB")
        if "hta" in med:
            print(f"  diagnose / HTA load: {med['diagnose'][0] / med['hta'][0]:.2f} (wall), "
                  f"{med['diagnose'][2] / med['hta'][2]:.2f} (cpu)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
