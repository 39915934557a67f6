"""GPU metrics samples (``nsys profile --gpu-metrics-devices=...``) from an nsys SQLite export.

nsys samples each GPU's own counters (10 kHz by default) into ``GPU_METRICS`` (``timestamp``,
``typeId``, ``metricId``, ``value``), with the metric names in ``TARGET_INFO_GPU_METRICS``
(``typeId``, ``metricId``, ``metricName``). The names change with the GPU generation and the nsys
version ("SMs Active [Throughput %]", "SM Active", "Tensor Active [Throughput %]", "Tensor Active /
FP16 Active", ...), so the metrics are matched by name (:data:`METRICS`), the raw name is kept, and
the part's ``meta["gpu_metrics"]`` says which were found and which were not.

A 10-minute run holds hundreds of millions of samples. They are never read row by row into memory:
SQLite sums them into time bins (``GROUP BY`` typeId, metricId, bin; its sorter spills to its own
temporary files, never beside the input), so the frame has at most :data:`MAX_ROWS` rows whatever the
length of the run. A bin is a whole number of sampling periods; for short runs it is one period
(no loss). Each row: ``device_id``, ``metric`` (the key of :data:`METRICS`), ``s`` / ``e`` (the bin,
ns), ``sum`` (of the sample values) and ``n`` (samples). Sample values are averages over the period
that ends at their timestamp: a bin holds the samples stamped nearest its centre and covers the
periods they describe (``[t - period, t)`` each).

Devices: one metric type per GPU (``typeId``). When the export has as many types as GPUs in
``TARGET_INFO_GPU``, they are paired in order; otherwise the types are numbered and a warning says
that the device ids are not known.
"""
from __future__ import annotations

import math
import os
import re
import sqlite3

import polars as pl

from ..notes import Note

SAMPLES = "GPU_METRICS"
NAMES = "TARGET_INFO_GPU_METRICS"

# key -> pattern over the raw metric name (case-insensitive); only percentages ("[Throughput %]", or
# a bare name in older exports) are read: the other units (warps, MHz, counts) are left out
METRICS: dict[str, str] = {
    "gr_active": r"^GR Active\b",
    "sm_active": r"^SMs? Active\b",
    "sm_issue": r"^SM Issue\b",
    "tensor_active": r"^Tensor (Pipe |Core )?Active\b",
    "dram_read": r"^DRAM Read (Bandwidth|Throughput)\b",
    "dram_write": r"^DRAM Write (Bandwidth|Throughput)\b",
    "pcie_rx": r"^PCIe (RX|Read)\b",
    "pcie_tx": r"^PCIe (TX|Write)\b",
    "nvlink_rx": r"^NVLink (RX|Received)\b",
    "nvlink_tx": r"^NVLink (TX|Transmitted)\b",
}
# the frame never holds more rows than this (bins x metrics x devices): memory stays flat
MAX_ROWS = 500_000
SCHEMA = {"device_id": pl.Int64, "metric": pl.String, "s": pl.Int64, "e": pl.Int64, "sum": pl.Float64,
          "n": pl.Int64}


def _unit_ok(name: str) -> bool:
    unit = re.search(r"\[([^\]]*)\]\s*$", name)
    return unit is None or "%" in unit.group(1)


def match_names(names: list[tuple[int, int, str]]) -> tuple[dict[str, tuple[int, str]], list[str]]:
    """(typeId, metricId, name) rows -> ({key: (metricId, raw name)}, names not used). The first
    metric id of a key wins (the same name in every type of one export)."""
    found: dict[str, tuple[int, str]] = {}
    for _t, mid, name in sorted(names, key=lambda r: (r[1], r[0])):
        for key, pat in METRICS.items():
            if key not in found and re.search(pat, name, re.I) and _unit_ok(name):
                found[key] = (int(mid), str(name))
                break
    used = {n for _m, n in found.values()}
    return found, sorted({str(n) for _t, _m, n in names} - used)


