"""Issue 56, item 8 ("More input, weaker verdict: a CSV folder with more reports says 'likely gpu-starved' and leaves
launch-bound unevaluated, where its console text alone says 'likely launch-bound'"). It did not reproduce on the
closest real inputs, two reads of the same H200 launch_bound run: fixtures/console_launch_bound (the `nsys stats`
console text: kern sum and API sum) and fixtures/launch_bound_summaries (the summary CSVs, more reports). This pins
the right behaviour: the folder with more reports names the same cause, evaluates launch-bound, and is no weaker."""
from __future__ import annotations

from conftest import FIXTURES, diagnosed
from nsys_expert.engine.rules import SEVERITIES


def _verdict(case):
    doc = diagnosed(FIXTURES / case / "input")
    return doc["verdict"], {n["rule"] for n in doc["not_evaluated"]}


def test_more_reports_never_weaken_the_console_texts_verdict():
    console, _ = _verdict("console_launch_bound")
    more, unevaluated = _verdict("launch_bound_summaries")
    assert console["rule"] == more["rule"] == "launch-bound", (console, more)
    assert "launch-bound" not in unevaluated and more["category"] != "gpu-starved"
    assert SEVERITIES.index(more["severity"]) >= SEVERITIES.index(console["severity"]), (console, more)
