"""Where per-rank work runs (issue 21): the local process pool, a Dask cluster, broken ranks.

The Dask tests need the optional extra (`pip install -e ".[test,dask]"`, as CI and the README
install); without it they skip, saying so. The missing-extra message is tested either way.
"""
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from ranks.make_ranks import make

from nsys_expert import __version__, config, pipeline, report, scheduler
from nsys_expert.errors import InputError
from nsys_expert.report.terminal import rank_bar

NSX = [sys.executable, "-m", "nsys_expert"]


def as_json(doc: dict) -> dict:
    return json.loads(report.to_json(doc))


def diagnose(path, **kw) -> dict:
    return as_json(pipeline.diagnose(pipeline.Request([str(path)], config.Settings(**kw))))


def break_rank(job, k: int) -> None:
    """Rank k's GPU trace becomes a CSV that is not an nsys report (its own text: not a copy of another)."""
    with open(os.path.join(job, f"rank{k}_cuda_gpu_trace.csv"), "w") as fh:
        fh.write(f"not,an,nsys,report\n{k},2,3,4\n")


def same_fields(a: dict, b: dict, where: str = "") -> list[str]:
    """Every path at which two JSON reports differ (empty: the same, field by field)."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'the first' if k in a else 'the second'}")
            else:
                out += same_fields(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            out += same_fields(x, y, f"{where}[{i}]")
    elif a != b:
        out.append(f"{where}: {a!r} vs {b!r}")
    return out


# --- the setting -------------------------------------------------------------------------------

def test_scheduler_values():
    assert scheduler.check(None) == "local" and scheduler.check("local") == "local"
    assert scheduler.check("dask") == "dask"
    assert scheduler.check("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert scheduler.check("tcp://[::1]:8786") == "tcp://[::1]:8786"
    for bad in ("ray", "tcp://host", "http://host:8786", "dask local"):
        with pytest.raises(InputError, match="use local, dask or tcp://HOST:PORT"):
            scheduler.check(bad)


def test_bad_scheduler_is_one_line_exit_2(tmp_path):
    make(str(tmp_path), ranks=3)
    p = subprocess.run(NSX + ["diagnose", str(tmp_path), "--scheduler", "ray"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == ["nsys-expert: error: unknown scheduler 'ray' (use local, dask or tcp://HOST:PORT)"]


def test_scheduler_from_settings(tmp_path):
    (tmp_path / "nsys-expert.toml").write_text('scheduler = "tcp://127.0.0.1:8786"\n')
    cfg = config.load(str(tmp_path / "nsys-expert.toml"))
    assert config.resolve(None, cfg).scheduler == "tcp://127.0.0.1:8786"
    given = config.resolve(SimpleNamespace(scheduler="local"), cfg)
    assert given.scheduler == "local"                      # the command line wins


def test_rank_bar():
    assert rank_bar(0, 64, width=8) == "░░░░░░░░ 0/64 ranks"
    assert rank_bar(32, 64, 1, width=8) == "████░░░░ 32/64 ranks (1 failed)"
    assert rank_bar(64, 64, width=8) == "████████ 64/64 ranks"


def test_the_bar_shows_on_the_terminal(tmp_path):
    """What the spinner line really prints (Rich markup must not eat the bar)."""
    import io

    from nsys_expert.report.terminal import progress

    import time

    out = io.StringIO()
    with progress(["job/"], "en", delay=0.0, stream=out, force=True) as step:
        step("ranks", 3, 8, 1)
        time.sleep(0.7)
    assert "nsys-expert: " + "█" * 9 + "░" * 15 + " 3/8 ranks (1 failed) job/" in out.getvalue()


def test_progress_is_told_each_rank(tmp_path):
    make(str(tmp_path), ranks=4, slow=1)
    break_rank(str(tmp_path), 2)
    seen = []
    pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings(jobs=1)), lambda *a: seen.append(a))
    assert seen == [("ranks", 1, 4, 0), ("ranks", 2, 4, 0), ("ranks", 3, 4, 1), ("ranks", 4, 4, 1)]


# --- broken ranks (the local pool) --------------------------------------------------------------

def test_a_broken_rank_is_reported_and_the_job_diagnosed_from_the_others(tmp_path):
    make(str(tmp_path), ranks=8, slow=5, factor=1.3)
    break_rank(str(tmp_path), 3)
    d = diagnose(tmp_path, jobs=2)
    assert [f["rank"] for f in d["ranks_failed"]] == ["rank3"]
    assert "rank3_cuda_gpu_trace.csv" in d["ranks_failed"][0]["error"]
    assert "not an nsys stats cuda_gpu_trace header" in d["ranks_failed"][0]["error"]
    assert [r["rank"] for r in d["ranks"]] == [f"rank{k}" for k in range(8) if k != 3]
    assert d["facts"]["rank_count"] == 7
    assert any(str(w).startswith("[rank3] not diagnosed: ") and str(w).endswith("from the other 7 of 8 ranks") for w in d["warnings"])
    straggler = [f for f in d["findings"] if f["rule"] == "rank-straggler"][0]
    assert {e["fact"]: e["value"] for e in straggler["evidence"]}["straggler_rank"] == "rank5"


def test_every_rank_read_says_no_rank_failed(tmp_path):
    make(str(tmp_path), ranks=3)
    assert diagnose(tmp_path)["ranks_failed"] == []


def test_half_the_ranks_is_enough(tmp_path):
    make(str(tmp_path), ranks=4, slow=0)
    break_rank(str(tmp_path), 1)
    break_rank(str(tmp_path), 2)
    d = diagnose(tmp_path, jobs=1)
    assert [f["rank"] for f in d["ranks_failed"]] == ["rank1", "rank2"] and len(d["ranks"]) == 2


@pytest.mark.slow   # 4.1 s in the fast set on the shared 2-core machine (issue 56, item 14)
def test_fewer_than_half_left_is_one_line_exit_2(tmp_path):
    make(str(tmp_path), ranks=5, slow=0)
    for k in (0, 2, 4):
        break_rank(str(tmp_path), k)
    p = subprocess.run(NSX + ["diagnose", str(tmp_path), "--format", "json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    line, = p.stderr.strip().splitlines()
    assert line.startswith("nsys-expert: error: 3 of 5 ranks could not be diagnosed, fewer than half remain (rank0: ")
    assert "rank0_cuda_gpu_trace.csv" in line and "also rank2, rank4)" in line and "Traceback" not in p.stderr


# --- Dask ----------------------------------------------------------------------------------------

@pytest.mark.slow   # 2.9 s in the fast set on the shared 2-core machine (issue 56, item 14)
def test_missing_extra_is_one_line_exit_2(tmp_path):
    """Without `distributed` (hidden here, whether it is installed or not): one line naming the fix."""
    make(str(tmp_path), ranks=3)
    hide = ("import sys; sys.modules['distributed'] = None; sys.argv = ['nsys-expert'] + sys.argv[1:]; "
            "from nsys_expert.cli import main; main()")
    for sched in ("dask", "tcp://127.0.0.1:8786"):
        p = subprocess.run([sys.executable, "-c", hide, "diagnose", str(tmp_path), "--scheduler", sched],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.strip().splitlines() == [
            f"nsys-expert: error: --scheduler {sched} needs Dask, an optional extra that is not installed "
            '(pip install "nsys-expert[dask]")']


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes on the loopback interface (no dashboard)."""
    distributed = pytest.importorskip("distributed", reason='the dask extra is not installed (pip install -e ".[test,dask]")')
    with distributed.LocalCluster(**scheduler.local_cluster_options(2)) as c:
        yield c


