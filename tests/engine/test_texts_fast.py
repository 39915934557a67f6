"""The cheaper paths of rule-text rendering (issue 34) give the texts and the errors the Jinja2 sandbox
gives: a text with no Jinja2 syntax is not rendered, a text without a loop is joined at once and its
length checked after, the render context is made without walking the globals."""
import jinja2
import pytest

from nsys_expert.engine import sandbox, texts
from nsys_expert.engine.rules import ENV


def _jinja(source: str, ctx: dict) -> str:
    """The text as the sandbox rendered it before: new_context, every piece checked."""
    t = texts._template(source)
    out, n = [], 0
    for chunk in t.root_render_func(t.new_context(ctx, shared=True)):
        n += len(chunk)
        if n > sandbox.MAX_TEXT:
            raise sandbox.LimitError("too long")
        out.append(chunk)
    return "".join(out).strip()


SOURCES = ["Plain title: no syntax at all\n", "  spaces around, one line end \n\n", "a {{ x | num }} b", "{% if x > 1 %}big{% else %}small{% endif %}",
           "{% for i in range(3) %}{{ i }},{% endfor %}", "{{ name | truncate(5) }} {{ missing }}", "{# a comment #}text",
           "{% set y = x * 2 %}{{ y }}", "{{ [x, 3] | max }}"]


@pytest.mark.parametrize("source", SOURCES)
def test_texts_render_as_the_sandbox_renders_them(source):
    for x in (0.5, 7, 1234.5678):
        ctx = {**ENV.globals, "x": x, "name": "a very long kernel name"}
        assert texts.render_text(source, ctx) == _jinja(source, ctx)


def test_a_plain_text_is_not_rendered():
    assert texts._plain("Kernel at the memory roof\n") == "Kernel at the memory roof"
    for s in ("a {{ x }}", "{% if 1 %}{% endif %}", "{# c #}", "line\r\nend", "x" * (sandbox.MAX_TEXT + 1)):
        assert texts._plain(s) is None


def test_too_long_a_text_is_refused_with_or_without_a_loop():
    big = "y" * (sandbox.MAX_TEXT // 2 + 10)
    for source, looped in (("{{ v }}{{ v }}", False), ("{% for i in range(3) %}{{ v }}{% endfor %}", True)):
        t = texts._template(source)
        assert sandbox._loops(t) is looped
        with pytest.raises(sandbox.LimitError):
            sandbox.render(t, {**ENV.globals, "v": big})
    assert sandbox.render(texts._template("{{ v }}"), {"v": big}) == big


def test_the_render_context_reads_and_writes_as_jinja2s():
    t = texts._template("{% set z = 3 %}{{ z }}{{ q }}")
    ctx = {"q": "Q"}
    c = sandbox.context(t, ctx)
    assert isinstance(c, jinja2.runtime.Context) and c.parent is ctx and c.globals_keys == frozenset(t.globals)
    assert "".join(t.root_render_func(c)) == "3Q" and ctx == {"q": "Q"}     # writes go to the context's own vars


def test_float_arithmetic_takes_the_short_path_with_the_same_results():
    for op in ("*", "+", "**", "%"):
        for a, b in ((1.5, 2), (3, 0.25), (2.0, 3.0), (7, 2), (10 ** 300, 10 ** 300), ("ab", 3), (1e308, 10.0)):
            try:
                want = sandbox.bounded_binop(op, a, b)
            except Exception as e:  # noqa: BLE001
                with pytest.raises(type(e)):
                    ENV.call_binop(None, op, a, b)
                continue
            got = ENV.call_binop(None, op, a, b)
            assert got == want and type(got) is type(want)


def test_is_number_is_jinja2s():
    import decimal
    import fractions

    from jinja2.tests import test_number

    for v in (1, 1.5, True, False, None, "3", decimal.Decimal("2"), fractions.Fraction(1, 3), complex(1, 2), [1], float("nan")):
        assert ENV.tests["number"](v) == test_number(v), v
