"""Multi-rank jobs at scale: the local process pool against a 2-worker Dask LocalCluster.

    python benchmarks/bench_ranks.py [--ranks 64 256 1024] [--schedulers local dask] [--workers 2]

For each rank count, derives a job with tests/ranks/make_ranks.py (every rank a real H200 trace's
header and rows, one rank slowed) and diagnoses it in a fresh Python process per scheduler, as
`nsys-expert diagnose JOB/ --format json --scheduler S` does (the same pipeline call), printing:
  - wall: the whole diagnosis (start of the pool or cluster included), seconds;
  - client RSS: the peak resident memory of the diagnosing process (the client; the pool's or the
    cluster's worker processes are not in it), MB;
  - per rank: wall / ranks, ms; marginal: the extra wall per extra rank from the smallest count, ms;
  - the JSON report's size, and whether the straggler the derivation slowed was named.
Numbers are printed, never asserted: speed is not a unit test. Needs the dask extra for `dask`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from ranks.make_ranks import make  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# the diagnosing process: the client. It reports its own peak RSS (RUSAGE_SELF: not its children)
CLIENT = r"""
import json, resource, sys, time
from nsys_expert import config, pipeline, report
if __name__ == "__main__":
    job, sched, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t = time.perf_counter()
    doc = pipeline.diagnose(pipeline.Request([job], config.Settings(scheduler=sched, jobs=workers)))
    text = report.to_json(doc)
    wall = time.perf_counter() - t
    straggler = next((e["value"] for f in doc["findings"] if f["rule"] == "rank-straggler"
                      for e in f["evidence"] if e["fact"] == "straggler_rank"), None)
    print(json.dumps({"wall_s": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "ranks": len(doc["ranks"]), "failed": len(doc["ranks_failed"]),
                      "json_mb": len(text) / 1e6, "straggler": straggler}))
"""


def run_one(job: str, sched: str, workers: int) -> dict:
    p = subprocess.run([sys.executable, "-c", CLIENT, job, sched, str(workers)], capture_output=True, text=True,
                       env=ENV, cwd=ROOT, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{sched} on {job} failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--schedulers", nargs="+", default=["local", "dask"])
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    print(f"{os.cpu_count()} cores; {a.workers} workers per scheduler; each rank: "
          "fixtures/compute_bound's trace (real H200 rows), 240 GPU operations + 39 all-reduces")
    print(f"{'ranks':>6} {'scheduler':>9} {'wall s':>8} {'client RSS MB':>14} {'per rank ms':>12} "
          f"{'marginal ms':>12} {'JSON MB':>8} {'straggler':>10}")
    first: dict[str, tuple[int, float]] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="nsx-bench-ranks-") as tmp:
        for n in a.ranks:
            job = os.path.join(tmp, f"r{n}")
            slow = n // 3
            make(job, ranks=n, slow=slow, factor=1.2)
            for sched in a.schedulers:
                r = run_one(job, sched, a.workers)
                base = first.setdefault(sched, (n, r["wall_s"]))
                marginal = (1000 * (r["wall_s"] - base[1]) / (n - base[0])) if n != base[0] else float("nan")
                ok = "yes" if r["straggler"] == f"rank{slow}" else f"NO ({r['straggler']})"
                print(f"{n:>6} {sched:>9} {r['wall_s']:>8.1f} {r['rss_mb']:>14.0f} {1000 * r['wall_s'] / n:>12.1f} "
                      f"{marginal:>12.1f} {r['json_mb']:>8.1f} {ok:>10}", flush=True)
                rows.append((n, sched, r))
    for sched in a.schedulers:
        mine = [(n, r) for n, s, r in rows if s == sched]
        if len(mine) > 1:
            (n0, r0), (n1, r1) = mine[0], mine[-1]
            print(f"{sched}: {n1 / n0:.0f}x the ranks -> {r1['wall_s'] / r0['wall_s']:.1f}x the wall time, "
                  f"{r1['rss_mb'] / r0['rss_mb']:.2f}x the client RSS ({r1['rss_mb']:.0f} MB at {n1} ranks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
