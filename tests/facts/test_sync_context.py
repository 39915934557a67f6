"""facts/sync_context.py: which blocking syncs are explicit (a step timer's torch.cuda.synchronize(): no copy
before them) and not a read of a value (a small copy first) or PyTorch's sync after a pageable copy."""
import polars as pl

from nsys_expert.facts.sync_context import _explicit


def _api(rows):
    return pl.DataFrame(rows, schema=["start_ns", "end_ns", "tid", "base"], orient="row")


def test_only_a_sync_with_no_copy_before_it_is_explicit():
    a = _api([(0, 10, 1, "cudaLaunchKernel"), (20, 90, 1, "cudaDeviceSynchronize"),          # a step timer
              (100, 110, 1, "cudaMemcpyAsync"), (120, 200, 1, "cudaStreamSynchronize"),      # after a copy
              (210, 220, 1, "cudaLaunchKernel"), (230, 300, 1, "cudaStreamSynchronize"),     # after a small D2H
              (240, 250, 2, "cudaMemcpyAsync"), (400, 500, 1, "cudaMemcpy")])                # a blocking copy
    syncs = a.filter(pl.col("base").is_in(["cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaMemcpy"]))
    s = syncs.with_columns((pl.col("start_ns") == 230).alias("after_small"))
    e = _explicit(a, s)
    assert e["start_ns"].to_list() == [20]


def test_the_call_before_is_looked_up_on_the_syncs_own_thread():
    a = _api([(0, 10, 2, "cudaMemcpyAsync"), (20, 90, 1, "cudaStreamSynchronize")])
    s = a.filter(pl.col("base") == "cudaStreamSynchronize").with_columns(pl.lit(False).alias("after_small"))
    assert _explicit(a, s)["start_ns"].to_list() == [20]
