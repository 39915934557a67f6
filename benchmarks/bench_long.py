"""Speed and memory of `nsys-expert diagnose` on real long profiles (issue 47), against an ADBC read of the
tables it reads from the same export, in the same run.

    python benchmarks/bench_long.py [PROFILE.sqlite[.gz] ...] [--repeat 3] [--no-made] [--groups]

Profiles: those given, else every ``*.sqlite`` / ``*.sqlite.gz`` in /work/devout/bench/ (real long GPU
profiles: a ``generate()`` decode, a training step with autograd NVTX, a multi-stream run), plus two made
here unless --no-made: ``long-iteration`` (``make_long.py``: launch_bound's steady part tiled to 560 k
kernels in 6 NVTX iterations of ~93 k kernels, like the issue's decode profile) and ``tiled-1M``
(``bench_sqlite.tile``: launch_bound tiled 25 times, 1 M kernels in 5,000 short iterations). Compressed
exports are decompressed into a temporary folder first (not timed).

For each profile, as medians of --repeat alternating runs of fresh processes (after one warm-up round),
with each process's peak RSS and CPU time (``_measure``):
  - ADBC read: one process that reads, with ADBC into Polars one after the other, every table query
    nsys-expert's SQLite loader issues for this export (``load/sqlite/tables.py``: kernels, runtime calls,
    copies, memsets, graphs, OS runtime calls, NVTX ranges; the same columns);
  - `nsys-expert diagnose EXPORT -o report.md`;
and the targets: diagnose <= 2 x the read + 0.5 s (``tiled-1M``: <= 1.3 x), peak RSS <= 3 x the file.
--before ROOT adds `diagnose` with an older code tree, alternating with the others.
--groups adds, for each profile, the in-process time of load, the fact groups (the slowest eight, run one
after the other) and the engine and report: where the time goes.
Numbers are printed, never asserted: speed is not a unit test.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure  # noqa: E402

BENCH_DIR = "/work/devout/bench"
SHARED_LAUNCH_BOUND = "/work/shared/cases/launch_bound/launch_bound.sqlite"

READ = """
import json, sys
import adbc_driver_sqlite.dbapi as adbc, polars as pl
con = adbc.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1")
n = sum(pl.read_database(q, con).height for q in json.loads(sys.argv[2]))
con.close()
assert n > 0
"""


def child(*args: str) -> str:
    """Run this script in a child process (``--child ...``) and return what it printed: the parent stays
    small (a child's peak RSS on Linux starts from its parent's at the fork)."""
    import subprocess
    return subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args], check=True,
                          capture_output=True, text=True, env=_measure.ENV).stdout


def queries(path: str) -> list[str]:
    """The table queries nsys-expert's loader issues for this export (the big tables and the NVTX ranges)."""
    from nsys_expert.load.sqlite import tables as st
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    cols = {t: {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')} for t in names}
    out = [sql for sql, _schema in st.big_jobs(cols).values()]
    if st.NVTX in cols:
        c = cols[st.NVTX]
        text = "e.text" if "text" in c else "NULL"
        join = ""
        if "textId" in c and "StringIds" in cols:
            join, text = "LEFT JOIN StringIds s ON s.id = e.textId", f"coalesce({text}, s.value)"
        out.append(f'SELECT e.start, e."end", e.eventType, {text} FROM {st.NVTX} e {join}')
    con.close()
    return out


def made(tmp: str) -> list[tuple[str, str]]:
    """The two profiles made here: (label, path)."""
    import bench_sqlite
    import make_long
    src = next(p for p in [SHARED_LAUNCH_BOUND] + bench_sqlite.DEFAULT if os.path.exists(p))
    con = sqlite3.connect(f"file:{src}?mode=ro&immutable=1", uri=True)
    per = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    long_path = os.path.join(tmp, "long-iteration.sqlite")
    make_long.tile_steps(src, max(1, round(560_000 / per)), long_path)
    make_long.lengthen(long_path, 93_000)
    tiled = os.path.join(tmp, "tiled-1M.sqlite")
    bench_sqlite.tile(src, max(1, round(1e6 / per)), tiled)
    return [("long-iteration (made)", long_path), ("tiled-1M (made)", tiled)]


def given(paths: list[str], tmp: str) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        name = os.path.basename(p)
        if p.endswith(".gz"):
            dst = os.path.join(tmp, name[:-3])
            with gzip.open(p, "rb") as f, open(dst, "wb") as g:
                shutil.copyfileobj(f, g, 1 << 22)
            p = dst
        out.append((name, p))
    return out


def groups(path: str) -> str:
    """In-process: load, each fact group one after the other (the slowest eight), engine and report."""
    from nsys_expert import engine, facts, load, report
    rules = engine.select_rules(engine.load_packs())
    took: dict[str, float] = {}
    saved = []
    for g in facts.GROUPS:
        def timed(ctx, run=g.run, name=g.name):
            t = time.perf_counter()
            run(ctx)
            took[name] = time.perf_counter() - t
        saved.append((g, g.run))
        object.__setattr__(g, "run", timed)
    workers, facts.FACT_WORKERS = facts.FACT_WORKERS, 1
    try:
        t0 = time.perf_counter()
        prof = load.load_paths([path])
        t1 = time.perf_counter()
        fs = facts.compute(prof)
        t2 = time.perf_counter()
        ev = engine.evaluate(engine.RuleSet.of(rules), fs, set(prof.tables))
        report.render_markdown(report.build(prof, fs, ev))
        t3 = time.perf_counter()
    finally:
        facts.FACT_WORKERS = workers
        for g, run in saved:
            object.__setattr__(g, "run", run)
    top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(took.items(), key=lambda kv: -kv[1])[:8])
    return (f"  in process, groups one after the other: load {t1 - t0:.2f} s | facts {t2 - t1:.2f} s ({top}) | "
            f"engine + report {t3 - t2:.2f} s")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        what, path = sys.argv[2], sys.argv[3]
        print(json.dumps(queries(path)) if what == "queries" else groups(path))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("profiles", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-made", action="store_true")
    ap.add_argument("--groups", action="store_true")
    ap.add_argument("--before", metavar="ROOT", help="also diagnose with the code tree at ROOT (PYTHONPATH=ROOT): "
                    "e.g. `git archive 23736fc | tar -x -C /tmp/before`")
    a = ap.parse_args()
    paths = a.profiles or sorted(glob.glob(os.path.join(BENCH_DIR, "*.sqlite")) + glob.glob(os.path.join(BENCH_DIR, "*.sqlite.gz")))
    nsx = shutil.which("nsys-expert") or os.path.join(os.path.dirname(sys.executable), "nsys-expert")
    with tempfile.TemporaryDirectory(prefix="nsx-long-") as tmp:
        profiles = given(paths, tmp) + ([] if a.no_made else made(tmp))
        rows = []
        for i, (label, path) in enumerate(profiles):
            mb = os.path.getsize(path) / 1e6
            con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
            kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
            con.close()
            print(f"{label}: {kernels:,} kernels, {mb:.0f} MB; {_measure.load()}")
            cmds = {"ADBC read of the tables it reads": [sys.executable, "-c", READ, path, child("queries", path).strip()],
                    "nsys-expert diagnose (Markdown)": [nsx, "diagnose", path, "-o", os.path.join(tmp, f"report-{i}.md")]}
            if a.before:
                cmds["diagnose, code before (--before)"] = ["env", f"PYTHONPATH={a.before}", nsx, "diagnose", path, "-o",
                                                            os.path.join(tmp, f"before-{i}.md")]
            res = _measure.alternate(cmds, a.repeat)
            print(_measure.HEADER.format(n=a.repeat))
            print("\n".join(_measure.table(res, "ADBC read of the tables it reads")))
            read = _measure.median([t for t, _, _ in res["ADBC read of the tables it reads"]])
            diag = _measure.median([t for t, _, _ in res["nsys-expert diagnose (Markdown)"]])
            rss = _measure.median([r for _, r, _ in res["nsys-expert diagnose (Markdown)"]])
            target = 1.3 * read if label.startswith("tiled-1M") else 2 * read + 0.5
            rows.append(f"| {label} | {kernels:,} | {mb:.0f} MB | {read:.2f} s | {diag:.2f} s | <= {target:.2f} s | "
                        f"{'yes' if diag <= target else 'no'} ({diag / read:.2f}x) | {rss:.0f} MB ({rss / mb:.1f}x) | "
                        f"{'yes' if rss <= 3 * mb else 'no'} |")
            if a.groups:
                print(child("groups", path).rstrip())
        print("\n| profile | kernels | SQLite | ADBC read | diagnose | target | met? | peak RSS (x file) | <= 3x? |")
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
