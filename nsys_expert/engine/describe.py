"""Rules in words: ``explain``, ``rules``, and the generated rule reference (docs/rules.md)."""
from __future__ import annotations

import os
import re

import jinja2

from ..facts import registry
from . import condition
from .operators import OPS
from .rules import ENV, Pack, Rule

_EXPR = re.compile(r"{{(.*?)}}", re.S)
_TAG = re.compile(r"{%.*?%}", re.S)
_COMMAND = re.compile(r"command\(\s*'([\w-]+)'")


def reader_text(text: str, params: dict) -> str:
    """A rule's message or advice template for a reader (``explain``), not for the engine: an
    expression of parameters only is filled with their defaults, a command is named by the
    ``nsys-expert command`` that prints it, and a value known only from a run is ``<fact_name>``;
    ``{% %}`` tags are dropped."""
    from jinja2 import meta

    defaults = {k: v["default"] for k, v in params.items()}

    def one(m: re.Match) -> str:
        expr = m.group(1).strip()
        try:
            names = meta.find_undeclared_variables(ENV.parse("{{ " + expr + " }}")) - {"command"}
        except jinja2.TemplateError:
            return m.group(0)
        if names <= set(defaults):
            try:
                return ENV.from_string("{{ " + expr + " }}").render(**defaults)
            except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError):
                pass
        c = _COMMAND.search(expr)
        if c:
            return f"nsys-expert command {c.group(1)}"
        return "<" + ", ".join(sorted(names - set(defaults)) or sorted(names)) + ">"

    return re.sub(r"(?<=\S)  +", " ", _TAG.sub("", _EXPR.sub(one, text))).strip()


# references that name a file of the project's private notes, not something a reader can open
_PRIVATE = re.compile(r"^\s*(?:notes/)?(?:playbook|peers|design)\.md\b[^:]*:?\s*", re.I)


def public_references(r: Rule) -> list[str]:
    """What ``explain`` cites: the rule's own page of the rule reference, then its public references
    (NVIDIA and PyTorch documents, Nsight tools' rule names); a reference to the project's private
    notes keeps only the public thing it names (an ncu rule), or is left out."""
    out = [f"docs/rules.md#{r.id} (this rule in the rule reference)"]
    for x in r.references:
        x = str(x)
        if not _PRIVATE.match(x):
            out.append(x)
            continue
        rest = _PRIVATE.sub("", x)
        if re.match(r"(ncu|nsys)\b", rest):       # "peers.md 3.2: ncu SOLBottleneck ..." -> the ncu rule
            out.append("Nsight Compute rule " + rest[4:] if rest.startswith("ncu") else rest)
    return list(dict.fromkeys(out))

def _w(lang: str, text: str, *args) -> str:
    """explain's word ``text`` (a format string) in ``lang`` (the labels catalog's ``explain`` entries),
    filled with ``args``."""
    from ..notes import catalogs

    return catalogs.catalog("labels", lang).get(f"explain\x04{text}", text).format(*args)


def _value_text(v, params: dict, lang: str) -> str:
    """A leaf's value in words: a parameter with its default, another fact as its arithmetic."""
    t = type(v)
    if t is condition.Param:
        return _w(lang, "{} (= {})", v.name, params.get(v.name, {}).get("default"))
    if t is condition.FactRef:
        return (v.fact + (f" x {v.times.raw()}" if v.times is not None else "")
                + (f" + {v.plus.raw()}" if v.plus is not None else ""))
    return f"{None if v is None else v.raw()}"


def condition_text(cond, params: dict, indent: int = 0, lang: str = "en") -> list[str]:
    """A condition (condition.py's nodes) in words, one line a leaf, nested by indentation."""
    pad = "  " * indent
    t = type(cond)
    if t is condition.Input:
        return [pad + _w(lang, "- the input holds `{}`", cond.name)]
    if t is condition.Named:
        return [pad + _w(lang, "- condition `{}` (pack.yaml)", cond.name)]
    if t is condition.Leaf:
        op = OPS.get(cond.op)
        words = op.words(lang) if op else cond.op
        shown = "" if op is not None and not op.needs_value else f" {_value_text(cond.value, params, lang)}"
        return [f"{pad}- `{cond.fact}` {words}{shown}"]
    if t is condition.All or t is condition.Any:
        out = [pad + _w(lang, "- all of:" if t is condition.All else "- any of:")]
        for c in cond.parts:
            out += condition_text(c, params, indent + 1, lang)
        return out
    inner = cond.part
    if type(inner) is condition.Leaf and inner.op == "exists":
        return [pad + _w(lang, "- `{}` is not known", inner.fact)]
    if type(inner) is condition.Input:
        return [pad + _w(lang, "- the input lacks `{}`", inner.name)]
    if type(inner) is condition.Named:
        return [pad + _w(lang, "- not condition `{}` (pack.yaml)", inner.name)]
    return [pad + _w(lang, "- not:")] + condition_text(inner, params, indent + 1, lang)


def doc_text(p: dict, lang: str = "en") -> str:
    """The ``doc`` of a parameter or of the estimate: a string (English), or ``{en, zh}`` like the
    rule's other texts (English is the fallback)."""
    d = p.get("doc") or ""
    return (d if isinstance(d, str) else d.get(lang) or d.get("en", "")).strip()


