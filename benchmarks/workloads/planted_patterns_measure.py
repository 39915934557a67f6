"""Independent measurements of the issue-16 fixtures, straight from the SQLite export (sqlite3) and
cross-checked against the CSVs (csv module); no nsys-expert code. The numbers go into each
fixture's README.

    python benchmarks/workloads/planted_patterns_measure.py fixtures/NAME [START_NS:END_NS]

Window: from the start of the second ``step`` range to the end of the last one (the first step holds
warm-up), or START_NS:END_NS when given (e.g. the window a diagnosis chose, to compare numbers).
"""
from __future__ import annotations

import csv
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from pathlib import Path


def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def clip(iv, lo, hi):
    return [(max(s, lo), min(e, hi)) for s, e in iv if e > lo and s < hi]


def total(iv):
    return sum(e - s for s, e in iv)


def overlap(a, merged):
    """Length of interval a covered by the sorted disjoint intervals merged."""
    s, e = a
    return sum(max(0, min(e, me) - max(s, ms)) for ms, me in merged if me > s and ms < e)


def minus(iv, merged):
    """Parts of the disjoint intervals iv not covered by merged (both sorted, disjoint)."""
    out = []
    for s, e in iv:
        cur = s
        for ms, me in merged:
            if me <= cur or ms >= e:
                continue
            if ms > cur:
                out.append((cur, ms))
            cur = max(cur, me)
            if cur >= e:
                break
        if cur < e:
            out.append((cur, e))
    return out


def q(db, sql, *a):
    return db.execute(sql, a).fetchall()


def steps(db):
    rows = q(db, "SELECT start, end, globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND "
                 "coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) = 'step' ORDER BY start")
    return rows


