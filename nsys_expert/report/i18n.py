"""The words the program writes at run time, in the report's language, from gettext message catalogs.

Every sentence a layer below the report hands up is a ``notes.Note`` (a code, its fields): :func:`say` puts
one into words, the code's English template (``notes/codes.py``) or its translation (the catalog entry whose
message id is that template), each field in the same language (a field that is a Note said by its own
template; numbers formatted by the template's own format specs). Nothing is translated back from English:
the catalog holds no patterns. A plain text (a playbook sentence without a value, the CLI's own few) is
its own message id, looked up whole (or clause by clause, clauses separated by ``; ``).

The catalog is ``nsys_expert/locale/<lang>/LC_MESSAGES/nsys_expert.po`` (edited by hand, Babel's PO
format); the compiled ``.mo`` beside it is built from it by ``python -m nsys_expert.report.i18n``
(Babel) and shipped, so a fresh clone needs no build step (``tests/report/test_i18n.py`` fails when the two
differ, and when a Chinese report of any fixture keeps an English sentence).
"""
from __future__ import annotations

import functools
import os
import re

from .. import notes
from ..notes import catalogs

DOMAIN = "nsys_expert"
LOCALE_DIR = catalogs.PACKAGE_LOCALE


def _catalog(lang: str) -> dict[str, str]:
    """The message ids of ``lang``'s catalog (no context) -> their translations."""
    return _compiled(lang, tuple(catalogs.locale_dirs()))


@functools.lru_cache(maxsize=None)
def _compiled(lang: str, dirs: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in catalogs.catalog(DOMAIN, lang).items() if "\x04" not in k}


def _one(text: str, lang: str) -> str | None:
    return _catalog(lang).get(text.strip())


_CJK = "\u3400-\u9fff\uff08\uff09\uff0c\uff1a\uff1b\u3001\u3002"   # Chinese characters and full-width punctuation


def _fill(template: str, values: dict[str, str]) -> str:
    """``template`` with its fields filled; the space a Chinese template keeps between its words and a
    field (``需要 {inputs}``: right before a report name) is dropped where the field's own text
    starts (or ends) with a Chinese character (``需要主要 kernel 的…``, not ``需要 主要 kernel 的…``)."""
    for k, v in values.items():
        if not isinstance(v, str):      # a number (a note's field, formatted by its template)
            continue
        if v[:1] and re.match(f"[{_CJK}]", v[0]):
            template = re.sub(f"(?<=[{_CJK}]) \\{{{k}\\}}", "{" + k + "}", template)
        if v[-1:] and re.match(f"[{_CJK}]", v[-1]):
            template = re.sub(f"\\{{{k}\\}} (?=[{_CJK}])", "{" + k + "}", template)
    return template.format(**values)


def _templates(lang: str) -> dict[str, str]:
    """Every message id of ``lang``'s catalog -> its translation (a note's English template -> its own)."""
    return catalogs.catalog(DOMAIN, lang)


def language(lang: str | None) -> notes.Language:
    """How ``lang`` says the notes: its templates from the message catalog, its joining words."""
    if not lang or lang == "en":
        return notes.ENGLISH
    return _language(lang, tuple(catalogs.locale_dirs()))


@functools.lru_cache(maxsize=None)
def _language(lang: str, dirs: tuple[str, ...]) -> notes.Language:
    """The joining words are the ``join`` entries of the labels catalog; a language written with full-width
    punctuation (its ``report.brackets`` label) joins alternatives with no space beside its own characters."""
    from .labels import JOIN, LABELS, words

    joins = words("join", JOIN, lang)
    cjk = words("report", LABELS["en"], lang)["brackets"] == "full-width"
    either = joins["either"].strip()
    return notes.Language(template=_templates(lang).get, fill=_fill, **joins,
                          join_either=(lambda items: _either_cjk(items, either)) if cjk else None)


def say(x, lang: str | None) -> str:
    """A note (``notes.Note``) in ``lang``: its code's template in that language, its fields filled in
    that language; a plain text (made outside the notes: the pipeline's, the CLI's) as ``translate`` says it."""
    if isinstance(x, notes.Note):
        return notes.render(x, language(lang))
    return translate(x, lang)


