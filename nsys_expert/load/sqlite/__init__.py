"""An nsys SQLite export (``nsys export --type sqlite``), one concept in one package (issue 59, item 5).

- ``export.py``: ``read_sqlite`` opens an export and orchestrates its reads into the canonical frames;
- ``opening.py``: opening it safely (read-only and immutable, a journal applied in a private copy, views
  left out, every query under a time limit);
- ``reading.py``: the connections, Arrow reads through ADBC, the big tables in pieces on reader threads;
- ``tables.py``: each table as a canonical frame (GPU operations, CUDA API calls, NVTX ranges and their
  nesting, OS runtime calls) and the summaries derived from them.

This file is the package's public surface: the rest of nsys-expert imports from here, never a module
inside (``tests/test_layers.py`` refuses a private name imported across modules).
"""
from __future__ import annotations

from .export import EXPORT_HINT, UNNAMED, read_sqlite
from .tables import NVTX_PUSHPOP, OSRT_SLEEPS, OSRT_WAITS, levels, size_summary, summary

__all__ = ["EXPORT_HINT", "UNNAMED", "read_sqlite", "NVTX_PUSHPOP", "OSRT_SLEEPS", "OSRT_WAITS", "levels", "size_summary",
           "summary"]
