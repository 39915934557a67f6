"""The records the readers fill: ``Profile`` (everything read from one run) and ``Part`` (what one non-CSV
input contributes). Their own module, below every reader: a reader imports them from here, never from the
package that imports the readers."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import polars as pl


@dataclass
class Profile:
    """Everything read from one profiled run."""
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)      # table -> file it came from
    inputs: list[dict] = field(default_factory=list)           # JSON contract "inputs"
    warnings: list = field(default_factory=list)     # notes.Note: what load has to say
    meta: dict = field(default_factory=dict)                   # nsys version, GPU names, ...

    def has(self, table: str) -> bool:
        return table in self.tables

    def source_name(self, table: str) -> str | None:
        p = self.sources.get(table)
        return os.path.basename(p) if p else None


@dataclass
class Part:
    """What one non-CSV input contributes: canonical frames (not yet normalized) and what it is.

    ``kind`` is the JSON contract's input kind (nsys-sqlite, nsys-console, ncu-details, ncu-raw);
    ``tables`` maps canonical table names (schema.REQUIRED) to frames with canonical columns.
    """
    kind: str
    path: str
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    version: str | None = None
    report: str | None = None
    warnings: list = field(default_factory=list)     # notes.Note: what load has to say
    meta: dict = field(default_factory=dict)
