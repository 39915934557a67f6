"""Derive a multi-rank data-parallel job from one real single-GPU profile (one rank slowed).

    python tests/ranks/make_ranks.py OUT [--ranks 4] [--slow 2] [--factor 1.3]

Source: fixtures/compute_bound/input (a real H200 nsys 2025.3.1 profile: each step is a bf16 GEMM,
an elementwise kernel and a memset). Every rank gets that trace's exact CSV header and rows, with:
- each step's kernels stretched by the rank's speed (1.0, the slow rank FACTOR, plus a seeded
  +-1.5 % jitter per step);
- after each step an all-reduce kernel, named like real NCCL 2.2x kernels
  (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)`), that
  starts when that rank's compute ends and ends when the slowest rank's compute ends plus 0.3 ms:
  every rank waits in the collective for the last one, as NCCL does;
- an NVTX `:step` range per step in nvtx_pushpop_trace (the real file's header).
Files: OUT/rank<i>_cuda_gpu_trace.csv and OUT/rank<i>_nvtx_pushpop_trace.csv.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "fixtures", "compute_bound", "input")
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)"
BASE_NS = 300_000
GAP_NS = 20_000


def _rows(name):
    with open(os.path.join(SRC, f"compute_bound_{name}.csv"), newline="") as fh:
        r = list(csv.reader(fh))
    return r[0], r[1:]


def make(out: str, ranks: int = 4, slow: int = 2, factor: float = 1.3, seed: int = 7) -> list[str]:
    """Per-rank CSV sets derived from one real rank. Past ~60 lines on purpose: one table after another."""
    os.makedirs(out, exist_ok=True)
    header, rows = _rows("cuda_gpu_trace")
    nheader, _ = _rows("nvtx_pushpop_trace")
    col = {h: i for i, h in enumerate(header)}
    S, D, N = col["Start (ns)"], col["Duration (ns)"], col["Name"]
    first = next(i for i, r in enumerate(rows) if r[N].startswith("nvjet"))
    pre, body = rows[:first], rows[first:]
    steps, cur = [], []
    for r in body:
        if r[N].startswith("nvjet") and cur:
            steps.append(cur)
            cur = []
        cur.append(r)
    steps.append(cur)
    rng = random.Random(seed)
    speed = [[(factor if k == slow else 1.0) * (1 + rng.uniform(-0.015, 0.015)) for _ in steps] for k in range(ranks)]
    t0 = int(steps[0][0][S])
    # pass 1: when each rank's compute of each step ends, given that all start a step together
    starts, ends = [], []
    t = t0
    for j, st in enumerate(steps):
        s0 = int(st[0][S])
        comp = []
        for k in range(ranks):
            f = speed[k][j]
            comp.append(max(t + int((int(r[S]) - s0) * f) + int(int(r[D]) * (f if not r[N].startswith("[") else 1))
                            for r in st))
        starts.append(t)
        ends.append(comp)
        t = max(comp) + BASE_NS + GAP_NS
    files = []
    for k in range(ranks):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for r in pre:
            w.writerow(r)
        nv = io.StringIO()
        wn = csv.writer(nv, lineterminator="\n")
        wn.writerow(nheader)
        for j, st in enumerate(steps):
            s0 = int(st[0][S])
            f = speed[k][j]
            for r in st:
                r2 = list(r)
                r2[S] = str(starts[j] + int((int(r[S]) - s0) * f))
                r2[D] = str(int(int(r[D]) * (f if not r[N].startswith("[") else 1)))
                w.writerow(r2)
            done = max(ends[j]) + BASE_NS
            ns = ends[j][k] + 2_000
            nccl = [""] * len(header)
            nccl[S], nccl[D], nccl[col["CorrId"]] = str(ns), str(done - ns), str(900_000 + j)
            for c, v in (("GrdX", "2"), ("GrdY", "1"), ("GrdZ", "1"), ("BlkX", "640"), ("BlkY", "1"), ("BlkZ", "1"),
                         ("Reg/Trd", "96"), ("StcSMem (MB)", "0.000"), ("DymSMem (MB)", "0.000"),
                         ("Device", "NVIDIA H200 (0)"), ("Ctx", "1"), ("Strm", "13"), ("Name", NCCL)):
                nccl[col[c]] = v
            w.writerow(nccl)
            pid = str(1000 + k)
            wn.writerow([str(starts[j] - 10_000), str(done), str(done - starts[j] + 10_000), "0",
                         str(done - starts[j] + 10_000), ":step", pid, pid, "0", "0", str(j + 1), "", f":{j + 1}", ":step"])
        for name, text in ((f"rank{k}_cuda_gpu_trace.csv", buf.getvalue()), (f"rank{k}_nvtx_pushpop_trace.csv", nv.getvalue())):
            path = os.path.join(out, name)
            open(path, "w").write(text)
            files.append(path)
    return files


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--slow", type=int, default=2)
    ap.add_argument("--factor", type=float, default=1.3)
    a = ap.parse_args()
    print(len(make(a.out, a.ranks, a.slow, a.factor)), "files")
