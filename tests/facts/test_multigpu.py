"""facts/multigpu.py on the real DDP trace, and on copies of real traces edited in the test (issue 54)."""
import gzip
import json
import shutil
import sqlite3

import pytest

from conftest import FIXTURES
from nsys_expert import facts, load

DDP = FIXTURES / "kineto_hta_ddp_v100" / "input" / "df_index_resolver.json.gz"
H100 = FIXTURES / "h100_2gpu_nsys2026_sqlite" / "input" / "nsys-ai__h100_2gpu_1s.sqlite"


def _facts(path, pid=None):
    prof = load.load_files([str(path)], pid=pid)
    return facts.compute(prof, facts.Options()).run


@pytest.mark.slow
def test_real_ddp_rank_all_reduces_once_per_optimizer_step():
    run = _facts(DDP)
    # per step: the main thread launches the forward, the autograd thread the backward with all 404
    # all-reduces, then the main thread SGD's 404 kernels (checked by hand, docs/prescriptions.md)
    assert run["backward_passes_per_opt_step"] == 1.0
    assert run["allreduce_passes_per_opt_step"] == 1.0
    assert run["allreduce_extra_exposed_pct"] == 0.0
    assert run["dp_broadcast_reduce_count"] == 0
    assert "gpu_devices_per_process" not in run


@pytest.mark.slow
def test_ddp_trace_with_every_other_optimizer_step_removed_counts_two_all_reducing_passes(tmp_path):
    """The real DDP trace with the Optimizer.step ranges of ProfilerStep#3 and #5 deleted (nothing else
    changed): the markers of accumulating 2 micro-batches per optimizer step without no_sync() (each
    backward pass still all-reduces). The optimizer's kernels still run every step: only the counting
    of passes per optimizer range is tested, not a gain."""
    doc = json.loads(gzip.decompress(DDP.read_bytes()))
    opt = sorted((e for e in doc["traceEvents"] if e.get("name") == "Optimizer.step#SGD.step"), key=lambda e: e["ts"])
    drop = {id(opt[1]), id(opt[3])}
    doc["traceEvents"] = [e for e in doc["traceEvents"] if id(e) not in drop]
    out = tmp_path / "rank0.pt.trace.json.gz"
    out.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    run = _facts(out)
    assert run["allreduce_passes_per_opt_step"] >= 1.5
    assert run["allreduce_extra_exposed_pct"] >= 0.0
    # rules/code/grad-accum-no-sync.yaml fires at allreduce_passes_per_opt_step >= 1.5


def test_two_processes_one_gpu_each_is_no_data_parallel():
    run = _facts(H100, pid=111)
    assert run["dp_broadcast_reduce_count"] == 0
    assert "gpu_devices_per_process" not in run


def test_one_process_on_both_gpus_is_counted(tmp_path):
    """The real 2-process H100 export with process 112's rows given to process 111 (its globalPid in every
    table that has one; globalTid keeps its thread bits): one process whose work runs on both GPUs, as
    DataParallel's would. It has no NCCL broadcast or reduce, so the rule stays quiet."""
    db = tmp_path / "one_process.sqlite"
    shutil.copy(H100, db)
    con = sqlite3.connect(db)
    pids = {}
    for (t,) in con.execute("select name from sqlite_master where type='table'").fetchall():
        cols = [c[1] for c in con.execute(f"pragma table_info('{t}')")]
        if "globalPid" in cols:
            for (g,) in con.execute(f"select distinct globalPid from '{t}' where globalPid is not null"):
                pids[(g >> 24) & 0xFFFFFF] = g
    assert {111, 112} <= set(pids)
    for (t,) in con.execute("select name from sqlite_master where type='table'").fetchall():
        cols = [c[1] for c in con.execute(f"pragma table_info('{t}')")]
        if "globalPid" in cols:
            con.execute(f"update '{t}' set globalPid = ? where globalPid = ?", (pids[111], pids[112]))
        if "globalTid" in cols:
            con.execute(f"update '{t}' set globalTid = globalTid - ? + ? where globalTid >= ? and globalTid < ?",
                        (pids[112], pids[111], pids[112], pids[112] + (1 << 24)))
    con.commit()
    con.close()
    run = _facts(db, pid=111)
    assert run["gpu_devices_per_process"] == 2
    assert run["dp_broadcast_reduce_count"] == 0
