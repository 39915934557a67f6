"""Speed of ``engine.evaluate`` at many kernel-scope facts with distinct values (issue 34: 1,000 facts
<= 100 ms, 10,000 <= 1 s, 100,000 <= 10 s, linear).

    python benchmarks/bench_engine.py [--sizes 1000,10000,100000] [--repeat 5] [--case memory_bound] [--identical]

The kernel facts are the real ones of a shared case (``../shared/cases/memory_bound``: nsys + ncu, so
every kernel rule can be evaluated), each copy under its own name and with every number scaled by its
own random factor (0.3-1.7, seeded; percentages kept <= 100; time shares are scaled like the rest, not
made to sum to 100 %, so that the kernel rules keep firing), so that no two kernels fire with the same values and no memo of rendered texts hides the cost, as in a real
profile. ``--identical`` repeats the case's kernels unchanged (the benchmark of issue 19). The run facts
are the case's own. Timed: ``engine.evaluate`` with all built-in rules, findings rendered and resolved, after
one warm-up call (the ruleset is compiled once per process). Printed: best and median of --repeat runs,
the CPU time of this process (on a loaded machine the wall time
includes waiting for a core), the split engine run / rendering + resolution, the findings, and the machine's load. Never asserted.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def kernel_facts(base: list[dict], n: int, distinct: bool = True, seed: int = 34) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = dict(base[i % len(base)])
        k["name"] = f"{k.get('name', 'kernel')} #{i}"
        if distinct:
            for f, v in k.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or f == "rank":
                    continue
                x = v * rng.uniform(0.3, 1.7)
                x = min(x, 100.0) if f.endswith("_pct") else x
                k[f] = round(x) if isinstance(v, int) else x
        out.append(k)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--identical", action="store_true", help="repeat the case's kernels unchanged (issue 19)")
    ap.add_argument("--case", default=os.path.join(ROOT, "..", "shared", "cases", "memory_bound"))
    a = ap.parse_args()
    from nsys_expert import engine, facts, load
    from nsys_expert.engine import durable_adapter

    prof = load.load_paths([a.case])
    fs0 = facts.compute(prof)
    rules = engine.select_rules(engine.load_packs())
    rs = engine.RuleSet.of(rules)
    tables = set(prof.tables)
    print(f"case {os.path.basename(os.path.normpath(a.case))}: {len(fs0.kernels)} kernel facts of "
          f"{len(fs0.kernels[0]) if fs0.kernels else 0} values, {len(rules)} rules "
          f"({sum(r.scope == 'kernel' for r in rules)} kernel-scope); load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    target = {1000: 0.100, 10000: 1.0, 100000: 10.0}
    print("kernel facts: " + ("the case's, repeated unchanged" if a.identical else "distinct values (seeded)"))
    for n in (int(s) for s in a.sizes.split(",")):
        fs = facts.FactSet(run=dict(fs0.run), kernels=kernel_facts(fs0.kernels, n, not a.identical), window=fs0.window,
                           sources=dict(fs0.sources), absent=dict(fs0.absent), tables=dict(fs0.tables),
                           warnings=list(fs0.warnings), tiers=dict(fs0.tiers))
        ev = engine.evaluate(rs, fs, tables)           # warm-up: the ruleset compiled once per process
        runs, cpu = [], []
        spans: dict[str, list[float]] = {"durable": [], "resolve": []}
        real = {"durable": (durable_adapter.Engine, "run"), "resolve": (engine.resolve, "resolve")}
        saved = {k: getattr(o, name) for k, (o, name) in real.items()}

        def timer(fn, acc):
            def timed(*args, **kw):
                t = time.perf_counter()
                try:
                    return fn(*args, **kw)
                finally:
                    acc.append(time.perf_counter() - t)
            return timed
        for k, (o, name) in real.items():
            setattr(o, name, timer(saved[k], spans[k]))
        try:
            for _ in range(a.repeat):
                t, c = time.perf_counter(), time.process_time()
                ev = engine.evaluate(rs, fs, tables)
                runs.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
        finally:
            for k, (o, name) in real.items():
                setattr(o, name, saved[k])
        med, best = statistics.median(runs), min(runs)
        eng, rsv = statistics.median(spans["durable"]), statistics.median(spans["resolve"])
        supporting = sum(len(f.get("supporting", [])) for f in ev.findings)
        tgt = target.get(n)
        print(f"{n:>6} kernel facts: evaluate best {best * 1e3:.1f} ms, median {med * 1e3:.1f} ms"
              + (f" (target {tgt * 1e3:.0f} ms: {med / tgt:.2f}x of it)" if tgt else "")
              + f" | {med / n * 1e6:.0f} us per fact | CPU median {statistics.median(cpu) * 1e3:.1f} ms"
              + f" | durable run {eng * 1e3:.1f} ms, resolve {rsv * 1e3:.1f} ms, the rest (compile check, render)"
              f" {(med - eng - rsv) * 1e3:.1f} ms"
              f" | {len(ev.findings)} findings + {supporting} folded in; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
