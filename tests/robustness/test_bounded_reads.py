"""Bounded reading (issue 50, item 4): gzip bombs of every kind stop with one line; console text past its
cap is refused; the table-layout regexes and the header-cell split are linear on one long line; a
pack's ``phases:`` regex is checked like a ``matches`` pattern; a FIFO or a device as a settings file,
a pyproject.toml or a rule file is refused at once instead of blocking."""
from __future__ import annotations

import gzip
import os
import shutil
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import FIXTURES  # noqa: E402
from test_outputs_hostile import one_error_line, run  # noqa: E402

BOMB_MB = 80   # past the 64 MiB floor, at a ratio near 1000


def _bomb(path, head: bytes, fill: bytes = b"\0") -> None:
    piece = fill * ((1 << 20) // len(fill))
    with gzip.open(path, "wb", compresslevel=1) as g:
        g.write(head)
        for _ in range(BOMB_MB):
            g.write(piece)


TRACE_CSV = (FIXTURES / "launch_bound" / "input" / "launch_bound_cuda_gpu_trace.csv")
BOMBS = {
    "x_cuda_gpu_trace.csv.gz": (TRACE_CSV.read_bytes(), b"\0"),
    "t.pt.trace.json.gz": (b'{"schemaVersion": 1, "traceEvents": [', b" "),
    "w.sqlite.gz": (b"SQLite format 3\0", b"\0"),
    "console.txt.gz": (b"nsys stats report\n", b"a line of a log\n"),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_gzip_bomb_is_one_line(tmp_path, name):
    head, fill = BOMBS[name]
    _bomb(tmp_path / name, head, fill)
    t = time.perf_counter()
    r = run("diagnose", tmp_path / name)
    assert time.perf_counter() - t < 30
    one_error_line(r, name)
    assert "gzip" in r.stderr or "binary" in r.stderr or "not" in r.stderr
    assert not any(p.name.startswith("nsys-expert-gz-") for p in tmp_path.iterdir())


def test_gzip_bomb_message_and_ratio(tmp_path, monkeypatch):
    from nsys_expert.errors import InputError
    from nsys_expert.load import compressed

    _bomb(tmp_path / "b.csv.gz", b"a,b\n", b"1,2\n")
    with pytest.raises(InputError, match="grows past 64 MiB"):
        compressed.read_all(str(tmp_path / "b.csv.gz"))
    with pytest.raises(InputError, match="gzip bomb"):
        list(compressed.blocks(str(tmp_path / "b.csv.gz")))
    with pytest.raises(InputError, match="gzip bomb"), compressed.local_copy(str(tmp_path / "b.csv.gz")):
        pass
    monkeypatch.setenv("NSX_GZ_MAX_RATIO", "100000")
    assert len(compressed.read_all(str(tmp_path / "b.csv.gz"))) == 4 + BOMB_MB * (1 << 20)


def test_real_gzip_inputs_still_read(tmp_path):
    src = next((FIXTURES / "kineto_sync_bound" / "input").glob("*.json.gz"))
    r = run("diagnose", src, "--format", "json")
    assert r.returncode == 0, r.stderr


def test_console_text_cap(tmp_path, monkeypatch):
    src = next(p for p in (FIXTURES / "console_launch_bound" / "input").iterdir())
    shutil.copy(src, tmp_path / src.name)
    assert run("diagnose", tmp_path / src.name).returncode == 0
    monkeypatch.setenv("NSX_CONSOLE_MAX_BYTES", "1000")
    r = run("diagnose", tmp_path / src.name)
    one_error_line(r, src.name, "console text")


@pytest.mark.parametrize("line", [" " * 400_000 + "x", "-" * 400_000 + "x", "- " * 200_000 + "x",
                                  "|" + " " * 400_000 + "x", "\t" * 400_000 + "|", "|---" * 100_000 + " x"])
def test_layout_regexes_linear(line):
    from nsys_expert.load import schema
    from nsys_expert.load.console_scan import _DASHES, _MD_RULE

    t = time.perf_counter()
    assert _DASHES.match(line) is None and _MD_RULE.match(line) is None
    schema.split_header_cell(line)
    assert time.perf_counter() - t < 0.5
    assert _DASHES.match(" ----  ---") and _MD_RULE.match("|---|:---:|")
    assert schema.split_header_cell("Total Time (ns)") == ("totaltime", "ns")


def test_long_dash_line_in_console_text(tmp_path):
    src = next(p for p in (FIXTURES / "console_launch_bound" / "input").iterdir())
    text = src.read_text(encoding="utf-8", errors="replace")
    f = tmp_path / "log.txt"
    f.write_text(text + "\n" + " " * 300_000 + "-" * 100_000 + "x\n" + "|" + " " * 300_000 + "\n")
    t = time.perf_counter()
    r = run("diagnose", f)
    assert r.returncode == 0, r.stderr
    assert time.perf_counter() - t < 30


def test_pack_phase_regex_checked(tmp_path):
    from test_packs_hostile import _pack, _rule

    meta = "name: hostile\nversion: '1'\nphases:\n  - {phase: data, re: '(a+)+$', cause: null}\n"
    r = run("diagnose", FIXTURES / "launch_bound" / "input", "--rules", _pack(tmp_path, [_rule()], meta=meta))
    one_error_line(r, "phases", "(a+)+$")


def _fifo(path):
    os.mkfifo(path)
    return path


def test_special_settings_and_rule_files(tmp_path, monkeypatch):
    case = FIXTURES / "launch_bound" / "input"
    for cfg in ("/dev/zero", _fifo(tmp_path / "cfg.toml")):
        one_error_line(run("diagnose", case, "--config", cfg), str(cfg), "not a regular file")
    proj = tmp_path / "proj"
    proj.mkdir()
    _fifo(proj / "pyproject.toml")
    monkeypatch.chdir(proj)
    one_error_line(run("diagnose", case), "pyproject.toml", "FIFO")
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text("name: p\nversion: 1\ndescription: d\n")
    _fifo(pack / "r.yaml")
    monkeypatch.chdir(tmp_path)
    one_error_line(run("diagnose", case, "--rules", pack), "r.yaml", "FIFO")


def test_open_regular_refuses_without_blocking(tmp_path):
    from nsys_expert.safe_open import NotRegular, open_regular

    with pytest.raises(NotRegular, match="FIFO"):
        open_regular(_fifo(tmp_path / "f"))
    with pytest.raises(NotRegular, match="character device"):
        open_regular("/dev/zero")
    (tmp_path / "r").write_bytes(b"ok")
    with open_regular(tmp_path / "r") as fh:
        assert fh.read() == b"ok"


# ------------------------------------------------------------------------------ NUL tails, big journals
def _sparse_tail(path, gib: int) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) + (gib << 30))   # a hole: no disk used


