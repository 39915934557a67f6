"""Device memory in use over time (issue 54, memory pressure): ``nsys profile --cuda-memory-usage=true`` records
each allocation and free the CUDA driver serves in ``CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId,
bytes, memKind, memoryOperationType, ...)``: ``memoryOperationType`` 0 an allocation, 1 a free
(``ENUM_CUDA_DEV_MEM_EVENT_OPER``), ``memKind`` 2 device memory (``ENUM_CUDA_MEM_KIND``; 1 pinned host memory,
5 static device memory of the modules). Each GPU's size is ``TARGET_INFO_GPU.totalMemory``.

Read on real exports (nsys 2025.3.2, schema 3.20.3, H100 80GB: ``totalMemory`` 85,017,493,504 bytes): a
PyTorch run's caching allocator shows as a few large allocations at start-up and, under pressure, frees and
allocations inside the steps (the cache released and refilled when an allocation fails).

``mem_usage``: ``start_ns``, ``device_id``, ``delta`` (bytes, + allocated, - freed), device memory only, in time
order; ``device_memory``: ``device_id``, ``total_bytes``. None where the export has neither.
"""
from __future__ import annotations

import sqlite3

import polars as pl

from .reading import read_frame
from .tables import MEM_KIND, enum_labels, first_column

USAGE = "CUDA_GPU_MEMORY_USAGE_EVENTS"
GPU_INFO = "TARGET_INFO_GPU"
DEVICE, ALLOCATION, FREE = 2, 0, 1   # the ENUM values of every export that has the table (2023-2025)


def _id_of(labels: dict[int, str], label: str, default: int) -> int:
    """The id of ``label`` in an ENUM table's labels (``tables.enum_labels``: the export's, over the values every export uses)."""
    return next((i for i, v in labels.items() if v.lower() == label.lower()), default)


def read_device_memory(con: sqlite3.Connection, cols: dict) -> pl.DataFrame | None:
    c = cols.get(GPU_INFO, set())
    dev = first_column(c, "id", "deviceId", default="")
    if not dev or "totalMemory" not in c:
        return None
    f = read_frame(con, f'SELECT {dev}, totalMemory FROM {GPU_INFO} WHERE totalMemory > 0',
                   {"device_id": pl.Int64, "total_bytes": pl.Int64})
    return f.unique("device_id", keep="first", maintain_order=True) if f.height else None


def read_memory_usage(con: sqlite3.Connection, cols: dict) -> pl.DataFrame | None:
    c = cols.get(USAGE, set())
    if not {"start", "bytes", "memKind", "memoryOperationType"} <= c:
        return None
    device = _id_of(enum_labels(con, cols, "ENUM_CUDA_MEM_KIND", MEM_KIND), "Device", DEVICE)
    opers = enum_labels(con, cols, "ENUM_CUDA_DEV_MEM_EVENT_OPER", {ALLOCATION: "Allocation", FREE: "Deallocation"})
    alloc, free = _id_of(opers, "Allocation", ALLOCATION), _id_of(opers, "Deallocation", FREE)
    dev = first_column(c, "deviceId", default="0")
    f = read_frame(con, f'SELECT start, {dev}, CASE memoryOperationType WHEN {alloc} THEN bytes ELSE -bytes END '
                        f'FROM {USAGE} WHERE memKind = {device} AND memoryOperationType IN ({alloc}, {free}) '
                        f'AND start IS NOT NULL AND bytes IS NOT NULL ORDER BY start',
                   {"start_ns": pl.Int64, "device_id": pl.Int64, "delta": pl.Int64})
    return f if f.height else None
