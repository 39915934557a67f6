"""The rule-pack commands: ``rules``, ``explain``, ``check-rules``, ``facts``."""
from __future__ import annotations

import json
import sys

import click

from .options import command, format_option


@command("rules")
@format_option(["text", "json", "md"], "text")
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder")
def rules_cmd(fmt, packs):
    """List every rule (category, severity, pack, params); md = the rule reference (docs/rules.md)."""
    from ..engine import describe, load_packs

    loaded = load_packs(list(packs))
    if fmt == "md":
        click.echo(describe.reference(loaded), nl=False)
        return
    rows = [describe.rule_summary(r) for p in loaded for r in p.rules]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    w = max(len(r["id"]) for r in rows)
    for r in rows:
        params = ", ".join(f"{k}={v['default']}" for k, v in r["params"].items())
        click.echo(f"{r['id']:<{w}}  {r['category']:<14} {r['severity']:<8} {r['scope']:<6} {r['pack']:<10} {params}")


@command("explain")
@click.argument("rule")
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en")
def explain_cmd(rule, packs, lang):
    """What a rule checks, why, its thresholds, advice and references."""
    import difflib

    from ..engine import describe, load_packs
    from ..errors import InputError

    rules = {r.id: r for p in load_packs(list(packs)) for r in p.rules}
    if rule not in rules:
        hint = difflib.get_close_matches(rule, list(rules), 1)
        raise InputError(f"no rule '{rule}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""), None,
                         "nsys-expert rules lists them")
    click.echo(describe.explain(rules[rule], lang), nl=False)


@command("check-rules")
@click.argument("pack", type=click.Path())
@click.option("--strict", is_flag=True, help="a rule without a .cases.yaml file is an error, not a warning")
def check_rules_cmd(pack, strict):
    """Validate a rule pack and run its rules' fixture cases (exit 0 all pass, 2 otherwise).

    A valid rule with no cases file is reported as a warning naming it (an error with --strict)."""
    from ..engine import load_packs
    from ..engine.cases import run_all
    from ..engine.rules import load_pack

    p = load_pack(pack)
    load_packs([pack])  # duplicate ids against the built-in pack
    results = run_all(p.rules, strict=strict)
    bad = [r for r in results if not r.ok]
    untested = [r.rule for r in results if r.warning]
    for r in results:
        click.echo(f"{'WARN' if r.warning else 'ok  ' if r.ok else 'FAIL'} {r.rule}: {r.name}: {r.detail}")
    click.echo(f"{p.name} {p.version}: {len(p.rules)} rules, {len(results) - len(bad) - len(untested)}/{len(results) - len(untested)} checks passed"
               + (f"; untested (no .cases.yaml): {', '.join(untested)}" if untested else ""))
    if untested:
        click.echo(f"warning: {len(untested)} rule(s) have no fixture cases: {', '.join(untested)} (--strict makes this an error)",
                   err=True)
    if bad:
        sys.exit(2)


@command("facts")
@format_option(["text", "json"], "text")
def facts_cmd(fmt):
    """Every fact a rule may use: name, unit, scope, meaning, the inputs it needs."""
    from ..facts import registry

    rows = [{"name": f.name, "unit": f.unit, "scope": f.scope, "doc": f.doc, "needs": list(f.needs)}
            for scope in registry.SCOPES.values() for f in scope.values()]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for r in rows:
        click.echo(f"{r['name']:<36} {r['unit']:<5} {r['scope']:<6} {' | '.join(r['needs']):<40} {r['doc']}")
    click.echo("\nEvery run fact also exists as <name>_span: the same number over the whole profile.")