def _either_cjk(items: list[str], word: str) -> str:
    """Alternatives in Chinese: 或 takes a space only beside a Latin word (报告或带时间戳的…, 区间或 cuda_…)."""
    out = items[0] if items else ""
    for item in items[1:]:
        left = "" if re.match(f"[{_CJK}]", out[-1:] or "x") else " "
        right = "" if re.match(f"[{_CJK}]", item[:1] or "x") else " "
        out += f"{left}{word}{right}{item}"
    return out


def translate(text, lang: str | None) -> str:
    """``text`` in ``lang`` (as it is for English, or where the catalog has no entry); a note as :func:`say`
    says it."""
    if isinstance(text, notes.Note):
        return notes.render(text, language(lang))
    if not lang or lang == "en" or not isinstance(text, str) or not text:
        return text
    whole = _one(text, lang)
    if whole is not None:
        return whole
    parts = text.split("; ")
    if len(parts) == 1:
        return text
    return language(lang).clauses.join(_one(p, lang) or p for p in parts)


def untranslated(text, lang: str) -> list[str]:
    """The clauses of ``text`` the catalog does not translate (for the completeness test); of a note, the
    English templates (its own, its fields' notes') the catalog has no translation of."""
    if isinstance(text, notes.Note):
        have = _templates(lang)
        return [t for t in dict.fromkeys(notes.template(notes.CODES[n.code], n.words) for n in notes.parts(text))
                if t not in have]
    if _one(text, lang) is not None:
        return []
    return [p for p in text.split("; ") if _one(p, lang) is None]


