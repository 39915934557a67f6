"""Independent measurements of the unseen.py fixtures, from the SQLite export with sqlite3 alone (no
nsys-expert code): what the fixture READMEs quote.

    python benchmarks/workloads/unseen_measure.py fixtures/sleepy_host/sleepy_host.sqlite [START END]

Prints the GPU busy time (union of kernels, copies and memsets) over [START, END) ns (default: the
first to the last GPU operation), the idle gaps of 1 ms or more, and for their total how much of it
the main launching thread spent in a sleep call (clock_nanosleep / nanosleep), and how much the host
spent in module-loading calls (cuLibraryLoadData / cuModuleLoad*).
"""
from __future__ import annotations

import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from planted_patterns_measure import union  # noqa: E402   (the same interval union, sqlite3 and lists only)

SLEEPS = ("clock_nanosleep", "nanosleep", "usleep", "sleep")


def overlap(a, b):
    """ns of the merged sets a and b in common."""
    i = j = tot = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        tot += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def main() -> None:
    con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    ops = []
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if t in tables:
            ops += con.execute(f'SELECT start, "end" FROM {t}').fetchall()
    start = int(sys.argv[2]) if len(sys.argv) > 2 else min(s for s, _ in ops)
    end = int(sys.argv[3]) if len(sys.argv) > 3 else max(e for _, e in ops)
    busy = union([(max(s, start), min(e, end)) for s, e in ops if e > start and s < end])
    busy_ns = sum(e - s for s, e in busy)
    gaps = [[a[1], b[0]] for a, b in zip(busy, busy[1:]) if b[0] - a[1] >= 1_000_000]
    gap_ns = sum(e - s for s, e in gaps)
    print(f"window {start}..{end} ns ({(end - start) / 1e6:,.1f} ms): GPU busy {busy_ns / 1e6:,.2f} ms "
          f"({100 * busy_ns / (end - start):.2f} %); {len(gaps)} idle gaps >= 1 ms, {gap_ns / 1e6:,.1f} ms "
          f"({100 * gap_ns / (end - start):.2f} %)")
    rt = con.execute("""SELECT r.start, r."end", s.value, r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                        JOIN StringIds s ON s.id = r.nameId""").fetchall()
    launches: dict[int, int] = {}
    for s, e, name, tid in rt:
        if "Launch" in name and start <= s < end:
            launches[tid] = launches.get(tid, 0) + 1
    main_tid = max(launches, key=launches.get)
    loads = union([(s, e) for s, e, name, _ in rt if name.startswith(("cuLibraryLoad", "cuModuleLoad"))])
    print(f"main launching thread {main_tid & 0xFFFFFF} ({launches[main_tid]} launches); host in module-loading calls "
          f"during those gaps: {overlap(gaps, loads) / 1e6:,.1f} ms")
    # synchronisations right after a copy call of the same thread whose copy is pageable -> device
    names = [(s, name, tid) for s, _, name, tid in rt if start <= s < end]
    names.sort(key=lambda r: (r[2], r[0]))
    syncs = [i for i, r in enumerate(names) if "Synchronize" in r[1]]
    after = sum(1 for i in syncs if i and names[i - 1][2] == names[i][2] and "Memcpy" in names[i - 1][1])
    if syncs:
        print(f"sync calls in the window: {len(syncs)}, right after a copy call of the same thread: {after}")
    if "OSRT_API" in tables:
        sl = con.execute(f"""SELECT o.start, o."end" FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
                             WHERE o.globalTid = ? AND s.value IN ({",".join("?" * len(SLEEPS))})""",
                         (main_tid, *SLEEPS)).fetchall()
        gw = con.execute("""SELECT o.start, o."end" FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
                            WHERE o.globalTid = ? AND s.value = 'pthread_cond_timedwait'""", (main_tid,)).fetchall()
        gw = [(s, e) for s, e in gw if e > start and s < end]
        if gw:
            t = sum(e - s for s, e in gw)
            sw = sum(e - s for s, e in gw if 4_500_000 <= e - s <= 5_600_000)
            print(f"its pthread_cond_timedwait calls in the window: {len(gw)}, {t / 1e6:,.1f} ms, {100 * sw / t:.1f} % of it "
                  f"in calls of 4.5-5.6 ms; during those gaps: {overlap(gaps, union(gw)) / 1e6:,.1f} ms")
        inside = [(s, e) for s, e in sl if e > start and s < end]
        if inside:
            print(f"its sleep calls in the window: {len(inside)}, median {statistics.median(e - s for s, e in inside) / 1e6:.2f} ms; "
                  f"asleep during those gaps: {overlap(gaps, union(inside)) / 1e6:,.1f} ms")


if __name__ == "__main__":
    main()
