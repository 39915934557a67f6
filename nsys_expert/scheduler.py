"""Where the per-rank units of work run, and how their results come back.

``--scheduler`` (or ``scheduler`` in ``[tool.nsys-expert]``) picks the place:

- ``local`` (the default): a local process pool (``spawn``, one worker per core; ``Request.jobs``
  sets the count), or in this process for one or two ranks;
- ``dask``: a ``dask.distributed`` ``LocalCluster`` started for this run, worker *processes* bound to
  127.0.0.1 (no other network, no dashboard), closed when the run ends;
- ``tcp://HOST:PORT``: an existing Dask cluster's scheduler; its workers must have nsys-expert
  installed and must read the rank files at the same paths (a shared file system).

Dask is an optional extra (``pip install "nsys-expert[dask]"``): without it, the Dask schedulers are
one line on stderr and exit 2.

Every rank is one task, :func:`nsys_expert.units.rank_unit`. :func:`run_units` yields
``(index, result)`` as each rank finishes (not in rank order), so the caller keeps only the small
per-rank results; a rank that fails yields its exception instead, and the others carry on.
"""
from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import re
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Iterator

from .errors import InputError

LOCAL = "local"
DASK = "dask"
CHOICES = "local, dask or tcp://HOST:PORT"
_ADDRESS = re.compile(r"tcp://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
MISSING_EXTRA = 'pip install "nsys-expert[dask]"'


def check(spec: str | None) -> str:
    """The scheduler a setting names (``local``, ``dask`` or a ``tcp://HOST:PORT`` address)."""
    if spec is None or str(spec).strip() in ("", LOCAL):
        return LOCAL
    s = str(spec).strip()
    if s == DASK or _ADDRESS.fullmatch(s):
        return s
    raise InputError(f"unknown scheduler '{s}'", hint=f"use {CHOICES}")


def workers_for(n_ranks: int, jobs: int | None) -> int:
    """Worker processes for ``n_ranks`` ranks: ``jobs`` when given, else one per core (one worker, in
    this process, for one or two ranks, where starting processes costs more than it wins)."""
    if jobs is not None:
        return max(1, jobs)
    return min(n_ranks, os.cpu_count() or 1) if n_ranks > 2 else 1


def run_units(ranks, opts, scheduler: str = LOCAL, jobs: int | None = None) -> Iterator[tuple[int, object]]:
    """Run :func:`~nsys_expert.units.rank_unit` for every rank; yield ``(index, RankResult or the
    exception it raised)`` as each finishes. Consume it to the end: the pool or cluster closes then."""
    scheduler = check(scheduler)
    if scheduler == LOCAL:
        yield from _local(ranks, opts, jobs)
    else:
        yield from _dask(ranks, opts, scheduler, jobs)


def _local(ranks, opts, jobs):
    from .units import rank_unit

    workers = workers_for(len(ranks), jobs)
    if workers <= 1:
        for i, r in enumerate(ranks):
            try:
                yield i, rank_unit(r.label, r.files, r.pid, opts)
            except Exception as e:  # noqa: BLE001 - a broken rank is reported, the others carry on
                yield i, e
        return
    calls = [(r.label, r.files, r.pid, opts) for r in ranks]
    yield from pooled(rank_unit, calls, workers)


def _quiet_worker() -> None:
    """A worker ignores Ctrl-C: the terminal sends SIGINT to the whole process group, and the parent
    alone says "interrupted" (issue 48, item 4: each worker printed its own traceback, 30-100 lines)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _quiet_tracker():
    """multiprocessing's resource tracker starts with a pool or a local cluster; if the memory watch ends the run
    (budget.py), the tracker still removes their semaphores, and says nothing: the run's one line stays one."""
    quiet = "ignore::UserWarning:multiprocessing.resource_tracker"
    before = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = f"{before},{quiet}" if before else quiet
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = before


def pooled(fn, calls: list[tuple], workers: int) -> Iterator[tuple[int, object]]:
    """``fn(*call)`` for each call on a ``spawn`` process pool (Polars' thread pools do not survive a
    fork); ``(index, result or exception)`` as each finishes. Interrupted (Ctrl-C, or the consumer
    stops), the workers are ended at once and nothing is waited for."""
    from . import budget

    with _quiet_tracker():
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_quiet_worker)
    done = False
    pids: list[int] = []
    try:
        futs = {pool.submit(fn, *c): i for i, c in enumerate(calls)}
        # the workers' memory counts against the run's budget with this process's (the pool has started them all)
        pids = budget.add_workers(p.pid for p in (getattr(pool, "_processes", None) or {}).values())
        for f in as_completed(futs):
            i = futs.pop(f)
            try:
                yield i, f.result()
            except Exception as e:  # noqa: BLE001 - a broken rank is reported, the others carry on
                yield i, e
        done = True
    finally:
        budget.drop_workers(pids)
        if done:
            pool.shutdown(wait=True)
        else:
            procs = list((getattr(pool, "_processes", None) or {}).values())
            for p in procs:          # ignoring SIGINT, they would finish their rank first
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(timeout=5)
            # then the pool's own thread sees them gone and ends: joined here, not at interpreter exit
            # (where it wrote to a closed pipe: "Exception ignored in ... Bad file descriptor")
            pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _children_ignore_sigint():
    """While the local Dask cluster starts its worker processes, SIGINT is ignored here, so they start
    with it ignored (a spawned Python keeps an ignored SIGINT ignored): Ctrl-C at a terminal, sent to the
    whole process group, then reaches this process alone, which says "interrupted" once instead of a
    traceback from each worker (issue 48, item 4). Outside the main thread nothing is changed."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _client(scheduler: str, workers: int):
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise InputError(f"--scheduler {scheduler} needs Dask, an optional extra that is not installed",
                         hint=MISSING_EXTRA) from e
    if scheduler == DASK:
        with _children_ignore_sigint(), _quiet_tracker():
            cluster = LocalCluster(**local_cluster_options(workers))
        try:
            client = Client(cluster)
            # a Dask worker installs its own Ctrl-C handling: each ignores SIGINT from now on (the
            # function runs on the worker's main thread), so the terminal's Ctrl-C, sent to the whole
            # process group, reaches this process alone
            client.run(_quiet_worker)
            return client, cluster
        except Exception:
            cluster.close()
            raise
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise InputError(f"cannot reach the Dask scheduler ({e})", scheduler,
                         hint="start one with `dask scheduler` and workers with `dask worker ADDRESS`, "
                              "or use --scheduler dask for a cluster on this machine") from e
    try:
        check_workers(client, scheduler)
    except BaseException:
        client.close()
        raise
    return client, None


def check_workers(client, where: str) -> None:
    """Every worker of an existing cluster has this nsys-expert (a worker that cannot unpickle the
    task does not fail it: it stalls the run). A cluster without workers is said so too."""
    from importlib.metadata import version

    versions = client.run(version, "nsys-expert", on_error="return")
    if not versions:
        raise InputError("the Dask cluster has no workers", where, hint="start some with `dask worker ADDRESS`")
    mine = version("nsys-expert")
    bad = {w: v for w, v in versions.items() if v != mine}
    if bad:
        w, v = next(iter(sorted(bad.items())))
        said = f"has nsys-expert {v}" if isinstance(v, str) else "has no nsys-expert"
        raise InputError(f"{len(bad)} of {len(versions)} Dask workers cannot run the per-rank work ({w} {said})",
                         where, hint=f"pip install nsys-expert=={mine} on every worker")


def local_cluster_options(workers: int) -> dict:
    """The ``LocalCluster`` of ``--scheduler dask``: worker *processes* (the facts' Python holds the
    GIL), one thread each, everything bound to the loopback interface (the scheduler, the workers,
    their nannies and the HTTP endpoints Dask always starts, on free ports): nothing listens on another
    network; no dashboard; the cluster's own logging silenced (a failed rank is reported, not logged)."""
    return dict(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                silence_logs=logging.CRITICAL)