def compile_catalogs() -> list[str]:
    """Build every ``.mo`` from its ``.po`` (Babel); -> the files written."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    written = []
    for po, lang in catalog_files():
        with open(po, "rb") as fh:
            cat = read_po(fh, locale=lang)
        mo = po[:-3] + ".mo"
        with open(mo, "wb") as fh:
            write_mo(fh, cat, use_fuzzy=False)
        written.append(mo)
    return written


def catalog_files() -> list[tuple[str, str]]:
    """(path, language) of every ``.po``: the run-time sentences (``nsys_expert.po``) and the facts'
    descriptions (``facts.po``, read by ``facts/registry.doc``)."""
    out = []
    for lang in sorted(os.listdir(LOCALE_DIR)):
        folder = os.path.join(LOCALE_DIR, lang, "LC_MESSAGES")
        if os.path.isdir(folder):
            out += [(os.path.join(folder, f), lang) for f in sorted(os.listdir(folder)) if f.endswith(".po")]
    return out


def _rule_words() -> list[str]:
    """The English words of the built-in rules a report shows (titles, messages, advice, why one finding
    folds or drops another, the categories' titles): the ``rules`` catalog's message ids."""
    from ..engine import load_packs

    out: list[str] = []
    for pack in load_packs([]):
        for c in pack.categories.values():
            out.append(((c.get("title") if isinstance(c, dict) else c.title) or {}).get("en"))
        for r in pack.rules:
            out += [(r.title or {}).get("en"), (r.message or {}).get("en"), *(r.advice or {}).get("en", [])]
            out += [(x.get("because") or {}).get("en") for x in (*r.supersedes, *r.refutes)]
    return [t for t in dict.fromkeys(out) if isinstance(t, str) and t.strip()]


def messages(source: str | None = None) -> dict[str, list[tuple[str | None, str]]]:
    """Every message a language translates, by catalog (domain): [(context, English message id)]. The
    package's catalogs (of ``source``, or of every language it ships: their message ids are the program's
    English words) and the ``rules`` catalog (the built-in rules' English words, which a language may keep
    in the rule files instead)."""
    from babel.messages.pofile import read_po

    out: dict[str, list[tuple[str | None, str]]] = {}
    for po, lang in catalog_files():
        if source in (None, lang):
            with open(po, "rb") as fh:
                ids = out.setdefault(os.path.basename(po)[:-3], [])
                ids += [(m.context, m.id) for m in read_po(fh, locale=lang) if m.id and (m.context, m.id) not in ids]
    out.setdefault(catalogs.RULES, [(None, t) for t in _rule_words()])
    return out


def write_templates(folder: str, translate=lambda msgid: "") -> list[str]:
    """One catalog per domain in ``folder`` (``<domain>.pot``: every message id with an empty translation,
    or ``translate(msgid)``'s; with a translation, the compiled ``.mo`` beside it): the start of a new
    language, ``locale/<lang>/LC_MESSAGES/``."""
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import write_po

    os.makedirs(folder, exist_ok=True)
    written = []
    for domain, entries in messages().items():
        cat = Catalog(locale=None, domain=domain, project="nsys-expert", charset="utf-8")
        for context, msgid in entries:
            cat.add(msgid, translate(msgid), context=context)
        ext = ".po" if translate("x") else ".pot"
        with open(os.path.join(folder, domain + ext), "wb") as fh:
            write_po(fh, cat, width=0)
        written.append(os.path.join(folder, domain + ext))
        if ext == ".po":
            with open(os.path.join(folder, domain + ".mo"), "wb") as fh:
                write_mo(fh, cat)
            written.append(os.path.join(folder, domain + ".mo"))
    return written


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--template"]:    # python -m nsys_expert.report.i18n --template DIR: a new language's start
        for path in write_templates(sys.argv[2]):
            print("wrote", path)
    else:
        for path in compile_catalogs():
            print("wrote", path)


_IDENT = re.compile(r"[\w.:\]'\"\x00]")


def _brackets(seg: str) -> str:
    """Prose parentheses to full-width ones (a call such as ``range_pop()`` keeps its own)."""
    out, stack = [], []
    for i, ch in enumerate(seg):
        if ch == "(":
            prose = i == 0 or not _IDENT.match(seg[i - 1])
            stack.append(prose)
            if prose:
                while out and out[-1] == " ":
                    out.pop()
                out.append("（")
                continue
        elif ch == ")" and stack:
            if stack.pop():
                out.append("）")
                continue
        out.append(ch)
    text = re.sub(r"[ ]+（", "（", "".join(out))
    return re.sub(r"）[ ]+(?=[\u3000-\u9fff\uff00-\uffef])", "）", text)


_C = f"[{_CJK}]"
_ENTITY_END = re.compile(r"&#?\w+$")    # the ";" that ends an HTML entity (&#39;) is no semicolon


def _punct(seg: str) -> str:
    """Chinese prose punctuation in a text made of Chinese labels and values: an ASCII comma, semicolon
    or colon beside a Chinese character is the full-width one (its space goes), a full stop after one
    that ends a sentence is 。; a value's note in brackets followed by another is one note (10 %（占窗口）（回放）
    is 10 %（占窗口，回放）) and a bracket that ends where its outer bracket ends is a clause of it
    (（85.9 %（占窗口）） is （85.9 %，占窗口）)."""
    for a, z in ((",", "，"), (";", "；"), (":", "：")):
        seg = re.sub(f"(?<={_C}){a} ?|{a} (?={_C})",
                     lambda m, z=z: m.group(0) if _ENTITY_END.search(m.string, 0, m.start()) else z, seg)
    seg = re.sub(f"(?<={_C})\\.(?: |(?=\\s*$))", "。", seg)
    seg = re.sub(r"([\d%]\**)（([^（）]*)）（", r"\1（\2，", seg)    # a value's notes: 13.7 %（占窗口，kernel …）
    while True:
        merged = re.sub(r"（([^（）]*)）(?=）)", r"，\1", seg)
        if merged == seg:
            return seg
        seg = merged


def zh_markdown_brackets(md: str) -> str:
    """A Chinese Markdown report with one kind of bracket in its prose: full-width （）, outside code
    spans and fenced blocks (commands keep theirs), and Chinese punctuation beside Chinese words."""
    out, fenced = [], False
    for line in md.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        spans: list[str] = []   # code spans are set aside (their brackets are code), then put back

        def keep(m, spans=spans):
            spans.append(m.group(0))
            return f"\x00{len(spans) - 1}\x00"
        masked = _punct(_brackets(re.sub(r"`[^`]*`|“[^”]*”", keep, line)))   # code, and quoted tool text
        out.append(re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], masked))
    return "\n".join(out)


_TAG = re.compile(r"(<[^>]*>)")
_RAW = ("code", "pre", "style", "svg", "title", "script")


def zh_html_brackets(page: str) -> str:
    """The same for the HTML page: text outside tags and outside code, pre, style and svg."""
    out, depth = [], 0
    for tok in _TAG.split(page):
        if tok.startswith("<"):
            m = re.match(r"<(/?)([a-zA-Z0-9]+)", tok)
            if m and m.group(2).lower() in _RAW and not tok.endswith("/>"):
                depth += -1 if m.group(1) else 1
            out.append(tok)
        else:
            out.append(tok if depth > 0 else _punct(_brackets(tok)))
    return "".join(out)
