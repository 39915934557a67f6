"""A rule's texts: title, message, advice and ``estimate.expr``, compiled once (their code kept in the
private cache for the next process), rendered in the limited sandbox, and memoised on the values they
read (a finding's title, message and estimate together: 1,000 kernels with the same figures render once).
"""
from __future__ import annotations

import functools
import math
import os

import jinja2

from ..errors import RuleError
from . import sandbox
from .rules import ENV, Rule

def lang_text(d: dict | None, lang: str):
    """A rule's words in ``lang``: its file's, else the ``rules`` catalog's, else English."""
    from ..notes import catalogs

    return catalogs.rule_text(d, lang)


@functools.lru_cache(maxsize=4096)
def _template(source: str) -> jinja2.Template:
    """A rule's text compiled once per process (compiling costs 1-10 ms, rendering a compiled one 0.1 ms),
    and its compiled code kept in the private cache folder (``nsys_expert.cache``, as the report's
    templates are) for the next process: what ``ENV.from_string`` does, with Jinja2's bytecode cache."""
    bcc = _text_cache()
    if bcc is None:
        return ENV.from_string(source)
    import hashlib

    name = f"{bcc[1]}-{hashlib.sha256(source.encode()).hexdigest()}"
    code = None
    try:
        bucket = bcc[0].get_bucket(ENV, name, None, source)
        code = bucket.code
    except OSError:
        bucket = None
    if code is None:
        code = ENV.compile(source)
        if bucket is not None:
            bucket.code = code
            try:
                bcc[0].set_bucket(bucket)
            except OSError:
                pass
    try:
        return ENV.template_class.from_code(ENV, code, ENV.make_globals(None))
    except Exception:   # noqa: BLE001 - code that does not define a template: compiled again, never trusted
        return ENV.template_class.from_code(ENV, ENV.compile(source), ENV.make_globals(None))


@functools.lru_cache(maxsize=1)
def _text_cache():
    """(the bytecode cache of rule texts, the fingerprint of what compiles them) or None (no cache folder).
    The fingerprint (Jinja2's version, the sandbox and the environment's filters and globals) is in every
    entry's name: code compiled by another version is never read back."""
    import hashlib

    from .. import cache

    bcc = cache.bytecode_cache("rule-texts")     # entries verified before use (cache.py)
    if bcc is None:
        return None
    h = hashlib.sha256(jinja2.__version__.encode())
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        for code in ("rules.py", "sandbox.py"):
            with open(os.path.join(here, code), "rb") as fh:
                h.update(fh.read())
    except OSError:
        return None
    return bcc, h.hexdigest()[:32]


@functools.lru_cache(maxsize=1024)
def _expression(source: str):
    """``estimate.expr`` compiled once; called with a mapping that is not copied (see _render)."""
    t = ENV.compile_expression(source)._template
    return lambda ctx: _expr_value(t, ctx)


def _expr_value(t: jinja2.Template, ctx):
    c = sandbox.context(t, ctx)
    for _ in t.root_render_func(c):
        pass
    v = c.vars.get("result")
    return None if isinstance(v, jinja2.Undefined) else v


@functools.lru_cache(maxsize=4096)
def _names(source: str, expression: bool = False) -> tuple[str, ...] | None:
    """The names a text (or an ``estimate.expr``, parsed as ``compile_expression`` parses it) may read
    from its context: what its value depends on. Every name the text loads, its own variables (a loop's,
    a ``set``) included: more names than it reads only make the memo key stricter, and walking the tree
    costs a tenth of Jinja2's ``meta.find_undeclared_variables`` (which generates the code)."""
    from jinja2 import nodes
    from jinja2.parser import Parser

    try:
        tree = Parser(ENV, source, state="variable").parse_expression() if expression else ENV.parse(source)
        return tuple(sorted({n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}))
    except jinja2.TemplateError:
        return None     # a text that does not parse: never memoised (it renders its error each time)


_KEYABLE = frozenset({str, int, bool, type(None)})


@functools.lru_cache(maxsize=1024)
def _finding_names(title: str, message: str, expr: str | None) -> tuple[str, ...] | None:
    """The names a finding's title, message and estimate read together (None: one of them does not parse)."""
    parts = [_names(title), _names(message)] + ([_names(expr, True)] if expr is not None else [])
    return None if any(p is None for p in parts) else tuple(sorted(set().union(*parts)))