def title_text(r: Rule, lang: str = "en") -> str:
    """A rule's title for a reader: rendered without a run when it can be (host-bound's names the API
    of the run's GPU maker: CUDA, the default), else as :func:`reader_text` gives it."""
    text = (r.title or {}).get(lang) or (r.title or {}).get("en") or ""
    if "{" not in text:
        return text
    try:
        return ENV.from_string(text).render(**{k: v["default"] for k, v in r.params.items()}).strip()
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError):
        return reader_text(text, r.params)


def rule_summary(r: Rule) -> dict:
    return {"id": r.id, "title": title_text(r), "category": r.category, "severity": r.severity,
            "scope": r.scope, "pack": r.pack, "path": r.path,
            "params": {k: {"default": v["default"], "doc": doc_text(v)} for k, v in r.params.items()},
            "facts": r.facts_used(), "escalates_to": [e["severity"] for e in r.escalate]}


def explain(r: Rule, lang: str = "en", formula: bool = True) -> str:
    """The rule in words. ``formula`` False (``nsys-expert explain``): the estimate's sentence, not its
    Jinja2 expression; the reference (``rules --format md``, docs/rules.md) shows both."""
    t = lambda d: (d or {}).get(lang) or (d or {}).get("en") or ""  # noqa: E731
    w = lambda text, *a: _w(lang, text, *a)  # noqa: E731
    lines = [f"## `{r.id}`: {title_text(r, lang)}", "",
             w("- category `{}`, severity `{}`", r.category, r.severity)
             + (w(" (rises to {} when stronger)", ", ".join(e["severity"] for e in r.escalate)) if r.escalate else "")
             + w(", scope `{}`, pack `{}`", r.scope, r.pack)]
    lines.append(w("- about `{}`, cause `{}`", r.subject, r.cause) + ("" if r.actionable else w("; says there is nothing to fix"))
                 + (w("; one finding for all the kernels it fires on") if r.combine == "kernels" else ""))
    for key, word in (("supersedes", "- folds in `{}` on the same subject"), ("refutes", "- drops `{}` on the same subject")):
        for rel in getattr(r, key):
            lines.append(w(word, rel["rule"]) + (w(": {}", t(rel["because"])) if rel["because"] else "")
                         + (w(" (when the condition below holds)") if rel["when"] else ""))
            if rel["when"]:
                lines += condition_text(rel["when"], r.params, 1, lang)
    if r.refines:
        lines.append(w("- refines `{}`: without this rule's inputs its cases count there", r.refines))
    if r.why:
        lines += ["", reader_text(t(r.why).strip(), r.params)]
    lines += ["", w("Fires when:")] + condition_text(r.when, r.params, 0, lang)
    for e in r.escalate:
        lines += ["", w("Severity {} when also:", e["severity"])] + condition_text(e["when"], r.params, 0, lang)
    if r.params:
        lines += ["", w("Parameters (`--set {}.NAME=VALUE`):", r.id)]
        for k, v in r.params.items():
            lines.append(w("- `{}` = {}: {}", k, v["default"], doc_text(v, lang)))
    facts = r.facts_used()
    if facts:
        lines += ["", w("Facts it reads:")]
        for f in facts:
            d = registry.lookup(r.scope, f)
            lines.append(w("- `{}` ({}): {}; from {}", f, d.unit or "-", registry.doc(d, lang),
                           w(" or ").join(registry.user_name(n, lang) for n in d.needs)) if d else f"- `{f}`")
    if r.estimate:
        if formula or not r.estimate.get("doc"):
            lines += ["", w("Estimated gain: `{}`", r.estimate["expr"]) + (w(" ({})", doc_text(r.estimate, lang)) if r.estimate.get("doc") else "")]
        else:
            lines += ["", w("Estimated gain: {}", doc_text(r.estimate, lang))]
    adv = r.advice.get(lang) or r.advice.get("en") or []
    if adv:
        lines += ["", w("Advice:")]
        for a, c in zip(adv, r.advice_when if any(r.advice_when) else [None] * len(adv)):
            lines.append(f"- {reader_text(a, r.params)}" + (w(" (only when:)") if c else ""))
            if c:
                lines += condition_text(c, r.params, 1, lang)
    refs = public_references(r)
    lines += ["", w("References:"), "- " + w("{} (this rule in the rule reference)", f"docs/rules.md#{r.id}")]
    lines += [f"- {x}" for x in refs[1:]]
    return "\n".join(lines) + "\n"


def reference(packs: list[Pack]) -> str:
    """docs/rules.md: every rule of the given packs, generated (nsys-expert rules --format md)."""
    out = ["# Rule reference", "",
           "Generated by `nsys-expert rules --format md` from the rule files; do not edit by hand.", ""]
    for p in packs:
        out += [f"# Pack `{p.name}` {p.version}", "", p.description.strip(), ""]
        if p.params:
            out += ["Pack params (pack.yaml): severity by estimated gain and the minimum-work guard:", ""]
            out += [f"- `{k}` = {v:g}" for k, v in p.params.items()] + [""]
        for name, cond in p.conditions.items():
            out += [f"Condition `{name}`:"] + condition_text(cond, {}) + [""]
        out += ["| rule | category | severity | scope |", "|---|---|---|---|"]
        out += [f"| [`{r.id}`](#{r.id}) | {r.category} | {r.severity} | {r.scope} |" for r in p.rules]
        out.append("")
        for r in p.rules:
            out.append(f'<a id="{r.id}"></a>')
            out.append(explain(r).replace(f"## `{r.id}`", f"## `{r.id}`", 1))
    return "\n".join(out)


def relpath(p: str) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return p
