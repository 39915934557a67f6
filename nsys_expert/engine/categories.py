"""The categories a rule may name, as the packs declare them (pack.yaml ``categories:``: title by language,
level, side; checked by ``relations.pack_categories``): every loaded pack's (``categories_of``), or the
built-in pack's (``builtin_categories``) for a rule set made without packs."""
from __future__ import annotations

import functools

from .model import Category
from .rules import Pack, builtin_meta


@functools.lru_cache(maxsize=1)
def builtin_categories_raw() -> dict:
    """The built-in pack's categories as its pack.yaml declares them (read once)."""
    return builtin_meta()[2]


def builtin_categories() -> dict:
    """The built-in pack's categories (name -> ``Category``): what a rule set made without packs reads."""
    return categories_of([], builtin_categories_raw())


def categories_of(packs: list[Pack], fallback: dict | None = None) -> dict:
    """Every category the packs declare, name -> ``Category`` (the first pack that declares one wins; then
    ``fallback``'s, the raw ``{title, level, side}`` of a pack.yaml)."""
    raw: dict = {}
    for p in packs:
        for k, v in p.categories.items():
            raw.setdefault(k, v)
    for k, v in (fallback or {}).items():
        raw.setdefault(k, v)
    return {k: Category(k, dict(v["title"]), v["level"], v.get("side")) for k, v in raw.items()}
