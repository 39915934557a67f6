"""The replay refuses, cheaply, GPU and API traces that are not of one run (issue 34's second part).

A GPU trace tiled beside an API trace left as it was (the old CSV benchmark's input) repeats each
correlation id of a one-operation launch call: the replay used to build a model of operations launched
where they never ran (a second at a million operations) and refuse it only on its error.
"""
import shutil

import polars as pl

from conftest import FIXTURES
from nsys_expert import facts, load


def _tiled_gpu_only(tmp_path, tiles=2):
    src = FIXTURES / "launch_bound" / "input"
    out = tmp_path / "case"
    shutil.copytree(src, out)
    gpu = next(out.glob("*_cuda_gpu_trace.csv"))
    t = pl.read_csv(gpu, infer_schema_length=0)
    start = t["Start (ns)"].cast(pl.Int64)
    span = int(start.max() - start.min()) + 1_000_000
    pl.concat([t.with_columns((start + k * span).cast(pl.Utf8).alias("Start (ns)")) for k in range(tiles)]) \
      .write_csv(gpu)
    return out


def test_repeated_correlation_ids_are_refused_before_a_model_is_built(tmp_path, monkeypatch):
    from nsys_expert.facts import depmodel

    built = []
    real = depmodel.build
    monkeypatch.setattr(depmodel, "build", lambda *a, **k: built.append(1) or real(*a, **k))
    fs = facts.compute(load.load_paths([str(_tiled_gpu_only(tmp_path))]))
    why = str(fs.absent.get("critical_path_host_pct", ""))
    assert "not of one run" in why and "graph" in why, why
    assert "critical_path_host_pct" not in fs.run and not built


def test_the_untiled_case_is_still_replayed():
    fs = facts.compute(load.load_paths([str(FIXTURES / "launch_bound" / "input")]))
    assert fs.run["critical_path_host_pct"] > 99

