"""Dispatch for inputs other than nsys stats CSV reports.

Each reader lives in its own module and returns a :class:`nsys_expert.load.Part` (or ``None`` when
the file is not its kind); a file that claims a kind but cannot be read raises ``InputError``.
"""
from __future__ import annotations

from ..errors import InputError
from . import compressed


def read(path: str, sn):
    """-> Part or None. ``sn`` is the CSV sniff of the file (kind sqlite / binary / text / ...)."""
    base = compressed.logical_name(path)       # what the file is: its name without .gz
    if sn.kind != "sqlite" and (base.lower().endswith(".json") or sn.kind == "text"):
        from . import kineto
        if kineto.looks_like(path):            # a torch.profiler (Kineto) Chrome trace
            return kineto.read_kineto(path)
    if sn.kind == "sqlite":
        try:
            from . import sqlite
        except ImportError:  # pragma: no cover - module not built yet
            raise InputError("SQLite exports are not supported by this build", path,
                             "export CSV reports with nsys stats --format csv") from None
        # a .sqlite.gz is decompressed into a private temp folder, read, and removed
        with compressed.local_copy(path) as local, compressed.errors_named(local, path):
            return compressed.renamed(sqlite.read_sqlite(local), local, path)
    if base.endswith((".nsys-rep", ".qdrep")):
        if compressed.is_gzip(path):
            raise InputError("a compressed nsys report cannot be read (nsys opens .nsys-rep files only "
                             "uncompressed)", path, f"gunzip it first, or export it: nsys export --type sqlite "
                             f"{base}")
        try:
            from . import nsysrep
        except ImportError:  # pragma: no cover
            raise InputError(".nsys-rep files are not supported by this build", path,
                             "export with: nsys export --type sqlite or nsys stats --format csv") from None
        return nsysrep.read_nsys_rep(path)
    if sn.kind == "text":
        try:
            from . import ncu
            if ncu.looks_like(path):
                return ncu.read_ncu(path)
        except ImportError:
            pass
        try:
            from . import console
            return console.read_console(path)
        except ImportError:
            return None
    return None
