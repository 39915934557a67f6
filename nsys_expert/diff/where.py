"""Places in the user's code compared (issue 55, item 5): a place that held a finding's cause before and
holds none of it after is the change made, named by file, line and function."""
from __future__ import annotations

GONE_BELOW_PCT = 5.0     # a place whose share of its cause falls under this after the change is gone


def _key(loc: dict) -> tuple:
    return loc.get("file"), loc.get("line"), loc.get("function")


def places_gone(before: dict, after: dict) -> list[dict]:
    """For each finding of ``before`` that lists places: those absent after (the finding resolved, or the
    place under GONE_BELOW_PCT of the same rule's points), largest share first. Only when both runs hold
    stacks (a run without them says nothing of places)."""
    if not _has_stacks(before) or not _has_stacks(after):
        return []
    now = {f.get("rule"): {_key(x): x for x in f.get("locations") or []} for f in after.get("findings", [])}
    out = []
    for f in before.get("findings", []):
        for loc in f.get("locations") or []:
            after_loc = now.get(f.get("rule"), {}).get(_key(loc))
            share_after = after_loc.get("share_pct") if after_loc else None
            if share_after is None or share_after < GONE_BELOW_PCT:
                out.append({"rule": f.get("rule"), "file": loc.get("file"), "line": loc.get("line"),
                            "function": loc.get("function"), "operator": loc.get("operator"),
                            "share_before_pct": loc.get("share_pct"), "share_after_pct": share_after})
    return sorted(out, key=lambda r: -(r["share_before_pct"] or 0.0))


def _has_stacks(doc: dict) -> bool:
    facts = doc.get("facts", {})
    return facts.get("stacks_source") is not None or any(f.get("locations") for f in doc.get("findings", []))
