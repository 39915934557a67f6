"""What the big traces hold per row (issue 34, third part): no text column as long as a trace, base names
gathered by code, gap causes picked as integers, and reports normalized in their reader thread with
errors still raised in file order."""
from __future__ import annotations

import os
import re
import shutil

import polars as pl
import pytest

from nsys_expert import load
from nsys_expert.errors import InputError
from nsys_expert.facts import intervals, timeline
from nsys_expert.facts.names import VERSION_SUFFIX
from nsys_expert.load import normalize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "fixtures")
KINDS = ("src_kind", "dst_kind", "copy_kind")


@pytest.mark.parametrize("case", ["memcpy_bound/input", "memcpy_bound_sqlite/input", "kineto_memcpy_bound/input"])
def test_memory_kinds_are_codes_in_every_loader(case):
    """A text column costs 16 bytes a row even where it is empty (every kernel's row): the copies' memory
    kinds are categories whatever the loader, with the same values the texts had."""
    path = os.path.join(FIX, case)
    if not os.path.isdir(path):
        pytest.skip(f"fixture {case} not shipped")
    gpu = load.load_paths([path]).tables["gpu_trace"]
    assert all(gpu.schema[c] == pl.Categorical for c in KINDS), {c: gpu.schema[c] for c in KINDS}
    copies = gpu.filter(pl.col("kind") == "memcpy")
    assert copies.height and copies["copy_kind"].null_count() < copies.height
    assert set(copies["copy_kind"].drop_nulls().cast(pl.String)) <= {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"}
    # every kernel's row has no memory kind
    assert gpu.filter(pl.col("kind") == "kernel").select(pl.col("src_kind").is_null().all()).item()


def test_pageable_copies_are_found_through_the_codes():
    gpu = load.load_paths([os.path.join(FIX, "memcpy_bound", "input")]).tables["gpu_trace"]
    want = (gpu.filter((pl.col("kind") == "memcpy")
                       & (pl.col("src_kind").cast(pl.String).str.contains("(?i)pageable")
                          | pl.col("dst_kind").cast(pl.String).str.contains("(?i)pageable")))["corr_id"]
            .drop_nulls().unique().sort().to_list())
    assert want and sorted(timeline.pageable_copy_corr_ids(gpu)) == want


def test_base_names_gathered_by_code_match_the_regex():
    """Past 100,000 calls the base names are gathered by the name's category code: the same names, per
    call, as the regex gives (suffixed, unsuffixed and null names mixed)."""
    names = ["cudaLaunchKernel_v7000", "cudaStreamSynchronize_v3020", "cuCtxSynchronize", None,
             "cudaMemcpyAsync_v3020", "cuMemAlloc_v2"]
    n = 120_000
    frame = pl.DataFrame({"name": pl.Series([names[(i * 7) % len(names)] for i in range(n)], dtype=pl.Categorical)})
    got = frame.select(normalize._base_name(frame).alias("b"))["b"]
    assert got.dtype == pl.Categorical
    want = [None if x is None else re.sub(VERSION_SUFFIX, "", x) for x in frame["name"].cast(pl.String).to_list()]
    assert got.cast(pl.String).to_list() == want
    small = frame.head(50)   # the hash lookup below 100,000 calls: the same names
    assert small.select(normalize._base_name(small))["name"].cast(pl.String).to_list() == want[:50]


def test_gap_causes_follow_the_order_of_the_checks():
    """The causes are picked as small integers and gathered into the Enum: the first check that holds
    wins, 'host' when none does (times a millisecond apart: far past the sync tolerance)."""
    ms = 1_000_000
    gaps = pl.DataFrame({"s": [0, 1 * ms, 2 * ms, 3 * ms, 4 * ms], "e": [500, 1 * ms + 900, 2 * ms + 50, 3 * ms + 900, 5 * ms],
                         "corr_id": [1, 2, 3, 4, 5], "launch_e": [None, 1 * ms - 10, None, None, None]},
                        schema={"s": pl.Int64, "e": pl.Int64, "corr_id": pl.Int64, "launch_e": pl.Int64})
    empty = pl.DataFrame(schema={"s": pl.Int64, "e": pl.Int64})
    sync = pl.DataFrame({"s": [3 * ms - 100], "e": [3 * ms + 950]}, schema={"s": pl.Int64, "e": pl.Int64})
    host = {"memcpy": empty, "sync": intervals.merge(sync)}
    out = timeline.attribute_gaps(gaps, None, host, None, launch_gap_ns=1_000)
    assert out.schema["cause"] == timeline.CAUSE
    assert out["len"].to_list() == [500, 900, 50, 900, ms]
    # gap 2's operation was submitted before the gap began (other); gap 4 starts inside a sync call;
    # gaps 1 and 3 are short (launch); gap 5 is long and unexplained (host)
    assert out["cause"].to_list() == ["launch", "other", "launch", "sync", "host"]


def test_normalize_warnings_survive_the_reader_thread(tmp_path):
    """Normalized in its reader thread, a report keeps both steps' warnings: a GPU trace row with a
    negative duration is left out and said so."""
    dst = tmp_path / "run"
    shutil.copytree(os.path.join(FIX, "launch_bound", "input"), dst)
    trace = next(f for f in os.listdir(dst) if f.endswith("_cuda_gpu_trace.csv"))
    t = pl.read_csv(dst / trace, infer_schema=False)
    t = t.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(pl.lit("-7")).otherwise(pl.col("Duration (ns)"))
                        .alias("Duration (ns)"))
    t.write_csv(dst / trace)
    prof = load.load_paths([str(dst)])
    assert prof.tables["gpu_trace"].height == t.height - 1
    assert any(trace in str(w) and "negative start or duration" in str(w) for w in prof.warnings), prof.warnings


def test_the_first_bad_report_in_file_order_is_the_one_named(tmp_path):
    """Reports are read side by side, but the error raised is the first bad file's in file order."""
    dst = tmp_path / "run"
    shutil.copytree(os.path.join(FIX, "launch_bound", "input"), dst)
    bad = sorted(f for f in os.listdir(dst) if f.endswith(".csv") and os.path.getsize(dst / f))[:2]
    for f in bad:
        (dst / f).write_bytes(b"\x00\x01\x02 not a table\n")
    with pytest.raises(InputError) as e:
        load.load_paths([str(dst)])
    assert bad[0] in str(e.value) and bad[1] not in str(e.value)
