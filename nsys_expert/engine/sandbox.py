"""The Jinja2 sandbox rule text renders in, with limits: a rule pack is someone else's code.

Jinja2's SandboxedEnvironment keeps templates away from Python internals, but not from exhausting the
machine: ``{{ 'x' * 10**11 }}``, ``9**9**9**9`` in ``estimate.expr``, nested ``range`` loops. Here:

- at pack load (``check``, called by rules.py for every title, message, why, advice item and estimate):
  no macros, call blocks, filter blocks, includes, imports or template inheritance; no loop inside a
  loop, no recursive loop; method calls only on the ``command`` global; filters from ALLOWED_FILTERS
  only; constant arithmetic is evaluated with the limits below, so a constant that is too big is an
  error of the pack (one line naming the file and rule), not of a run;
- at render: ``*``, ``**``, ``+`` and ``%`` are intercepted (Jinja2's ``intercepted_binops``, which also
  stops it folding constants at compile time): results past MAX_TEXT characters or MAX_INT_BITS bits
  raise LimitError, ``%`` on a string is refused; ``range`` yields at most MAX_RANGE items; the
  rendered text is cut off past MAX_TEXT characters with LimitError (engine/__init__ turns a LimitError
  into a RuleError naming the rule: exit 2).
"""
from __future__ import annotations

import operator

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

MAX_TEXT = 64 * 1024        # characters a rendered text (or any string or list made while rendering) may reach
MAX_INT_BITS = 1024         # an integer result up to 2**1024 (no float is larger)
MAX_RANGE = 1000            # items one range() may yield
ALLOWED_FILTERS = frozenset({
    "num", "round", "int", "float", "abs", "default", "d", "first", "last", "join", "length", "count", "lower",
    "upper", "capitalize", "title", "trim", "truncate", "replace", "max", "min", "sum", "string", "unique",
    "list", "sort", "reverse", "e", "escape", "wordcount"})
_FORBIDDEN = (nodes.Macro, nodes.CallBlock, nodes.FilterBlock, nodes.Include, nodes.Import, nodes.FromImport,
              nodes.Extends, nodes.Block)


class LimitError(SecurityError):
    """Rule text that would exceed a limit of the sandbox."""


def _size(v) -> int | None:
    return len(v) if isinstance(v, (str, list, tuple)) else None


def bounded_binop(op: str, left, right):
    """``left op right`` for * ** + %, refused (LimitError) when the result would be too big."""
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    if op == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and not isinstance(left, bool):
            if max(1, abs(left).bit_length()) * right > MAX_INT_BITS * 2 and abs(left) > 1:
                raise LimitError(f"a power too large ({left} ** {right})")
        return operator.pow(left, right)
    if op == "*":
        for seq, n in ((left, right), (right, left)):
            if _size(seq) is not None and isinstance(n, int) and _size(seq) * max(n, 0) > MAX_TEXT:
                raise LimitError(f"a repeated text or list longer than {MAX_TEXT:,} items")
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise LimitError("an integer product too large")
        return operator.mul(left, right)
    if op == "+":
        if _size(left) is not None and _size(right) is not None and _size(left) + _size(right) > MAX_TEXT:
            raise LimitError(f"a joined text or list longer than {MAX_TEXT:,} items")
        return operator.add(left, right)
    if op == "%":
        if isinstance(left, str):
            raise LimitError("'%' formatting of text is not allowed in rule text; use the num or round filters")
        if num(left) and num(right):
            return operator.mod(left, right)
        return operator.mod(left, right)
    raise LimitError(f"operator {op} is not allowed")


def _range(*args):
    r = range(*args)
    if len(r) > MAX_RANGE:
        raise LimitError(f"range() of more than {MAX_RANGE:,} items")
    return r


def _replace(s, old, new, count=None):
    s, old, new = str(s), str(old), str(new)
    n = s.count(old) if old else len(s) + 1
    if count is not None and count >= 0:
        n = min(n, count)
    if len(s) + n * (len(new) - len(old)) > MAX_TEXT:
        raise LimitError(f"replace() would make a text longer than {MAX_TEXT:,} characters")
    return s.replace(old, new, -1 if count is None else count)


_FLOAT_OPS = {"*": operator.mul, "+": operator.add}


class LimitedSandbox(SandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **kw):
        super().__init__(**kw)
        self.globals["range"] = _range
        self.filters["replace"] = _replace

    def call_binop(self, context, operator_, left, right):
        # a float and a number (an estimate's arithmetic): no limit applies to a float result
        tl, tr = type(left), type(right)
        if (tl is float and (tr is float or tr is int) or tr is float and tl is int) and operator_ in _FLOAT_OPS:
            return _FLOAT_OPS[operator_](left, right)
        return bounded_binop(operator_, left, right)


