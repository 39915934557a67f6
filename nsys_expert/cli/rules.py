"""The rule-pack commands: ``rules``, ``explain``, ``check-rules``, ``facts``."""
from __future__ import annotations

import json
import sys

import click

from .options import Choice, languages, command, config_option, emit, format_option, output_option, resolve_settings, say


@command("rules")
@format_option(["text", "json", "md"], "text", help="text (one line a rule), json, or md (the rule reference, docs/rules.md)")
@output_option()
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder")
@config_option()
def rules_cmd(fmt, output, packs, config_path):
    """List every rule (category, severity, pack, params); md = the rule reference (docs/rules.md).
    The settings file's rule packs are listed too, as diagnose uses them."""
    from ..engine import describe, load_packs

    loaded = load_packs(list(resolve_settings(config_path, packs=packs).packs))
    if fmt == "md":
        emit(describe.reference(loaded), output)
        return
    rows = [describe.rule_summary(r) for p in loaded for r in p.rules]
    if fmt == "json":
        emit(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", output)
        return
    table = [[r["id"], r["category"], r["severity"], r["scope"], r["pack"],
              ", ".join(f"{k}={v['default']}" for k, v in r["params"].items())] for r in rows]
    emit(columns(["RULE", "CATEGORY", "SEVERITY", "SCOPE", "PACK", "PARAMS"], table), output)


def columns(head: list[str], rows: list[list[str]]) -> str:
    """A plain-text table: a header, then each column as wide as its widest cell plus two spaces (no two
    columns run together: 'rank-imbalance' is 14 characters), the last column as it is."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    return "".join("  ".join(f"{str(c):<{w}}" for c, w in zip(r[:-1], widths)) + "  " + str(r[-1]) + "\n"
                   for r in [head, *rows]).replace(" \n", "\n").replace("  \n", "\n")


@command("explain")
@click.argument("rule")
@format_option(["md", "json"], "md", help="md (the rule in words), or json (its summary)")
@output_option()
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder")
@click.option("--lang", type=Choice(languages()), default=None, help="language (default en)")
@config_option()
def explain_cmd(rule, fmt, output, packs, lang, config_path):
    """What a rule checks, why, its thresholds, advice and references. RULE is a rule id, or a
    category (every rule of it, e.g. launch-bound); the settings file's rule packs and language count,
    as for diagnose."""
    import difflib

    from ..engine import describe, load_packs
    from ..errors import InputError

    settings = resolve_settings(config_path, packs=packs, lang=lang)
    lang = settings.lang
    every = [r for p in load_packs(list(settings.packs)) for r in p.rules]
    rules = {r.id: r for r in every}
    if rule in rules:
        chosen = [rules[rule]]
    else:
        chosen = [r for r in every if r.category == rule]
    if not chosen:
        names = list(rules) + sorted({r.category for r in every})
        hint = difflib.get_close_matches(rule, names, 1, 0.5)
        raise InputError(f"no rule or category '{rule}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""), None,
                         "nsys-expert rules lists them")
    if fmt == "json":
        emit(json.dumps([describe.rule_summary(r) for r in chosen], indent=2, ensure_ascii=False) + "\n", output)
        return
    emit("\n".join(describe.explain(r, lang, formula=False) for r in chosen), output)


@command("check-rules")
@click.argument("pack", type=click.Path())
@click.option("--strict", is_flag=True, help="a rule without a .cases.yaml file is an error, not a warning")
@format_option(["text", "json"], "text")
@output_option()
def check_rules_cmd(pack, strict, fmt, output):
    """Validate a rule pack and run every rule's fixture cases: every failure is listed; exit 0 when
    all pass, 1 when a case fails, 2 when the pack cannot be read or does not validate.

    A valid rule with no cases file is reported as a warning naming it (an error with --strict)."""
    from ..engine import load_packs, relations
    from ..engine.cases import run_all
    from ..engine.rules import load_pack

    p = load_pack(pack)
    packs = load_packs([pack])  # duplicate ids against the built-in pack
    twins = relations.unordered_twins(next((q for q in packs if q.path == p.path), p), packs)
    results = run_all(p.rules, strict=strict)
    bad = [r for r in results if not r.ok]
    untested = [r.rule for r in results if r.warning]
    if fmt == "json":
        emit(json.dumps({"pack": p.name, "version": p.version, "rules": len(p.rules),
                         "results": [{"rule": r.rule, "case": r.name, "ok": r.ok, "warning": r.warning,
                                      "detail": r.detail} for r in results]}, indent=2, ensure_ascii=False) + "\n",
             output)
    else:
        lines = [f"{'WARN' if r.warning else 'ok  ' if r.ok else 'FAIL'} {r.rule}: {r.name}: {r.detail}" for r in results]
        lines.append(f"{p.name} {p.version}: {len(p.rules)} rule{'' if len(p.rules) == 1 else 's'}, {len(results) - len(bad) - len(untested)}/"
                     f"{len(results) - len(untested)} checks passed"
                     + (f"; untested (no .cases.yaml): {', '.join(untested)}" if untested else ""))
        emit("\n".join(lines) + "\n", output)
    for mine, other in twins:
        click.echo(f"warning: rule {mine} estimates a gain on the subject and category of {other}, with no relation "
                   f"between them: if they are one cause, both gains count in the total recoverable time (give "
                   f"{mine} 'cause: {other}' and 'supersedes: [{other}]', or 'refines: {other}')", err=True)
    if untested:
        click.echo(f"warning: {len(untested)} rule(s) have no fixture cases: {', '.join(untested)} (--strict makes this an error)",
                   err=True)
    if bad:
        say(f"exit 1: {len(bad)} check(s) failed: " + "; ".join(f"{r.rule}: {r.name}" for r in bad[:3])
            + (f" and {len(bad) - 3} more" if len(bad) > 3 else ""))
        sys.exit(1)


# the words of `facts` (another language's: the labels catalog, context facts_cmd.<key>)
_FACTS_WORDS = {"fact": "FACT", "unit": "UNIT", "scope": "SCOPE", "from": "FROM", "meaning": "MEANING", "either": " or ",
                "span": "Every run fact also exists as <name>_span: the same number over the whole profile."}


@command("facts")
@format_option(["text", "json"], "text")
@output_option()
@click.option("--lang", type=Choice(languages()), default="en", help="the language of the descriptions")
def facts_cmd(fmt, output, lang):
    """Every fact a rule may use: name, unit, scope, meaning, and the nsys reports (or other inputs)
    that supply it, by the names nsys stats -r takes."""
    from ..facts import registry

    rows = [{"name": f.name, "unit": f.unit, "scope": f.scope, "doc": registry.doc(f, lang),
             "needs": [registry.user_name(n, lang) for n in f.needs]}
            for scope in registry.SCOPES.values() for f in scope.values()]
    if fmt == "json":
        emit(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", output)
        return
    from ..report.labels import words

    w = words("facts_cmd", _FACTS_WORDS, lang)
    head = [w[k] for k in ("fact", "unit", "scope", "from", "meaning")]
    text = columns(head, [[r["name"], r["unit"] or "-", r["scope"], w["either"].join(r["needs"]), r["doc"]] for r in rows])
    emit(text + "\n" + w["span"] + "\n", output)
