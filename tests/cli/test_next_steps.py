"""The next steps of a diagnosis: the exact commands that collect what the rules not evaluated lack."""


from nsys_expert import scenarios as sc
from nsys_expert.engine.missing import NotEvaluated
from nsys_expert.notes import Note


def _ne(rule: str, missing: list, facts: list) -> NotEvaluated:
    return NotEvaluated(rule, "", "run", "medium", missing, facts)

ALL_REPORTS = ("cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace,cuda_gpu_kern_sum,cuda_api_sum,"
               "cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,osrt_sum,cuda_kern_exec_sum")


# ------------------------------------------------------------------------------- next steps
def test_next_steps_for_summaries_only():
    ne = [_ne("host-bound", ["needs the cuda_api_trace report (nsys stats -r cuda_api_trace) (gpu_idle_host_pct)"],
              ["gpu_idle_host_pct"]),
          _ne("iteration-jitter", ["needs NVTX ranges with timestamps (nsys stats -r nvtx_pushpop_trace; profile "
                                   "with --trace=nvtx and mark each step with an NVTX range) (iter_count)"], ["iter_count"]),
          _ne("slow-startup", ["needs the cuda_gpu_trace report (nsys stats -r cuda_gpu_trace) or NVTX ranges "
                               "with timestamps (nsys stats -r nvtx_pushpop_trace; profile with --trace=nvtx "
                               "and mark each step with an NVTX range) (startup_s)"], ["startup_s"])]
    steps = sc.next_steps(ne, {}, report="prof.nsys-rep")
    # one order of the reports (GPU, API, NVTX trace), whichever rules lack them
    assert steps[0]["commands"] == ["nsys stats --report cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace --format csv "
                                    "--output prof prof.nsys-rep"]
    assert sc.next_steps(ne[::-1], {}, report="prof.nsys-rep")[0]["commands"] == steps[0]["commands"]
    assert steps[0]["rules"] == ["host-bound", "iteration-jitter", "slow-startup"]
    assert str(steps[1].need) == "NVTX step ranges" and steps[1]["commands"][0].startswith("nsys profile --trace=cuda,nvtx,osrt")


def test_next_steps_graphs_and_ncu():
    """A CSV folder holding the GPU trace of a graph-launching run: re-profile with node tracing (no export);
    the hot kernels by exact name from the facts' ncu hint (alternation kept, anchored)."""
    ne = [_ne("launch-bound", ["CUDA graph work is not in the GPU trace"], ["gpu_idle_launch_pct"]),
          _ne("low-occupancy", ["needs an Nsight Compute CSV of the hot kernels"], ["achieved_occupancy_pct"])]
    inputs = [{"kind": "nsys-csv", "table": t, "version": "2023+", "path": f"x_{t}.csv"} for t in ("gpu_trace", "api_trace")]
    hint = Note("phrase.ncu_command", {"args": '--set full --target-processes all --kernel-name regex:"nvjet_tst|stencil" '
                                               "--launch-skip 7 --launch-count 10 -o hot",
                                       "kernels": ("nvjet_tst", "stencil"), "skip": 7, "count": 10})
    steps = sc.next_steps(ne, {"graph_launch_count": 199}, inputs=inputs, app=("python", "bench.py"), ncu_hint=hint)
    assert [str(s.need) for s in steps] == ["CUDA graph kernels in the GPU trace", "Nsight Compute metrics"]
    assert "--cuda-graph-trace=node" in steps[0]["commands"][0] and steps[0]["commands"][0].endswith("python bench.py")
    assert steps[1]["commands"][0] == ("ncu --set full --target-processes all --kernel-name 'regex:^(nvjet_tst|stencil)$' "
                                       "--launch-skip 7 --launch-count 10 -o ncu_kernel -f python bench.py")
    assert steps[1]["commands"][1] == "ncu -i ncu_kernel.ncu-rep --csv --page details > ncu_kernel_details.csv"


def test_next_steps_on_a_real_diagnosis():
    from conftest import FIXTURES, diagnosed

    doc = diagnosed(FIXTURES / "launch_bound_summaries" / "input")
    steps = sc.next_steps(doc.not_evaluated, doc.facts)
    export = steps[0]
    assert export["commands"][0].startswith("nsys stats --report ")
    for rep in ("cuda_gpu_trace", "cuda_api_trace", "nvtx_pushpop_trace"):
        assert rep in export["commands"][0]
    assert "host-bound" in export["rules"]
    assert sc.next_steps([], {}) == []


def test_next_steps_ask_for_the_os_runtime_trace_only_where_the_host_idles():
    """host-sleep / gil-contention lack the per-thread OS runtime trace: from CSVs, diagnose the SQLite export
    of the same report; from an SQLite export without OSRT_API, profile again with --trace=osrt; and only
    when the GPU idles while the host is outside CUDA."""
    ne = [_ne(r, ["needs the per-thread OS runtime trace"], [f])
          for r, f in (("host-sleep", "gpu_idle_sleep_pct"), ("gil-contention", "gpu_idle_gil_pct"))]
    csvs = [{"kind": "nsys-csv", "table": t, "version": "2023+", "path": f"x_{t}.csv"}
            for t in ("gpu_trace", "api_trace", "osrt_sum")]
    steps = sc.next_steps(ne, {"gpu_idle_host_pct": 40.0}, inputs=csvs, report="run.nsys-rep")
    assert [str(s.need) for s in steps] == ["the per-thread OS runtime trace"]
    assert steps[0]["rules"] == ["gil-contention", "host-sleep"]
    assert steps[0]["commands"] == ["nsys export --type=sqlite --force-overwrite=true --output=run.sqlite run.nsys-rep",
                                    "nsys-expert diagnose run.sqlite"]
    sq = [{"kind": "nsys-sqlite", "table": t, "version": "2025.3", "path": "run.sqlite"} for t in ("gpu_trace", "api_trace")]
    steps = sc.next_steps(ne, {"gpu_idle_host_pct": 40.0}, inputs=sq, report="run.nsys-rep")
    assert "--trace=cuda,nvtx,osrt" in steps[0]["commands"][0] and steps[0]["commands"][-1] == "nsys-expert diagnose run.sqlite"
    assert sc.next_steps(ne, {"gpu_idle_host_pct": 1.0}, inputs=csvs, report="run.nsys-rep") == []
    assert sc.next_steps(ne, {}, inputs=csvs, report="run.nsys-rep") == []
