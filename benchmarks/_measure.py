"""What the benchmarks share: a timed child process with its peak RSS, alternating runs, medians.

Numbers are printed, never asserted: speed is not a unit test.
"""
from __future__ import annotations

import os
import subprocess
import time

# Both sides run as a user's would: with Python's bytecode cache (some sandboxes set
# PYTHONDONTWRITEBYTECODE, which recompiles every module of every process).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(cmd: list[str], quiet: bool = False) -> tuple[float, float, float]:
    """-> (wall seconds, peak RSS in MB, CPU seconds: user + system) of one child process (its own
    rusage, from wait4; ``quiet``: its stderr dropped too). On a busy shared machine the CPU time moves
    less than the wall time."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL if quiet else None, env=ENV)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")
    return wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime


def alternate(cmds: dict[str, list[str]], repeat: int) -> dict[str, list[tuple[float, float, float]]]:
    """Run the commands in turn, ``repeat`` rounds after one warm-up round (bytecode, page cache),
    so that a busy spell of a shared machine slows every side, not one."""
    for cmd in cmds.values():
        run(cmd)
    out: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for k, cmd in cmds.items():
            out[k].append(run(cmd))
    return out


def median(xs: list[float]) -> float:
    s = sorted(xs)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def load() -> str:
    """The machine's load, to read the ratios by: 1-minute load average against the cores."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


def table(results: dict[str, list[tuple[float, float, float]]], ref: str) -> list[str]:
    """One line per side: median and best wall time, median peak RSS, median CPU time, and the ratios
    of the medians (wall, CPU) to ``ref``, with the run-by-run range of the wall ratio."""
    r = median([t for t, _, _ in results[ref]])
    rc = median([c for _, _, c in results[ref]])
    lines = []
    for k, runs in results.items():
        times = [t for t, _, _ in runs]
        m, cpu = median(times), median([c for _, _, c in runs])
        pairs = sorted(t / rt for (t, _, _), (rt, _, _) in zip(runs, results[ref]))
        lines.append(f"  {k:<40} {m:6.2f} s (best {min(times):5.2f}) {median([x for _, x, _ in runs]):6.0f} MB "
                     f"{cpu:6.2f} s"
                     + ("" if k == ref else f"  {m / r:5.2f}x  {cpu / rc:5.2f}x  (wall run by run {pairs[0]:.2f}x "
                                            f"to {pairs[-1]:.2f}x)"))
    return lines


HEADER = ("  {n} alternating runs, medians              wall               peak RSS   CPU     ratio: wall   CPU")


def stages(path: str) -> str:
    """In-process stage times of one diagnosis of ``path`` (the packs and templates warm)."""
    from nsys_expert import engine, facts, load, report
    rules = engine.select_rules(engine.load_packs())
    t0 = time.perf_counter()
    prof = load.load_paths([path])
    t1 = time.perf_counter()
    fs = facts.compute(prof)
    t2 = time.perf_counter()
    ev = engine.evaluate(engine.RuleSet.of(rules), fs, set(prof.tables))
    t3 = time.perf_counter()
    report.render_markdown(report.build(prof, fs, ev))
    t4 = time.perf_counter()
    return (f"  in process: load {t1 - t0:.2f} s | facts {t2 - t1:.2f} s | engine {t3 - t2:.2f} s | "
            f"report {t4 - t3:.2f} s")
