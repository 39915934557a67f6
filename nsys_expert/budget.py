"""The memory budget (issue 58): how much memory one run may hold, and the watch that keeps it there.

The budget is ``--max-memory SIZE`` (``diagnose``, ``diff``), else ``NSX_MAX_MEMORY``, else half of this
machine's memory (the smaller of the physical memory and a cgroup's limit). SIZE is bytes, or a number
with ``K`` / ``M`` / ``G`` / ``T`` (powers of 1024; ``GiB`` and ``GB`` read the same), or a share of the
machine's memory (``50%``).

Readers bound what they can: gzipped CSVs stream into a private file, SQLite names come once per distinct
name, names past 64 KiB are cut (``load/sanity.py``), Nsight Compute text is capped at a share of the
budget. What nothing can bound in advance (a valid file with a hundred million rows) is caught by the
watch: a thread that reads the process's resident memory every 20 ms (``/proc/self/statm``: about 10 us
a read) and, past the budget, writes one line naming the file being read (or the command's inputs) and
the flag, removes the private temporary folders, and ends the process with exit code 2, before the
machine's OOM killer would end it without a word. It ends the process from its own thread because the
main thread may be inside Polars or SQLite, where no Python exception can reach it.

Multi-rank runs: the budget is the whole run's, the worker processes' memory included. The local process
pool and ``--scheduler dask``'s local cluster name their worker processes (:func:`add_workers`); the watch adds
their resident memory to this process's. A worker names the file it reads, and the private folders it makes,
in a small folder of this run (``NSX_BUDGET_DIR``, given to the workers through the environment); past the
budget the watch ends the workers (they are this run's own), removes their folders and says which files
they were reading, then exits 2. A remote cluster (``--scheduler tcp://...``) is another machine's memory:
the budget holds for this process only there, and each worker is bounded by its own Dask memory limit
(``dask worker --memory-limit``); a rank whose worker Dask ends is reported as a failed rank.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import threading

from .errors import InputError

ENV = "NSX_MAX_MEMORY"
FLAG = "--max-memory"
DEFAULT_SHARE = 0.5
PERIOD_S = 0.02
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(?:([kmgt]?)(?:i?b)?|(%))\s*", re.IGNORECASE)

_given: int | None = None                 # --max-memory, once parsed
_reading: dict[int, str] = {}             # thread id -> the file it reads now
_folders: set[str] = set()                # private temporary folders to remove if the watch ends the run
_workers: set[int] = set()                # this run's worker processes (multi-rank), watched with it
_lock = threading.Lock()
SHARE_ENV = "NSX_BUDGET_DIR"              # where a worker names what it reads and the folders it makes


def machine_bytes() -> int:
    """This machine's memory, or the cgroup's limit where that is smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def parse(text: str, where: str) -> int:
    """``8G`` / ``512MiB`` / ``25%`` / ``1073741824`` -> bytes; anything else is one line naming ``where``."""
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise InputError(f"'{text}' is not a memory size (e.g. 8G, 512M, 25%)", where,
                         "give bytes, a number with K, M, G or T, or a share of the machine's memory")
    value = float(m.group(1))
    n = int(machine_bytes() * value / 100) if m.group(3) else int(value * _UNITS[m.group(2).lower()])
    if n < 64 << 20:
        raise InputError(f"'{text}' is less than 64 MiB, too little to read any profile", where,
                         "give at least 64M")
    return n


def set_limit(text: str | None) -> None:
    """The budget given on the command line (``--max-memory``); also passed to worker processes."""
    global _given
    if text is None:
        return
    _given = parse(text, FLAG)


def limit() -> int:
    """The budget in bytes: the flag's, the environment's, or half of the machine's memory."""
    if _given is not None:
        return _given
    env = os.environ.get(ENV)
    if env:
        return parse(env, ENV)
    return int(machine_bytes() * DEFAULT_SHARE)


def hint() -> str:
    return f"give a larger budget with {FLAG} SIZE or {ENV}=SIZE (now {limit() >> 20:,} MiB)"


def too_big(path: str, needs: int, what: str) -> InputError:
    """The one line for an input that a reader knows ahead would need more than the budget."""
    return InputError(f"{what} needs about {needs >> 20:,} MiB of memory, more than the memory budget of "
                      f"{limit() >> 20:,} MiB; not read", path, hint())


def _shared(suffix: str) -> str | None:
    """This worker's file in the run's shared folder (None in the process that watches, or with no watch)."""
    d = os.environ.get(SHARE_ENV)
    if not d or d == _own_share or not os.path.isdir(d):
        return None
    return os.path.join(d, f"{os.getpid()}{suffix}")


def _tell(suffix: str, lines) -> None:
    f = _shared(suffix)
    if f is None:
        return
    try:
        with open(f, "w") as fh:
            fh.write("".join(f"{x}\n" for x in lines))
    except OSError:
        pass   # the message would name the command's inputs instead of this file: nothing else depends on it


