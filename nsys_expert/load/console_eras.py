"""Section titles of the older `nsys profile --stats=true` eras (used by ``console_scan``), and the
unit of their unit-less size columns (used by ``console``). docs/console-eras.md shows each layout.

Before the report names were printed (2022+: ``Processing [...] with [.../cuda_api_sum.py]``,
`` ** CUDA API Summary (cuda_api_sum):``, ``[5/8] Executing 'cuda_api_sum' stats report``), a section
was known only by its title:

- **2019.5 - 2020.1** (``.qdrep``, ``nsys-exporter``): ``Generating CUDA API Statistics...`` then
  ``CUDA API Statistics (nanoseconds)``; ``CUDA Kernel Statistics (nanoseconds)``, ``CUDA Memory
  Operation Statistics (nanoseconds)`` (by time), ``CUDA Memory Operation Statistics (KiB)`` (by
  size), ``Operating System Runtime API Statistics (nanoseconds)``, ``NVTX Push-Pop Range Statistics
  (nanoseconds)``. The headers carry no units (``Time(%)  Total Time  Calls  Average ...  Name``;
  ``Instances`` for kernels, ``Operations`` for memory operations, still under ``Name``). A report
  with nothing to show prints its title and no table (every real 2019.5 log ends on the NVTX title
  when NVTX was not used): such a section is an empty table, not a lost one.
- **2020.2 - 2021.x**: ``CUDA API Statistics:``, ``CUDA Kernel Statistics:``, ``CUDA Memory Operation
  Statistics (by time):``, ``... (by size in KiB):`` (``(by size):`` once the headers carry ``(MB)``),
  ``Operating System Runtime API Statistics:``, ``NVTX Push-Pop Range Statistics:``.

Sizes printed without a unit are KiB in every era that printed them: the 2019.5 title says
``(KiB)``, the 2020 title ``(by size in KiB)``, and the 2021 ``nsys stats`` scripts (``Running
[.../gpumemsizesum.py x.sqlite]...``, no title) print the same numbers (a 32-byte copy is ``0.031``,
a 4-byte memset ``0.004``).
"""
from __future__ import annotations

import re

# (title, canonical table, era); the size titles may carry their unit
TITLES = [
    # 2020-2021
    (re.compile(r"^\s*CUDA API Statistics:\s*$"), "api_sum", "2020"),
    (re.compile(r"^\s*CUDA Kernel Statistics:\s*$"), "kern_sum", "2020"),
    (re.compile(r"^\s*CUDA Memory Operation Statistics \(by time\):\s*$"), "mem_time_sum", "2020"),
    (re.compile(r"^\s*CUDA Memory Operation Statistics \(by size(?: in (\w+))?\):\s*$"), "mem_size_sum", "2020"),
    (re.compile(r"^\s*Operating System Runtime API Statistics:\s*$"), "osrt_sum", "2020"),
    (re.compile(r"^\s*NVTX Push-Pop Range Statistics:\s*$"), "nvtx_pushpop_sum", "2020"),
    # 2019.5 - 2020.1
    (re.compile(r"^\s*CUDA API Statistics \(nanoseconds\)\s*$"), "api_sum", "2019"),
    (re.compile(r"^\s*CUDA Kernel Statistics \(nanoseconds\)\s*$"), "kern_sum", "2019"),
    (re.compile(r"^\s*CUDA Memory Operation Statistics \(nanoseconds\)\s*$"), "mem_time_sum", "2019"),
    (re.compile(r"^\s*CUDA Memory Operation Statistics \((KiB|KB|MiB|MB|B|bytes)\)\s*$", re.I), "mem_size_sum",
     "2019"),
    (re.compile(r"^\s*Operating System Runtime API Statistics \(nanoseconds\)\s*$"), "osrt_sum", "2019"),
    (re.compile(r"^\s*NVTX Push-Pop Range Statistics \(nanoseconds\)\s*$"), "nvtx_pushpop_sum", "2019"),
]
SIZE_UNITS = {"kib": 1024.0, "kb": 1e3, "mib": 1024.0 ** 2, "mb": 1e6, "b": 1.0, "bytes": 1.0}
# the unit of size columns printed without one (see the module text)
UNITLESS_SIZE = SIZE_UNITS["kib"]


def title(line: str) -> tuple[str, float | None, str] | None:
    """(table, size unit or None, era) when the line is an old-era section title."""
    for rx, table, era in TITLES:
        m = rx.match(line)
        if m:
            unit = m.group(1).lower() if m.groups() and m.group(1) else None
            return table, (SIZE_UNITS.get(unit) if unit else None), era
    return None


def is_title(line: str) -> bool:
    return any(rx.match(line) for rx, _, _ in TITLES)
