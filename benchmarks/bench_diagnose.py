"""Speed of `nsys-expert diagnose` on a large real trace, against Polars reading the same CSV.

    python benchmarks/bench_diagnose.py [--factor 25] [--repeat 7]

Builds a big case by tiling a real trace (the logic of ../shared/tools/check/make_big.py: the
cuda_gpu_trace of fixtures/launch_bound tiled FACTOR times, shifted in time; factor 25 gives one
million GPU operations), then prints:
  - polars: a fresh `python -c "polars.read_csv(trace)"` process (the reference),
  - diagnose: a fresh `nsys-expert diagnose BIG -o FILE` process (Markdown, the default; then
    `--format json`), each run alternately with the reference, best and median of --repeat runs,
  - the ratio diagnose / polars (of the bests, of the medians, and the range run by run),
  - in-process stage times (load, facts, engine, report) and the rule engine alone on the built-in pack.
Numbers are printed, never asserted: speed is not a unit test.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import polars as pl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def tile(case_dir: str, factor: int, out: str) -> tuple[str, int]:
    os.makedirs(out, exist_ok=True)
    for c in glob.glob(os.path.join(case_dir, "*.csv")):
        if not c.endswith("_cuda_gpu_trace.csv"):
            shutil.copy(c, out)
    src = glob.glob(os.path.join(case_dir, "*_cuda_gpu_trace.csv"))[0]
    t = pl.read_csv(src, infer_schema_length=0)
    start = t["Start (ns)"].cast(pl.Int64)
    span = int(start.max() - start.min()) + 1_000_000
    big = pl.concat([t.with_columns((start + k * span).cast(pl.Utf8).alias("Start (ns)")) for k in range(factor)])
    dst = os.path.join(out, os.path.basename(src))
    big.write_csv(dst)
    return dst, big.height


# Both commands run as a user's would: with Python's bytecode cache (some sandboxes set
# PYTHONDONTWRITEBYTECODE, which recompiles every module of every process), after one warm-up run.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t


def interleaved(a: list[str], b: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Run a and b alternately (after one warm-up each: bytecode, page cache), so that a busy spell
    of a shared machine slows both sides, not one."""
    timed(a)
    timed(b)
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(timed(a))
        tb.append(timed(b))
    return ta, tb


def median(xs: list[float]) -> float:
    s = sorted(xs)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--case", default=os.path.join(ROOT, "fixtures", "launch_bound", "input"))
    a = ap.parse_args()
    nsx = shutil.which("nsys-expert") or os.path.join(os.path.dirname(sys.executable), "nsys-expert")
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big")
        trace, rows = tile(a.case, a.factor, big)
        mb = os.path.getsize(trace) / 1e6
        print(f"trace: {rows:,} rows, {mb:.0f} MB ({a.factor} x {os.path.basename(a.case.rstrip('/'))})")
        ref_cmd = [sys.executable, "-c", f"import polars; polars.read_csv({trace!r})"]
        print(f"{a.repeat} interleaved runs each                 best   median")
        for label, fmt in (("diagnose (Markdown)", "md"), ("diagnose --format json", "json")):
            refs, diags = interleaved(ref_cmd, [nsx, "diagnose", big, "--format", fmt, "-o", os.path.join(tmp, "r." + fmt)],
                                      a.repeat)
            pairs = sorted(d / r for r, d in zip(refs, diags))
            print(f"  polars read_csv process           : {min(refs):6.2f} s {median(refs):6.2f} s")
            print(f"  nsys-expert {label:<22}: {min(diags):6.2f} s {median(diags):6.2f} s")
            print(f"  ratio                             : {min(diags) / min(refs):6.2f}x {median(diags) / median(refs):6.2f}x"
                  f"   (run by run: {pairs[0]:.2f}x to {pairs[-1]:.2f}x)")

        from nsys_expert import engine, facts, load, report
        t0 = time.perf_counter(); pl.read_csv(trace); t_read = time.perf_counter() - t0  # noqa: E702
        t0 = time.perf_counter(); prof = load.load_paths([big]); t_load = time.perf_counter() - t0  # noqa: E702
        t0 = time.perf_counter(); fs = facts.compute(prof); t_facts = time.perf_counter() - t0  # noqa: E702
        packs = engine.load_packs()
        rules = engine.select_rules(packs)
        engine.evaluate(rules, fs, set(prof.tables))  # compile + cache the ruleset once
        t0 = time.perf_counter(); ev = engine.evaluate(rules, fs, set(prof.tables)); t_eng = time.perf_counter() - t0  # noqa: E702
        t0 = time.perf_counter(); report.render_markdown(report.build(prof, fs, ev)); t_rep = time.perf_counter() - t0  # noqa: E702
        print(f"in process: polars read {t_read:.2f} s | load {t_load:.2f} s | facts {t_facts:.2f} s | "
              f"engine {t_eng * 1e3:.1f} ms ({len(rules)} rules, {1 + len(fs.kernels)} facts) | report {t_rep * 1e3:.0f} ms")
        # the rule engine alone, fresh process state: compile + first run, then a warm run
        from nsys_expert.engine import compiler, durable_adapter
        t0 = time.perf_counter()
        definition, _ = compiler.compile_rules(rules, {})
        eng = durable_adapter.Engine(definition)
        eng.run([("run", fs.run)] + [("kernel", k) for k in fs.kernels])
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        eng.run([("run", fs.run)] + [("kernel", k) for k in fs.kernels])
        warm = time.perf_counter() - t0
        print(f"rule engine, built-in pack: compile + first run {cold * 1e3:.1f} ms, warm run {warm * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
