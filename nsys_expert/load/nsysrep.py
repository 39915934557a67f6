"""Read a ``.nsys-rep`` (or the older ``.qdrep``) report through ``nsys export --type sqlite``.

The report format is private to Nsight Systems; only ``nsys`` reads it. When ``nsys`` is on PATH
the report is exported to SQLite in a folder of our own (a fresh temporary folder, removed after
reading, or the ``NSX_CACHE`` folder when set, where the export is kept and reused while the report's
path, size and the hashes of its head and tail are the same: never by mtime, which a replaced report
can keep older) and read with :mod:`.sqlite`. Nothing is ever written beside the user's
file. Without ``nsys`` the error names the commands to run on a machine that has it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile

from ..notes import renamed
from ..cache import content_id
from ..errors import InputError
from .profile import Part
from .sqlite import read_sqlite

CACHE_ENV = "NSX_CACHE"


def read_nsys_rep(path: str, cache_dir: str | None = None) -> Part:
    """-> Part (kind ``nsys-sqlite``, path = the report). Raises InputError without nsys or when it fails."""
    exe = shutil.which("nsys")
    if exe is None:
        raise InputError("reading a .nsys-rep needs Nsight Systems' nsys, which is not on PATH", path,
                         "on a machine with nsys, run: nsys export --type sqlite -o prof prof.nsys-rep and diagnose "
                         "prof.sqlite, or: nsys stats --format csv --output prof --report cuda_gpu_trace,cuda_api_trace,"
                         "cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,"
                         "nvtx_pushpop_trace,osrt_sum prof.nsys-rep and diagnose the folder of CSVs")
    cache_dir = cache_dir or os.environ.get(CACHE_ENV) or None
    stem = os.path.splitext(os.path.basename(path))[0]
    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
        # one export per report and content (same name in two folders, a report replaced in place)
        try:
            ident = content_id(path)
        except OSError as e:
            raise InputError(f"cannot read the report ({e.strerror})", path) from None
        key = hashlib.sha1(f"{os.path.abspath(path)}\0{ident}".encode()).hexdigest()[:16]
        out = os.path.join(cache_dir, f"{stem}-{key}.sqlite")
        if not (os.path.isfile(out) and os.path.getsize(out) > 0):
            part = os.path.join(cache_dir, f"{stem}-{key}.part{os.getpid()}.sqlite")
            try:                               # written whole, then renamed: a killed export is never reused
                _export(exe, path, part)
                os.replace(part, out)
            finally:
                if os.path.exists(part):
                    os.unlink(part)
        return _as_report(read_sqlite(out), path)
    tmp = tempfile.mkdtemp(prefix="nsys-expert-")
    try:
        out = os.path.join(tmp, stem + ".sqlite")
        _export(exe, path, out)
        return _as_report(read_sqlite(out), path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _export(exe: str, path: str, out: str) -> None:
    cmd = [exe, "export", "--type", "sqlite", "--output", out, "--force-overwrite=true", path]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    except OSError as e:
        raise InputError(f"cannot run nsys ({e.strerror})", path) from None
    if r.returncode != 0 or not os.path.exists(out):
        raise InputError(f"nsys export failed (exit {r.returncode}): {_one_line(r.stderr or r.stdout)}", path,
                         "check that the report opens with this nsys version: nsys export --type sqlite -o prof "
                         + os.path.basename(path))


def _one_line(text: str) -> str:
    """The line of nsys' output that says what went wrong (the last error line, else the last line)."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return "no message"
    errors = [ln for ln in lines if "error" in ln.lower() or "fail" in ln.lower()]
    return (errors or lines)[-1][:200]


def _as_report(part: Part, path: str) -> Part:
    """The frames come from the export; the input the user gave (and the report lists) is the report."""
    part.warnings = [renamed(w, os.path.basename(part.path), os.path.basename(path)) for w in part.warnings]
    part.path = path
    part.report = None
    return part
