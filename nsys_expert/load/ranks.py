"""Which inputs belong to which rank of a multi-GPU job.

Several ranks come as: several folders on the command line (one per rank); one folder holding
several runs' files (``rank0_cuda_gpu_trace.csv`` / ``prof.12345_...`` from ``-o prof.%p`` /
``host1_...`` from ``%h``, or ``rank0.sqlite`` / ``rank1.sqlite``); or one SQLite export holding
several processes (``nsys profile`` around ``torchrun``). A *run* is the files sharing one name
prefix; a run with a GPU timeline (a ``cuda_gpu_trace`` CSV or an SQLite export) is a rank.
Files that belong to no rank (summaries with another prefix, Nsight Compute folders, notes) go
with every rank, so nothing is dropped silently.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

import polars as pl

from ..notes import Note
from ..errors import InputError
from . import compressed, kineto, schema

TIMELINE_REPORTS = {"cuda_gpu_trace", "gputrace"}


@dataclass
class RankInput:
    label: str
    files: list[str] = field(default_factory=list)
    pid: int | None = None          # a process inside one shared SQLite export


def _prefix(path: str) -> tuple[str | None, bool]:
    """(run prefix, has a GPU timeline) of one file; prefix None when the name says nothing."""
    base = compressed.logical_name(path)      # 'rank0.sqlite.gz' is rank0's export
    if base.endswith((".sqlite", ".nsys-rep", ".qdrep")):
        return os.path.splitext(base)[0], True
    if base.lower().endswith(".json") and kineto.looks_like(path):   # a torch.profiler trace: one rank's timeline
        return re.sub(r"(\.pt\.trace)?\.json$", "", base, flags=re.IGNORECASE), True
    report = schema.report_name_from_filename(base)
    if report:
        m = re.search(r"(?:^|[_.\-])" + re.escape(report) + r"(?:_[^.]*)?\.(?:csv|tsv|txt)$", base, re.IGNORECASE)
        prefix = base[: m.start()] if m else ""
        return prefix, report.lower() in TIMELINE_REPORTS
    return None, False


def _digest(path: str) -> str:
    h = hashlib.sha1()
    try:
        size = os.path.getsize(path)
        h.update(str(size).encode())
        with open(path, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(size - (1 << 20))
                h.update(fh.read())
    except OSError as e:       # /proc/self/mem and the like: stat says a file, reading it fails (EIO)
        raise InputError(f"cannot read it ({e.strerror or e})", path) from None
    return h.hexdigest()


def _one_run_only(groups: dict[str, list[str]], timelines: list[str]) -> None:
    """One GPU timeline (or none) but reports under two name prefixes in one folder: two runs whose
    files would be combined into one diagnosis (one run's trace with the other's summaries). An error
    naming both, not a silent mix (with two timelines they are ranks, and load/runs.py tells them apart)."""
    by_path: dict[str, list[str]] = {}
    for key, files in groups.items():
        by_path.setdefault(os.path.dirname(os.path.abspath(files[0])), []).append(key)
    for where, keys in by_path.items():
        if len(keys) < 2:
            continue
        keys.sort(key=lambda k: (k not in timelines, natural_key(k)))

        def run(k):
            reports = sorted({schema.report_name_from_filename(compressed.logical_name(f)) or
                              os.path.splitext(compressed.logical_name(f))[1].lstrip(".") for f in groups[k]})
            name = (k.split(":", 1)[1] if ":" in k else k) or "(no prefix)"
            return f"'{name}' ({', '.join(reports[:3])}{f' and {len(reports) - 3} more' if len(reports) > 3 else ''})"
        from ..errors import InputError
        raise InputError(f"this folder holds the files of {len(keys)} different runs, by their names: "
                         f"{' and '.join(run(k) for k in keys[:3])}{' and more' if len(keys) > 3 else ''}; "
                         f"reading them as one run would mix one run's trace with another's summaries", where,
                         "put each run's files in a folder of their own and diagnose one at a time (or compare "
                         "two with nsys-expert diff)")


def natural_key(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def discover(folder_files: list[list[str]]) -> tuple[list[RankInput], list[str]]:
    """Group the files of each given path into ranks. -> (ranks, notes). One rank means one run."""
    notes: list[str] = []
    groups: dict[str, list[str]] = {}
    timeline: dict[str, str] = {}
    loose: list[str] = []
    owner: dict[str, int] = {}   # a file of no rank -> the index of the path it came from
    multi_paths = len(folder_files) > 1
    for i, files in enumerate(folder_files):
        for f in files:
            prefix, has_tl = _prefix(f)
            if prefix is None:
                loose.append(f)
                owner[f] = i
                continue
            key = f"{i}:{prefix}" if multi_paths else prefix
            groups.setdefault(key, []).append(f)
            if has_tl:
                timeline.setdefault(key, f)
    # the same timeline file twice (a copy under another name) is one rank, not two
    seen: dict[str, str] = {}
    for key in sorted(timeline, key=natural_key):
        d = _digest(timeline[key])
        if d in seen:
            # the copy's run (its timeline and the reports beside it) is the same run again: set aside, not
            # given to every rank as files of no rank are (each rank would then hold two GPU timelines)
            copies = sorted(os.path.basename(f) for f in groups.pop(key))
            notes.append(Note("load.rank_copy", {"file": os.path.basename(timeline[key]),
                                                 "other": os.path.basename(timeline[seen[d]]), "files": tuple(copies)}))
            del timeline[key]
        else:
            seen[d] = key
    ranks_keys = sorted(timeline, key=natural_key)
    if len(ranks_keys) <= 1:
        _one_run_only(groups, ranks_keys)
        every = [f for fs in folder_files for f in fs]
        return [RankInput("run", every)], notes
    ranks = []
    for key in ranks_keys:
        label = key.split(":", 1)[1] if multi_paths else key
        if multi_paths and not label:
            label = os.path.basename(os.path.dirname(timeline[key])) or key
        ranks.append(RankInput(label.strip("_.-") or key, list(groups[key])))
    _kineto_labels(ranks, [timeline[k] for k in ranks_keys])
    labels = [r.label for r in ranks]
    if len(set(labels)) < len(labels):  # the same prefix in every folder: name ranks by folder
        for r, key in zip(ranks, ranks_keys):
            folder = os.path.basename(os.path.dirname(os.path.abspath(timeline[key])))
            r.label = f"{folder}/{r.label}" if r.label else folder
    # files without a rank of their own go with every rank; with several paths, those of a path that
    # holds ranks (its ncu/ folder, its summaries) go with that path's ranks only
    for key, files in groups.items():
        if key not in timeline:
            loose += files
            owner.update((f, int(key.split(":", 1)[0])) for f in files if multi_paths)
    paths_with_ranks = {int(k.split(":", 1)[0]) for k in ranks_keys} if multi_paths else set()
    for r, key in zip(ranks, ranks_keys):
        mine = int(key.split(":", 1)[0]) if multi_paths else None
        r.files += [f for f in loose if owner.get(f) not in paths_with_ranks or owner.get(f) == mine]
    return ranks, notes


_DIST_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)')


def _kineto_labels(ranks: list[RankInput], timelines: list[str]) -> None:
    """torch.profiler traces name their rank in ``distributedInfo``: when every timeline is such a trace
    and the ranks they name are all different, the ranks are called by them (``rank2``), the file's
    name kept beside it where it says something else (``rank2 (host5_worker)``). Traces of separate
    single-process runs all say rank 0: then the file names stay the labels."""
    found = []
    for path in timelines:
        if not kineto.looks_like(path):
            return
        try:
            m = _DIST_RANK.search(compressed.head(path, 1 << 16))
        except Exception:  # noqa: BLE001 - an unreadable head is the loader's error to report
            return
        if not m:
            return
        found.append(int(m.group(1)))
    if len(set(found)) < len(found):
        return
    for r, n in zip(ranks, found):
        name = f"rank{n}"
        r.label = name if r.label in (name, f"rank_{n}", f"rank-{n}") else f"{name} ({r.label})"
    ranks.sort(key=lambda r: natural_key(r.label))


def processes_with_gpu_work(gpu: pl.DataFrame) -> list[int]:
    """The processes of one export that ran GPU work (a multi-process SQLite export)."""
    if gpu is None or "pid" not in gpu.columns or gpu.height == 0:
        return []
    return sorted(int(p) for p in gpu["pid"].drop_nulls().unique().to_list())


def filter_process(tables: dict[str, pl.DataFrame], pid: int) -> dict[str, pl.DataFrame]:
    """One process's share of a multi-process export; tables without a pid column are left out
    (summaries over every process would mislead), except those with no rows."""
    out = {}
    for name, df in tables.items():
        if "pid" in df.columns:
            out[name] = df.filter(pl.col("pid") == pid)
    return out
