"""facts/waits.py: when the launching threads are blocked, and when they sleep (hand-made traces whose
answers are worked out by hand)."""
from types import SimpleNamespace

import polars as pl

from nsys_expert.facts import timeline, waits


def _prof(launches, osrt):
    """launches: (tid, start); osrt: (tid, name, start, end), all in ns."""
    api = pl.DataFrame({"start_ns": [s for _, s in launches], "end_ns": [s + 5 for _, s in launches],
                        "tid": [t for t, _ in launches], "name": ["cudaLaunchKernel"] * len(launches)})
    o = pl.DataFrame({"tid": [r[0] for r in osrt], "name": [r[1] for r in osrt],
                      "start_ns": [r[2] for r in osrt], "end_ns": [r[3] for r in osrt]})
    return SimpleNamespace(tables={"api_trace": api.sort("start_ns"), "osrt_trace": o})


def _spans(df):
    return [tuple(r) for r in df.select("s", "e").iter_rows()]


def test_one_thread_sleeps_then_polls():
    prof = _prof([(1, 0), (1, 500)], [(1, "clock_nanosleep", 100, 200), (1, "poll", 250, 400)])
    got, tid = waits.wait_intervals(prof, 0, 1000)
    assert tid == 1
    assert _spans(got["wait"]) == [(100, 200), (250, 400)]
    assert _spans(got["sleep"]) == [(100, 200)]   # the poll is a wait, not a sleep
    assert _spans(got["gil"]) == []


def test_a_sleep_while_another_launching_thread_works_is_neither():
    # thread 1 sleeps 100-300; thread 2 (launching as much) is blocked only 150-250, in a read
    prof = _prof([(1, 0), (2, 10), (1, 600), (2, 610)],
                 [(1, "nanosleep", 100, 300), (2, "read", 150, 250)])
    got, _ = waits.wait_intervals(prof, 0, 1000)
    assert _spans(got["wait"]) == [(150, 250)]   # both blocked only there
    assert _spans(got["sleep"]) == [(150, 250)]    # and one of them asleep through it


def test_gil_waits_are_condition_waits_of_the_switch_interval():
    ms = 1_000_000
    # thread 1 launches; between launches it waits in pthread_cond_timedwait: 30 calls of 5 ms (the GIL)
    gil = [(1, "pthread_cond_timedwait", 10 * ms + k * 6 * ms, 15 * ms + k * 6 * ms) for k in range(30)]
    prof = _prof([(1, 0), (1, 400 * ms)], gil)
    got, _ = waits.wait_intervals(prof, 0, 500 * ms)
    assert got["gil"].height == 30 and _spans(got["gil"]) == _spans(got["wait"])
    assert waits.gil_waiters(prof.tables["osrt_trace"]) == {1: 100.0}
    # the same waits lasting 50 ms each (a condition variable with a long timeout): not the GIL
    slow = [(1, "pthread_cond_timedwait", k * 60 * ms, k * 60 * ms + 50 * ms) for k in range(30)]
    got, _ = waits.wait_intervals(_prof([(1, 0), (1, 1900 * ms)], slow), 0, 2000 * ms)
    assert got["gil"].height == 0 and got["wait"].height == 30
    # too few calls to tell
    assert waits.gil_waiters(pl.DataFrame(gil[:5], schema=["tid", "name", "start_ns", "end_ns"], orient="row")) == {}


def test_gap_causes_sleep_and_gil_before_wait_and_load():
    ms = 1_000_000   # gaps of milliseconds: longer than a launch gap
    iv = lambda *p: pl.DataFrame({"s": [a * ms for a, _ in p], "e": [b * ms for _, b in p]})  # noqa: E731
    gaps = iv((100, 400), (1000, 1300), (2000, 2300), (3000, 3300)).with_columns(
        corr_id=pl.Series([1, 2, 3, 4]), launch_e=pl.Series([450 * ms, 1350 * ms, 2350 * ms, 3350 * ms]))
    empty = iv().cast(pl.Int64)
    host = {"memcpy": empty, "sync": empty, "alloc": empty,
            "load": iv((2000, 2250)),                # cuLibraryLoadData over most of gap 3
            "sleep": iv((100, 380)),                 # asleep through most of gap 1
            "gil": iv((3000, 3290)),                 # waiting for the GIL through gap 4
            "wait": iv((100, 380), (1000, 1290), (3000, 3290))}    # blocked through gaps 1, 2 and 4
    out = timeline.attribute_gaps(gaps, pl.DataFrame(), host, None)
    assert out["cause"].cast(pl.String).to_list() == ["sleep", "wait", "load", "gil"]


def test_after_sync_is_the_gap_after_the_sync_returned():
    # gap 1 starts inside a sync call that returns 30 ns later; gap 2 is a launch gap (not counted);
    # gap 3 starts inside a sync that lasts past the gap's end (nothing after it)
    gaps = pl.DataFrame({"s": [100, 500, 900], "e": [400, 520, 950],
                         "cause": ["sync", "launch", "sync"]})
    sync = pl.DataFrame({"s": [50, 880], "e": [130, 1000]})
    assert timeline.after_sync_ns(gaps, sync) == (400 - 130) + 0
    assert timeline.after_sync_ns(gaps, sync.clear()) == 0

