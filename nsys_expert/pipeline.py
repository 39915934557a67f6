"""load -> facts -> engine -> report, as one call (the CLI and the tests use it)."""
from __future__ import annotations

from dataclasses import dataclass, field

from . import engine, facts, load, report


@dataclass
class Request:
    paths: list[str]
    packs: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    window: tuple[int, int] | None = None
    skip_iterations: int | None = None
    lang: str | None = "en"


def diagnose(req: Request) -> dict:
    req.lang = req.lang or "en"
    packs = engine.load_packs(req.packs)           # rule errors first: they are cheap to find
    rules = engine.select_rules(packs, req.select, req.ignore)
    overrides = engine.parse_overrides(req.overrides, [r for p in packs for r in p.rules])
    prof = load.load_paths(req.paths)
    fs = facts.compute(prof, facts.Options(user_window=req.window, skip_iterations=req.skip_iterations))
    ev = engine.evaluate(rules, fs, set(prof.tables), overrides, req.lang)
    return report.build(prof, fs, ev, req.lang)
