"""Registers the subcommands that live in their own modules (rule packs, profiling commands)."""
from __future__ import annotations

import importlib


def register(main) -> None:
    for mod in ("cli_rules", "cli_profiling", "cli_diff"):
        try:
            m = importlib.import_module(f"nsys_expert.{mod}")
        except ModuleNotFoundError as e:
            if e.name == f"nsys_expert.{mod}":
                continue
            raise
        m.register(main)
