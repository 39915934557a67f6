"""The replay fact group: the steady-state iteration's dependency model (``depmodel``) run as it is and
with each piece of advice applied (``transforms``): the critical path, and what each advice gives back
(issue 32; docs/gains.md).

``depmodel.simulate`` runs the model (in columns, ``depsim``; event by event when small, ``depevents``):
host items one after the other, each operation when it
was submitted (plus the launch latency) and its stream is free, a blocking item until the work it
waits on is done. The same run, walked back from its end, is the critical path: how much of the
iteration the host's own time decides and how much the GPU's. Each transformation (one per kind of
advice, numbers in ``replay.yaml``) edits a copy of the model; its gain is ``1 - after / before`` over
the same iterations, so the host work that stays on the path is never promised away.

Facts (``_pct`` of the replayed iterations): ``critical_path_host_pct``, ``critical_path_gpu_pct``,
``replay_model_error_pct`` (the replay against the measured time), ``replay_gain_<advice>_pct``,
``replay_gain_all_pct`` (every transformation that gains, replayed together: never a sum).
"""
from __future__ import annotations

from ..notes import Note
from . import depmodel
from .base import Context
from .depmodel import Run, simulate  # noqa: F401 - the replay's API, used by tests and benchmarks
from .transforms import (APPLIES, PARAMS, TRANSFORMS, apply, gain, comm_overlap, copies, copy_overlap,  # noqa: F401
                         cuda_graphs, data_workers, distinct, fusion, host_offload, pinned_copies, remove_syncs,
                         table_gbps, tensor_cores)
from .declare import fact, group, on_timeline


# ------------------------------------------------------------------------------ the fact group
def _slice(win) -> tuple[int, int, int, list[int]] | None:
    """A contiguous run of steady iterations in the middle of the window: (t0, t1, t_end, starts)."""
    it = win.iterations
    if win.steady_iters < 3:
        return None
    rows = it.slice(win.skipped).sort("s")
    k = min(PARAMS["slice"]["max_iterations"], rows.height - 1)
    a = (rows.height - 1 - k) // 2
    starts = rows["s"].to_list()[a:a + k + 1]
    # measured: first start to the next start after the run (completion to completion in steady state)
    return starts[0], starts[-1], starts[-1], starts[:-1]


def _fit(api, t0: int, t1: int, t_end: int, starts: list[int]) -> tuple[int, int, int, list[int]]:
    """Fewer iterations when their CUDA calls (the model's items are about twice as many) pass
    ``max_items``: counted on the API trace before the model is built, so it is built once."""
    import polars as pl

    calls = api.select(((pl.col("start_ns") >= t0) & (pl.col("start_ns") < t1)).sum()).item()
    limit = PARAMS["slice"]["max_items"]
    if 2 * calls <= limit or len(starts) <= 3:
        return t0, t1, t_end, starts
    k = min(len(starts) - 1, max(3, int(len(starts) * limit / (2 * calls))))
    return starts[0], starts[k], starts[k], starts[:k]


def _unmatched(gpu, api, t0: int, t1: int) -> str | None:
    """Why the slice's GPU operations and CUDA calls cannot be of one run, or None. Each call has its own
    correlation id and each operation one launching call, except a graph launch's nodes (they share the
    launch's id): ids repeated otherwise (a GPU trace of another or a tiled run beside this API trace)
    make a model of operations launched where they never ran. Counted on the ids alone, before any
    model is built (a model of such a slice cost a second, then failed its error check)."""
    import polars as pl

    from .names import GRAPH_LAUNCH_APIS, api_base
    from .timeline import starting_in

    if "launch_s" not in gpu.columns or "corr_id" not in api.columns:
        return None
    calls = starting_in(api, t0, t1)
    twice = calls.select(pl.col("corr_id").drop_nulls().is_duplicated().sum()).item()
    if twice:
        return Note("absent.replay_ids_twice", {"n": twice})
    ids = gpu.select(pl.col("corr_id").filter(pl.col("launch_s").is_not_null() & (pl.col("launch_s") >= t0)
                                              & (pl.col("launch_s") < t1))).to_series()
    shared = ids.filter(ids.is_duplicated()).unique()
    if not shared.len():
        return None
    by = calls.filter(pl.col("corr_id").is_in(shared.implode())).select(api_base(calls).cast(pl.String).alias("api"))
    single = by.filter(~pl.col("api").is_in(sorted(GRAPH_LAUNCH_APIS))).height
    if single:
        return Note("absent.replay_not_one_run", {"n": single})
    return None


def _absent(fs, why: Note, also: tuple[str, ...] = ()) -> None:
    """No replayed gain (and, with ``also``, no critical path either): say why."""
    for name in (*also, *(f"replay_gain_{t}_pct" for t in TRANSFORMS), "replay_gain_all_pct"):
        fs.absent[name] = why


