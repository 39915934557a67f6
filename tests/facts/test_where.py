"""Where in the user's code (issue 55): the user-code test, Kineto frame names, and the locator on a real
torch.profiler trace recorded with ``with_stack=True`` (tests/data/trainapp_loss_callback_cpu.pt.trace.json.gz:
``benchmarks/workloads/trainapp`` ``loss_callback`` at small sizes on a CPU-only build of torch 2.13 —
CPU activities only, so it holds Python frames and operators but no GPU work; recorded with
``schedule(wait=1, warmup=1, active=2)``, ``record_shapes=True``)."""
from __future__ import annotations

import os

import polars as pl
import pytest

from nsys_expert.facts import where
from nsys_expert.load.kineto import read_kineto

TRACE = os.path.join(os.path.dirname(__file__), "..", "data", "trainapp_loss_callback_cpu.pt.trace.json.gz")


@pytest.mark.parametrize("path,user", [
    ("train.py", True), ("callbacks.py", True), ("myproj/models/moe.py", True), ("<stdin>", True),
    ("torch/nn/modules/module.py", False), ("transformers/models/llama/modeling_llama.py", False),
    ("threading.py", False), ("contextlib.py", False), ("<built-in method item of Tensor object at 0x1>", False),
    ("<frozen os>", False), ("/usr/lib/python3.12/site-packages/torch/_tensor.py", False),
    ("/opt/venv/lib/python3.11/site-packages/mylib/x.py", False), ("/home/me/proj/train.py", True),
])
def test_user_code(path, user):
    assert where.is_user(path) is user


def test_roots_from_the_environment(monkeypatch):
    monkeypatch.setenv("NSX_USER_ROOTS", "mylib")
    assert where.is_user("/opt/venv/lib/python3.11/site-packages/mylib/x.py")
    monkeypatch.setenv("NSX_LIBRARY_ROOTS", "vendored")
    assert not where.is_user("vendored/helpers.py")


def test_kineto_frame_names():
    assert where.kineto_frame("callbacks.py(48): on_step_end") == ("callbacks.py", 48, "on_step_end")
    assert where.kineto_frame("torch/nn/modules/module.py(1751): _call_impl")[1] == 1751
    assert where.kineto_frame("<built-in method item of Tensor object at 0x7f>") is None


def test_the_planted_item_is_found_in_its_callback():
    prof = read_kineto(TRACE)
    frames = where.user_frames_kineto(prof.tables["py_trace"])
    assert set(frames["file"]) >= {"callbacks.py", "trainer.py", "scenarios.py"}
    assert not any(f.startswith("torch/") for f in frames["file"])
    cpu = prof.tables["cpu_trace"]
    pts = cpu.filter(pl.col("name") == "aten::item").select(
        "pid", "tid", pl.col("start_ns").alias("ts"), pl.col("dur_ns").cast(pl.Float64).alias("weight"),
        pl.col("name").alias("operator"))
    w = where.summarize(where.locate_kineto(frames, pts), "torch.profiler:with_stack")
    assert w.points == pts.height and w.located == pts.height and not w.library_only
    found = {(x.file, x.line, x.function) for x in w.locations}
    # LossLogger.on_step_end (def line 48) calls loss.item() every step
    assert ("callbacks.py", 48, "on_step_end") in found
    top = w.locations[0]
    assert top.chain and top.chain[-1].startswith("trainer.py:") and "fit" in top.chain[-1]
    assert abs(sum(x.share_pct for x in w.locations) - 100.0) < 0.5


def test_points_outside_any_user_frame_are_not_guessed():
    frames = pl.DataFrame({"start_ns": [100], "end_ns": [200], "pid": [1], "tid": [1], "file": ["train.py"],
                           "line": [3], "function": ["step"]})
    pts = pl.DataFrame({"pid": [1, 1, 1], "tid": [1, 2, 1], "ts": [150, 150, 300], "weight": [1.0, 1.0, 1.0],
                        "operator": ["a", "b", "c"]})
    loc = where.locate_kineto(frames, pts)
    assert loc["file"].to_list() == ["train.py", None, None]   # another thread's frame, or none: no location
    w = where.summarize(loc, "x")
    assert w.located == 1 and w.locations[0].share_pct == pytest.approx(33.3, abs=0.1)


def _walk(frames: pl.DataFrame, points: pl.DataFrame) -> list[tuple]:
    """The locator's meaning, point by point: the innermost frame of the point's own thread that holds it
    (from its start up to, not at, its end), and the frames that hold that one, outermost first, CHAIN of
    them at most."""
    fr = frames.rows(named=True)
    out = []
    for p in points.rows(named=True):
        held = [f for f in fr if f["tid"] == p["tid"] and f["start_ns"] <= p["ts"] < f["end_ns"]]
        if not held:
            out.append((None, None, None, None))
            continue
        held.sort(key=lambda f: (f["start_ns"], -f["end_ns"]))
        inner, above = held[-1], held[:-1][-where.CHAIN:]
        out.append((inner["file"], inner["line"], inner["function"],
                    " > ".join(f"{f['file']}:{f['line']} in {f['function']}" for f in above)))
    return out


def test_the_chain_in_columns_is_the_walk_up_the_frames():
    # issue 57: locate_kineto gathers up the parent column instead of walking each point's frames in
    # Python; two threads of nested frames, deeper than CHAIN, and points at every depth, between
    # frames and on another thread
    rows = []

    def nest(s, e, depth, tid):
        rows.append((s, e, 1, tid, f"m{depth}.py", 10 + depth, f"f{depth}_{s}"))
        if depth < where.CHAIN + 3:
            w = (e - s) // 3
            nest(s + 1, s + w, depth + 1, tid)
            nest(s + 2 * w, e - 1, depth + 1, tid)
    for tid, t0 in ((1, 0), (2, 5_000)):
        nest(t0, t0 + 1_000_000, 0, tid)
    frames = pl.DataFrame(rows, schema=["start_ns", "end_ns", "pid", "tid", "file", "line", "function"], orient="row")
    ts = list(range(0, 1_010_000, 997))
    pts = pl.DataFrame({"pid": [1] * len(ts) * 3, "tid": [1] * len(ts) + [2] * len(ts) + [3] * len(ts),
                        "ts": ts * 3, "weight": [1.0] * len(ts) * 3, "operator": ["op"] * len(ts) * 3})
    loc = where.locate_kineto(frames, pts)
    assert list(zip(loc["file"], loc["line"], loc["function"], loc["chain"])) == _walk(frames, pts)
    assert loc["chain"].str.count_matches(" > ").max() == where.CHAIN - 1     # the chain is cut at CHAIN
    assert loc.filter(pl.col("tid") == 3)["file"].null_count() == len(ts)   # no frame on that thread
