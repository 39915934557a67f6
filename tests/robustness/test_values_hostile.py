"""Hostile values (issue 50, items 5 and 6): Kineto JSON, SQLite exports and stored JSON reports whose
values have the wrong type or range. Each ends in a warned report that names what was dropped and why,
or in one error line (exit 2), never in a crash (exit 3) or a silent change."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import FIXTURES  # noqa: E402
from test_outputs_hostile import one_error_line, run  # noqa: E402


# ------------------------------------------------------------------------------------------ Kineto
def trace(n: int = 40, claim: tuple = ("NVIDIA A100-SXM4-80GB", 8, 0)) -> dict:
    """A small torch.profiler trace: n launches and their sm80 kernels, five steps."""
    ev, t = [], 1000.0
    for i in range(n):
        c = 100 + i
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t,
                   "dur": 5, "args": {"correlation": c}})
        ev.append({"ph": "X", "cat": "kernel", "name": "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32",
                   "pid": 0, "tid": 7, "ts": t + 10, "dur": 50, "args": {"correlation": c, "device": 0, "stream": 7}})
        t += 100
    for s in range(5):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                   "ts": 1000 + s * 800, "dur": 790})
    name, major, minor = claim
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": name, "computeMajor": major,
                                                      "computeMinor": minor}], "traceEvents": ev}


def _kernel(d: dict) -> dict:
    return d["traceEvents"][1]


def _set(path: str, value):
    def edit(d):
        obj = _kernel(d)
        *head, last = path.split(".")
        for k in head:
            obj = obj[k]
        obj[last] = value
    return edit


KINETO = {   # name -> (edit, text substitution, words the warning must hold)
    "inf_ts": (_set("ts", 1.5), ('"ts": 1.5', '"ts": 1e400'), "infinite"),
    "nan_ts": (_set("ts", float("nan")), None, "NaN"),
    "str_dur": (_set("dur", "long"), None, "not a number"),
    "str_corr": (_set("args.correlation", "101x"), None, "correlation ids"),
    "big_corr": (_set("args.correlation", 2 ** 70), None, "64-bit"),
    "str_bytes": (_set("args.bytes", "many"), None, "byte counts"),
    "inf_bytes": (_set("args.bytes", 1.5), ('"bytes": 1.5', '"bytes": 1e400'), "infinite or NaN"),
    "big_device": (_set("args.device", 2 ** 70), None, "device ids"),
    "surrogate": (_set("name", "\ud800bad"), None, "surrogate"),
}


def _write(tmp_path, name: str, d: dict, sub=None):
    text = json.dumps(d)
    if sub:
        assert sub[0] in text
        text = text.replace(sub[0], sub[1], 1)
    p = tmp_path / f"{name}.pt.trace.json"
    p.write_text(text)
    return p


def _report(path) -> dict:
    r = run("diagnose", path, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", sorted(KINETO))
def test_kineto_value_warned(tmp_path, name):
    edit, sub, words = KINETO[name]
    d = trace()
    edit(d)
    doc = _report(_write(tmp_path, name, d, sub))
    said = [str(w) for w in doc["warnings"] if words in str(w)]
    assert said, doc["warnings"]
    assert f"{name}.pt.trace.json: 1 " in said[0]


def test_clean_trace_has_no_value_warning(tmp_path):
    doc = _report(_write(tmp_path, "ok", trace()))
    assert not [str(w) for w in doc["warnings"] if "left out" in str(w) or "read as unknown" in str(w)], doc["warnings"]
    assert doc["environment"]["gpus"][0]["name"].startswith("NVIDIA A100")


def test_duplicated_correlation_ids_warned(tmp_path):
    d = trace()
    for e in d["traceEvents"]:
        if e["cat"] == "cuda_runtime":
            e["args"]["correlation"] = 100
    doc = _report(_write(tmp_path, "dup", d))
    # every call kept (a sync among them still counts), none tied to a kernel by a guess (issue 58)
    assert any("40 runtime calls with a correlation id another call has: kept, but tied to no launch" in str(w)
               for w in doc["warnings"])


def test_kernel_copies_warned(tmp_path):
    d = trace()
    d["traceEvents"].append(dict(_kernel(d)))
    doc = _report(_write(tmp_path, "copy", d))
    assert any("1 GPU events with an exact copy" in str(w) for w in doc["warnings"])


def test_trace_events_twice_and_deep_nesting(tmp_path):
    first, second = trace(3), trace()
    p = tmp_path / "twice.pt.trace.json"
    p.write_text('{"traceEvents": ' + json.dumps(first["traceEvents"]) + ", " + json.dumps(second)[1:])
    one_error_line(run("diagnose", p), "twice.pt.trace.json", "'traceEvents' appears twice")
    p = tmp_path / "deep.pt.trace.json"
    p.write_text(json.dumps(trace())[:-1] + ', "x": ' + "[" * 3000 + "]" * 3000 + "}")
    one_error_line(run("diagnose", p), "deep.pt.trace.json", "deeper")


def test_gpu_claim_against_kernel_arch(tmp_path):
    doc = _report(_write(tmp_path, "k80", trace(claim=("Tesla K80", 3, 7))))
    gpu = doc["environment"]["gpus"][0]
    assert gpu["name"] == "unknown" and "cc" not in gpu
    assert any("Tesla K80" in str(w) and "sm_80" in str(w) for w in doc["warnings"])
    assert "gpu_compute_capability" not in doc["facts"]
    doc = _report(_write(tmp_path, "h100", trace(claim=("NVIDIA H100", 9, 0))))
    assert doc["environment"]["gpus"][0]["name"] == "NVIDIA H100"
    assert doc["facts"]["gpu_compute_capability"] == 9.0


# ------------------------------------------------------------------------------------------ SQLite
def _export(tmp_path, name: str, sql: str):
    src = next((FIXTURES / "sync_bound_sqlite" / "input").glob("*.sqlite"))
    dst = tmp_path / f"{name}.sqlite"
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    con.executescript(sql)
    con.commit()
    con.close()
    return dst


K = "CUPTI_ACTIVITY_KIND_KERNEL"


def test_sqlite_blob_start(tmp_path):
    p = _export(tmp_path, "blob", f"UPDATE {K} SET start = x'0102' WHERE rowid = (SELECT min(rowid) FROM {K});")
    doc = _report(p)
    assert any("1 of" in str(w) and "left out" in str(w) for w in doc["warnings"]), doc["warnings"]


def test_sqlite_null_kernel_name(tmp_path):
    p = _export(tmp_path, "nullname",
                "CREATE TABLE S2 (id INTEGER PRIMARY KEY, value TEXT); INSERT INTO S2 SELECT id, value FROM StringIds;"
                "DROP TABLE StringIds; ALTER TABLE S2 RENAME TO StringIds;"
                f"UPDATE StringIds SET value = NULL WHERE id IN (SELECT demangledName FROM {K} LIMIT 1);")
    doc = _report(p)
    assert any("kernels have no name" in str(w) and "[unnamed kernel]" in str(w) for w in doc["warnings"]), doc["warnings"]


def test_sqlite_quote_in_table_name_is_intact(tmp_path):
    doc = _report(_export(tmp_path, "quote", 'CREATE TABLE "we""ird" (a INTEGER);'))
    assert doc["findings"][0]["rule"] == "sync-bound"


@pytest.mark.parametrize("name", ["mem.sqlite", "mem.txt", "mem_cuda_gpu_trace.csv", "mem.pt.trace.json"])
def test_unreadable_link(tmp_path, name):
    """stat says a regular file, every read fails with EIO."""
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc/self/mem here")
    (tmp_path / name).symlink_to("/proc/self/mem")
    one_error_line(run("diagnose", tmp_path / name), name, "cannot read")


# -------------------------------------------------------------------------------------- diff inputs
@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    r = run("diagnose", FIXTURES / "launch_bound" / "input", "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _diff_with(tmp_path, stored, edit, raw: str | None = None):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(stored))
    bad = tmp_path / "bad.json"
    if raw is not None:
        bad.write_text(raw)
    else:
        d = json.loads(json.dumps(stored))
        edit(d)
        bad.write_text(json.dumps(d))
    return run("diff", good, bad, "--format", "json")


DIFF_BAD = {
    "no_findings": lambda d: d.pop("findings"),
    "bad_severity": lambda d: d["findings"][0].update(severity="apocalyptic"),
    "rule_not_text": lambda d: d["findings"][0].update(rule=["x"]),
    "facts_list": lambda d: d.update(facts=[1, 2]),
    "fact_object": lambda d: d["facts"].update(gpu_active_pct={"a": 1}),
    "version_2": lambda d: d.update(schema_version=2),
}


@pytest.mark.parametrize("name", sorted(DIFF_BAD))
def test_diff_refuses_hostile_report(tmp_path, stored, name):
    one_error_line(_diff_with(tmp_path, stored, DIFF_BAD[name]), "bad.json", "not an nsys-expert JSON report")


def test_diff_refuses_deep_and_infinity(tmp_path, stored):
    one_error_line(_diff_with(tmp_path, stored, None, raw="[" * 5000 + "]" * 5000), "bad.json")
    text = json.dumps(stored).replace('"gpu_active_pct": ', '"gpu_active_pct": -Infinity, "x": ', 1)
    one_error_line(_diff_with(tmp_path, stored, None, raw=text), "bad.json", "Infinity")


def test_diff_json_has_no_infinity(tmp_path, stored):
    def huge(d):
        d["facts"]["gpu_active_pct"] = -1e308
        d["facts"]["kernel_count"] = 10 ** 400
        d["inputs"] = [{"path": "/abs/x.csv"}, {"path": "rel/y.csv"}]
    r = _diff_with(tmp_path, stored, huge)
    assert r.returncode == 0, r.stderr
    assert "Infinity" not in r.stdout and "NaN" not in r.stdout
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(c))
