"""Multi-rank jobs: rank discovery, per-rank facts, cross-rank facts, the straggler."""
import json
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, SHARED, diagnosed
from ranks.make_ranks import make

from nsys_expert import config, pipeline
from nsys_expert.load import list_inputs
from nsys_expert.load.ranks import discover

NSX = [sys.executable, "-m", "nsys_expert"]


def diagnose(*paths, **kw):
    return pipeline.diagnose(pipeline.Request([str(p) for p in paths], config.Settings(**kw)))


def test_derived_4_rank_fixture_names_the_straggler():
    d = diagnosed(FIXTURES / "ddp_derived_4rank" / "input")
    assert [r["rank"] for r in d["ranks"]] == ["rank0", "rank1", "rank2", "rank3"]
    top = d["findings"][0]
    assert top["rule"] == "rank-straggler" and top["severity"] == "high"
    ev = {e["fact"]: e["value"] for e in top["evidence"]}
    assert ev["straggler_rank"] == "rank2" and ev["straggler_last_arrival_pct"] == 100.0
    assert 1.25 < ev["rank_compute_skew"] < 1.35          # the derivation slowed rank2 by 1.3
    assert d["representative_rank"] != "rank2"            # the typical rank speaks for the job
    by = {r["rank"]: r for r in d["ranks"]}
    assert by["rank2"]["facts"]["nccl_share_of_busy_pct"] < by["rank0"]["facts"]["nccl_share_of_busy_pct"]
    assert by["rank0"]["facts"]["nccl_kernel_count"] == 39


@pytest.mark.slow
def test_64_ranks_one_slowed(tmp_path):
    make(str(tmp_path), ranks=64, slow=17, factor=1.2)
    d = diagnose(tmp_path)
    assert len(d["ranks"]) == 64 and d["facts"]["rank_count"] == 64
    f = [x for x in d["findings"] if x["rule"] == "rank-straggler"][0]
    assert {e["fact"]: e["value"] for e in f["evidence"]}["straggler_rank"] == "rank17"
    assert d["findings"][0]["rule"] == "rank-straggler"


@pytest.mark.slow
def test_balanced_ranks_have_no_straggler(tmp_path):
    make(str(tmp_path), ranks=8, slow=3, factor=1.0)
    d = diagnose(tmp_path)
    assert "rank-straggler" not in [x["rule"] for x in d["findings"]]
    assert d["facts"]["straggler_last_arrival_pct"] < 50


@pytest.mark.slow
def test_process_pool_gives_the_same_facts(tmp_path):
    make(str(tmp_path), ranks=4, slow=1, factor=1.3)
    seq = diagnose(tmp_path, jobs=1)
    par = diagnose(tmp_path, jobs=2)
    assert seq["facts"] == par["facts"] and [r["facts"] for r in seq["ranks"]] == [r["facts"] for r in par["ranks"]]


@pytest.mark.slow
def test_one_folder_per_rank_on_the_command_line(tmp_path):
    make(str(tmp_path / "all"), ranks=3, slow=0, factor=1.3)
    for k in range(3):
        (tmp_path / f"node{k}").mkdir()
        for f in (tmp_path / "all").glob(f"rank{k}_*"):
            shutil.copy(f, tmp_path / f"node{k}" / f.name.replace(f"rank{k}_", "prof_"))
    d = diagnose(tmp_path / "node0", tmp_path / "node1", tmp_path / "node2")
    assert len(d["ranks"]) == 3
    assert {e["fact"]: e["value"] for f in d["findings"] if f["rule"] == "rank-straggler" for e in f["evidence"]}["straggler_rank"] == "node0/prof"
    # labels from the folder when the prefixes are the same: every rank is its own input
    assert len({i["rank"] for i in d["inputs"]}) == 3


