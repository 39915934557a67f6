"""Start-up: a shared case end to end (issue 19: <= 0.6 s median), and where the import time goes.

    python benchmarks/bench_startup.py [--case ../shared/cases/healthy] [--repeat 9] [--top 15]

Runs, alternately (the machine is shared: alternating runs see the same load), in fresh processes:
  - reference: ``python -c "import polars"`` (what any run of the tool pays at least),
  - baseline:  ``python -c "pass"`` (the interpreter alone),
  - diagnose:  ``python -m nsys_expert diagnose CASE -o FILE`` (warm pack and rule-text cache: one run
               first; the package's bytecode compiled first, as ``pip install`` does),
and prints best and median of each, the ratios diagnose / reference, the load average before and after,
then one ``python -X importtime`` profile of the diagnosis: the heaviest imports (cumulative) and whether
jsonschema (needed only on a pack-cache miss), durable (only when rules run) and rich (only for a
terminal) were imported. Numbers are printed, never asserted.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], env: dict, key: str | None = None) -> float:
    """Wall seconds of one run; its CPU seconds (user + system, from the children's rusage) go to CPU[key]:
    on a loaded machine the wall time is mostly waiting for a core, the CPU time is what the run costs."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if key:
        CPU.setdefault(key, []).append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default=os.path.join(ROOT, "..", "shared", "cases", "healthy"))
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = os.path.join(tempfile.mkdtemp(prefix="nsx-bench-"), "report.md")
    cmds = {
        "baseline": [sys.executable, "-c", "pass"],
        "reference": [sys.executable, "-c", "import polars"],
        "diagnose": [sys.executable, "-m", "nsys_expert", "diagnose", a.case, "-o", out],
    }
    # the package's bytecode, as `pip install` writes it: an editable install under PYTHONDONTWRITEBYTECODE=1
    # (this machine's environment) would otherwise compile ~70 modules from source in every run (~0.1 s)
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "nsys_expert")], check=True,
                   stdout=subprocess.DEVNULL)
    timed(cmds["diagnose"], env)                      # warm the pack cache and the OS file cache
    load0 = os.getloadavg()[0]
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(a.repeat):
        for k, c in cmds.items():
            times[k].append(timed(c, env, k))
    load1 = os.getloadavg()[0]
    print(f"case {os.path.basename(os.path.normpath(a.case))}, {a.repeat} alternating runs each; load average "
          f"{load0:.2f} -> {load1:.2f} on {os.cpu_count()} cores")
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"  {k:<9} wall best {min(v):.3f} s  median {med[k]:.3f} s | CPU (user+sys) median "
              f"{statistics.median(CPU[k]):.3f} s")
    print(f"  diagnose / import polars: {med['diagnose'] / med['reference']:.2f}x (medians), "
          f"{min(times['diagnose']) / min(times['reference']):.2f}x (bests); target 0.6 s median: "
          f"{med['diagnose'] / 0.6:.2f}x of it; CPU diagnose / import polars "
          f"{statistics.median(CPU['diagnose']) / statistics.median(CPU['reference']):.2f}x")
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "nsys_expert", "diagnose", a.case, "-o", out],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    rows = []
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        self_us, cum_us, name = line.replace("import time:", "").split("|")
        rows.append((int(cum_us), int(self_us), name.rstrip()))
    names = {n.strip() for _, _, n in rows}
    rows = [(c, o, n[1:] if n.startswith(" ") else n) for c, o, n in rows]   # one space follows the bar
    print(f"import profile of one diagnosis ({len(rows)} modules; cumulative, top {a.top} top-level):")
    top = sorted((r for r in rows if not r[2].startswith(" ")), reverse=True)[:a.top]
    for cum, own, name in top:
        print(f"  {cum / 1e3:8.1f} ms  (self {own / 1e3:6.1f})  {name}")
    for mod in ("jsonschema", "durable.engine", "rich", "jinja2", "polars"):
        print(f"  {mod:<15} imported: {'yes' if mod in names else 'no'}")


if __name__ == "__main__":
    main()
