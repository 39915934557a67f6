"""The long-iteration benchmark profile (issue 47, benchmarks/make_long.py): the steady part of a real
export laid end to end, its steps regrouped into few long iterations, every kernel with its one call."""
import sqlite3
import sys

from conftest import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import make_long  # noqa: E402

SRC = FIXTURES / "sync_bound_sqlite" / "input" / "sync_bound.sqlite"


def _one(path, sql):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchone()
    finally:
        con.close()


def test_long_iterations_hold_the_kernels_asked_for(tmp_path):
    out = tmp_path / "long.sqlite"
    make_long.tile_steps(str(SRC), 3, str(out))
    k1 = _one(SRC, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= "
                   "(SELECT min(start) FROM NVTX_EVENTS WHERE text = 'step')")[0]
    k0 = _one(SRC, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]
    kernels, iters = make_long.lengthen(str(out), 600)
    assert kernels == k0 + 2 * k1                       # the steady part twice more
    n_steps, lo, hi = _one(out, "SELECT count(*), min(start), max(\"end\") FROM NVTX_EVENTS WHERE text = 'step'")
    assert n_steps == iters and 3 <= iters < 20
    # each iteration holds about 600 kernels (whole steps), and every kernel keeps its one launch call
    per = _one(out, "SELECT max(c) FROM (SELECT count(*) c FROM NVTX_EVENTS n JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
                    "ON k.start >= n.start AND k.start < n.\"end\" WHERE n.text = 'step' GROUP BY n.start)")[0]
    assert 300 <= per < 600
    assert _one(out, "SELECT count(DISTINCT correlationId) = count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0] == 1
    assert _one(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                     "ON r.correlationId = k.correlationId WHERE r.correlationId IS NULL")[0] == 0
