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


def run(cmd: list[str]) -> tuple[float, float]:
    """-> (wall seconds, peak RSS in MB) of one child process (its own rusage, from wait4)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=ENV)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")
    return wall, ru.ru_maxrss / 1024


def alternate(cmds: dict[str, list[str]], repeat: int) -> dict[str, list[tuple[float, float]]]:
    """Run the commands in turn, ``repeat`` rounds after one warm-up round (bytecode, page cache),
    so that a busy spell of a shared machine slows every side, not one."""
    for cmd in cmds.values():
        run(cmd)
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
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


def table(results: dict[str, list[tuple[float, float]]], ref: str) -> list[str]:
    """One line per side: median and best time, median peak RSS, and the ratio of medians to ``ref``."""
    r = median([t for t, _ in results[ref]])
    lines = []
    for k, runs in results.items():
        times = [t for t, _ in runs]
        m = median(times)
        pairs = sorted(t / rt for (t, _), (rt, _) in zip(runs, results[ref]))
        lines.append(f"  {k:<44} {m:6.2f} s (best {min(times):5.2f})  {median([x for _, x in runs]):6.0f} MB"
                     + ("" if k == ref else f"  {m / r:5.2f}x  (run by run {pairs[0]:.2f}x to {pairs[-1]:.2f}x)"))
    return lines