def read(con: sqlite3.Connection, cols: dict, gpus: dict[int, str], path: str, frame=None,
         max_rows: int = MAX_ROWS) -> tuple[pl.DataFrame | None, dict, list[str]]:
    """-> (binned frame or None, meta, warnings). None when the export has no GPU metrics.
    ``frame(con, sql, schema)`` runs the binning query into a frame (the SQLite loader's, Arrow when
    it can); without it, sqlite3 rows."""
    base = os.path.basename(path)
    if SAMPLES not in cols:
        return None, {}, []
    if NAMES not in cols or not {"timestamp", "typeId", "metricId", "value"} <= cols[SAMPLES] \
            or not {"typeId", "metricId", "metricName"} <= cols[NAMES]:
        return None, {}, [f"{base}: GPU metrics samples are in this export but not in the layout this version "
                          f"reads (GPU_METRICS timestamp, typeId, metricId, value with TARGET_INFO_GPU_METRICS "
                          f"names): they are not used"]
    names = con.execute(f'SELECT DISTINCT typeId, metricId, metricName FROM "{NAMES}"').fetchall()
    found, unused = match_names(names)
    if not found:
        return None, {}, [f"{base}: GPU metrics are in this export but none of their names is known "
                          f"({', '.join(unused[:6])}{', ...' if len(unused) > 6 else ''}): they are not used"]
    first = con.execute(f'SELECT timestamp FROM "{SAMPLES}" ORDER BY rowid LIMIT 1').fetchone()
    last = con.execute(f'SELECT timestamp FROM "{SAMPLES}" ORDER BY rowid DESC LIMIT 1').fetchone()
    if first is None:
        return None, {}, [f"{base}: the GPU_METRICS table is empty (no samples were recorded)"]
    types = [int(r[0]) for r in con.execute(f'SELECT DISTINCT typeId FROM "{NAMES}" ORDER BY typeId')]
    mid0 = min(m for m, _n in found.values())
    # the sampling period: the mean step over the first samples of one metric (timestamps drift by
    # about 1 ns per sample, so an integer step of the first pair would slide bins over long runs)
    ts = [r[0] for r in con.execute(f'SELECT timestamp FROM "{SAMPLES}" WHERE typeId = ? AND metricId = ? '
                                    f'ORDER BY rowid LIMIT 257', (types[0], mid0))]
    period = (ts[-1] - ts[0]) / (len(ts) - 1) if len(ts) > 1 and ts[-1] > ts[0] else 100_000.0
    t0, t1 = int(first[0]), int(max(last[0], first[0]))
    per_dev = max(1, max_rows // (len(found) * len(types)))
    k = max(1, math.ceil((t1 - t0 + period) / period / per_dev))   # sampling periods per bin
    width = k * period
    # bin b holds the samples stamped nearest t0 + b * width; a sample covers [t - period, t)
    origin = t0 - width / 2 - period / 2
    ids = ",".join(str(m) for m, _n in found.values())
    sql = (f'SELECT typeId, metricId, CAST((timestamp - {t0}) / {width!r} + 0.5 AS INTEGER) AS b, '
           f'SUM(value), COUNT(*) FROM "{SAMPLES}" WHERE metricId IN ({ids}) GROUP BY 1, 2, 3')
    raw_schema = {"type": pl.Int64, "mid": pl.Int64, "b": pl.Int64, "sum": pl.Float64, "n": pl.Int64}
    f = (frame(con, sql, raw_schema) if frame is not None
         else pl.DataFrame(con.execute(sql).fetchall(), schema=raw_schema, orient="row"))
    if f.height == 0:
        return None, {}, [Note("load.gpu_metrics_none", {"file": base})]
    key_of = {m: k_ for k_, (m, _n) in found.items()}
    warnings = []
    if len(types) == len(gpus):
        dev_of = dict(zip(types, sorted(gpus)))
    else:
        dev_of = {t: i for i, t in enumerate(types)}
        if gpus:
            warnings.append(Note("load.gpu_metrics_sources", {"file": base, "sources": len(types), "gpus": len(gpus)}))
    f = f.select(pl.col("type").replace_strict(dev_of, default=None, return_dtype=pl.Int64).alias("device_id"),
                 pl.col("mid").replace_strict(key_of, return_dtype=pl.String).alias("metric"),
                 (pl.lit(origin) + pl.col("b") * width).round(0).cast(pl.Int64).alias("s"),
                 (pl.lit(origin) + (pl.col("b") + 1) * width).round(0).cast(pl.Int64).alias("e"),
                 "sum", "n").filter(pl.col("device_id").is_not_null()).sort("device_id", "metric", "s")
    meta = {"metrics": {k_: n for k_, (_m, n) in found.items()},
            "missing": [k_ for k_ in METRICS if k_ not in found],
            "unused": unused, "period_ns": round(period, 1), "bin_ns": round(width, 1),
            "samples": int(f["n"].sum()), "devices": sorted(set(dev_of.values()))}
    return f, meta, warnings