def _gains(m, base_period: float, gpu_name: str | None):
    """Each advice's replayed gain, and ``replayed(names)``: the gain of a set of transformations replayed
    together, each set replayed once (the singles, all of them and the engine's totals often name the
    same set)."""
    # without data ranges the DataLoader advice moves the same host work as host_offload: one replay for both
    same = {} if m.items["data"].any() else {"data_workers": "host_offload"}
    raw: dict[tuple, float] = {}

    def replayed(names: tuple) -> float:
        """The gain of these transformations replayed together, each set replayed once (the singles, all
        of them, and the engine's totals below often name the same set)."""
        if names not in raw:
            raw[names] = gain(m, names, base_period, gpu_name)
        return raw[names]
    gains: dict[str, float] = {}
    for t in TRANSFORMS:
        if t != "copies":
            gains[t] = gains[same[t]] if t in same else replayed((t,)) if APPLIES[t](m) else 0.0
    gains["copies"] = max(gains["pinned_copies"], gains["copy_overlap"])   # (the better of the two: replayed above)
    return gains, replayed


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    gpu, api = prof.tables.get("gpu_trace"), prof.tables.get("api_trace")
    why = None
    if api is None or not api.height:
        why = Note("absent.replay_needs_api")
    elif not ctx.timeline_ok:
        why = Note("absent.replay_needs_gpu")
    sl = _slice(win) if why is None else None
    if why is None and sl is None:
        why = Note("absent.replay_needs_iterations")
    m = None
    if why is None:
        t0, t1, t_end, starts = _fit(api, *sl)
        why = _unmatched(gpu, api, t0, t1)
        m = depmodel.build(gpu, api, prof.tables.get("nvtx_trace"), t0, t1, t_end, starts) if why is None else None
        if m is None and why is None:
            why = Note("absent.replay_no_thread")
    if m is not None and m.other_thread_gpu_pct > PARAMS["slice"]["max_other_thread_gpu_pct"]:
        why = Note("absent.replay_other_threads", {"pct": m.other_thread_gpu_pct})
        m = None
    if m is None:
        _absent(fs, why, ("critical_path_host_pct", "critical_path_gpu_pct", "replay_model_error_pct"))
        return
    src = " + ".join(dict.fromkeys(s for s in (prof.source_name("gpu_trace"), prof.source_name("api_trace")) if s))
    base = simulate(m)
    real = m.real_comp[-1] - m.real_comp[0] if len(m.real_comp) >= 2 else 0.0
    periods = max(1, len(m.real_comp) - 1)
    err = 100.0 * (base.period - real) / real if real > 0 else None
    fs.put("replay_iterations", m.iterations, src)
    fs.put("replay_model_error_pct", err, src)
    path = base.host_ns + base.gpu_ns + base.latency_ns
    if path > 0:
        fs.put("critical_path_host_pct", 100.0 * base.host_ns / path, src)
        fs.put("critical_path_gpu_pct", 100.0 * base.gpu_ns / path, src)
        fs.put("critical_path_iter_ms", base.period / periods / 1e6, src)
    if err is None or abs(err) > PARAMS["slice"]["max_error_pct"]:
        _absent(fs, Note("absent.replay_off", {"err": err}) if err is not None else Note("absent.replay_nothing_measured"))
        return
    gpu_name = (prof.meta.get("gpus") or [{}])[0].get("name") if getattr(prof, "meta", None) else None
    gains, replayed = _gains(m, base.period, gpu_name)
    for t, g in gains.items():
        fs.put(f"replay_gain_{t}_pct", g, src)
    everything = distinct(t for t, g in gains.items() if g >= 0.5)
    fs.put("replay_gain_all_pct", replayed(everything) if everything else 0.0, src)
    memo: dict[tuple, float] = {}

    def together(names) -> float:
        """The gain of these transformations replayed together (the engine's total of the findings)."""
        key = distinct(names)
        if key not in memo:
            memo[key] = round(replayed(key), 1)
        return memo[key]
    fs.work.replay = together
    fs.tables["critical_path"] = {"host_pct": 100.0 * base.host_ns / path, "gpu_pct": 100.0 * base.gpu_ns / path,
                                  "latency_pct": 100.0 * base.latency_ns / path, "iter_ms": base.period / periods / 1e6,
                                  "measured_iter_ms": real / periods / 1e6, "iterations": periods,
                                  "gains": {t: round(g, 1) for t, g in gains.items()}, "source": src}


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("replay_iterations", "", "iterations replayed on the dependency model (a contiguous run of up to 20 in the middle of the window)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_model_error_pct", "%", "the replayed iterations' time against the measured one (completion to completion), signed: within 25 % or no replay gain is given", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("critical_path_host_pct", "%", "share of the replayed iterations' critical path that is the launching thread's own time (work between CUDA calls, the calls themselves)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("critical_path_gpu_pct", "%", "share of the replayed iterations' critical path that is GPU operations (and the gaps between queued ones)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("critical_path_iter_ms", "ms", "iteration time as replayed on the dependency model (completion to completion)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_remove_syncs_pct", "%", "replayed gain of removing the host syncs (synchronize calls, read-back copies): 1 - replayed / current iteration time", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_pinned_copies_pct", "%", "replayed gain of pinned host buffers and non_blocking copies (pageable copies at the pinned bandwidth)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_copy_overlap_pct", "%", "replayed gain of host-device copies on a side stream, double-buffered", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_copies_pct", "%", "replayed gain of the copy advice: pinned + non_blocking copies or a side stream, whichever gains more", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_cuda_graphs_pct", "%", "replayed gain of capturing each run of kernel launches in a CUDA graph", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_comm_overlap_pct", "%", "replayed gain of running the NCCL / RCCL collectives on their own stream, overlapped with compute", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_host_offload_pct", "%", "replayed gain of moving the host work segments of 100 us or more to 4 DataLoader workers", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_data_workers_pct", "%", "replayed gain of moving the host work inside NVTX data ranges (without data ranges: all host work segments of 100 us or more) to 4 DataLoader workers", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_fusion_pct", "%", "replayed gain of fusing the unfused elementwise kernels (their time cut by 0.7)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_tensor_cores_pct", "%", "replayed gain of running the SIMT GEMMs on tensor cores (their time cut by 0.85)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("replay_gain_all_pct", "%", "the largest replayed gain of the transformations applied together (never a sum)", ("gpu_trace", "api_trace", "nvtx_trace")),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("replay", compute, on_timeline, reads=("input:api_trace", "input:gpu_trace", "input:nvtx_trace"),
          puts=(FACTS, "table:critical_path", "work:replay")),
]
