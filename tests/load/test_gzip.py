"""Gzipped inputs (issue 14, item 4): `.csv.gz`, `.sqlite.gz`, `.txt.gz` / `.log.gz` / `.md.gz`, ncu CSVs.

Each gzipped file is a real fixture compressed here with Python's gzip module; it must give exactly the
tables of the uncompressed file, be found by its name without `.gz`, and leave nothing beside it (its
folder is made read-only). Bad gzip data is one line naming the file, exit 2.
"""
import gzip
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

import console_variants as cv
from conftest import FIXTURES
from nsys_expert.load import compressed, load_paths
from nsys_expert.load import ranks as rank_inputs

NSX = [sys.executable, "-m", "nsys_expert"]


def gz(src, dst):
    with open(src, "rb") as f, gzip.open(dst, "wb") as g:
        shutil.copyfileobj(f, g)
    return dst


def read_only(folder):
    for p in [folder, *folder.rglob("*")]:
        p.chmod(stat.S_IRUSR | stat.S_IXUSR if p.is_dir() else stat.S_IRUSR)


def same(a, b):
    assert sorted(a.tables) == sorted(b.tables)
    for t in a.tables:
        assert a.tables[t].equals(b.tables[t]), t


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Where the SQLite copies go (tempfile.gettempdir()): checked empty afterwards."""
    t = tmp_path / "tmpdir"
    t.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(t))
    return t


@pytest.mark.parametrize("case", ["sync_bound", "launch_bound", "sync_bound_nsys2022"])
def test_a_folder_of_gzipped_csvs_is_the_same_profile(tmp_path, case):
    src = FIXTURES / case / "input"
    d = tmp_path / case
    d.mkdir()
    for f in src.iterdir():
        gz(f, d / (f.name + ".gz"))
    read_only(d)
    plain, packed = load_paths([str(src)]), load_paths([str(d)])
    same(plain, packed)
    # found by name: cuda_api_sum and osrt_sum share one header, the name without .gz tells them apart
    assert {i["report"] for i in packed.inputs} == {i["report"] for i in plain.inputs}
    assert all(i["path"].endswith(".gz") for i in packed.inputs)
    assert [str(w).replace(".gz", "") for w in packed.warnings] == [str(w) for w in plain.warnings]
    assert sorted(os.listdir(d)) == sorted(f.name + ".gz" for f in src.iterdir())


def test_some_files_gzipped_some_not(tmp_path):
    src = FIXTURES / "sync_bound" / "input"
    d = tmp_path / "mixed"
    d.mkdir()
    for k, f in enumerate(sorted(src.iterdir())):
        if k % 2:
            gz(f, d / (f.name + ".gz"))
        else:
            shutil.copy(f, d / f.name)
    same(load_paths([str(src)]), load_paths([str(d)]))


@pytest.mark.parametrize("fixture", ["sync_bound_sqlite", "cupy_nsys2020_sqlite"])
def test_sqlite_gz_read_from_a_private_temp_copy(tmp_path, private_tmp, fixture):
    src = next((FIXTURES / fixture / "input").glob("*.sqlite"))
    d = tmp_path / "in"
    d.mkdir()
    packed = gz(src, d / (src.name + ".gz"))
    read_only(d)
    a, b = load_paths([str(src)]), load_paths([str(packed)])
    same(a, b)
    assert {i["kind"] for i in b.inputs} == {"nsys-sqlite"} and {i["path"] for i in b.inputs} == {str(packed)}
    # warnings name the file the user gave, never the temporary copy
    assert [str(w) for w in b.warnings] == [str(w).replace(src.name, packed.name) for w in a.warnings]
    assert not any(str(private_tmp) in str(w) for w in b.warnings)
    assert os.listdir(d) == [packed.name]            # nothing beside the input ...
    assert os.listdir(private_tmp) == []             # ... and the temporary copy is gone


def test_the_temp_copy_is_private_while_it_exists(tmp_path, private_tmp):
    src = FIXTURES / "sync_bound_sqlite" / "input" / "sync_bound.sqlite"
    packed = gz(src, tmp_path / "s.sqlite.gz")
    with compressed.local_copy(str(packed)) as local:
        folder = os.path.dirname(local)
        assert os.path.dirname(folder) == str(private_tmp) and os.path.basename(local) == "s.sqlite"
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        with open(local, "rb") as f, open(src, "rb") as g:
            assert f.read() == g.read()
    assert not os.path.exists(folder)
    with pytest.raises(RuntimeError), compressed.local_copy(str(packed)) as local:   # removed on errors too
        raise RuntimeError
    assert os.listdir(private_tmp) == []


@pytest.mark.parametrize("ext", [".txt.gz", ".log.gz", ".md.gz"])
@pytest.mark.parametrize("name", ["real_csv_stdout", "real_column", "real_table", "csv_notice_after_2nd_processing"])
def test_console_text_gzipped(tmp_path, ext, name):
    v = {x.name: x for x in cv.variants()}[name]
    plain = tmp_path / f"{name}.txt"
    plain.write_bytes(v.text.encode("utf-8"))
    packed = gz(plain, tmp_path / f"{name}{ext}")
    a, b = load_paths([str(plain)]), load_paths([str(packed)])
    same(a, b)
    assert {t: f.height for t, f in b.tables.items()} == cv.SYNC


def test_a_gzipped_file_without_gz_in_its_name(tmp_path):
    src = FIXTURES / "sync_bound" / "input" / "sync_bound_cuda_api_sum.csv"
    d = tmp_path / "d"
    d.mkdir()
    gz(src, d / src.name)                            # gzip bytes under the plain name
    prof = load_paths([str(d / src.name)])
    same(prof, load_paths([str(src)]))


def test_ncu_csvs_gzipped(tmp_path):
    src = FIXTURES / "sync_bound_ncu" / "input"
    d = tmp_path / "ncu_case"
    shutil.copytree(src, d)
    for f in (d / "ncu").iterdir():
        gz(f, f.with_name(f.name + ".gz"))
        f.unlink()
    same(load_paths([str(src)]), load_paths([str(d)]))


def test_ranks_are_found_in_gzipped_names(tmp_path):
    src = FIXTURES / "ddp_derived_4rank" / "input"
    d = tmp_path / "ranks"
    d.mkdir()
    for f in src.iterdir():
        gz(f, d / (f.name + ".gz"))
    plain, _ = rank_inputs.discover([sorted(str(f) for f in src.iterdir())])
    packed, _ = rank_inputs.discover([sorted(str(f) for f in d.iterdir())])
    assert [r.label for r in packed] == [r.label for r in plain] == ["rank0", "rank1", "rank2", "rank3"]
    assert [len(r.files) for r in packed] == [2, 2, 2, 2]


@pytest.mark.slow   # 3.5 s in the fast set on the shared 2-core machine (issue 56, item 14)
def test_diagnosis_of_gzipped_inputs_is_the_same(tmp_path):
    src = FIXTURES / "sync_bound" / "input"
    d = tmp_path / "sync"
    d.mkdir()
    for f in src.iterdir():
        gz(f, d / (f.name + ".gz"))
    docs = []
    for folder in (src, d):
        out = tmp_path / f"{folder.name}.json"
        p = subprocess.run(NSX + ["diagnose", str(folder), "--format", "json", "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        docs.append(json.loads(out.read_text()))
    assert docs[0]["facts"] == docs[1]["facts"]
    assert [(f["rule"], f["severity"]) for f in docs[0]["findings"]] == \
        [(f["rule"], f["severity"]) for f in docs[1]["findings"]]


def _bad_inputs(tmp_path):
    sq = FIXTURES / "sync_bound_sqlite" / "input" / "sync_bound.sqlite"
    data = gzip.compress(sq.read_bytes())
    csv = (FIXTURES / "sync_bound" / "input" / "sync_bound_cuda_gpu_trace.csv").read_bytes()
    return {
        "cut.sqlite.gz": data[: len(data) // 2],                  # a copy that stopped half way
        "cut_cuda_gpu_trace.csv.gz": gzip.compress(csv)[:-2000],  # past the first 256 KiB, cut before its end
        "plain_cuda_api_sum.csv.gz": b"Time (%),Total Time (ns)\n",   # named .gz, not compressed
        "junk.log.gz": b"\x1f\x8b" + os.urandom(64),               # gzip magic, then noise
        "corrupt.txt.gz": data[:100] + bytes(200) + data[300:4000],
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cut.sqlite.gz", "cut_cuda_gpu_trace.csv.gz", "plain_cuda_api_sum.csv.gz",
                                  "junk.log.gz", "corrupt.txt.gz"])
def test_bad_gzip_is_one_line_naming_the_file(tmp_path, private_tmp, name):
    p = tmp_path / name
    p.write_bytes(_bad_inputs(tmp_path)[name])
    r = subprocess.run(NSX + ["diagnose", str(p)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TMPDIR": str(private_tmp), "NSX_NO_CACHE": "1"})
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith(f"nsys-expert: error: {p}: not valid gzip data (")
    assert os.listdir(tmp_path / "tmpdir") == []     # a cut .sqlite.gz leaves no temp copy behind
