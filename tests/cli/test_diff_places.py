"""diff names a place in the user's code that held a cause before and none after (issue 55, item 5)."""
from nsys_expert.diff.where import places_gone


def _doc(findings, stacks=True):
    return {"facts": {"stacks_source": "torch.profiler:with_stack"} if stacks else {}, "findings": findings}


def _loc(file, line, fn, share):
    return {"file": file, "line": line, "function": fn, "operator": "aten::item", "share_pct": share}


def test_a_resolved_finding_s_places_are_gone():
    before = _doc([{"rule": "step-sync", "locations": [_loc("callbacks.py", 48, "on_step_end", 92.0),
                                                        _loc("trainer.py", 57, "train_step", 8.0)]}])
    gone = places_gone(before, _doc([]))
    assert [(g["file"], g["line"], g["share_before_pct"]) for g in gone] == [("callbacks.py", 48, 92.0),
                                                                             ("trainer.py", 57, 8.0)]
    assert gone[0]["share_after_pct"] is None


def test_a_place_that_stays_is_not_the_change():
    before = _doc([{"rule": "sync-bound", "locations": [_loc("callbacks.py", 48, "on_step_end", 60.0),
                                                         _loc("metrics.py", 20, "update", 40.0)]}])
    after = _doc([{"rule": "sync-bound", "locations": [_loc("metrics.py", 20, "update", 97.0),
                                                        _loc("callbacks.py", 48, "on_step_end", 3.0)]}])
    gone = places_gone(before, after)
    assert [(g["file"], g["share_after_pct"]) for g in gone] == [("callbacks.py", 3.0)]


def test_no_stacks_on_one_side_says_nothing():
    before = _doc([{"rule": "step-sync", "locations": [_loc("callbacks.py", 48, "on_step_end", 92.0)]}])
    assert places_gone(before, _doc([], stacks=False)) == []
