"""Golden files: what `nsys-expert diagnose fixtures/<case>/input` produces, in two parts (issue 59, item 6).

- `expected.json`: what a user sees, checked by hand: the window, the verdict, the findings (rank, rule,
  severity, gains, confidence, scope, message, subject, cause, evidence, supporting findings), the
  recoverable time, the not-evaluated rules, the warnings, the inputs, and `cited_facts` (the run facts the
  findings' evidence cites, with their values). `expected.md` is the whole Markdown report.
- `facts.json`: the snapshot of every run fact of the diagnosis (`{"facts": {...}}`), regenerated in one
  command. A new fact changes only these snapshots (and nothing a user sees), so its review is one
  command's output, not every fixture's golden.

    python tests/golden.py            # show what changed (all three files), write nothing
    python tests/golden.py --facts    # rewrite the facts snapshots (facts.json) only
    python tests/golden.py --update   # rewrite expected.json / expected.md too (only after checking why)

`tests/cases/test_golden.py` asserts both parts on every fixture; tests that read a fixture's golden
document as one mapping use `conftest.expected_doc(case)` (expected.json with facts.json's facts).
"""
from __future__ import annotations

import difflib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nsys_expert import config, pipeline, report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures")


def produce(case: str, lang: str = "en") -> tuple[dict, str]:
    # run as a user in the case's folder types it, `nsys-expert diagnose input`: paths in the report
    # (the several-runs split command) are then the same on every checkout
    here = os.getcwd()
    os.chdir(os.path.join(FIXTURES, case))
    try:
        doc = pipeline.diagnose(pipeline.Request(["input"], config.Settings(lang=lang)))
    finally:
        os.chdir(here)
    for i in doc["inputs"]:
        i["path"] = os.path.basename(i["path"])
    text = json.loads(report.to_json(doc))
    return text, report.render_markdown(doc, lang)


def cited_facts(doc: dict) -> dict:
    """The run facts the findings' evidence cites (kernel facts are in the evidence itself), with their values."""
    names = {e["fact"] for f in doc["findings"] for e in f["evidence"]}
    return {k: v for k, v in doc["facts"].items() if k in names}


def facts_view(doc: dict) -> dict:
    """The facts snapshot: every run fact of the diagnosis."""
    return {"facts": doc["facts"]}


def dumps(view: dict) -> str:
    return json.dumps(view, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def golden_view(doc: dict) -> dict:
    """The parts of the JSON report a user sees, which expected.json pins down (the facts: facts_view)."""
    return {
        "window": doc["window"],
        "verdict": doc["verdict"],
        "findings": [{k: f[k] for k in ("rank", "rule", "category", "severity", "estimated_gain_pct", "confidence", "scope",
                                        "message", "subject", "subject_share_pct", "cause")}
                     | {k: f[k] for k in ("gain_basis", "estimated_gain_range_pct") if k in f}
                     | ({"locations": f["locations"]} if f.get("locations") else {})
                     | {"evidence": [{k: e[k] for k in ("fact", "value", "threshold", "op", "source")} for e in f["evidence"]],
                        "supporting": [{k: s[k] for k in ("rule", "relation", "scope", "estimated_gain_pct")}
                                       for s in f["supporting"]]}
                     for f in doc["findings"]],
        "recoverable": doc["recoverable"],
        "too_little_work": doc["too_little_work"],
        "not_evaluated": [n["rule"] for n in doc["not_evaluated"]],
        "cited_facts": cited_facts(doc),
        "warnings": doc["warnings"],
        "inputs": [(i["path"], i["report"], i["version"], i["rows"]) for i in doc["inputs"]],
    }


def main(update: bool, facts_only: bool = False) -> int:
    changed = 0
    for case in sorted(os.listdir(FIXTURES)):
        if not os.path.isdir(os.path.join(FIXTURES, case, "input")):
            continue
        doc, md = produce(case)
        for name, new in (("expected.json", dumps(golden_view(doc))), ("expected.md", md), ("facts.json", dumps(facts_view(doc)))):
            path = os.path.join(FIXTURES, case, name)
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            if old != new:
                changed += 1
                print(f"--- {case}/{name}")
                sys.stdout.writelines(list(difflib.unified_diff(old.splitlines(True), new.splitlines(True), n=1))[:80])
                if update or (facts_only and name == "facts.json"):
                    open(path, "w", encoding="utf-8").write(new)
    written = "rewritten" if update else "differ (facts.json rewritten)" if facts_only else "differ"
    print(f"{changed} golden file(s) {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main("--update" in sys.argv, "--facts" in sys.argv))
