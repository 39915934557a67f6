"""A finding's places in the user's code (issue 55) as the JSON, Markdown, HTML and terminal show them: the
real pair_loss_item_sqlite diagnosis, its step-sync finding given the places a with_stack trace gives it."""
import json
import os

import pytest

from conftest import diagnosed
from nsys_expert.facts.where import Location
from nsys_expert.report import render_markdown, to_json
from nsys_expert.report.html import render_html

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "pair_loss_item_sqlite", "input")


@pytest.fixture(scope="module")
def placed():
    d = diagnosed(FIX)
    [f] = [x.finding for x in d.findings if x.finding.rule == "step-sync"]
    f.locations = [Location("callbacks.py", 48, "on_step_end", "aten::item", 92.0,
                            ["train.py:10 in main", "trainer.py:50 in fit"], "torch.profiler:with_stack"),
                   Location("trainer.py", 57, "train_step", "aten::item", 8.0, [], "torch.profiler:with_stack")]
    return d


def test_json_lists_the_places(placed):
    doc = json.loads(to_json(placed))
    [f] = [x for x in doc["findings"] if x["rule"] == "step-sync"]
    assert f["locations"][0] == {"file": "callbacks.py", "line": 48, "function": "on_step_end", "operator": "aten::item",
                                 "share_pct": 92.0, "chain": ["train.py:10 in main", "trainer.py:50 in fit"],
                                 "source": "torch.profiler:with_stack"}
    assert all("locations" not in x for x in doc["findings"] if x["rule"] != "step-sync")


@pytest.mark.parametrize("lang,head", [("en", "Where in the code"), ("zh", "代码位置")])
def test_markdown_and_html_say_where(placed, lang, head):
    md = render_markdown(placed, lang)
    assert head in md and "`callbacks.py:48`" in md and "`on_step_end`" in md and "`trainer.py:50 in fit`" in md
    html = render_html(placed, None, lang)
    assert head in html and "<code>callbacks.py:48</code>" in html and "<code>aten::item</code>" in html
