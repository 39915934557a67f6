"""Golden files: what `nsys-expert diagnose fixtures/<case>/input` produces, checked by hand.

    python tests/golden.py            # show what changed, write nothing
    python tests/golden.py --update   # rewrite expected.json / expected.md (only after checking why)
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


def golden_view(doc: dict) -> dict:
    """The parts of the JSON report a golden file pins down."""
    return {
        "window": doc["window"],
        "verdict": doc["verdict"],
        "findings": [{k: f[k] for k in ("rank", "rule", "category", "severity", "estimated_gain_pct", "confidence", "scope",
                                        "message", "subject", "subject_share_pct", "cause")}
                     | {k: f[k] for k in ("gain_basis", "estimated_gain_range_pct") if k in f}
                     | {"evidence": [{k: e[k] for k in ("fact", "value", "threshold", "op", "source")} for e in f["evidence"]],
                        "supporting": [{k: s[k] for k in ("rule", "relation", "scope", "estimated_gain_pct")}
                                       for s in f["supporting"]]}
                     for f in doc["findings"]],
        "recoverable": doc["recoverable"],
        "too_little_work": doc["too_little_work"],
        "not_evaluated": [n["rule"] for n in doc["not_evaluated"]],
        "facts": doc["facts"],
        "warnings": doc["warnings"],
        "inputs": [(i["path"], i["report"], i["version"], i["rows"]) for i in doc["inputs"]],
    }


def main(update: bool) -> int:
    changed = 0
    for case in sorted(os.listdir(FIXTURES)):
        if not os.path.isdir(os.path.join(FIXTURES, case, "input")):
            continue
        doc, md = produce(case)
        view = json.dumps(golden_view(doc), indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        for name, new in (("expected.json", view), ("expected.md", md)):
            path = os.path.join(FIXTURES, case, name)
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            if old != new:
                changed += 1
                print(f"--- {case}/{name}")
                sys.stdout.writelines(list(difflib.unified_diff(old.splitlines(True), new.splitlines(True), n=1))[:80])
                if update:
                    open(path, "w", encoding="utf-8").write(new)
    print(f"{changed} golden file(s) {'rewritten' if update else 'differ'}")
    return 0


if __name__ == "__main__":
    sys.exit(main("--update" in sys.argv))