def _finding_texts(rule: Rule, lang: str, ctx, memo: dict | None) -> tuple[str, str, float | None]:
    """A finding's title, message and estimate. All three depend only on the values they read: a finding
    whose values were seen before in this evaluation (the same kernel figures under another name) reuses
    them with one look-up (at 1,000 kernel facts the three separate keys cost more than the rendering).
    ``memo`` None: rendered directly (a rule's first finding: finding the names a text reads means
    parsing it, 1-2 ms, which only pays off from a rule's second finding on)."""
    title, message = lang_text(rule.title, lang), lang_text(rule.message, lang)
    expr = rule.estimate["expr"] if rule.estimate else None
    if memo is None:
        return _render(title, ctx, rule, "title"), _render(message, ctx, rule, "message"), _estimate(rule, ctx)
    key = _values_key(("finding", title, message, expr), _finding_names(title, message, expr), ctx)
    if key is not None:
        hit = memo.get(key)
        if hit is not None:
            return hit
    out = (_render(title, ctx, rule, "title", memo), _render(message, ctx, rule, "message", memo),
           _estimate(rule, ctx, memo))
    if key is not None:
        memo[key] = out
    return out


def _memo_key(source: str, ctx, expression: bool = False):
    """(source, the values it reads, typed) or None when a value cannot be a key (a mapping: ``kernel``)."""
    return _values_key((source, expression), _names(source, expression), ctx)


def _values_key(head: tuple, names: tuple[str, ...] | None, ctx):
    if names is None:
        return None
    key = list(head)
    for n in names:
        v = ctx.get(n, _names)          # _names stands for "absent"
        t = type(v)
        if t is float:
            key.append((n, "float", repr(v)))
        elif v is _names or t in _KEYABLE:
            key.append((n, t.__name__, v))
        else:
            return None
    return tuple(key)


def _render(template: str, ctx, rule: Rule | None = None, what: str = "text", memo: dict | None = None) -> str:
    """Render a rule's text over ``ctx`` (a mapping, not copied), in the
    limited sandbox: an error of the text shows in the text, a text past the sandbox's limits is the
    pack's error (RuleError naming the rule: exit 2). With ``memo``, a text whose values were rendered
    before in this evaluation is not rendered again (a kernel rule's title on 1,000 kernels)."""
    plain = _plain(template)
    if plain is not None:
        return plain
    key = _memo_key(template, ctx) if memo is not None else None
    if key is not None and key in memo:
        return memo[key]
    try:
        out = sandbox.render(_template(template), ctx).strip()
    except sandbox.LimitError as e:
        raise _limit_error(rule, what, e) from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as e:
        out = f"{template} [template error: {e}]"
    if key is not None:
        memo[key] = out
    return out


@functools.lru_cache(maxsize=4096)
def _plain(source: str) -> str | None:
    """A text with no Jinja2 syntax at all (most titles and advice items) as it renders, or None: Jinja2
    would only drop its one trailing newline (``keep_trailing_newline`` is off) before the strip, so it
    is not rendered (a tenth of the rendering at 10,000 kernel facts). A ``{`` anywhere, a carriage
    return (Jinja2 normalises line ends) or a text past the sandbox's limit renders as before."""
    if "{" in source or "\r" in source or len(source) > sandbox.MAX_TEXT:
        return None
    return source.strip()


def _limit_error(rule: Rule | None, what: str, e: Exception) -> RuleError:
    return RuleError(f"rule {rule.id if rule else '?'}: {what}: {e} (a limit of rule text)", rule.path if rule else None,
                     "simplify the rule's text")


def _estimate(rule: Rule, ctx, memo: dict | None = None) -> float | None:
    """The rule's estimate over ``ctx``; with ``memo``, an expression whose values were seen before in
    this evaluation is not evaluated again (its value depends on those values only)."""
    if not rule.estimate:
        return None
    source = rule.estimate["expr"]
    key = _memo_key(source, ctx, True) if memo is not None else None
    if key is not None and key in memo:
        return memo[key]
    try:
        v = _expression(source)(ctx)
    except sandbox.LimitError as e:
        raise _limit_error(rule, "estimate.expr", e) from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, NameError):
        v = None   # (NameError: Jinja's optimizer folds a constant past the float range to a bare 'inf')
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        v = None
    else:
        v = round(max(0.0, min(100.0, float(v))), 1)
    if key is not None:
        memo[key] = v
    return v
