"""Issue 50: a rule pack whose estimate overflows to infinity, or whose YAML holds a key that is not text,
is a warned report or a one-line error (exit 2), never an internal error (both were exit 3)."""
import json
import shutil

from click.testing import CliRunner

from conftest import FIXTURES
from nsys_expert.cli import main

ROOT = FIXTURES.parent
HEAD = ('id: x-rule\ntitle: {en: "x"}\ncategory: host-bound\nseverity: low\nsubject: run\nwhy: {en: "y"}\n'
        'when: {fact: gpu_active_pct, op: gte, value: 1}\nmessage: {en: "m"}\n')


def _pack(tmp_path, body):
    d = tmp_path / "pack"
    d.mkdir()
    shutil.copy(ROOT / "rules" / "pack.yaml", d / "pack.yaml")
    (d / "pack.yaml").write_text((d / "pack.yaml").read_text(encoding="utf-8").replace("name: builtin", "name: fuzz", 1),
                                 encoding="utf-8")
    (d / "x.yaml").write_text(HEAD + body, encoding="utf-8")
    return d


def test_an_estimate_past_the_float_range_gives_no_gain(tmp_path):
    d = _pack(tmp_path, 'estimate: {expr: "gpu_active_pct * 1e400"}\n')
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "--rules", str(d),
                                  "--format", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    f = next(x for x in json.loads(out.read_text(encoding="utf-8"))["findings"] if x["rule"] == "x-rule")
    assert f["estimated_gain_pct"] is None


def test_a_key_that_is_not_text_is_a_one_line_error(tmp_path):
    d = _pack(tmp_path, "1: 2\n")
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "--rules", str(d)])
    assert r.exit_code == 2
    assert "every key must be text" in r.output and "internal error" not in r.output