def context(template: jinja2.Template, ctx) -> jinja2.runtime.Context:
    """``template.new_context(ctx, shared=True)`` for less: Jinja2 builds the set of the template's global
    names (a ChainMap walked on every render, a third of rendering a short rule text) only for
    ``{% import %}``, which rule text cannot hold (``check``); here that set is made once per template."""
    keys = template.__dict__.get("_nsx_global_keys")
    if keys is None:
        keys = template._nsx_global_keys = frozenset(template.globals)
    c = template.environment.context_class(template.environment, ctx, template.name, template.blocks)
    c.globals_keys = keys
    return c


def render(template: jinja2.Template, ctx) -> str:
    """Render over a mapping (not copied), the output bounded by MAX_TEXT. A text without a loop yields a
    fixed number of pieces, each already bounded (a value of the facts, or made under the limits above):
    it is joined at once and its length checked after (the same text, the same error); a text with a
    loop is checked piece by piece, so that it stops as soon as it is too long."""
    gen = template.root_render_func(context(template, ctx))
    if not _loops(template):
        text = "".join(gen)
        if len(text) > MAX_TEXT:
            raise LimitError(f"the rendered text is longer than {MAX_TEXT:,} characters")
        return text
    out, n = [], 0
    for chunk in gen:
        n += len(chunk)
        if n > MAX_TEXT:
            raise LimitError(f"the rendered text is longer than {MAX_TEXT:,} characters")
        out.append(chunk)
    return "".join(out)


def _loops(template: jinja2.Template) -> bool:
    """Whether a compiled text may hold a loop (its code makes a ``LoopContext`` or iterates: looked up
    once per template in the names its code uses)."""
    v = template.__dict__.get("_nsx_loops")
    if v is None:
        code = template.root_render_func.__code__
        names = set(code.co_names) | set(code.co_varnames)
        for const in code.co_consts:     # nested functions (a loop body may be one)
            if hasattr(const, "co_names"):
                names |= set(const.co_names) | set(const.co_varnames)
        v = template._nsx_loops = bool(names & {"LoopContext", "loop", "_loop_vars"}) or _has_for(code)
    return v


def _has_for(code) -> bool:
    import dis

    return any(i.opname in ("FOR_ITER", "GET_ITER") for i in dis.get_instructions(code))


_BINOPS = {nodes.Mul: "*", nodes.Pow: "**", nodes.Add: "+", nodes.Mod: "%"}
_NOT_CONST = object()


def _const(node):
    """The value of a constant expression, evaluated with the limits; _NOT_CONST when it is not one."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg):
        v = _const(node.node)
        return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else _NOT_CONST
    if isinstance(node, (nodes.Tuple, nodes.List)):
        items = [_const(x) for x in node.items]
        return _NOT_CONST if any(x is _NOT_CONST for x in items) else items
    if type(node) in _BINOPS:
        left, right = _const(node.left), _const(node.right)
        if left is _NOT_CONST or right is _NOT_CONST:
            return _NOT_CONST
        try:
            return bounded_binop(_BINOPS[type(node)], left, right)
        except LimitError:
            raise
        except Exception:  # noqa: BLE001 - a type error of constants is the render's to report
            return _NOT_CONST
    return _NOT_CONST


def check(tree: nodes.Template) -> str | None:
    """What in a parsed rule text breaks the limits above (one phrase), or None."""
    for node in tree.find_all(_FORBIDDEN):
        return f"'{type(node).__name__.lower()}' is not allowed in rule text"
    for loop in tree.find_all(nodes.For):
        if loop.recursive:
            return "a recursive loop is not allowed in rule text"
        if any(True for _ in loop.find_all(nodes.For)):
            return "a loop inside a loop is not allowed in rule text"
    for f in tree.find_all(nodes.Filter):
        if f.name not in ALLOWED_FILTERS:
            return f"the filter '{f.name}' is not allowed in rule text (allowed: {', '.join(sorted(ALLOWED_FILTERS))})"
    for c in tree.find_all(nodes.Call):
        if not (isinstance(c.node, nodes.Name) and c.node.name in ("command", "range")):
            return "only command(...) and range(...) may be called in rule text"
    for b in tree.find_all(tuple(_BINOPS)):
        try:
            _const(b)
        except LimitError as e:
            return f"{e}"
    return None
