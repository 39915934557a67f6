"""Semantic checks a rule's YAML schema cannot make: an operand's type for its operator, a fact or parameter
that exists, a regular expression that compiles and cannot backtrack without bound; errors as one line with
file:line and the rule id. ``rules`` (loading) and ``relations`` (supersedes / refutes) both use them."""
from __future__ import annotations

import difflib
import re

from ..errors import RuleError
from ..facts import registry
from .conditions import FactRef, Items, Param
from .model import Rule
from .operators import ALL_OPS, EQUALITY_OPS, LIST_OPS, NUMERIC_OPS, OPS, STRING_OPS


def fail(path: str, line, rid: str | None, msg: str) -> RuleError:
    if callable(line):
        line = line()
    where = f"{path}:{line}" if line else path
    return RuleError(f"{('rule ' + rid + ': ') if rid else ''}{msg}", where)


def check_operand(rule: Rule, value, op: str, line) -> None:
    """A leaf's value (a conditions/nodes.py node, None when the file gives none) fits its operator."""
    path, rid = rule.path, rule.id

    def param(v):
        if type(v) is Param:
            if v.name not in rule.params:
                hint = difflib.get_close_matches(v.name, list(rule.params), 1)
                raise fail(path, line, rid, f"'{v.raw()}' is not a declared param"
                            + (f" (did you mean '${hint[0]}'?)" if hint else f"; declare it under params: {v.name}: {{default: ...}}"))
            return rule.params[v.name]["default"]
        if type(v) is Items:
            return [param(x) for x in v.items]
        return None if v is None else v.raw()

    if type(value) is FactRef:
        if registry.lookup(rule.scope, value.fact) is None:
            raise fail(path, line, rid, f"unknown fact '{value.fact}' on the right-hand side")
        for k in ("times", "plus"):
            x = getattr(value, k)
            if x is not None and not isinstance(param(x), (int, float)):
                raise fail(path, line, rid, f"'{k}' must be a number")
        if op not in NUMERIC_OPS:
            raise fail(path, line, rid, f"a fact on the right-hand side needs a numeric operator, not '{op}'")
        return
    v = param(value)
    shown = None if value is None else value.raw()
    if op in NUMERIC_OPS and (isinstance(v, bool) or not isinstance(v, (int, float))):
        if type(value) is Param:   # the param's default is what is wrong
            raise fail(path, lambda: _param_line(rule, value.name) or (line() if callable(line) else line), rid,
                        f"param {value.name}: default {v!r} is not a number, and the condition compares "
                        f"{shown} with operator '{op}': give the param a numeric default")
        raise fail(path, line, rid, f"operator '{op}' needs a number, got {shown!r}")
    if op in LIST_OPS and not isinstance(v, list):
        raise fail(path, line, rid, f"operator '{op}' needs a list")
    scalar = (int, float, str)          # bool is an int; an empty list the schema lets through, durable refuses
    if op in EQUALITY_OPS and not isinstance(v, scalar):
        raise fail(path, line, rid, f"operator '{op}' needs a number, a string or true / false, got {shown!r}")
    if op in STRING_OPS and not isinstance(v, str):
        raise fail(path, line, rid, f"operator '{op}' needs a string")
    if op == "matches":
        if any(t in v for t in ("\\", "^", "$", "(?")):
            raise fail(path, line, rid, f"pattern {v!r} uses Python regex syntax (\\ ^ $ (?); the engine matches the "
                        "whole value with its own dialect: use %d %w %s classes and % escapes, or use contains / "
                        "startswith / endswith")
        try:
            re.compile(v)
        except re.error as e:
            raise fail(path, line, rid, f"pattern {v!r} is not a valid regex ({e})") from e
        why = regex_hazard(v)
        if why:
            raise fail(path, line, rid, f"pattern {v[:80]!r} {why}")