def gpu_intervals(db):
    k = q(db, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL")
    m = q(db, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    s = q(db, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET")
    return k, m, s


def pct(a, b):
    return 100.0 * a / b if b else float("nan")


def ms(ns):
    return ns / 1e6


def csv_rows(fx: Path, report: str):
    f = next((fx / "input").glob(f"*_{report}.csv"))
    with open(f, newline="") as fh:
        return list(csv.DictReader(fh))


WINDOW: tuple[int, int] | None = None   # START_NS:END_NS from the command line


def window(db):
    st = steps(db)
    if WINDOW:
        return st, WINDOW[0], WINDOW[1]
    return st, st[1][0], st[-1][1]


def overlapped_copies(fx, db):
    st, lo, hi = window(db)
    k, m, s = gpu_intervals(db)
    kinds = dict(q(db, "SELECT id, label FROM ENUM_CUDA_MEM_KIND"))
    opers = dict(q(db, "SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER"))
    print(f"steps {len(st)}; window {ms(hi - lo):.1f} ms; step median "
          f"{ms(sorted(e - b for b, e, _ in st)[len(st) // 2]):.2f} ms")
    for name, (lo_, hi_) in {"window": (lo, hi), "whole trace": (min(x for x, _ in k + m), max(y for _, y in k + m))}.items():
        K = union(clip(k, lo_, hi_))
        copies = q(db, "SELECT start, end, bytes, copyKind, srcKind, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                       "WHERE end > ? AND start < ? ORDER BY start", lo_, hi_)
        C = [(max(a, lo_), min(b, hi_)) for a, b, *_ in copies]
        copy_t = total(union(C))
        exposed = total(minus(union(C), K))
        busy = total(union(clip(k + m + s, lo_, hi_)))
        span = hi_ - lo_
        by = Counter((opers.get(c[3]), kinds.get(c[4]), c[5]) for c in copies)
        print(f"[{name}] span {ms(span):.1f} ms; GPU busy (kernels+copies+memsets union) {ms(busy):.1f} ms = "
              f"{pct(busy, span):.2f} %; kernel union {ms(total(K)):.1f} ms = {pct(total(K), span):.2f} %")
        print(f"[{name}] copies {len(copies)} {dict(by)}; bytes {sum(c[2] for c in copies) / 1e6:.1f} MB; "
              f"copy time (union) {ms(copy_t):.1f} ms = {pct(copy_t, busy):.1f} % of busy; "
              f"exposed (not under a kernel) {ms(exposed):.3f} ms = {pct(exposed, copy_t):.2f} % of copy time, "
              f"{pct(exposed, span):.3f} % of the span")
        gbps = [c[2] / (c[1] - c[0]) for c in copies if c[2] > 1 << 20]
        if gbps:
            print(f"[{name}] large copies: median {sorted(gbps)[len(gbps) // 2]:.1f} GB/s")
    # CSV cross-check (cuda_gpu_trace: Start (ns), Duration (ns))
    rows = csv_rows(fx, "cuda_gpu_trace")
    iv = [(int(r["Start (ns)"]), int(r["Start (ns)"]) + int(r["Duration (ns)"]), r["Name"]) for r in rows]
    Kc = union(clip([(a, b) for a, b, n in iv if not n.startswith("[CUDA m")], lo, hi))
    Cc = union(clip([(a, b) for a, b, n in iv if n.startswith("[CUDA memcpy")], lo, hi))
    Bc = union(clip([(a, b) for a, b, _ in iv], lo, hi))
    print(f"[csv window] busy {pct(total(Bc), hi - lo):.2f} %; copy {ms(total(Cc)):.1f} ms = "
          f"{pct(total(Cc), total(Bc)):.1f} % of busy; exposed {ms(total(minus(Cc, Kc))):.3f} ms")


def library_nvtx(fx, db):
    doms = {d: n for d, n in q(db, "SELECT domainId, coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) "
                                   "FROM NVTX_EVENTS WHERE eventType = 75")}
    rows = q(db, "SELECT start, end, globalTid, domainId, coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) "
                 "FROM NVTX_EVENTS WHERE eventType = 59 ORDER BY start")
    cnt = Counter((doms.get(d, "(default)"), n) for *_, d, n in rows)
    for (d, n), c in sorted(cnt.items(), key=lambda x: -x[1]):
        print(f"range {d}:{n}  x{c}")
    st = [r for r in rows if r[4] == "step" and r[3] == 0]
    per_step = []
    outside = 0
    for r in rows:
        if r[3] == 0:
            continue
        inside = [s for s in st if s[0] <= r[0] and r[1] <= s[1] and s[2] == r[2]]
        if not inside:
            outside += 1
    for s in st:
        per_step.append(Counter(r[4] for r in rows if r[3] != 0 and s[0] <= r[0] and r[1] <= s[1] and r[2] == s[2]))
    print(f"steps {len(st)}; library ranges per step: {Counter(tuple(sorted(c.items())) for c in per_step)}; "
          f"library ranges outside every step: {outside}")
    d = [e - b for b, e, *_ in st]
    print(f"step median {ms(sorted(d)[len(d) // 2]):.3f} ms; first step {ms(d[0]):.1f} ms")
    for name in sorted({r[4] for r in rows if r[3] != 0}):
        dd = sorted(e - b for b, e, _, dom, n in rows if n == name)
        print(f"  {name}: median {dd[len(dd) // 2] / 1e3:.1f} us")
    # depth: the library ranges are nested one level below step (nvtx_pushpop_trace Lvl column)
    tr = csv_rows(fx, "nvtx_pushpop_trace")
    print("csv nvtx_pushpop_trace (Name, Lvl) counts:", dict(Counter((r["Name"], r["Lvl"]) for r in tr)))
    k = q(db, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL")
    lo, hi = st[1][0], st[-1][1]
    print(f"window steps 2..{len(st)}: {ms(hi - lo):.1f} ms; kernel union {pct(total(union(clip(k, lo, hi))), hi - lo):.1f} %")


def main_thread(db):
    """The thread that launches the kernels."""
    return q(db, "SELECT r.globalTid, count(*) c FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                 "WHERE s.value LIKE 'cudaLaunchKernel%' OR s.value LIKE 'cuLaunchKernel%' GROUP BY 1 ORDER BY c DESC")[0][0]


def dataloader_wait(fx, db):
    st, lo, hi = window(db)
    tid = main_thread(db)
    k, m, s = gpu_intervals(db)
    busy = union(clip(k + m + s, lo, hi))
    idle = minus([(lo, hi)], busy)
    idle_t = total(idle)
    span = hi - lo
    d = sorted(e - b for b, e, _ in st)
    print(f"steps {len(st)}; window {ms(span):.1f} ms; step median {ms(d[len(d) // 2]):.2f} ms; "
          f"GPU busy {pct(total(busy), span):.2f} %, idle {ms(idle_t):.1f} ms = {pct(idle_t, span):.2f} %")
    big = [g for g in idle if g[1] - g[0] >= 100_000]
    print(f"idle gaps >= 100 us: {len(big)}, {ms(total(big)):.1f} ms = {pct(total(big), idle_t):.1f} % of idle")
    os_rows = q(db, "SELECT o.start, o.end, s.value, o.globalTid FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId "
                    "WHERE o.end > ? AND o.start < ? ORDER BY o.start", lo, hi)
    mine = [r for r in os_rows if r[3] == tid]
    print(f"launching thread globalTid {tid} ({tid >> 24 & 0xFFFFFF} pid, tid {tid & 0xFFFFFF}): "
          f"{len(mine)} OSRT calls in the window")
    by = defaultdict(lambda: [0, 0, 0])
    idle_m = union(idle)
    for a, b, n, _ in mine:
        by[n][0] += 1
        by[n][1] += b - a
        by[n][2] += overlap((max(a, lo), min(b, hi)), idle_m)
    for n, (c, t, ov) in sorted(by.items(), key=lambda x: -x[1][2]):
        print(f"  {n}: {c} calls, {ms(t):.1f} ms, {ms(ov):.1f} ms during GPU idle = {pct(ov, idle_t):.1f} % of idle")
    cover = total(minus(idle, minus(idle, union([(a, b) for a, b, *_ in mine]))))
    print(f"GPU idle time covered by OSRT calls of the launching thread (union): {ms(cover):.1f} ms = "
          f"{pct(cover, idle_t):.1f} %")
    api = q(db, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid = ? AND end > ? AND start < ?", tid, lo, hi)
    api_cover = total(minus(idle, minus(idle, union(api))))
    print(f"GPU idle time covered by CUDA API calls of that thread: {ms(api_cover):.1f} ms = {pct(api_cover, idle_t):.1f} %")
    pids = Counter(r[3] >> 24 & 0xFFFFFF for r in os_rows)
    print(f"OSRT calls in the window by process: {dict(pids)}")
    # per-step: wait (OSRT on the main thread inside the step) vs step length
    waits = []
    for b, e, t in st[1:]:
        w = total(union([(max(a, b), min(c, e)) for a, c, n, g in mine if g == t and c > b and a < e]))
        waits.append(w / (e - b))
    waits.sort()
    print(f"per step, share of the step spent in OSRT calls: median {100 * waits[len(waits) // 2]:.1f} %")


def allocator_churn(fx, db):
    st, lo, hi = window(db)
    tid = main_thread(db)
    names = ("cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost")
    api = [(a, b, re.sub(r"_v\d+$", "", n), t) for a, b, n, t in
           q(db, "SELECT r.start, r.end, s.value, r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                 "ON s.id = r.nameId ORDER BY r.start")]   # cudaMalloc_v3020 -> cudaMalloc, as nsys stats prints it
    win = [r for r in api if r[0] >= lo and r[1] <= hi]
    tot = sum(b - a for a, b, *_ in win)
    print(f"steps {len(st)}; window {ms(hi - lo):.1f} ms; CUDA API time in window {ms(tot):.1f} ms "
          f"({len(win)} calls)")
    for n in names:
        rs = [r for r in win if r[2] == n]
        if rs:
            t = sum(b - a for a, b, *_ in rs)
            print(f"  {n}: {len(rs)} calls, {len(rs) / (len(st) - 1):.1f} per step, {ms(t):.1f} ms = "
                  f"{pct(t, tot):.1f} % of API time, {pct(t, hi - lo):.1f} % of the window")
    am = [r for r in win if r[2] in names]
    print(f"  alloc/free together: {pct(sum(b - a for a, b, *_ in am), tot):.1f} % of API time")
    per = [(sum(1 for r in win if r[2] == 'cudaMalloc' and b <= r[0] and r[1] <= e),
            sum(1 for r in win if r[2] == 'cudaFree' and b <= r[0] and r[1] <= e)) for b, e, _ in st[1:]]
    print(f"  (cudaMalloc, cudaFree) per step: {Counter(per).most_common(4)}")
    before = [r for r in api if r[2] in names and r[1] <= st[0][0]]
    print(f"  before the first step (start-up): {Counter(r[2] for r in before)}")
    k, m, s = gpu_intervals(db)
    busy = union(clip(k + m + s, lo, hi))
    idle = minus([(lo, hi)], busy)
    frees = union([(a, b) for a, b, n, _ in win if n == "cudaFree"])
    mallocs = union([(a, b) for a, b, n, _ in win if n == "cudaMalloc"])
    print(f"  GPU busy {pct(total(busy), hi - lo):.1f} %; GPU idle covered by cudaFree {pct(total(minus(idle, minus(idle, frees))), total(idle)):.1f} %, "
          f"by cudaMalloc {pct(total(minus(idle, minus(idle, mallocs))), total(idle)):.1f} %")
    # does cudaFree wait for the device? a call that starts while the GPU is busy and returns only after
    # that busy stretch (of the kernels+copies union) has ended waited for the queued work to drain
    import bisect
    starts = [b for b, _ in busy]
    busy_at, waited = 0, 0
    for a, b, n, _ in win:
        if n != "cudaFree":
            continue
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and busy[i][1] > a:
            busy_at += 1
            waited += b >= busy[i][1]
    print(f"  cudaFree calls that began while the GPU was busy: {busy_at}; of them returned after that busy "
          f"stretch ended (waited for the device): {waited}")
    d = sorted(e - b for b, e, _ in st)
    print(f"  step median {ms(d[len(d) // 2]):.2f} ms")
    # CSV cross-check
    rows = csv_rows(fx, "cuda_api_trace")
    c = Counter(r["Name"] for r in rows if lo <= int(r["Start (ns)"]) and int(r["Start (ns)"]) + int(r["Duration (ns)"]) <= hi)
    print(f"[csv] window: cudaMalloc {c['cudaMalloc']}, cudaFree {c['cudaFree']}")


def main():
    global WINDOW
    fx = Path(sys.argv[1])
    name = fx.name
    if len(sys.argv) > 2:
        WINDOW = tuple(int(x) for x in sys.argv[2].split(":"))
        print(f"window given: {WINDOW[0]}:{WINDOW[1]} ns")
    db = sqlite3.connect(f"file:{fx / (name + '.sqlite')}?mode=ro", uri=True)
    {"overlapped_copies": overlapped_copies, "library_nvtx": library_nvtx,
     "dataloader_wait": dataloader_wait, "allocator_churn": allocator_churn}[name](fx, db)


if __name__ == "__main__":
    main()
