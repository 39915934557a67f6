"""Turn what presc.sh brought back (res/NAME/: NAME.sqlite.gz, stats_default.txt, step_time.txt, ...) into
golden fixtures: fixtures/pair_NAME_sqlite/input/NAME.sqlite.gz (+ stats_default.txt as its console twin in
fixtures/pair_NAME_console/input/) and a README per pair with the measured step times.

    python benchmarks/workloads/presc_fixtures.py RES_DIR BEFORE[:AFTER]...   # AFTER defaults to BEFORE_fixed
    python benchmarks/workloads/presc_fixtures.py --trainapp RES_DIR/nsys BEFORE...   # trainapp.sh's runs

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


APPS = {   # how the run was made, and where its plant is described
    "presc": ("`benchmarks/workloads/presc.sh nsys {name}`", "`benchmarks/workloads/prescriptions.py {name}`: see that file's docstring"),
    "trainapp": ("`benchmarks/workloads/trainapp.sh nsys {name}`",
                 "`benchmarks/workloads/trainapp/scenarios.py` `{fn}(fixed={fixed})`, a multi-file training application "
                 "(models.py, data.py, callbacks.py, trainer.py): see that module's docstring, \"Planted where\""),
}


def nsys_version(res: pathlib.Path, name: str) -> str:
    """The nsys that wrote the export (META_DATA_EXPORT's EXPORT_PRODUCT_VERSION, read from the gzip's text)."""
    import gzip
    with gzip.open(res / name / f"{name}.sqlite.gz") as f:
        data = f.read()   # the META_DATA_EXPORT page sits anywhere in the file (last, in 2025.3's)
    m = re.search(rb"EXPORT_PRODUCT_VERSION(20\d\d\.\d+\.\d+)", data)
    return m.group(1).decode() if m else "(version not found)"


def flags(res: pathlib.Path, name: str) -> str:
    f = res / name / "flags.txt"
    return f.read_text().strip() if f.exists() else "-t cuda,nvtx,osrt,cublas,cudnn"


def make(res: pathlib.Path, base: str, after: str, app: str = "presc") -> None:
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
            f"A real run ({gpu}; {APPS[app][0].format(name=name)}, nsys {nsys_version(res, name)}, "
            f"`{flags(res, name)}`); `input/{name}.sqlite.gz` is the unchanged `nsys export --type sqlite`.\n\n"
            f"## What was planted\n{APPS[app][1].format(name=name, fn=base, fixed=name != base)} "
            f"(`{base}` / `{after}`).\n\n"
            f"## What was measured\n`python ../shared/tools/check/step_time.py` on the two exports: "
            f"`{base}` {b:.3f} ms a step, `{after}` {a:.3f} ms a step: the fix gained {gain:.1f} % of the step, measured.\n"
            f"(The other side of the pair: `fixtures/pair_{other}_sqlite`.)\n", encoding="utf-8")
    print(f"{base} -> {after}: {b:.3f} -> {a:.3f} ms, {gain:.1f} %")


if __name__ == "__main__":
    args = sys.argv[1:]
    app = "trainapp" if args[:1] == ["--trainapp"] else "presc"
    args = args[1:] if app == "trainapp" else args
    res = pathlib.Path(args[0])
    for spec in args[1:]:
        before, _, after = spec.partition(":")
        make(res, before, after or before + "_fixed", app)