def test_csv_nul_tail_not_read(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "launch_bound" / "input", case)
    trace = case / "launch_bound_cuda_gpu_trace.csv"
    with open(trace, "ab") as fh:
        fh.write(b"\0" * 3000)                                # written NULs, then a sparse 20 GiB
    _sparse_tail(trace, 20)
    t = time.perf_counter()
    r = run("diagnose", case, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert time.perf_counter() - t < 30
    import json
    doc = json.loads(r.stdout)
    assert doc["findings"][0]["rule"] == "launch-bound"
    assert any("ends in 21,474,839,480 NUL bytes" in str(w) for w in doc["warnings"]), doc["warnings"]


def test_kineto_nul_tail_bounded(tmp_path):
    src = next((FIXTURES / "kineto_sync_bound" / "input").glob("*.json.gz"))
    p = tmp_path / "t.pt.trace.json"
    p.write_bytes(gzip.decompress(src.read_bytes()))
    _sparse_tail(p, 20)
    one_error_line(run("diagnose", p), "t.pt.trace.json", "NUL")


def test_sparse_wal_not_copied(tmp_path):
    src = next((FIXTURES / "sync_bound_sqlite" / "input").glob("*.sqlite"))
    db = tmp_path / "x.sqlite"
    shutil.copy(src, db)
    (tmp_path / "x.sqlite-wal").write_bytes(b"")
    _sparse_tail(tmp_path / "x.sqlite-wal", 8)
    one_error_line(run("diagnose", db), "x.sqlite", "x.sqlite-wal", "8.0 GiB")


# ------------------------------------------------------------------------------------ long names
def test_long_names_cut_with_hash():
    import polars as pl

    from nsys_expert.load import sanity

    a, b = "k<" + "A" * 100_000 + ">", "k<" + "A" * 100_000 + "B>"
    tables = {"gpu_trace": pl.DataFrame({"name": [a, b, "short", a]}).with_columns(pl.col("name").cast(pl.Categorical)),
              "api_trace": pl.DataFrame({"name": ["cudaLaunchKernel"]})}
    warnings: list[str] = []
    sanity.long_names(tables, warnings)
    names = tables["gpu_trace"]["name"].cast(pl.String).to_list()
    assert names[0] == names[3] != names[1] and names[2] == "short"
    assert all(len(n) < 4200 for n in names) and "[100003 bytes, #" in names[0]
    assert tables["gpu_trace"]["name"].dtype == pl.Categorical
    assert len(warnings) == 1 and "gpu_trace: 2 name(s) longer than 64 KiB" in str(warnings[0])


@pytest.mark.slow   # 3.1 s in the fast set on the shared 2-core machine (issue 56, item 14)
def test_long_kernel_name_report_bounded(tmp_path):
    import csv
    import json

    csv.field_size_limit(1 << 30)
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "launch_bound" / "input", case)
    big = "void huge_kernel<" + "A" * (1 << 20) + ">()"
    trace = case / "launch_bound_cuda_gpu_trace.csv"
    rows = list(csv.reader(trace.open()))
    i = rows[0].index("Name")
    for r in rows[1:40]:                       # 39 launches of one kernel with a 1 MiB name
        r[i] = big
    csv.writer(trace.open("w", newline="")).writerows(rows)
    r = run("diagnose", case, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) < 1 << 20
    assert any("longer than 64 KiB" in str(w) for w in json.loads(r.stdout)["warnings"])
