"""load: find the inputs, read each into one canonical Polars frame per table, record what is missing.

Public entry point: :func:`load_paths`. It knows file formats and nothing else (no facts, no rules).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import polars as pl

from ..errors import InputError
from . import csv_reports, normalize, schema


@dataclass
class Profile:
    """Everything read from one profiled run."""
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)      # table -> file it came from
    inputs: list[dict] = field(default_factory=list)           # JSON contract "inputs"
    warnings: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)                   # nsys version, GPU names, ...

    def has(self, table: str) -> bool:
        return table in self.tables

    def source_name(self, table: str) -> str | None:
        p = self.sources.get(table)
        return os.path.basename(p) if p else None


def _list_files(paths: list[str]) -> tuple[list[str], list[str]]:
    files, skipped_dirs = [], []
    for p in paths:
        if not os.path.exists(p):
            raise InputError("no such file or folder", p)
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                full = os.path.join(p, name)
                if os.path.isdir(full):
                    skipped_dirs.append(full)
                elif not name.startswith("."):
                    files.append(full)
        else:
            files.append(p)
    return files, skipped_dirs


def load_paths(paths: list[str]) -> Profile:
    """Read every recognisable input under ``paths`` (files, or folders one level deep)."""
    files, skipped_dirs = _list_files(paths)
    prof = Profile()
    loaded: dict[str, csv_reports.Loaded] = {}
    ignored: list[str] = []
    for path in files:
        sn = csv_reports.sniff(path)
        base = os.path.basename(path)
        if sn.kind == "csv-report":
            item = csv_reports.read_report(sn)
            missing = normalize.check_required(item.table, item.frame, path)
            if missing:
                raise InputError(f"this {item.table} report has no '{missing}' column", path,
                                 "re-export it with nsys stats --format csv")
            if item.table in ("api_sum", "osrt_sum") and sn.report is None:
                item.table = "api_sum" if normalize.looks_like_api_names(item.frame) else "osrt_sum"
            item.frame, w = normalize.normalize(item.table, item.frame, path)
            item.warnings += w
            _add(loaded, item, prof)
        elif sn.kind == "empty":
            if sn.spec is None:
                ignored.append(f"{base} (empty)")
                continue
            era = "2021-2022" if sn.report and sn.report != sn.spec.names[0] else "2023+"
            item = csv_reports.Loaded(sn.spec.table, normalize.empty_frame(sn.spec.table), path,
                                      sn.report or sn.spec.names[0], era=era)
            _add(loaded, item, prof)
        elif sn.kind == "binary" and sn.report:
            raise InputError(f"this should be the {sn.report} report but it holds binary data, not CSV text", path,
                             f"re-export it: nsys stats --format csv -r {sn.report} -o prof report.nsys-rep")
        elif sn.kind == "unknown-csv":
            raise InputError(f"the file name says {sn.report} but its header is not an nsys stats "
                             f"{sn.report} header", path,
                             f"re-export it: nsys stats --format csv -r {sn.report} -o prof report.nsys-rep")
        elif sn.kind == "sqlite":
            ignored.append(f"{base} (SQLite export: not read by this version)")
        else:
            ignored.append(base)
    for item in loaded.values():
        prof.tables[item.table] = item.frame
        prof.sources[item.table] = item.path
        prof.warnings += item.warnings
        prof.inputs.append({"path": item.path, "kind": "nsys-csv", "report": item.report,
                            "version": item.era, "rows": item.frame.height})
    if not prof.tables:
        where = paths[0] if len(paths) == 1 else ", ".join(paths)
        raise InputError("no nsys stats report found (looked for CSV reports such as *_cuda_gpu_trace.csv, "
                         "*_cuda_gpu_kern_sum.csv, *_cuda_api_sum.csv)", where, csv_reports.EXPORT_HINT)
    _check_consistency(prof)
    if ignored:
        prof.warnings.append("not read (not an nsys stats CSV report): " + ", ".join(ignored))
    if skipped_dirs:
        prof.warnings.append("subfolders not read (pass one as its own PATH to diagnose it): "
                             + ", ".join(os.path.basename(d) for d in skipped_dirs))
    prof.meta.update(_meta(prof))
    return prof


def _add(loaded: dict, item: csv_reports.Loaded, prof: Profile) -> None:
    prev = loaded.get(item.table)
    if prev is None:
        loaded[item.table] = item
        return
    if prev.frame.equals(item.frame):
        prof.warnings.append(f"{os.path.basename(item.path)} is a copy of {os.path.basename(prev.path)} "
                             f"(the same {item.table} rows); read once")
        return
    if prev.frame.height == 0 and item.frame.height > 0:  # an empty placeholder loses to real rows
        loaded[item.table] = item
        return
    raise InputError(f"two different {item.table} reports in one input: {os.path.basename(prev.path)} and "
                     f"{os.path.basename(item.path)}", os.path.dirname(item.path) or ".",
                     "diagnose one profile at a time: put each run's CSVs in a folder of its own")


def _check_consistency(prof: Profile) -> None:
    """A trace that is empty while its summary counts work is broken or cut: do not trust it."""
    g = prof.tables.get("gpu_trace")
    k = prof.tables.get("kern_sum")
    if g is not None and g.height == 0 and k is not None and k.height > 0:
        prof.warnings.append(f"{prof.source_name('gpu_trace')} has no rows while {prof.source_name('kern_sum')} "
                             f"lists {int(k['count'].sum())} kernel launches: the GPU trace is ignored and the "
                             f"timeline facts (GPU active %, idle gaps, window) are not computed")
        del prof.tables["gpu_trace"]
        del prof.sources["gpu_trace"]
    a = prof.tables.get("api_trace")
    s = prof.tables.get("api_sum")
    if a is not None and a.height == 0 and s is not None and s.height > 0:
        prof.warnings.append(f"{prof.source_name('api_trace')} has no rows while {prof.source_name('api_sum')} "
                             f"counts {int(s['count'].sum())} API calls: the API trace is ignored")
        del prof.tables["api_trace"]
        del prof.sources["api_trace"]


def _meta(prof: Profile) -> dict:
    meta: dict = {}
    g = prof.tables.get("gpu_trace")
    if g is not None and g.height and "device_name" in g.columns:
        devs = g.select("device_id", "device_name").unique().sort("device_id")
        meta["gpus"] = [{"id": int(r[0]), "name": r[1] or "unknown"} for r in devs.iter_rows()]
    eras = sorted({i["version"] for i in prof.inputs})
    meta["report_eras"] = eras
    return meta


__all__ = ["Profile", "load_paths", "schema"]
