"""Rules in words: ``explain``, ``rules``, and the generated rule reference (docs/rules.md)."""
from __future__ import annotations

import os
import re

import jinja2

from ..facts import registry
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

_OPS = {"lt": "<", "lte": "≤", "gt": ">", "gte": "≥", "eq": "=", "neq": "≠", "in": "in", "not_in": "not in",
        "contains": "contains", "icontains": "contains (any case)", "startswith": "starts with",
        "endswith": "ends with", "matches": "matches", "exists": "is known"}


def condition_text(cond: dict, params: dict, indent: int = 0) -> list[str]:
    pad = "  " * indent
    if "input" in cond:
        return [f"{pad}- the input holds `{cond['input']}`"]
    if "condition" in cond:
        return [f"{pad}- condition `{cond['condition']}` (pack.yaml)"]
    if "fact" in cond:
        v = cond.get("value")
        if isinstance(v, str) and v.startswith("$"):
            v = f"{v[1:]} (= {params.get(v[1:], {}).get('default')})"
        elif isinstance(v, dict):
            v = v["fact"] + (f" x {v['times']}" if "times" in v else "") + (f" + {v['plus']}" if "plus" in v else "")
        op = _OPS.get(cond["op"], cond["op"])
        return [f"{pad}- `{cond['fact']}` {op}" + ("" if cond["op"] == "exists" else f" {v}")]
    for key, word in (("all", "all of"), ("any", "any of")):
        if key in cond:
            out = [f"{pad}- {word}:"]
            for c in cond[key]:
                out += condition_text(c, params, indent + 1)
            return out
    inner = cond["not"]
    if "fact" in inner and inner["op"] == "exists":
        return [f"{pad}- `{inner['fact']}` is not known"]
    if "input" in inner:
        return [f"{pad}- the input lacks `{inner['input']}`"]
    if "condition" in inner:
        return [f"{pad}- not condition `{inner['condition']}` (pack.yaml)"]
    return [f"{pad}- not:"] + condition_text(inner, params, indent + 1)


def param_doc(p: dict, lang: str = "en") -> str:
    """A parameter's ``doc``: a string (English), or ``{en, zh}`` like the rule's other texts."""
    d = p.get("doc") or ""
    return d if isinstance(d, str) else d.get(lang) or d.get("en", "")


def rule_summary(r: Rule) -> dict:
    return {"id": r.id, "title": r.title.get("en"), "category": r.category, "severity": r.severity,
            "scope": r.scope, "pack": r.pack, "path": r.path,
            "params": {k: {"default": v["default"], "doc": param_doc(v)} for k, v in r.params.items()},
            "facts": r.facts_used(), "escalates_to": [e["severity"] for e in r.escalate]}


def explain(r: Rule, lang: str = "en") -> str:
    t = lambda d: (d or {}).get(lang) or (d or {}).get("en") or ""  # noqa: E731
    lines = [f"## `{r.id}`: {t(r.title)}", "",
             f"- category `{r.category}`, severity `{r.severity}`"
             + (f" (rises to {', '.join(e['severity'] for e in r.escalate)} when stronger)" if r.escalate else "")
             + f", scope `{r.scope}`, pack `{r.pack}`"]
    lines.append(f"- about `{r.subject}`, cause `{r.cause}`" + ("" if r.actionable else "; says there is nothing to fix")
                 + ("; one finding for all the kernels it fires on" if r.combine == "kernels" else ""))
    for key, word in (("supersedes", "folds in"), ("refutes", "drops")):
        for rel in getattr(r, key):
            lines.append(f"- {word} `{rel['rule']}` on the same subject" + (f": {t(rel['because'])}" if rel["because"] else "")
                         + (" (when the condition below holds)" if rel["when"] else ""))
            if rel["when"]:
                lines += condition_text(rel["when"], r.params, 1)
    if r.why:
        lines += ["", reader_text(t(r.why).strip(), r.params)]
    lines += ["", "Fires when:"] + condition_text(r.when, r.params)
    for e in r.escalate:
        lines += ["", f"Severity {e['severity']} when also:"] + condition_text(e["when"], r.params)
    if r.params:
        lines += ["", "Parameters (`--set " + r.id + ".NAME=VALUE`):"]
        for k, v in r.params.items():
            lines.append(f"- `{k}` = {v['default']}: {param_doc(v, lang)}")
    facts = r.facts_used()
    if facts:
        lines += ["", "Facts it reads:"]
        for f in facts:
            d = registry.lookup(r.scope, f)
            lines.append(f"- `{f}` ({d.unit or '-'}): {d.doc}; from "
                         + " or ".join(registry.user_name(n) for n in d.needs) if d else f"- `{f}`")
    if r.estimate:
        lines += ["", f"Estimated gain: `{r.estimate['expr']}`" + (f" ({r.estimate['doc']})" if r.estimate.get("doc") else "")]
    adv = r.advice.get(lang) or r.advice.get("en") or []
    if adv:
        lines += ["", "Advice:"]
        for a, w in zip(adv, r.advice_when if any(r.advice_when) else [None] * len(adv)):
            lines.append(f"- {reader_text(a, r.params)}" + (" (only when:)" if w else ""))
            if w:
                lines += condition_text(w, r.params, 1)
    lines += ["", "References:"] + [f"- {x}" for x in public_references(r)]
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
