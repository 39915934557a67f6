"""Broken variants of a real case, for the robustness bar.

The first 16 kinds are ../shared/tools/check/make_broken.py's (same names, same damage, seeded the
same way); the rest are the extra kinds issue 9 asks for. Each variant is a folder under OUT.
"""
from __future__ import annotations

import csv
import glob
import io
import os
import random
import shutil
import sqlite3


def make(case: str, out: str) -> list[str]:
    """The broken copies of one real case. Past ~60 lines on purpose: one damage after another, each a few lines."""
    rng = random.Random(7)
    csvs = sorted(glob.glob(os.path.join(case, "*.csv")))
    trace = [c for c in csvs if c.endswith("_cuda_gpu_trace.csv")][0]
    base = os.path.basename(trace).removesuffix("_cuda_gpu_trace.csv")

    def variant(name):
        d = os.path.join(out, name)
        os.makedirs(d)
        for c in csvs:
            shutil.copy(c, d)
        return d, os.path.join(d, os.path.basename(trace))

    def rewrite(path, fn):
        data = open(path, "rb").read()
        open(path, "wb").write(fn(data))

    def poke_column(path, col, values, every=37):
        lines = open(path).read().split("\n")
        k = 0
        for i in range(1, len(lines), every):
            parts = lines[i].split(",")
            if len(parts) > col:
                parts[col] = values[k % len(values)]
                k += 1
                lines[i] = ",".join(parts)
        open(path, "w").write("\n".join(lines))

    os.makedirs(os.path.join(out, "empty-dir"))
    _, t = variant("truncated-mid-row"); rewrite(t, lambda b: b[: len(b) // 2])  # noqa: E702
    _, t = variant("empty-trace"); rewrite(t, lambda b: b"")  # noqa: E702
    _, t = variant("header-only"); rewrite(t, lambda b: b.split(b"\n", 1)[0] + b"\n")  # noqa: E702
    _, t = variant("binary-junk"); rewrite(t, lambda b: bytes(rng.randrange(256) for _ in range(4096)))  # noqa: E702
    _, t = variant("not-utf8-name"); rewrite(t, lambda b: b.replace(b"vectorized", b"vector\xff\xfeized", 50))  # noqa: E702
    _, t = variant("huge-name"); rewrite(t, lambda b: b.replace(b"FillFunctor", b"F" * 200_000, 1))  # noqa: E702
    _, t = variant("negative-duration"); poke_column(t, 1, ["-864", "-1"])  # noqa: E702
    _, t = variant("nan-and-text"); poke_column(t, 1, ["nan", "abc", "", "1e400"])  # noqa: E702
    _, t = variant("columns-shuffled")
    rows = list(csv.reader(open(t).read().splitlines()))
    order = list(range(len(rows[0])))
    rng.shuffle(order)
    buf = io.StringIO()
    w = csv.writer(buf)
    for r in rows:
        w.writerow([r[i] for i in order if i < len(r)])
    open(t, "w").write(buf.getvalue())
    _, t = variant("wrong-report-header"); rewrite(t, lambda b: b"Foo,Bar,Baz\n1,2,3\n")  # noqa: E702
    _, t = variant("windows-newlines"); rewrite(t, lambda b: b.replace(b"\n", b"\r\n"))  # noqa: E702
    _, t = variant("duplicate-reports"); shutil.copy(t, t.replace(base, base + "_copy"))  # noqa: E702
    os.makedirs(os.path.join(out, "fake-sqlite"))
    open(os.path.join(out, "fake-sqlite", "r.sqlite"), "wb").write(b"SQLite format 3\x00" + b"\x00" * 100)
    os.makedirs(os.path.join(out, "foreign-sqlite"))
    con = sqlite3.connect(os.path.join(out, "foreign-sqlite", "r.sqlite"))
    con.execute("create table t(x)")
    con.commit()
    con.close()
    os.makedirs(os.path.join(out, "unrelated-files"))
    open(os.path.join(out, "unrelated-files", "notes.txt"), "w").write("hello\n")

    # ---- the extra kinds of issue 9 ----
    _, t = variant("out-of-order-rows")          # rows shuffled (nsys writes them sorted by start)
    lines = open(t).read().splitlines()
    body = lines[1:]
    rng.shuffle(body)
    open(t, "w").write("\n".join([lines[0]] + body) + "\n")
    _, t = variant("overlapping-ops")             # every 5th op stretched over the next ones
    poke_column(t, 1, ["5000000"], every=5)
    _, t = variant("one-row-trace"); rewrite(t, lambda b: b"\n".join(b.split(b"\n")[:2]) + b"\n")  # noqa: E702
    _, t = variant("unknown-device")              # ops on a device the summaries never mention
    rewrite(t, lambda b: b.replace(b"NVIDIA H200 (0)", b"NVIDIA H200 (7)", 300))
    d, t = variant("mixed-nsys-versions")         # an old-style (2022) kernel summary next to 2025 reports
    k = os.path.join(d, f"{base}_cuda_gpu_kern_sum.csv")
    rows = list(csv.reader(open(k)))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(rows[0][:8] + ["GridXYZ", "BlockXYZ", "Name"])
    for r in rows[1:]:
        w.writerow(r[:8] + ["   1    1    1", " 128    1    1", r[8]])
    os.remove(k)
    open(os.path.join(d, f"{base}_gpukernsum.csv"), "w").write(buf.getvalue())
    _, t = variant("zero-length-trace")           # every op has duration 0
    lines = open(t).read().splitlines()
    fixed = [lines[0]] + [",".join([ln.split(",")[0], "0"] + ln.split(",")[2:]) for ln in lines[1:]]
    open(t, "w").write("\n".join(fixed) + "\n")
    return sorted(os.listdir(out))