def test_a_copy_is_one_rank_not_two(tmp_path):
    src = FIXTURES / "sync_bound" / "input"
    for f in src.iterdir():
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(src / "sync_bound_cuda_gpu_trace.csv", tmp_path / "sync_bound_copy_cuda_gpu_trace.csv")
    per, _ = list_inputs([str(tmp_path)])
    ranks, notes = discover(per)
    assert len(ranks) == 1 and any("is a copy of" in str(n) for n in notes)


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "public-samples" / "nsys-ai__h100_2gpu_1s.sqlite").exists(), reason="needs ../shared")
def test_two_gpu_export_reports_two_ranks():
    p = subprocess.run(NSX + ["diagnose", str(SHARED / "public-samples" / "nsys-ai__h100_2gpu_1s.sqlite"), "--format", "json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert len(d["ranks"]) == 2 and d["facts"]["rank_count"] == 2
    for r in d["ranks"]:
        assert r["facts"]["gpu_active_pct"] > 90 and r["facts"]["kernel_count"] > 1000
    md = subprocess.run(NSX + ["diagnose", str(SHARED / "public-samples" / "nsys-ai__h100_2gpu_1s.sqlite")],
                        capture_output=True, text=True, timeout=300).stdout
    assert "| `pid 111` |" in md and "| `pid 112` |" in md


def test_a_copy_of_one_rank_among_several_stays_out_of_the_others(tmp_path):
    """Two real ranks and a byte copy of rank1's run under another prefix: two ranks, each with its own
    files only (the copy's files once went to every rank, giving each two GPU timelines)."""
    src = FIXTURES / "ddp_derived_4rank" / "input"
    for f in src.iterdir():
        if f.name.startswith(("rank0_", "rank1_")):
            shutil.copy(f, tmp_path / f.name)
            if f.name.startswith("rank1_"):
                shutil.copy(f, tmp_path / f.name.replace("rank1_", "rank1copy_"))
    per, _ = list_inputs([str(tmp_path)])
    ranks, notes = discover(per)
    assert [r.label for r in ranks] == ["rank0", "rank1"]
    for r in ranks:
        assert all(r.label + "_" in f for f in r.files), r.files
    note = next(str(n) for n in notes if "is a copy of" in str(n))
    assert "rank1copy_cuda_gpu_trace.csv" in note and "not read" in note
    d = diagnose(tmp_path)
    assert [r["rank"] for r in d["ranks"]] == ["rank0", "rank1"]


# ------------------------------------------------------------------ the Job (job.py) and its report (report/job.py)
def _job(path, opts=None):
    from nsys_expert import facts, job
    from nsys_expert.load import list_inputs

    per_path, skipped = list_inputs([str(path)])
    ranks, notes = discover(per_path)
    return job.gather(ranks, notes, skipped, opts or facts.Options(), None, 1)


def test_a_job_keeps_each_ranks_own_facts_and_puts_the_cross_rank_ones_apart():
    """What the engine evaluates a rank on is its own facts; its row shows them with its cross-rank
    facts; the job's facts are the representative's with both."""
    j = _job(FIXTURES / "ddp_derived_4rank" / "input")
    assert [r.label for r in j.ranks] == ["rank0", "rank1", "rank2", "rank3"] and j.total == 4
    assert j.failed == [] and j.left_out == [] and not j.one_run
    assert j.representative.label in ("rank1", "rank3") and j.representative.prof.tables == {}
    assert "rank_count" not in j.ranks[0].fs.run and "rank_count" not in j.representative.fs.run
    assert j.fs.run["rank_count"] == 4 and j.fs.sources["rank_count"] == "cross-rank"
    assert not set(j.fs.absent) & set(j.fs.run)            # a fact now known is not said absent
    row = j.rank_facts(2)
    assert row.run["nccl_last_arrival_pct"] == j.per_rank[2]["nccl_last_arrival_pct"] == 100.0   # the straggler
    assert row.sources["nccl_last_arrival_pct"] == "cross-rank" and "nccl_last_arrival_pct" not in j.ranks[2].fs.run
    # a rank's kept result holds no trace tables: only what the engine and the report read
    assert set(j.ranks[0].fs.tables) <= {"ncu_command"} and j.ranks[0].fs.work.busy is None
    assert j.ranks[0].fs.share.nccl_sequence is not None        # what the cross-rank facts align


def test_the_job_report_merges_the_ranks_warnings():
    """A warning every rank has is said once, first; then what was said of the inputs; each other
    warning names its rank; what was left out is said last."""
    from nsys_expert import engine
    from nsys_expert.report.job import build_job

    j = _job(FIXTURES / "ddp_derived_4rank" / "input")
    for r in j.ranks:
        r.fs.warnings = ["every rank says this"] + (["only rank1 says this"] if r.label == "rank1" else [])
    j.notes, j.left_out = ["a note on the inputs"], ["[rank9] not diagnosed: gone"]
    j.failed = [{"rank": "rank9", "error": "gone"}]
    rs = engine.RuleSet.build(engine.load_packs([]), [], [], [], "en")
    ev = engine.evaluate(rs, j.fs, j.representative.tables | {"ranks"}, ranks=[(r.label, r.fs, r.tables) for r in j.ranks])
    doc = build_job(j, ev, "en")
    said = [str(w) for w in doc["warnings"]]          # Notes and the plain strings set here, as the JSON says them
    base = [w for w in said if "says this" in w or w in ("a note on the inputs", "[rank9] not diagnosed: gone")]
    assert base == ["every rank says this", "a note on the inputs", "[rank1] only rank1 says this",
                    "[rank9] not diagnosed: gone"]
    assert doc["ranks_failed"] == [{"rank": "rank9", "error": "gone"}]
    assert list(doc)[-3:] == ["ranks_failed", "representative_rank", "ranks"]     # the rows last
    assert {i["rank"] for i in doc["inputs"]} == {"rank0", "rank1", "rank2", "rank3"}


def test_one_run_read_twice_is_one_run_with_a_note(tmp_path):
    """Two folders holding one run (the second's trace written again: another file, the same run)
    are diagnosed as that run, once, through the single run's report; the note says which was read."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "ddp_derived_4rank" / "input", a, ignore=shutil.ignore_patterns("rank[123]_*"))
    shutil.copytree(a, b)
    with open(b / "rank0_cuda_gpu_trace.csv", "a") as fh:
        fh.write("\n")                                      # another file (its digest), the same run
    d = diagnose(a, b)
    alone = diagnose(a)
    assert "ranks" not in d and "representative_rank" not in d
    assert d["facts"] == alone["facts"] and d["findings"] == alone["findings"]
    assert "is the same run as" in str(d["warnings"][-1]) and "read once" in str(d["warnings"][-1])


def test_one_run_read_twice_beside_a_broken_rank_says_the_broken_one(tmp_path):
    """Three folders: one run twice and a rank that cannot be read. The run is diagnosed once, and its
    report says which folder was not diagnosed (before, that was lost with the job)."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    shutil.copytree(FIXTURES / "ddp_derived_4rank" / "input", a, ignore=shutil.ignore_patterns("rank[123]_*"))
    shutil.copytree(a, b)
    shutil.copytree(a, c)
    with open(b / "rank0_cuda_gpu_trace.csv", "a") as fh:
        fh.write("\n")
    (c / "rank0_cuda_gpu_trace.csv").write_text("not,an,nsys,report\n1,2,3,4\n")
    d = diagnose(a, b, c, jobs=1)
    assert "ranks" not in d
    assert any("is the same run as" in str(w) for w in d["warnings"])
    last = str(d["warnings"][-1])
    assert last.startswith("[c/rank0] not diagnosed: ") and last.endswith("from the other 1 of 3 ranks")