def _dask(ranks, opts, scheduler, jobs):
    from . import budget
    from .units import rank_unit

    # a local cluster: ``jobs`` workers, else one per core (at most one per rank)
    client, cluster = _client(scheduler, max(1, jobs or min(len(ranks), os.cpu_count() or 1)))
    # a local cluster's worker processes are this machine's: their memory counts against the run's budget (a
    # remote cluster's workers are bounded by their own Dask memory limit: budget.py)
    pids: list[int] = []
    try:
        pids = budget.add_workers(client.run(os.getpid).values() if cluster is not None else ())
        from distributed import as_completed as dask_completed

        # another machine's worker has another working directory: it gets the absolute paths
        where = (lambda fs: fs) if cluster is not None else (lambda fs: [os.path.abspath(f) for f in fs])
        run = uuid.uuid4().hex[:12]       # this run's tasks, among other clients' on a shared cluster
        futs = {}
        for i, r in enumerate(ranks):
            # one task per rank; pure=False: two runs over the same files are two runs
            futs[client.submit(rank_unit, r.label, where(r.files), r.pid, opts, pure=False,
                               key=f"nsys-expert-{run}-rank{i}")] = i
        for f in dask_completed(list(futs)):
            i = futs.pop(f)
            try:
                res = f.result()
            except Exception as e:  # noqa: BLE001 - the worker's exception, raised here
                res = e
            f.release()               # the result lives on here only: the worker lets it go
            yield i, res
    finally:
        budget.drop_workers(pids)
        client.close()
        if cluster is not None:
            cluster.close()
