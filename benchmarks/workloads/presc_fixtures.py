"""Turn what presc.sh brought back (res/NAME/: NAME.sqlite.gz, stats_default.txt, step_time.txt, ...) into
golden fixtures: fixtures/pair_NAME_sqlite/input/NAME.sqlite.gz (+ stats_default.txt as its console twin in
fixtures/pair_NAME_console/input/) and a README per pair with the measured step times.

    python benchmarks/workloads/presc_fixtures.py RES_DIR BEFORE[:AFTER]...   # AFTER defaults to BEFORE_fixed

The measured gain is step_time.py's (../shared/tools/check/step_time.py): the end of the GPU work each NVTX
step launched, mean from the third step; gain = 100 * (1 - after / before).
"""
from __future__ import annotations

import pathlib
import re
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mean_ms(res: pathlib.Path, name: str) -> float:
    text = (res / name / "step_time.txt").read_text()
    return float(re.search(r"mean_ms=([\d.]+)", text).group(1))


def make(res: pathlib.Path, base: str, after: str) -> None:
    b, a = mean_ms(res, base), mean_ms(res, after)
    gain = 100.0 * (1.0 - a / b)
    versions = (res / "versions.txt").read_text().splitlines() if (res / "versions.txt").exists() else []
    gpu = next((m.group(0).strip() for ln in versions if (m := re.search(r"NVIDIA H[\w ]+?(?=\s{2,}|\|)", ln))),
               "an NVIDIA GPU")   # the card's name in nvidia-smi's table
    for name in (base, after):
        out = ROOT / "fixtures" / f"pair_{name}_sqlite"
        (out / "input").mkdir(parents=True, exist_ok=True)
        shutil.copy(res / name / f"{name}.sqlite.gz", out / "input" / f"{name}.sqlite.gz")
        other = after if name == base else base
        role = "before" if name == base else f"after (the fix applied to `{base}`)"
        (out / "README.md").write_text(
            f"# pair_{name}_sqlite: `{name}`, {role}\n\n"
            f"A real run ({gpu}; `benchmarks/workloads/presc.sh nsys {name}`, nsys 2025.3.1, "
            f"`-t cuda,nvtx,osrt,cublas,cudnn`); `input/{name}.sqlite.gz` is the unchanged `nsys export --type sqlite`.\n\n"
            f"## What was planted\n`benchmarks/workloads/prescriptions.py {name}`: see that file's docstring "
            f"(`{base}` / `{after}`).\n\n"
            f"## What was measured\n`python ../shared/tools/check/step_time.py` on the two exports: "
            f"`{base}` {b:.3f} ms a step, `{after}` {a:.3f} ms a step: the fix gained {gain:.1f} % of the step, measured.\n"
            f"(The other side of the pair: `fixtures/pair_{other}_sqlite`.)\n", encoding="utf-8")
    print(f"{base} -> {after}: {b:.3f} -> {a:.3f} ms, {gain:.1f} %")


if __name__ == "__main__":
    res = pathlib.Path(sys.argv[1])
    for spec in sys.argv[2:]:
        before, _, after = spec.partition(":")
        make(res, before, after or before + "_fixed")