def check_leaf(rule: Rule, leaf, where: str, line, ops=None) -> None:
    """A ``{fact, op, value}`` leaf (conditions.Leaf) names a fact of the rule's scope (``where`` ''; of its
    scope or the run's for an advice or relation condition), an operator of ``ops`` (the operators a pack
    may write; ``PY_OPS`` outside the engine) and a value that fits it. ``where``: what the message
    starts with ("advice item 2: ")."""
    fact, op = leaf.fact, leaf.op
    known = registry.lookup(rule.scope, fact) or (registry.lookup("run", fact) if where else None)
    if known is None:
        names = registry.all_names(rule.scope) + (registry.all_names("run") if where else [])
        hint = difflib.get_close_matches(fact, names, 1)
        raise fail(rule.path, line, rule.id, f"{where}unknown fact '{fact}'" + ("" if where else f" for scope {rule.scope}")
                    + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    if ops is None and op not in ALL_OPS:
        hint = difflib.get_close_matches(op, sorted(ALL_OPS), 1)
        raise fail(rule.path, line, rule.id, f"{where}unknown operator '{op}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                    + f"; operators: {', '.join(sorted(ALL_OPS))}")
    if ops is not None and op not in ops:
        raise fail(rule.path, line, rule.id, f"{where}operator '{op}' is not allowed here; operators: " + ", ".join(sorted(ops)))
    if OPS[op].needs_value and leaf.value is None:
        raise fail(rule.path, line, rule.id, f"{where}condition on '{fact}' with op '{op}' needs a value")
    check_operand(rule, leaf.value, op, line)


MAX_PATTERN = 256


def _param_line(rule: Rule, name: str) -> int | None:
    """The line (1-based) of param ``name`` under ``params:`` in the rule's file, or None."""
    import yaml

    try:
        with open(rule.path, encoding="utf-8") as fh:
            node = yaml.compose(fh.read(), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    for k, v in node.value if isinstance(node, yaml.MappingNode) else []:
        if k.value == "params" and isinstance(v, yaml.MappingNode):
            return next((pk.start_mark.line + 1 for pk, _ in v.value if pk.value == name), None)
    return None


# names a rule's texts may read beside its facts and params (Jinja2's own)
TEXT_NAMES = frozenset({"loop", "range", "lang", "command"})   # + the rules environment's command()


def text_problems(rule: Rule) -> list[str]:
    """Names a rule's title, message, why, advice or estimate read that are no fact of any scope and no
    param: a typo (``{{ kernels_per_itr }}``) renders as nothing and the case still passes, so
    ``check-rules`` says it (issue 48, item 8)."""
    import jinja2
    from jinja2 import meta

    env = jinja2.Environment()     # parsing only (the rules' own environment is engine/rules.py's: no circle)
    known = set(TEXT_NAMES) | set(env.globals) | set(rule.params)
    for scope in registry.SCOPES:
        known |= set(registry.all_names(scope))
    texts = [("title", rule.title), ("message", rule.message), ("why", rule.why or {}),
             ("advice", {k: "\n".join(v) for k, v in rule.advice.items()})]
    if rule.estimate:
        texts.append(("estimate.expr", {"": "{{ " + rule.estimate["expr"] + " }}"}))
    out = []
    for key, t in texts:
        for lang, src in t.items():
            try:
                names = meta.find_undeclared_variables(env.parse(src))
            except Exception:  # noqa: BLE001 - a text that does not parse failed at load already
                continue
            for n in sorted(names - known):
                hint = difflib.get_close_matches(n, sorted(known), 1)
                out.append(f"{key}{f' ({lang})' if lang else ''}: '{{{{ {n} }}}}' is no fact or param, so it renders "
                           f"as nothing" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    return out


def case_fact_problem(rule: Rule, case: dict) -> str | None:
    """A case that names a fact no rule can see (a typo: it was reported as "needs the cuda_gpu_trace
    report"): which, and the closest fact."""
    for what, names, scope in [("facts", case.get("facts") or {}, "run")] + \
            [("kernels", k, "kernel") for k in case.get("kernels") or []]:
        known = registry.all_names(scope)
        for n in names:
            if n != "name" and registry.lookup(scope, str(n)) is None:
                hint = difflib.get_close_matches(str(n), known, 1)
                return (f"unknown fact '{n}' in {what}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                        + f"; `nsys-expert facts` lists them")
    return None


def regex_hazard(pattern: str) -> str | None:
    """Why a ``matches`` pattern is refused, or None: too long, or a quantifier over something that is
    itself quantified or an alternation of quantified parts (``(a+)+``, ``(a|a*)*``): catastrophic
    backtracking in Python (advice conditions) and a state explosion in the engine's DFA."""
    if len(pattern) > MAX_PATTERN:
        return f"is longer than {MAX_PATTERN} characters"
    try:
        import re._parser as sre  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse as sre  # type: ignore[no-redef]
    REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)} - {None}

    def has_repeat(items) -> bool:
        for op, av in items:
            if op in REPEATS and av[1] > 1:
                return True
            if op == sre.SUBPATTERN and has_repeat(av[-1]):
                return True
            if op == sre.BRANCH and any(has_repeat(b) for b in av[1]):
                return True
        return False

    def ambiguous_branch(items) -> bool:
        """An alternation whose branches may start alike (``a|aa``): repeated, it backtracks exponentially."""
        for op, av in items:
            if op == sre.SUBPATTERN and ambiguous_branch(av[-1]):
                return True
            if op == sre.BRANCH:
                firsts = [b[0] if b else None for b in av[1]]
                if any(f is None or f[0] != sre.LITERAL for f in firsts) or len({f[1] for f in firsts}) < len(firsts):
                    return True
        return False

    def nested(items) -> bool:
        for op, av in items:
            if op in REPEATS:
                if av[1] > 1 and (has_repeat(av[2]) or ambiguous_branch(av[2])):
                    return True
                if nested(av[2]):
                    return True
            elif op == sre.SUBPATTERN and nested(av[-1]):
                return True
            elif op == sre.BRANCH and any(nested(b) for b in av[1]):
                return True
        return False

    try:
        if nested(sre.parse(pattern)):
            return ("repeats a part that can match in several ways (like (a+)+ or (a|aa)*): it can take exponential time on a long "
                    "kernel name; write it without the outer repetition, or use contains / startswith / endswith")
    except (re.error, RecursionError, OverflowError):
        return "cannot be analysed"
    return None
