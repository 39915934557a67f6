"""Where the words of a language other than English live: gettext catalogs, one folder per language,
``<dir>/<lang>/LC_MESSAGES/<domain>.mo`` (compiled from the ``.po`` beside it).

The folders searched, first match wins: those in ``NSX_LOCALE_PATH`` (``os.pathsep``-separated; a
language of one's own, or a catalog being written, without touching the package), then the package's
``nsys_expert/locale``. A language is its catalog files: nothing in Python names one (docs/architecture.md,
"A new language").

Domains: ``nsys_expert`` (the notes' templates and the run-time sentences), ``labels`` (the report's
headings, column names and joining words, each with its key as message context), ``facts`` (the facts'
descriptions, message context the fact's name), ``rules`` (the rules' words where a rule file has none of
its own in that language, message id the English text).
"""
from __future__ import annotations

import functools
import gettext
import os

PACKAGE_LOCALE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale")


def locale_dirs() -> list[str]:
    extra = [p for p in os.environ.get("NSX_LOCALE_PATH", "").split(os.pathsep) if p]
    return extra + [PACKAGE_LOCALE]


@functools.lru_cache(maxsize=None)
def _load(domain: str, lang: str, dirs: tuple[str, ...]) -> dict:
    for d in dirs:
        try:
            t = gettext.translation(domain, d, languages=[lang])
        except OSError:
            continue
        return {k: v for k, v in t._catalog.items() if isinstance(k, str) and k and v}   # noqa: SLF001
    return {}


def catalog(domain: str, lang: str | None) -> dict[str, str]:
    """Message id (``context\\x04id`` where the entry has a context) -> translation, of ``domain`` in
    ``lang``; empty for English and for a language without that catalog."""
    if not lang or lang == "en":
        return {}
    return _load(domain, lang, tuple(locale_dirs()))


def languages() -> list[str]:
    """Every language some folder has a catalog of, English first."""
    found = {"en"}
    for d in locale_dirs():
        if os.path.isdir(d):
            found |= {x for x in os.listdir(d) if os.path.isdir(os.path.join(d, x, "LC_MESSAGES"))}
    return ["en"] + sorted(found - {"en"})


RULES = "rules"


def rule_text(d: dict | None, lang: str | None):
    """A rule's words (``{en: ..., zh: ...}`` in its file: a title, a message, a because) in ``lang``: the
    file's own, else the ``rules`` catalog's translation of the English, else the English."""
    if not d:
        return None
    own = d.get(lang) if lang else None
    if own:
        return own
    en = d.get("en")
    return catalog(RULES, lang).get(en, en) if isinstance(en, str) else en


def rule_texts(d: dict | None, lang: str | None) -> list:
    """A rule's list of words (its advice) in ``lang``, item by item as :func:`rule_text`."""
    if not d:
        return []
    own = d.get(lang) if lang else None
    if own:
        return own
    cat = catalog(RULES, lang)
    return [cat.get(x, x) if isinstance(x, str) else x for x in d.get("en") or []]