@pytest.mark.slow
def test_local_cluster_gives_the_same_json_as_the_local_pool(tmp_path, cluster):
    # the scheduler and both workers listen on the loopback interface only
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    assert len(cluster.scheduler_info["workers"]) == 2
    assert all(w.startswith("tcp://127.0.0.1:") for w in cluster.scheduler_info["workers"])
    make(str(tmp_path), ranks=64, slow=17, factor=1.2)
    local = diagnose(tmp_path, jobs=2)
    on_dask = diagnose(tmp_path, scheduler=cluster.scheduler_address)
    assert len(on_dask["ranks"]) == 64 and on_dask["ranks_failed"] == []
    assert same_fields(local, on_dask) == []
    assert on_dask["ranks"][17]["facts"]["nccl_last_arrival_pct"] > 90      # it is a real comparison


@pytest.mark.slow
def test_a_broken_rank_on_dask(tmp_path, cluster):
    make(str(tmp_path), ranks=6, slow=4, factor=1.3)
    break_rank(str(tmp_path), 1)
    d = diagnose(tmp_path, scheduler=cluster.scheduler_address)
    assert [f["rank"] for f in d["ranks_failed"]] == ["rank1"]
    assert "rank1_cuda_gpu_trace.csv" in d["ranks_failed"][0]["error"]   # the worker's InputError, as the pool gives it
    assert same_fields(d, diagnose(tmp_path, jobs=1)) == []


@pytest.mark.slow
def test_cli_scheduler_dask_from_the_settings_file(tmp_path):
    """`--scheduler dask` through `scheduler = "dask"` in a settings file: a LocalCluster of its own."""
    pytest.importorskip("distributed", reason='the dask extra is not installed (pip install -e ".[test,dask]")')
    job = tmp_path / "job"
    make(str(job), ranks=4, slow=2, factor=1.3)
    (tmp_path / "nsys-expert.toml").write_text('scheduler = "dask"\n')
    p = subprocess.run(NSX + ["diagnose", str(job), "--format", "json", "--config", str(tmp_path / "nsys-expert.toml")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""                                  # the cluster's logs stay quiet
    doc = json.loads(p.stdout)
    assert doc.pop("settings")["file"].endswith("nsys-expert.toml")   # the report says which file it read
    assert same_fields(doc, {k: v for k, v in diagnose(job).items() if k != "settings"}) == []


PRETEND_NOT_INSTALLED = '''
import importlib.metadata as m
_version = m.version
def version(name):
    if name == "nsys-expert":
        raise m.PackageNotFoundError(name)
    return _version(name)
m.version = version
'''


@pytest.mark.slow
def test_workers_without_nsys_expert_are_named_not_waited_for(tmp_path):
    """An existing cluster whose workers lack nsys-expert (a preload pretends so): one clear error
    before any task is sent (a worker that cannot unpickle the task stalls, it does not fail)."""
    distributed = pytest.importorskip("distributed", reason='the dask extra is not installed (pip install -e ".[test,dask]")')
    make(str(tmp_path / "job"), ranks=3)
    (tmp_path / "pretend.py").write_text(PRETEND_NOT_INSTALLED)
    with distributed.LocalCluster(**scheduler.local_cluster_options(2), preload=[str(tmp_path / "pretend.py")]) as c:
        with pytest.raises(InputError) as e:
            diagnose(tmp_path / "job", scheduler=c.scheduler_address)
    assert e.value.line().startswith(f"{c.scheduler_address}: 2 of 2 Dask workers cannot run the per-rank work (tcp://127.0.0.1:")
    assert e.value.line().endswith(f"has no nsys-expert) (pip install nsys-expert=={__version__} on every worker)")
