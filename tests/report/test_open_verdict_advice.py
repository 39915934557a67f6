"""Issue 56, item 4 ("the console output ... says 'Nothing to do at the system level'"): a report whose verdict is
open (undetermined) printed "Nothing to do at the system level." as its advice whenever no finding had any, e.g.
on the laplace console text (fixtures/console_laplace: the public kern-sum console output, summary-only, GPU
utilization unknown). A summary-only verdict may be weaker than the trace's, never its opposite: the advice
section of an open verdict says no advice yet, in Markdown and HTML, en and zh. A report whose verdict is "no
bottleneck" (diagnosed, or likely from the rules that could run) keeps "Nothing to do at the system level."."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, diagnosed
from nsys_expert import report
from nsys_expert.report.html import render_html


def _doc(case, lang="en"):
    from nsys_expert import config
    return diagnosed(FIXTURES / case / "input", lang=lang)


def _advice(md: str) -> str:
    return md.split("## 8.")[1].split("\n## ")[0]


@pytest.mark.parametrize("lang,nothing,open_", [("en", "Nothing to do at the system level", "No advice yet"),
                                                ("zh", "系统层面无需优化", "暂无建议")])
def test_an_open_verdict_never_says_nothing_to_do(lang, nothing, open_):
    doc = _doc("console_laplace", lang)
    assert doc["verdict"]["state"] == "undetermined" and not [f for f in doc["findings"] if f.get("advice")]
    md = report.render_markdown(doc, lang)
    assert nothing not in md and open_ in _advice(md)
    html = render_html(doc, lang=lang)
    assert nothing not in html and open_ in html


def test_no_bottleneck_keeps_nothing_to_do():
    doc = _doc("pair_infer_graph_fixed_sqlite")       # likely: no system-level bottleneck by the rules that ran
    assert doc["verdict"]["state"] == "likely" and doc["verdict"]["reason"] == "no_finding_partial"
    assert "Nothing to do at the system level." in _advice(report.render_markdown(doc))
