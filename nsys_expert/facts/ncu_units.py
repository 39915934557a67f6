"""Which unit each Nsight Compute fact's metric must be in (the loader's canonical units, load/ncu.py).

A metric row in another unit (one nsys-expert does not know, so the loader kept the number as printed)
is never read as a bare number: facts/ncu.py leaves the fact "not evaluated", naming the unit.
"""
from __future__ import annotations

import polars as pl

# the unit (canonical, load/ncu.py) a fact's metric must be in: a value in any other unit is not read
# as a bare number; the fact is "not evaluated" with the unit named (counts may also be unit-less)
_UNIT_OF = {"duration_us": {"ns"}, "dram_bandwidth_gbps": {"byte/s"}, "_smem_static": {"byte/block", "byte"},
            "_smem_dynamic": {"byte/block", "byte"}, "registers_per_thread": {"register/thread", ""},
            "warp_cycles_per_issue": {"cycle", ""}}


def _expected_units(fact: str) -> set[str] | None:
    if fact.endswith("_pct"):
        return {"%"}
    if fact.startswith("block_limit_"):
        return {"block", ""}
    return _UNIT_OF.get(fact)


def wrong_units(found: pl.DataFrame) -> pl.DataFrame:
    """(fact, metric, unit) of the metric rows whose unit is not the one their fact is in."""
    pairs = found.select("fact", "metric", "unit").unique(maintain_order=True)
    bad = [r for r in pairs.iter_rows(named=True)
           if _expected_units(r["fact"]) is not None and r["unit"] not in _expected_units(r["fact"])]
    return pl.DataFrame(bad, schema={"fact": pl.String, "metric": pl.String, "unit": pl.String})