@contextlib.contextmanager
def reading(path: str):
    """Name ``path`` as the file this thread reads (for the watch's message; a worker's, through the run's shared
    folder)."""
    me = threading.get_ident()
    before = _reading.get(me)
    with _lock:   # (the reader threads of one worker write one file)
        _reading[me] = path
        _tell(".reading", set(_reading.values()))
    try:
        yield
    finally:
        with _lock:
            if before is None:
                _reading.pop(me, None)
            else:
                _reading[me] = before
            _tell(".reading", set(_reading.values()))


def private_folder(folder: str) -> None:
    """A temporary folder the watch removes if it ends the run (:func:`released` when removed normally)."""
    with _lock:
        _folders.add(folder)
        _tell(".folders", _folders)


def released(folder: str) -> None:
    with _lock:
        _folders.discard(folder)
        _tell(".folders", _folders)


def add_workers(pids) -> list[int]:
    """Watch these worker processes of this run with this one (their memory counts against the budget) until
    :func:`drop_workers`; returns the pids."""
    pids = [int(p) for p in pids if p]
    with _lock:
        _workers.update(pids)
    return pids


def drop_workers(pids) -> None:
    with _lock:
        _workers.difference_update(pids)


_own_share: str | None = None             # the shared folder of the run this process watches


def _rss() -> int:
    with open("/proc/self/statm", "rb") as fh:
        return int(fh.read().split()[1]) * _PAGE


def _child_rss(pid: int) -> int | None:
    """The resident memory of ``pid`` if it is still a child of this process (a worker that has ended, or a
    process that took its pid since, is None: never counted, never ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[21]) * _PAGE if int(fields[1]) == os.getpid() else None
    except (OSError, ValueError, IndexError):
        return None


def _workers_rss() -> int:
    """The resident memory of this run's worker processes (one that has ended counts nothing)."""
    return sum(_child_rss(pid) or 0 for pid in list(_workers))


def _from_workers(suffix: str) -> list[str]:
    """What the workers wrote in the run's shared folder: the files they read, or the folders they made."""
    out: list[str] = []
    if _own_share is None:
        return out
    try:
        names = [n for n in os.listdir(_own_share) if n.endswith(suffix)]
    except OSError:
        return out
    for n in names:
        try:
            with open(os.path.join(_own_share, n)) as fh:
                out += [ln for ln in fh.read().splitlines() if ln]
        except OSError:
            continue
    return out


_PAGE = os.sysconf("SC_PAGE_SIZE")


class _Watch(threading.Thread):
    def __init__(self, most: int, inputs: list[str]):
        super().__init__(name="nsys-expert-memory-watch", daemon=True)
        self.most, self.inputs, self.stop = most, inputs, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(PERIOD_S):
            try:
                rss = _rss()
            except (OSError, ValueError, IndexError):
                return
            if _workers:
                rss += _workers_rss()
            if rss > self.most:
                self.over(rss)

    def over(self, rss: int) -> None:
        many = bool(_workers)
        for pid in list(_workers):     # this run's own worker processes, ended first: they hold the memory
            if _child_rss(pid) is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        with _lock:
            mine = set(_reading.values())
        files = sorted(mine | set(_from_workers(".reading"))) or self.inputs
        where = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        held = f"{'this run and its worker processes' if many else 'this run'} held {rss >> 20:,} MiB when stopped"
        line = (f"nsys-expert: error: {where}: needs more memory than the budget of {self.most >> 20:,} MiB "
                f"({held}); not finished (give a larger budget with {FLAG} SIZE or "
                f"{ENV}=SIZE, or fewer or smaller inputs{' (each worker holds one rank at a time)' if many else ''})")
        try:
            sys.stderr.write(" ".join(line.split()) + "\n")
            sys.stderr.flush()
        finally:
            with _lock:
                for folder in [*_folders, *_from_workers(".folders")]:
                    shutil.rmtree(folder, ignore_errors=True)
                if _own_share is not None:
                    shutil.rmtree(_own_share, ignore_errors=True)
            os._exit(2)


@contextlib.contextmanager
def watch(inputs: list[str]):
    """Keep the run within the budget while the block runs (no watch where /proc is not there). The flag's
    budget holds for this block (and the worker processes it starts, through the environment) only."""
    global _given, _own_share
    before = os.environ.get(ENV)
    share_before = os.environ.get(SHARE_ENV)
    share = None
    try:
        most = limit()
        if _given is not None:
            os.environ[ENV] = str(_given)
        w = _Watch(most, [str(p) for p in inputs]) if os.path.exists("/proc/self/statm") else None
        if w is not None:
            share = tempfile.mkdtemp(prefix="nsys-expert-budget-")   # the workers' names and folders (multi-rank)
            _own_share = share
            os.environ[SHARE_ENV] = share
            w.start()
        try:
            yield
        finally:
            if w is not None:
                w.stop.set()
                w.join(timeout=1)
    finally:
        _given = None
        _own_share = None
        if share is not None:
            shutil.rmtree(share, ignore_errors=True)
        for key, was in ((ENV, before), (SHARE_ENV, share_before)):
            if was is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = was
