"""Many ranks (issue 57 item 4): a job too big for the local pool says so, with --scheduler, before any rank
runs; the work per rank does not grow with the ranks (counted in function calls, not timed)."""
import cProfile
import pstats

import pytest
from click.testing import CliRunner
from ranks.make_ranks import make

from nsys_expert import config, job, pipeline
from nsys_expert.cli import main
from nsys_expert.notes import Note


def test_fifty_thousand_ranks_on_the_local_pool_are_told_to_use_a_scheduler():
    note = job.many_ranks(50_000, None, None)
    assert isinstance(note, Note) and note.code == "pipeline.many_ranks"
    assert note.fields["n"] == 50_000 and note.fields["minutes"] > 1
    assert "--scheduler dask" in str(note) and "50,000 ranks" in str(note)
    assert job.many_ranks(64, None, None) is None                  # a minute's work or less: nothing said
    assert job.many_ranks(50_000, "tcp://10.0.0.1:8786", None) is None   # a cluster already
    assert job.many_ranks(50_000, "dask", None) is None


def test_the_note_comes_before_the_first_rank(tmp_path, monkeypatch):
    make(str(tmp_path), ranks=3, slow=1, factor=1.2)
    monkeypatch.setattr(job, "LOCAL_RANK_S", 100.0)   # three ranks "take" five minutes
    told = []
    pipeline.run(pipeline.Request([str(tmp_path)], config.Settings(jobs=1)), lambda *a: told.append(a))
    assert isinstance(told[0][0], Note) and told[0][0].code == "pipeline.many_ranks"
    assert [a[0] for a in told[1:]] == ["ranks"] * 3


def test_the_command_says_it_on_stderr_first(tmp_path, monkeypatch):
    make(str(tmp_path / "job"), ranks=3, slow=1, factor=1.2)
    monkeypatch.setattr(job, "LOCAL_RANK_S", 100.0)
    r = CliRunner().invoke(main, ["diagnose", str(tmp_path / "job"), "-o", str(tmp_path / "r.md")])
    assert r.exit_code == 0, r.output
    first = r.stderr.splitlines()[0]
    assert first.startswith("nsys-expert: warning: 3 ranks for the local pool") and "--scheduler dask" in first


def _calls(folder: str) -> int:
    prof = cProfile.Profile()
    prof.enable()
    pipeline.diagnose(pipeline.Request([folder], config.Settings(jobs=1)))
    prof.disable()
    return pstats.Stats(prof).total_calls


@pytest.mark.slow
def test_the_work_per_rank_does_not_grow_with_the_ranks(tmp_path):
    """Python function calls of a whole job (in this process: jobs=1) at 4, 8 and 16 derived ranks: the
    calls the last 8 ranks add are not more than the 4 before them added, per rank (a step over every pair
    of ranks, or a rank's work that reads every other rank's, would be)."""
    counts = {}
    for n in (4, 8, 16):
        make(str(tmp_path / str(n)), ranks=n, slow=1, factor=1.2)
        counts[n] = _calls(str(tmp_path / str(n)))
    first, second = (counts[8] - counts[4]) / 4, (counts[16] - counts[8]) / 8
    assert 0 < second <= 1.10 * first, counts
