"""Input paths are literal (issue 50, item 3): a folder named like a glob (``exp[12]``, ``r?n``, ``run*``,
``run[1]``) is read as that folder only, never as the siblings the pattern would match; the NSX_CACHE
export of a .nsys-rep is keyed by the report's content, so a report replaced by one with an older
mtime is exported again."""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import FIXTURES  # noqa: E402
from test_outputs_hostile import run  # noqa: E402


def _copy_as(src: str, dst, prefix: str) -> None:
    """The CSVs of fixture ``src`` under ``dst``, renamed to ``prefix``'s names (one run's file names)."""
    dst.mkdir()
    for f in (FIXTURES / src / "input").iterdir():
        shutil.copy(f, dst / f.name.replace(src, prefix))


def _rules(path) -> list[str]:
    r = run("diagnose", path, "--format", "json")
    assert r.returncode == 0, r.stderr
    return [f["rule"] for f in json.loads(r.stdout)["findings"]]


@pytest.mark.parametrize("name,sibling", [("exp[12]", "exp1"), pytest.param("r?n", "run", marks=pytest.mark.slow),  # 1.1-1.2 s
                                          pytest.param("run*", "run1", marks=pytest.mark.slow), ("run[1]", None)])   # (issue 56, item 14)
def test_glob_like_folder_is_literal(tmp_path, name, sibling):
    _copy_as("launch_bound", tmp_path / name, "launch_bound")
    if sibling:   # a folder the pattern matches, holding another run under the same file names
        _copy_as("compute_bound", tmp_path / sibling, "launch_bound")
    assert _rules(tmp_path / name)[0] == "launch-bound"
    assert _rules(str(tmp_path / name) + "/")[0] == "launch-bound"


def test_run_star_reads_each_file_once(tmp_path):
    _copy_as("launch_bound", tmp_path / "run*", "launch_bound")
    _copy_as("launch_bound", tmp_path / "run1", "launch_bound")
    _copy_as("launch_bound", tmp_path / "plain", "launch_bound")
    docs = []
    for d in ("run*", "plain"):
        r = run("diagnose", tmp_path / d, "--format", "json")
        assert r.returncode == 0, r.stderr
        docs.append(json.loads(r.stdout))
    assert docs[0]["facts"] == docs[1]["facts"]


# ----------------------------------------------------------------------------- NSX_CACHE keys
def _fake_nsys(tmp_path) -> str:
    """An nsys whose 'export' copies the SQLite file the report names (the report's text is that path)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text(f"#!{sys.executable}\nimport shutil, sys\na = sys.argv[1:]\n"
                   "out = a[a.index('--output') + 1]\nshutil.copy(open(a[-1]).read().strip(), out)\n")
    exe.chmod(0o755)
    return f"{bindir}{os.pathsep}{os.environ['PATH']}"


def _sqlite(case: str) -> str:
    return str(next((FIXTURES / case / "input").glob("*.sqlite")))


def test_cache_follows_content_not_mtime(tmp_path, monkeypatch):
    from nsys_expert.load.nsysrep import read_nsys_rep
    from nsys_expert.load.sqlite import read_sqlite

    monkeypatch.setenv("PATH", _fake_nsys(tmp_path))
    rep = tmp_path / "prof.nsys-rep"
    cache = tmp_path / "cache"
    rep.write_text(_sqlite("sync_bound_sqlite"))
    os.utime(rep, (1_000_000_000, 1_000_000_000))
    first = read_nsys_rep(str(rep), cache_dir=str(cache)).tables["gpu_trace"].height
    again = read_nsys_rep(str(rep), cache_dir=str(cache)).tables["gpu_trace"].height
    assert first == again and len(list(cache.iterdir())) == 1          # reused
    rep.write_text(_sqlite("memcpy_bound_sqlite"))                     # replaced, mtime set older still
    os.utime(rep, (999_999_000, 999_999_000))
    replaced = read_nsys_rep(str(rep), cache_dir=str(cache)).tables["gpu_trace"].height
    assert replaced == read_sqlite(_sqlite("memcpy_bound_sqlite")).tables["gpu_trace"].height != first
    assert len(list(cache.glob("*.sqlite"))) == 2 and not list(cache.glob("*part*"))
