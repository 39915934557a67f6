"""Dispatch for inputs other than nsys stats CSV reports.

Each reader lives in its own module and returns a :class:`nsys_expert.load.Part` (or ``None`` when
the file is not its kind); a file that claims a kind but cannot be read raises ``InputError``.
"""
from __future__ import annotations

import os

from ..errors import InputError


def read(path: str, sn):
    """-> Part or None. ``sn`` is the CSV sniff of the file (kind sqlite / binary / text / ...)."""
    base = os.path.basename(path)
    if sn.kind == "sqlite":
        try:
            from . import sqlite
        except ImportError:  # pragma: no cover - module not built yet
            raise InputError("SQLite exports are not supported by this build", path,
                             "export CSV reports with nsys stats --format csv") from None
        return sqlite.read_sqlite(path)
    if base.endswith((".nsys-rep", ".qdrep")):
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
