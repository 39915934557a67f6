"""Every real input the project has is diagnosed (issue 30): each folder under fixtures/, each case of
../shared/cases (its CSV folder, SQLite export, console text), each file of ../shared/public-samples.

Fails on a traceback (exit 3), on an exit other than 0 or 2, on exit 2 for a real profile, on a warning
that calls a real, unedited file damaged, and on a GPU trace read but GPU active % not measured. Files
that hold no profile are listed in NOT_A_PROFILE with the one-line refusal they must get. A new real
file is one more line here (or lands under fixtures/ and is found by itself).

Slow (every input once, ~1-2 s each in process); CI runs it. The run time and the count of inputs are
printed at the end (`-s`)."""
import json
import time

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, SHARED
from nsys_expert.cli import main

pytestmark = pytest.mark.slow

# inputs built by editing real files on purpose (their READMEs say how): warnings about what was
# edited are expected there
EDITED = {"launch_bound_no_api_trace", "ddp_derived_4rank"}

# files that hold no profile, and the words their one-line refusal must hold (exit 2)
NOT_A_PROFILE = {
    "stats_column.txt": "usage message",   # some cases: `nsys stats` refused to run (an old export beside it)
    "analyze.txt": "",                                      # nsys analyze's verdict, not a report
    "llm-perf-opt__ncu_list-sections_2025.1.1.txt": "",   # ncu --list-sections
    "llm-perf-opt__ncu_v2_command.yaml": "",
    "llm-perf-opt__nsys_allstage_cmd.txt": "",
    "gpu-profiling-cuda-kernels__ncu_output.txt": "",
    "SOURCES.md": "",
    "README.md": "",
    "VERSIONS.txt": "",
}


def _corpus():
    items = [(f"fixtures/{p.name}", p / "input") for p in sorted(FIXTURES.iterdir()) if (p / "input").is_dir()]
    cases = SHARED / "cases"
    if cases.is_dir():
        for c in sorted(cases.iterdir()):
            if not c.is_dir() or c.name in ("kineto", "gpu_metrics"):
                continue
            items.append((f"cases/{c.name}", c))
            for f in sorted(c.iterdir()):
                if f.name.endswith((".sqlite", ".sqlite.gz")) or f.name in ("stats_column.txt", "stats_default.txt", "analyze.txt"):
                    items.append((f"cases/{c.name}/{f.name}", f))
            for sub in sorted(p for p in c.iterdir() if p.is_dir() and p.name.startswith("nsys-")):
                items.append((f"cases/{c.name}/{sub.name}", sub))
        for g in sorted((cases / "gpu_metrics").glob("*/*.sqlite*")):
            items.append((f"cases/gpu_metrics/{g.name}", g))
    pub = SHARED / "public-samples"
    if pub.is_dir():
        items += [(f"public-samples/{f.name}", f) for f in sorted(pub.iterdir()) if f.is_file()]
    return items


CORPUS = _corpus()
_TIMES: list[float] = []


@pytest.mark.parametrize("label,path", CORPUS, ids=[c[0] for c in CORPUS])
def test_every_real_input_is_diagnosed(label, path):
    t0 = time.perf_counter()
    r = CliRunner().invoke(main, ["diagnose", str(path), "--format", "json"])
    _TIMES.append(time.perf_counter() - t0)
    assert r.exit_code != 3 and r.exception is None or isinstance(r.exception, SystemExit), r.output[-2000:]
    if path.name in NOT_A_PROFILE and (path.name != "stats_column.txt" or path.stat().st_size < 1000):
        assert r.exit_code == 2, f"{label}: holds no profile but got exit {r.exit_code}"
        err = (r.stderr if hasattr(r, "stderr") else r.output).strip()
        assert len(err.splitlines()) == 1 and NOT_A_PROFILE[path.name] in err
        return
    assert r.exit_code == 0, f"{label}: exit {r.exit_code}: {r.output[-500:]}"
    doc = json.loads(r.stdout)
    if path.parent.name not in EDITED and path.name not in EDITED and label.split("/")[1] not in EDITED:
        bad = [str(w) for w in doc["warnings"] if "damaged" in str(w) or "cannot do" in str(w)]
        assert not bad, f"{label}: a real, unedited file called damaged: {bad[0]}"
    if any(i["report"] in ("cuda_gpu_trace", "sqlite") for i in doc["inputs"]) and doc["facts"].get("gpu_active_pct") is None:
        sources = {i["report"] for i in doc["inputs"]}
        assert "gpu_active_pct" in doc["facts_absent"], label
        # an export without GPU work says so; one with kernels must measure the GPU
        # (a CSV trace of CUDA graphs recorded whole holds none of their work: said, not measured)
        graphs_hidden = any("graph launches" in str(w) and "--cuda-graph-trace=node" in str(w) for w in doc["warnings"])
        assert "cuda_gpu_trace" not in sources or graphs_hidden, f"{label}: GPU trace read but GPU active % not measured"


def test_corpus_size_and_time():
    """The corpus is what it claims: every fixture, and (when ../shared is here) the shared files."""
    n_fix = sum(1 for c in CORPUS if c[0].startswith("fixtures/"))
    assert n_fix >= 80
    if (SHARED / "cases").is_dir():
        assert len(CORPUS) - n_fix >= 40
    if _TIMES:
        print(f"\nreal corpus: {len(_TIMES)} inputs in {sum(_TIMES):.1f} s")
