"""benchmarks/compare.py (issue 57): two revisions side by side; each runs its own code and rules."""
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import compare  # noqa: E402


def test_an_archived_revision_runs_its_own_package_and_rules(tmp_path):
    label, tree = compare.source("HEAD", str(tmp_path))
    assert label.startswith("HEAD (") and tree.startswith(str(tmp_path))
    side = compare.Side("HEAD", str(tmp_path))
    cmd = side.command("IN", "OUT")
    probe = cmd[:cmd.index("-m")] + ["-c", "import nsys_expert, importlib.resources as r; print(nsys_expert.__file__); "
                                            "print(r.files('nsys_expert.builtin_rules') / 'pack.yaml')"]
    out = subprocess.run(probe, check=True, capture_output=True, text=True, cwd=ROOT).stdout.split("\n")
    # not this checkout's package (the current folder) nor its rules (the editable install's mapping)
    assert out[0].startswith(tree) and out[1].startswith(tree), out


@pytest.mark.slow
def test_it_prints_the_ratios_of_a_small_input(tmp_path):
    case = FIXTURES / "launch_bound" / "input"
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "HEAD", ".", "--inputs", "",
                          "--profile", str(case), "--repeat", "1", "--work", str(tmp_path), "--markdown"],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout
    ratios = re.search(r"HEAD / BASE, median of the rounds \(range\): wall ([\d.]+)x .*CPU ([\d.]+)x .*"
                       r"peak RSS ([\d.]+)x", out)
    assert ratios and all(float(x) > 0 for x in ratios.groups()), out
    assert re.search(r"reference: typed scan +[\d.]+s", out), out
    assert re.search(r"^\| input \| .*\n\|(---\|)+\n\| input \| typed scan [\d.]+ / [\d.]+ s \|", out, re.M), out
