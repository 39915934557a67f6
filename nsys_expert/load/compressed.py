"""Gzipped inputs: ``x.csv.gz``, ``x.sqlite.gz``, ``x.txt.gz`` / ``.log.gz`` / ``.md.gz``, ncu CSVs.

A file is gzip when its name ends in ``.gz`` or its first bytes are the gzip magic (``1f 8b``).
Everything is read without writing beside the input (its folder may be read-only, and it is the
user's): text and CSV are decompressed in memory; an SQLite export, which SQLite must open as a
file, is decompressed into a private temporary folder (mode 0700) removed as soon as it is read.
What a file *is* (which report, which kind) comes from its name without ``.gz``.
Bad gzip data is one :class:`InputError` naming the file, and so is a gzip bomb: the content may grow
to ``NSX_GZ_MAX_RATIO`` (100) times the compressed size (at least 64 MiB) and never past
``NSX_GZ_MAX_BYTES`` (16 GiB); the real inputs seen compress 3x (SQLite) to 50x (Kineto JSON).
"""
from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
import zlib

from .. import notes
from .. import budget
from ..errors import InputError
from ..safe_open import open_regular

MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
RATIO_FLOOR = 64 << 20


def _limit(raw, most: int | None = None) -> int:
    """The most bytes the gzip ``raw`` (an open file) may expand to (``most``: the caller's own cap)."""
    ratio = float(os.environ.get("NSX_GZ_MAX_RATIO") or 100)
    cap = int(float(os.environ.get("NSX_GZ_MAX_BYTES") or (16 << 30)))
    return min(cap, most or cap, max(RATIO_FLOOR, int(ratio * os.fstat(raw.fileno()).st_size)))


_CSV_HINT = "split it, or export the reports as CSV files (nsys stats --format csv)"


def _too_big(path: str, most: int, what: str, hint: str | None = None) -> InputError:
    return InputError(f"larger than {most / (1 << 20):,.0f} MiB, the most read as {what}; not read", path,
                      hint or _CSV_HINT)


def _bomb(path: str, limit: int) -> InputError:
    return InputError(f"the gzip content grows past {limit / (1 << 20):,.0f} MiB (a compression ratio or size no "
                      "profile export has; a gzip bomb?); not read", path,
                      "decompress it yourself if it is genuine, or raise NSX_GZ_MAX_RATIO / NSX_GZ_MAX_BYTES")


def _pieces(path: str, raw, size: int, most: int | None = None, what: str = "", hint: str | None = None):
    """The decompressed content of the open gzip file ``raw`` in pieces of ``size``, capped (:func:`_limit`)."""
    limit, seen = _limit(raw, most), 0
    try:
        with gzip.GzipFile(fileobj=raw) as gz:
            while piece := gz.read(min(size, limit + 1 - seen)):
                seen += len(piece)
                if seen > limit:
                    raise _too_big(path, limit, what, hint) if most and limit == most else _bomb(path, limit)
                yield piece
    except (OSError, EOFError, zlib.error) as e:
        raise _bad(path, e) from None


def logical_name(path: str) -> str:
    """``/d/prof_cuda_api_sum.csv.gz`` -> ``prof_cuda_api_sum.csv`` (the name that says what it is)."""
    base = os.path.basename(path)
    return base[:-3] if base.lower().endswith(".gz") else base


def logical_path(path: str) -> str:
    """The path without its ``.gz`` (for the extension tests: ``.sqlite``, ``.csv``, ``.nsys-rep``)."""
    return path[:-3] if path.lower().endswith(".gz") else path


def is_gzip(path: str) -> bool:
    if path.lower().endswith(".gz"):
        return True
    try:
        with open_regular(path) as fh:
            return fh.read(2) == MAGIC
    except OSError:
        return False


def _bad(path: str, e: Exception) -> InputError:
    what = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
    return InputError(f"not valid gzip data ({what})", path,
                      "check it with gzip -t, or pass the file uncompressed")


def _open(path: str):
    try:
        return open_regular(path)   # a FIFO / device put in place after the listing is refused, not read
    except OSError as e:
        raise InputError(f"cannot read file ({e.strerror})", path) from e


@contextlib.contextmanager
def _read_errors(path: str):
    """A read that fails (EIO from ``x.sqlite -> /proc/self/mem``, a file removed meanwhile) is one line."""
    try:
        yield
    except OSError as e:
        raise InputError(f"cannot read it ({e.strerror or e})", path) from None


def head(path: str, size: int) -> bytes:
    """The first ``size`` bytes of the (decompressed) content."""
    with _read_errors(path):
        with _open(path) as raw:
            if raw.read(2) != MAGIC:
                if path.lower().endswith(".gz"):
                    raise _bad(path, ValueError("no gzip header: the file is not compressed"))
                raw.seek(0)
                return raw.read(size)
            raw.seek(0)
            try:
                with gzip.GzipFile(fileobj=raw) as gz:
                    return gz.read(size)
            except (OSError, EOFError, zlib.error) as e:
                raise _bad(path, e) from None


def read_all(path: str, most: int | None = None, what: str = "", hint: str | None = None) -> bytes:
    """The whole (decompressed) content; ``most``: refused (one line naming ``what``) past that many bytes."""
    with _read_errors(path):
        if not is_gzip(path):
            with _open(path) as fh:
                if most and os.fstat(fh.fileno()).st_size > most:
                    raise _too_big(path, most, what, hint)
                return fh.read()
        with _open(path) as raw:
            if raw.read(2) != MAGIC:
                raise _bad(path, ValueError("no gzip header: the file is not compressed"))
            raw.seek(0)
            return b"".join(_pieces(path, raw, 16 << 20, most, what, hint))


def blocks(path: str, size: int = 4 << 20):
    """The (decompressed) content in pieces of about ``size`` bytes, never all of it at once."""
    with _read_errors(path):
        gz = is_gzip(path)
        with _open(path) as raw:
            if not gz:
                while piece := raw.read(size):
                    yield piece
                return
            if raw.read(2) != MAGIC:
                raise _bad(path, ValueError("no gzip header: the file is not compressed"))
            raw.seek(0)
            yield from _pieces(path, raw, size)


@contextlib.contextmanager
def local_copy(path: str):
    """Yield a path SQLite can open: the file itself, or its decompressed copy in a private
    temporary folder (0700, removed on exit, whatever happens)."""
    if not is_gzip(path):
        yield path
        return
    folder = tempfile.mkdtemp(prefix="nsys-expert-gz-")     # mkdtemp: mode 0700, owner only
    budget.private_folder(folder)   # removed by the memory watch too, if it ends the run
    try:
        out = os.path.join(folder, logical_name(path))
        with _open(path) as raw, open(out, "wb") as dst:
            for piece in _pieces(path, raw, _CHUNK):
                dst.write(piece)
        os.chmod(out, 0o400)
        yield out
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        budget.released(folder)


def renamed(part, temp: str, path: str):
    """A Part read from ``temp`` (the decompressed copy) made to name the real input ``path``."""
    if temp == path:
        return part
    part.path = path
    tb, pb = os.path.basename(temp), os.path.basename(path)
    part.warnings = [notes.renamed(notes.renamed(w, temp, path), tb, pb) for w in part.warnings]
    return part


@contextlib.contextmanager
def errors_named(temp: str, path: str):
    """An InputError raised while reading ``temp`` names ``path`` instead."""
    try:
        yield
    except InputError as e:
        if temp == path or (e.path != temp and temp not in (e.message or "")):
            raise
        raise InputError(e.message.replace(temp, path), path, e.hint) from None
