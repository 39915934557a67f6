"""A private folder for what nsys-expert derives and keeps between runs (validated rule packs,
compiled report templates).

What lies there is loaded as code (pickle, Python bytecode), so the folder must be the user's own:
``$TMPDIR/nsys-expert-cache-<uid>``, made with mode 0700 and used only while this user owns it and
nobody else can write into it. ``NSX_NO_CACHE=1`` turns it off; without a usable folder every run
simply validates and compiles again.
"""
from __future__ import annotations

import os
import tempfile


def folder(*sub: str) -> str | None:
    """The cache folder (``sub``: a subfolder), made if needed; None when there is none to use."""
    if os.environ.get("NSX_NO_CACHE"):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else None
    base = os.path.join(tempfile.gettempdir(), "nsys-expert-cache" + (f"-{uid}" if uid is not None else ""))
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        st = os.stat(base)
        if uid is not None and (st.st_uid != uid or st.st_mode & 0o022):   # not ours alone: not trusted
            return None
        path = os.path.join(base, *sub)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path if os.access(path, os.W_OK) else None
    except OSError:
        return None
