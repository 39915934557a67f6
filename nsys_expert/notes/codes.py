"""The catalog of notes: each code's kind and English template (Python's ``str.format`` fields, format
specs allowed: ``{n:,}``). To add one: a line here, and its translation in
``nsys_expert/locale/zh/LC_MESSAGES/nsys_expert.po`` (message id: the English template), then
``python -m nsys_expert.report.i18n``; ``tests/report/test_notes_catalog.py`` fails until both are there.

Kinds: ``warning`` changes what the reader should believe (damaged or partial input, facts not computed);
``input`` is a note about the inputs (which source won, files not read, tables nsys writes only when it
recorded some: folded into one line); ``absent`` says why a fact is absent (and so why a rule is not
evaluated); ``phrase`` is a part of another note (an input's name, a clause); ``same`` is the kind of the
note in its ``note`` field (a rank's warning is still a warning, its note on the inputs still a note).

``plain``: the template without the commands that collect what is missing (the Next steps give them);
``torch``: in the words of a torch.profiler trace. Both default to the English template. ``defaults``:
fields every note of the code has (so one template, and one translation, serves every nsys report).

Past ~400 lines on purpose: one table, one line per thing the program can say.
"""
from __future__ import annotations

from typing import NamedTuple


class Code(NamedTuple):
    kind: str
    en: str
    plain: str | None = None
    torch: str | None = None
    defaults: dict | None = None     # fields every note of this code has (a report's name)


_STEPS = "step ranges (ProfilerStep#N: call prof.step() once per step)"
_NO_OSRT = "the per-thread OS runtime trace, which torch.profiler does not record"
_OSRT_TELLS = ("whose OSRT_API table says whether the launching thread was working, waiting for data, asleep or "
               "waiting for Python's GIL while the GPU idled")
_NCU_COMMAND = ("ncu {args} <your command>; then ncu -i hot.ncu-rep --csv --page details > ncu/hot_details.csv (and "
                "--page raw > ncu/hot_raw.csv), ncu/ beside the nsys CSVs")


def _report(name: str) -> Code:
    return Code("phrase", "the {report} report (nsys stats -r {report})", "the {report} report", None, {"report": name})


CODES: dict[str, Code] = {
    # --- the inputs a fact needs (registry.INPUTS: said in "needs ...") ---
    "input.gpu_trace": _report("cuda_gpu_trace"),
    "input.api_trace": _report("cuda_api_trace"),
    "input.nvtx_trace": Code("phrase", "NVTX ranges with timestamps (nsys stats -r nvtx_pushpop_trace; profile with "
                                       "--trace=nvtx and mark each step with an NVTX range)",
                             "NVTX ranges with timestamps", _STEPS),
    "input.kern_sum": _report("cuda_gpu_kern_sum"),
    "input.api_sum": _report("cuda_api_sum"),
    "input.mem_time_sum": _report("cuda_gpu_mem_time_sum"),
    "input.mem_size_sum": _report("cuda_gpu_mem_size_sum"),
    "input.nvtx_sum": _report("nvtx_sum"),
    "input.nvtx_pushpop_sum": _report("nvtx_pushpop_sum"),
    "input.osrt_sum": Code("phrase", "the osrt_sum report (nsys stats -r osrt_sum; profile with --trace=osrt)",
                           "the {report} report", None, {"report": "osrt_sum"}),
    "input.osrt_trace": Code("phrase", "the per-thread OS runtime trace (profile with --trace=osrt: the SQLite "
                                       "export holds it as OSRT_API)", None, _NO_OSRT),
    "input.kern_exec_sum": _report("cuda_kern_exec_sum"),
    "input.nvtx_gpu_proj_sum": _report("nvtx_gpu_proj_sum"),
    "input.gpu_sum": _report("cuda_gpu_sum"),
    "input.ranks": Code("phrase", "several ranks of one job (per-rank CSV sets or SQLite files, or one export "
                                  "with several processes)"),
    "input.gpu_metrics": Code("phrase", "GPU metrics samples (nsys profile --gpu-metrics-devices=all, then nsys "
                                        "export --type sqlite)", "GPU metrics samples"),
    "input.cpu_trace": Code("phrase", "torch.profiler's CPU operators (a Kineto trace recorded with "
                                      "ProfilerActivity.CPU)"),
    "input.call_ops": Code("phrase", "native call chains of the CUDA calls (nsys profile --cudabacktrace=all, "
                                     "then nsys export --type sqlite)", "the CUDA calls' native call chains"),
    "input.mem_usage": Code("phrase", "device memory in use over time (nsys profile --cuda-memory-usage=true, then "
                                      "nsys export --type sqlite)", "device memory in use over time"),
    "input.device_memory": Code("phrase", "each GPU's memory size (TARGET_INFO_GPU in an nsys SQLite export)",
                                "each GPU's memory size"),
    "input.ncu": Code("phrase", "an Nsight Compute CSV of the hot kernels (ncu --set full ... then ncu -i "
                                "X.ncu-rep --csv --page details)", "an Nsight Compute CSV of the hot kernels"),

    # --- why a fact is absent (facts/*.py; "not evaluated" says them plain, engine/missing.py) ---
    "absent.needs": Code("absent", "needs {inputs}"),
    "absent.not_computable": Code("absent", "not computable from these inputs"),
    "absent.span_only": Code("absent", "only the whole-profile value is known from the summary reports "
                                       "({fact} = {value})"),
    "absent.span_export": Code("phrase", "export {all_inputs} for the steady-state value"),
    "absent.span_none_in_window": Code("phrase", "the GPU trace holds none of this work inside the window"),
    "absent.no_iterations": Code("absent", "no repeated top-level NVTX range marks the iterations: wrap each step "
                                           "in one (torch.cuda.nvtx.range_push('step') ... range_pop())"),
    "absent.needs_nvtx_steps": Code("absent", "needs NVTX step ranges (profile with --trace=nvtx and mark each "
                                              "step with an NVTX range)", None, "needs " + _STEPS),
    "absent.needs_summary_steps": Code("absent", "needs NVTX step ranges in the summaries (nvtx_sum / "
                                                 "nvtx_gpu_proj_sum: mark each step with torch.cuda.nvtx.range_push("
                                                 "'step') ... range_pop() and profile with --trace=nvtx)"),
    "absent.graph_hidden": Code("absent", "CUDA graph work is not in the GPU trace"),
    "absent.graph_whole_classes": Code("absent", "whole CUDA graph executions hold {pct:.0f} % of the kernel work and "
                                                 "their kernels are not traced one by one (--cuda-graph-trace=graph): "
                                                 "the kernels seen outside them do not say what the step runs"),
    "absent.graph_maybe_hidden": Code("absent", "CUDA graph work may be missing from the GPU trace"),
    "absent.graph_iterations": Code("absent", "the iterations' CUDA graph work is not in the GPU trace (host time only)"),
    "absent.graph_summaries": Code("absent", "CUDA graph launches: the summary reports leave the graphs' kernels out "
                                             "(--cuda-graph-trace=graph), so the GPU's work is unknown"),
    "absent.graph_summaries_per_iter": Code("absent", "{n} CUDA graph launches: the summary reports leave the graphs' "
                                                      "kernels out (--cuda-graph-trace=graph), so GPU work per "
                                                      "iteration is unknown"),
    "absent.sum_over_iterations": Code("absent", "the summed time ({sum_ms:,.1f} ms) is longer than all the "
                                                 "iterations together ({iter_ms:,.1f} ms): calls of several threads "
                                                 "or outside the iterations, no share of them"),
    "absent.whole_profile_ratio": Code("absent", "a whole-profile ratio (memcpy_api_over_gpu_work_ratio_span); over "
                                                 "the window the GPU trace measures the copies (memcpy_exposed_pct)"),
    "absent.no_optimizer_range": Code("absent", "no NVTX range marks the optimizer step inside the steps: wrap "
                                                "opt.step() in one (torch.cuda.nvtx.range_push('optimizer') ... "
                                                "range_pop())"),
    "absent.replay_needs_api": Code("absent", "the replay needs the CUDA API trace (cuda_api_trace)"),
    "absent.replay_needs_gpu": Code("absent", "the replay needs the GPU trace"),
    "absent.replay_needs_iterations": Code("absent", "the replay needs three iterations or more (NVTX step ranges)"),
    "absent.replay_no_thread": Code("absent", "no thread launched the window's GPU work"),
    "absent.replay_other_threads": Code("absent", "{pct:.0f} % of the GPU time is launched by other threads"),
    "absent.replay_off": Code("absent", "the replay is {err:+.0f} % off the measured iterations"),
    "absent.replay_nothing_measured": Code("absent", "nothing measured"),
    "absent.replay_ids_twice": Code("absent", "the API trace gives {n} of its calls a correlation id that another "
                                              "call has too"),
    "absent.replay_not_one_run": Code("absent", "{n} calls that launch one GPU operation each (not graph launches) "
                                                "have several in the GPU trace: the GPU and API traces are not of "
                                                "one run"),
    "absent.ncu_unit": Code("absent", "Nsight Compute gives '{metric}' in '{unit}', a unit nsys-expert does not know "
                                      "for it: not read as a number"),
    "absent.ncu_raw_page": Code("absent", "not in the Nsight Compute data: export the raw page too (ncu -i "
                                          "REPORT.ncu-rep --csv --page raw > ncu/REPORT_raw.csv)",
                                "not in the Nsight Compute data: export the raw page too"),
    "absent.ncu_rule_rows": Code("absent", "ncu's rule rows are not in the data: export the details page of a report "
                                           "profiled with rules on (the default, --apply-rules yes) from ncu 2023 or "
                                           "later"),
    "absent.ncu_set_full": Code("absent", "not in the Nsight Compute data: profile with --set full (this report lacks "
                                          "the section that holds it)"),
    "absent.ncu_command": Code("absent", "needs Nsight Compute data of the top kernels: " + _NCU_COMMAND,
                               "needs Nsight Compute data of the top kernels"),
    "phrase.ncu_command": Code("phrase", _NCU_COMMAND),
    "absent.unknown": Code("absent", "unknown fact"),

    # --- the analysis window's reason (facts/window.py, facts/period.py, facts/profiler_steps.py): a phrase
    # and its clauses (``then``), said where the report says the window ---
    "window.nvtx": Code("phrase", "{n} NVTX '{name}' ranges mark iterations"),
    "window.warm_one": Code("phrase", "iteration 1 left out as warm-up"),
    "window.warm_first": Code("phrase", "first {n} iterations left out as warm-up"),
    "window.warm_none": Code("phrase", "no iteration left out"),
    "window.end_by_correlation": Code("phrase", "the window ends with the GPU work the last iteration launched (by "
                                                "correlation id)"),
    "window.end_queued": Code("phrase", "the window ends with the GPU work the last iteration launched (queued back "
                                        "to back)"),
    "window.step_cut": Code("phrase", "the last step ({ms:.3g} ms, the others {median:.3g} ms) was cut off by the "
                                      "profiler: left out"),
    "window.step_scheduled": Code("phrase", "the first recorded step is ProfilerStep#{n}: the profiler's schedule ran "
                                            "{n} steps before it (wait, warm-up), so none of the {m} is left out as "
                                            "warm-up"),
    "window.passed_over": Code("phrase", "passed over: {items}"),
    "window.passed_over_asked": Code("phrase", "passed over: {items} (--iteration-range {range})"),
    "window.passed.nested_in": Code("phrase", "'{name}' ({n} ranges, nested in '{outer}')"),
    "window.passed.profiler_marks": Code("phrase", "'{name}' ({n} ranges, torch.profiler marks steps with '{marker}')"),
    "window.passed.fewer_instances": Code("phrase", "'{name}' ({n} ranges, fewer instances than '{other}')"),
    "window.passed.fewer_on_thread": Code("phrase", "'{name}' ({n} ranges, fewer than {k} on one thread)"),
    "window.passed.library": Code("phrase", "'{name}' ({n} ranges, a library's range)"),
    "window.passed.collective": Code("phrase", "'{name}' ({n} ranges, a PyTorch collective)"),
    "window.passed.operator": Code("phrase", "'{name}' ({n} ranges, an operator range)"),
    "window.passed.nested_level": Code("phrase", "'{name}' ({n} ranges, nested (level {level}))"),
    "window.user_ns": Code("phrase", "--window {start}:{end} (ns) given on the command line"),
    "window.user_seconds": Code("phrase", "--window {start:.9g}s:{end:.9g}s read as seconds from the profile's first "
                                          "event, as the report counts them ({at:.9g}s to {to:.9g}s on the nsys "
                                          "timeline)"),
    "window.no_gap": Code("phrase", "the GPU trace has no idle gap: the window is the whole trace"),
    "window.no_long_gap": Code("phrase", "no idle gap longer than {ms:.1f} ms in the first half of the trace: the "
                                         "window starts at the first GPU operation"),
    "window.dense": Code("phrase", "dense GPU activity starts after the last idle gap longer than {ms:.1f} ms "
                                   "(max(50 ms, 100 x the median gap)) in the first half of the trace"),
    "window.periodic": Code("phrase", "no NVTX iterations, so the steady state comes from the kernels: their names "
                                      "repeat every {d} kernels for {n} periods, and the window starts at the second "
                                      "period (start-up, the first call and the weights' upload left out) and ends "
                                      "with the last GPU operation"),
    "window.whole": Code("phrase", "no GPU trace: the window is the whole profile and only summary facts are computed"),
    "phrase.not_computed": Code("phrase", "not computed"),

    # --- why the HTML page draws no timeline (facts/series.py, pipeline.py) ---
    "series.no_timeline": Code("phrase", "no timeline (summary reports only)"),
    "series.no_gpu_trace": Code("phrase", "no GPU trace (cuda_gpu_trace)"),
    "series.empty_range": Code("phrase", "empty range"),
    "series.multi_rank": Code("phrase", "a multi-rank job: one row per rank below, no single timeline"),

    # --- nsys-expert command: the scenarios' words that hold a value (scenarios/playbook.yaml, plans.py; said by
    # cli/command.py; a playbook text without a field is its own message id) ---
    "plan.title_nvtx_range": Code("phrase", "E1: capture only the NVTX range '{range_name}'"),
    "plan.title_long_run": Code("phrase", "F: long job, skip {delay} s of warm-up, sample {duration} s, let training "
                                          "go on"),
    "plan.title_ncu_step": Code("phrase", "ncu C: the kernels of one training step (skip {launch_skip}, profile "
                                          "{launch_count})"),
    "plan.nvtx_range_code": Code("phrase", "in the code, around the steps to profile: torch.cuda.nvtx.range_push("
                                           "\"{range_name}\") ... torch.cuda.nvtx.range_pop() (or nvtx.range_push / "
                                           "nvtx.range_pop from the nvtx package); put a 'step' range inside it for "
                                           "every iteration"),
    "plan.torchrun_ranks": Code("phrase", "run_nsys.py profiles global rank(s) {ranks_text} (RANK, set by torchrun) and "
                                          "runs every other rank without nsys: one report per profiled rank, no "
                                          "collisions, and the other ranks keep their normal speed"),
    "plan.ncu_then": Code("phrase", "then: nsys-expert diagnose <nsys CSV folder> {output}_details.csv"),
    "plan.then_export": Code("phrase", "then export what nsys-expert reads: nsys-expert command stats --input {input}"),
    "plan.nodes": Code("phrase", "run the launch line on each of the {n} nodes, with MASTER_ADDR set to the host name "
                                 "of one of them (the rendezvous; port 29500 open between the nodes)"),
    "plan.trace_doc": Code("phrase", "which APIs to trace: {values_clauses}"),
    "plan.trace_value": Code("phrase", "{value} = {why}"),
    "plan.rank_output": Code("phrase", "one report per profiled rank ({placeholder} = its global rank)"),
    "plan.file_not_written": Code("phrase", "{name} (--out-dir DIR writes it for you):"),

    # --- the fact groups' warnings (facts/*.py) ---
    "facts.iteration_range_unknown": Code("warning", "--iteration-range {range}: no NVTX range of that name repeats "
                                                     "in the trace; the window is chosen as without it"),
    "facts.window_empty": Code("warning", "the analysis window is empty ({start}..{end} ns): no window facts"),
    "facts.profiler_step_cut": Code("warning", "the trace's last ProfilerStep ({ms:.3g} ms, the others {median:.3g} ms) "
                                               "was cut off when the profiler stopped: left out of the window"),
    "facts.skip_past_run": Code("warning", "--skip-iterations {asked} leaves no step of the {n}: the window is the "
                                           "last step alone; give fewer than {n}"),
    "facts.one_iteration": Code("warning", "only one NVTX iteration found; the window comes from the GPU trace"),
    "facts.graph_not_traced": Code("warning", "{n} CUDA graph launches (cudaGraphLaunch) in the window, but none of "
                                              "the graphs' GPU work is in {file}: nsys records graphs as a whole by "
                                              "default (--cuda-graph-trace=graph) and nsys stats leaves them out of "
                                              "cuda_gpu_trace. GPU utilization, idle gaps and kernel facts are not "
                                              "computed rather than reported as idle; re-profile with "
                                              "--cuda-graph-trace=node to see the graph kernels"),
    "phrase.the_gpu_trace": Code("phrase", "the GPU trace"),
    "facts.graph_unknown": Code("warning", "{n} CUDA graph launches in {file}, and without cuda_api_trace nsys-expert "
                                           "cannot tell whether the graphs' kernels are in the GPU trace (they are "
                                           "not with the default --cuda-graph-trace=graph): GPU utilization and idle "
                                           "facts are not computed; export cuda_api_trace or re-profile with "
                                           "--cuda-graph-trace=node"),
    "facts.ncu_units": Code("warning", "Nsight Compute values in units nsys-expert does not know were not read: "
                                       "{metrics}"),
    "facts.ncu_units_more": Code("warning", "Nsight Compute values in units nsys-expert does not know were not read: "
                                            "{metrics} and {more} more"),
    "phrase.metric_in_unit": Code("phrase", "'{metric}' in '{unit}'"),
    "facts.ncu_unmatched": Code("warning", "{n} ncu kernel(s) not found in the nsys data: {kernels}; their findings "
                                           "are ranked without a share of GPU time"),
    "facts.ncu_without_nsys": Code("warning", "Nsight Compute data without nsys kernel data: each kernel's share of "
                                              "GPU time is unknown, so kernel findings are ranked by ncu's own "
                                              "estimates with a small default weight; add the nsys CSVs of the same "
                                              "run to rank them by time"),

    # --- load: what was read, from where, and what was left out (load/*.py) ---
    "load.sqlite_beside": Code("warning", "{file}: its SQLite export is beside it and was read instead (no nsys run needed)"),
    "load.richest_source": Code("input", "{tables}: read from {file}, the richest source"),
    "phrase.not_used": Code("phrase", "not used: {files}"),
    "phrase.also_present": Code("phrase", "also present in {files}"),
    "load.not_read": Code("input", "not read (not a report nsys-expert knows): {files}"),
    "phrase.file_empty": Code("phrase", "{file} (empty)"),
    "phrase.file_why": Code("phrase", "{file} ({why})"),
    "load.subfolders": Code("warning", "subfolders not read (pass one as its own PATH to diagnose it): {dirs}"),
    "load.torch_beside_nsys": Code("warning", "not read (a torch.profiler trace beside nsys reports is another "
                                            "recording; pass it as its own PATH to diagnose it): {files}"),
    "load.nvtx_all_processes": Code("warning", "{table} has no process column: the NVTX ranges of every process are kept"),
    "load.gpu_metrics_per_process": Code("warning", "GPU metrics samples belong to GPUs, not processes: they are left "
                                                    "out of the per-process diagnosis (diagnose one process's export "
                                                    "to use them)"),
    "load.missing_column": Code("warning", "{file}: its {table} table has no '{column}' column; left out"),
    "load.copy": Code("warning", "{file} is a copy of {other} (the same {table} rows); read once"),
    "load.all_empty": Code("warning", "every report read has no rows ({files}): no GPU work, CUDA API call or NVTX "
                                      "range was recorded in them, so nothing can be judged; profile the steady "
                                      "state of the program again (nsys profile --trace=cuda,nvtx,osrt)"),
    "load.no_gpu_work": Code("warning", "{file}: no rows of GPU work (no kernel, copy or memset was recorded), so the "
                                        "GPU was not seen working at all: the GPU facts are not computed"),
    "load.empty_trace": Code("warning", "{file} has no rows while {summary} lists {n} kernel launches: the GPU trace "
                                        "is ignored and the timeline facts (GPU active %, idle gaps, window) are not "
                                        "computed"),
    "load.other_run_summary": Code("warning", "{summary} does not match {file} ({why}): it looks like the summary of "
                                              "another run, so it was left out and the kernel facts come from the "
                                              "trace"),
    "load.empty_api_trace": Code("warning", "{file} has no rows while {summary} counts {n} API calls: the API trace "
                                            "is ignored"),
    "load.gpu_claim": Code("warning", "the trace says GPU {id} is {name} (compute capability {cc}), but its kernels "
                                      "are built for sm_{built}, which that GPU cannot run: the GPU's name and "
                                      "capability are left out (no advice rests on them)"),
    "load.long_names": Code("warning", "{table}: {n:,} name(s) longer than {kib} KiB (the longest {longest:,} bytes; "
                                       "real kernel and NVTX range names are a few KiB at most) kept as their "
                                       "first {kept:,} characters and a mark of the whole (its length, and a hash "
                                       "or its last characters), so two names stay two"),
    "load.most_rows_bad": Code("warning", "{file}: {bad} of {rows} rows have a missing or negative start or duration "
                                          "(e.g. start {start}, duration {dur}): most of the table cannot be true, so "
                                          "none of it is used; export the report again from the .nsys-rep"),
    "load.rows_bad": Code("warning", "{file}: {bad} of {rows} rows have a missing or negative start or duration and "
                                     "were left out, row by row (e.g. start {start}, duration {dur})"),
    "load.rows_too_long": Code("warning", "{file}: {n} row(s) last longer than a day (the longest {years:.3g} years): "
                                          "impossible for one operation (a damaged time stamp?); left out"),
    "load.stretched_ops": Code("warning", "{file}: {n:,} of {ops:,} GPU operations last past the end of a later "
                                          "operation on their stream (e.g. stream {stream}, start {start} ns, "
                                          "{ms:,.3f} ms long): a stream runs its work in order, and a kernel "
                                          "launched early (PDL) still ends after its predecessor, so these times "
                                          "are damaged; left out"),
    "load.rows_out_of_range": Code("warning", "{file}: {n:,} of {rows:,} rows have a time stamp past any clock (e.g. "
                                              "{ns:,} ns, {years:,.0f} years): a damaged or edited value, and sums "
                                              "of it would overflow; left out"),
    "load.nvtx_bad": Code("warning", "{file}: {n} NVTX ranges without a valid start/end were left out"),
    "load.summary_bad": Code("warning", "{file}: {n} rows without a valid total time or count were left out"),
    "load.replacement_chars": Code("warning", "{file}: {n} name(s) hold U+FFFD replacement characters (e.g. "
                                              "'{example}'): characters were lost before nsys-expert read the file "
                                              "(not UTF-8, or re-encoded); those names are shown as read and may not "
                                              "match other reports"),
    "load.csv_cut_row": Code("warning", "{file}: the file was cut at line {line} (its last row is incomplete: cut "
                                        "short, then ended with a newline?); that row was left out"),
    "load.csv_ends_mid_row": Code("warning", "{file}: the file ends in the middle of a row (cut short?); its last, "
                                             "incomplete row was left out"),
    "load.bad_cells": Code("warning", "{file}: {n} value(s) in column '{column}' are not numbers; those cells were "
                                      "read as missing"),
    "load.thousands": Code("warning", "{file}: {n} value(s) in column '{column}' are written with thousands "
                                      "separators (e.g. {example}); read as the numbers they mean (nsys writes plain "
                                      "numbers: was the file re-saved by another program?)"),
    "load.scientific": Code("warning", "{file}: {n} value(s) in column '{column}' are in scientific notation (e.g. "
                                       "{example}); read as numbers, to the precision written (nsys writes plain "
                                       "numbers)"),
    "load.units": Code("warning", "{file}: column(s) {columns} are not in nsys's default units (ns, MB: exported with "
                                  "--timeunit, or re-saved by another program?): read as written ({how})"),
    "load.units_more": Code("warning", "{file}: column(s) {columns} and {others} more are not in nsys's default units "
                                       "(ns, MB: exported with --timeunit, or re-saved by another program?): read as "
                                       "written ({how})"),
    "phrase.unit_as": Code("phrase", "{unit} as {factor}"),
    "phrase.unit_1000_ns": Code("phrase", "1000 ns"),
    "phrase.unit_ns": Code("phrase", "{f:g} ns"),
    "phrase.unit_1024": Code("phrase", "powers of 1024 bytes"),
    "phrase.unit_bytes": Code("phrase", "{f:g} bytes"),
    "load.nul_bytes": Code("warning", "{file}: ends in {n:,} NUL bytes (space reserved and never written, or a "
                                      "crash); read without them"),
    "load.bom": Code("warning", "{file}: begins with a UTF-8 byte-order mark (nsys writes none: re-saved by another "
                                "program?); read without it"),
    "load.cr_only": Code("warning", "{file}: its lines end in CR only (old Mac style; nsys writes LF); read as line "
                                    "ends"),
    "load.junk_after": Code("warning", "{file}: line {line} onward ({n} bytes) is not CSV text (data appended after "
                                       "the last row?); the {rows} row(s) before it were read, the rest left out"),
    "load.sqlite_missing_tables": Code("input", "{file}: no {tables} table in this export; nsys writes a table only "
                                                "when it recorded something of its kind, so none of those are "
                                                "counted"),
    "phrase.table_of": Code("phrase", "{table} ({meaning})"),
    "phrase.kernels": Code("phrase", "kernels"),
    "phrase.memory_copies": Code("phrase", "memory copies"),
    "phrase.cuda_api_calls": Code("phrase", "CUDA API calls"),
    "phrase.nvtx_ranges": Code("phrase", "NVTX ranges"),
    "phrase.os_runtime_calls": Code("phrase", "OS runtime calls"),
    "load.no_gpu_table": Code("warning", "{file}: no TARGET_INFO_GPU table in this export (recent nsys versions may "
                                         "leave it out): GPUs are known by device id only"),
    "load.unnamed_kernels": Code("warning", "{file}: {n:,} kernels have no name (their StringIds entry is NULL or "
                                            "missing): counted as '{name}'; advice that reads kernel names cannot see "
                                            "them"),
    "load.graphs_whole": Code("warning", "{file}: {n} CUDA graph executions (profiled with --cuda-graph-trace=graph) "
                                         "count as GPU busy time as a whole; the kernels inside them are not itemized "
                                         "(re-profile with --cuda-graph-trace=node to see them)"),
    "load.sqlite_views": Code("warning", "{file}: {views} is a view, not a table as nsys writes it: not read (its "
                                         "events are missing from this report)"),
    "load.no_string_ids": Code("warning", "{file}: no StringIds table, so kernel, API and range names are unknown: "
                                          "findings that depend on names (kernel classes, sync and launch calls, NVTX "
                                          "iterations) cannot be trusted; export the report again with nsys export "
                                          "--type sqlite"),
    "load.gpu_metrics_none": Code("warning", "{file}: the GPU_METRICS table holds no samples of the known metrics"),
    "load.gpu_metrics_sources": Code("warning", "{file}: {sources} GPU metrics sources for {gpus} GPUs: the metrics "
                                                "are numbered by source, not by CUDA device id"),
    "load.kineto_no_runtime": Code("warning", "{file}: no cuda_runtime events in this trace (profiled without the CPU "
                                              "activity?): launches and synchronizations are not seen"),
    "load.kineto_dropped": Code("warning", "{file}: {n:,} {what} with {why}: {done}"),
    "kineto.events": Code("phrase", "events"),
    "kineto.runtime_calls": Code("phrase", "runtime calls"),
    "kineto.gpu_events": Code("phrase", "GPU events"),
    "kineto.corr_id": Code("phrase", "correlation ids"),
    "kineto.device_id": Code("phrase", "device ids"),
    "kineto.stream": Code("phrase", "stream ids"),
    "kineto.pid": Code("phrase", "process ids"),
    "kineto.tid": Code("phrase", "thread ids"),
    "kineto.bytes": Code("phrase", "byte counts"),
    "kineto.name": Code("phrase", "names"),
    "kineto.copy_kind": Code("phrase", "copy kinds"),
    "kineto.time_not_number": Code("phrase", "a time that is not a number"),
    "kineto.time_out_of_range": Code("phrase", "a time that is infinite, NaN or past 2**62 ns"),
    "kineto.past_int64": Code("phrase", "a number past the 64-bit integer range"),
    "kineto.not_integer": Code("phrase", "a value that is not an integer ({type})"),
    "kineto.not_finite": Code("phrase", "a number that is infinite or NaN"),
    "kineto.not_number": Code("phrase", "a value that is not a number ({type})"),
    "kineto.surrogate": Code("phrase", "a lone UTF-16 surrogate (shown as '?')"),
    "kineto.corr_id_shared": Code("phrase", "a correlation id another call has"),
    "kineto.corr_id_kernels": Code("phrase", "a correlation id another kernel has, though its call is no graph launch"),
    "kineto.device_text": Code("phrase", "a device id written as text"),
    "kineto.device_bad": Code("phrase", "a device id that is no GPU's ({type})"),
    "kineto.kept_untied": Code("phrase", "kept, but tied to no launch (which call launched which work cannot be told)"),
    "kineto.read_as_number": Code("phrase", "read as the number written"),
    "kineto.read_as_pid": Code("phrase", "read as the event's process id (Kineto's device number), else device 0"),
    "kineto.exact_copy": Code("phrase", "an exact copy of another event"),
    "kineto.left_out": Code("phrase", "left out"),
    "kineto.kept_as_question": Code("phrase", "kept with '?' in its place"),
    "kineto.read_as_unknown": Code("phrase", "read as unknown"),
    "load.ncu_text_form": Code("warning", "{file} is the text form of an Nsight Compute report, which nsys-expert does "
                                        "not read ({hint})"),
    "phrase.ncu_export_hint": Code("phrase", "export it with: ncu -i REPORT.ncu-rep --csv --page details > "
                                             "REPORT_details.csv (and --page raw > REPORT_raw.csv for the warp-stall "
                                             "and tensor-pipe metrics)"),
    "load.ncu_cut": Code("warning", "{file}: the file was cut at line {line} (its last row is incomplete); that row "
                                    "was left out, and the metrics of launch {launch} after it are missing"),
    "load.ncu_other_output": Code("warning", "{file}: {n} line(s) of other output (the application's own stdout) "
                                             "before the ncu table were skipped"),
    "load.ncu_error": Code("warning", "{file}: ncu reported an error: {error}"),
    "load.ncu_not_data": Code("warning", "{file}: {n} row(s) that are not ncu data were skipped"),
    "load.same_run": Code("warning", "{file} is the same run as {other} (the same {n} kernels at the same times, "
                                   "exported twice, e.g. with another --timeunit): read once, from {other}"),
    "load.rank_copy": Code("warning", "{file} is a copy of {other}: one rank, read once; not read: {files}"),
    "load.console_lost_section": Code("warning", "{file}: nothing was read from the {report} section (line {line}): "
                                                 "{why}"),
    "load.console_lost_line": Code("warning", "{file}: nothing was read from line {line}: {why}"),
    "phrase.console_no_table": Code("phrase", "no table follows its title"),
    "phrase.console_table_at": Code("phrase", "the table at line {line}: {why}"),
    "phrase.console_unknown_header": Code("phrase", "its header ({header}) is not the header of a report nsys-expert "
                                                    "reads"),
    "phrase.console_no_rows": Code("phrase", "the table at line {line}: none of the {n} line(s) under its header is a "
                                             "row of it"),
    "load.console_cut_rows": Code("warning", "{file}: {n} row(s) of the {table} table (line {line}) end before their "
                                             "name (cut short inside the numbers?): left out"),
    "load.console_skipped_lines": Code("warning", "{file}: {n} line(s) inside the {table} table (line {line}; the "
                                                  "first at line {first}) are not table rows (application output?) "
                                                  "and were skipped"),
    "load.console_truncated": Code("warning", "{file}: {n} name(s) were cut by nsys with '…' (column/table output "
                                              "keeps {k} characters); they are kept as printed, so matching them "
                                              "with Nsight Compute kernel names may miss (print with --format "
                                              "column:nolimit or export --format csv for full names)"),
    "load.console_unused": Code("warning", "{file}: tables of reports nsys-expert does not use were skipped: {tables}"),
    "load.console_runs": Code("warning", "{file} holds {n} runs of nsys output (separate sets of stats tables; "
                                         "{bounds_clauses}): only run 1 was diagnosed. To diagnose each run, split the file "
                                         "into one file per run with: {csplit} (writes {first}, run 1, to {last}, "
                                         "run {n}, in the current folder; or one run, e.g. run 2: {sed}), then "
                                         "diagnose each file on its own"),
    "phrase.names_more": Code("phrase", "{names} and {more} more"),
    "phrase.other_run_why": Code("phrase", "{common:.0f}% of the kernel names in common, {summary} kernels in the "
                                           "summary against {trace} in the trace"),
    "phrase.run_lines": Code("phrase", "run {n}: lines {lines}"),

    # --- the Next steps' need and why (scenarios/next_steps.py, report/verdict.py): phrases of a step ---
    "step.need_reports": Code("phrase", "{reports}"),
    "step.need_profile_records": Code("phrase", "a profile that records {what}"),
    "step.why_export": Code("phrase", "these reports are missing from the input: export them from the same profile"),
    "step.why_not_traced": Code("phrase", "the export holds no such events: nsys records them only when they are "
                                          "traced (--trace={trace}) and happen"),
    "step.need_nvtx": Code("phrase", "NVTX step ranges"),
    "step.why_nvtx_no_step": Code("phrase", "the profile's NVTX ranges mark no repeated step: mark each training step "
                                            "(torch.cuda.nvtx.range_push('step') ... range_pop()) and profile with "
                                            "--trace including nvtx"),
    "step.why_nvtx_none": Code("phrase", "if the profile has no NVTX ranges, mark each training step "
                                         "(torch.cuda.nvtx.range_push('step') ... range_pop()) and profile with "
                                         "--trace including nvtx"),
    "step.need_osrt_sum": Code("phrase", "OS runtime trace"),
    "step.why_osrt_sum": Code("phrase", "if the profile was made without --trace=osrt, osrt_sum has no rows: profile "
                                        "again with it"),
    "step.need_osrt_trace": Code("phrase", "the per-thread OS runtime trace"),
    "step.why_osrt_export": Code("phrase", "the export holds no OS runtime calls: profile again with --trace=osrt and "
                                           "diagnose its SQLite export, " + _OSRT_TELLS),
    "step.why_osrt_stats": Code("phrase", "nsys stats has no per-thread OS runtime report: diagnose the SQLite export "
                                          "of the same report, " + _OSRT_TELLS),
    "step.why_osrt_stats_none": Code("phrase", "nsys stats has no per-thread OS runtime report: diagnose the SQLite "
                                               "export of the same report, " + _OSRT_TELLS + " (a profile made "
                                               "without --trace=osrt has none: profile again with it)"),
    "step.need_graph_nodes": Code("phrase", "CUDA graph kernels in the GPU trace"),
    "step.why_graph_nodes": Code("phrase", "the run launches CUDA graphs and the default --cuda-graph-trace=graph "
                                           "leaves their kernels out of the GPU trace: profile again with "
                                           "--cuda-graph-trace=node"),
    "step.need_ncu": Code("phrase", "Nsight Compute metrics"),
    "step.why_ncu": Code("phrase", "kernel-level rules need ncu's metrics of the hot kernels ({kernels})"),
    "step.why_ncu_skip": Code("phrase", "kernel-level rules need ncu's metrics of the hot kernels ({kernels}; the {n} "
                                        "launch(es) before the window are skipped)"),
    "step.need_ncu_raw": Code("phrase", "the Nsight Compute raw page"),
    "step.why_ncu_raw": Code("phrase", "the warp-stall, tensor-pipe and sector metrics are on the raw page only: "
                                       "export it from the same ncu report"),
    "step.need_profiler_steps": Code("phrase", "ProfilerStep ranges"),
    "step.why_profiler_steps": Code("phrase", "the trace marks no repeated step: record three or more steps under "
                                              "torch.profiler with a schedule and call prof.step() once per step "
                                              "(ProfilerStep#N ranges become the iterations); `nsys-expert command "
                                              "quick` prints the snippet (torch_profiler_steps.py)"),
    "step.need_host_profile": Code("phrase", "A profile of the host's own work"),
    "step.why_host_profile": Code("phrase", "most of each iteration's critical path is the launching thread's own work "
                                            "between CUDA calls, and no finding names it: sample its Python and native "
                                            "stacks to see what it is"),

    # --- ready for the sites outside load and facts that still write sentences (the lead converts them):
    # pipeline.py, cli/collect.py, engine/resolve.py ---
    "pipeline.processes_as_ranks": Code("warning", "{n} processes ran GPU work in one export: each is diagnosed as a "
                                                   "rank"),
    "pipeline.many_ranks": Code("warning", "{n:,} ranks for the local pool of {workers} worker processes: about "
                                           "{minutes:.0f} minutes or more on this machine; --scheduler dask (a local "
                                           "Dask cluster) or --scheduler tcp://HOST:PORT (a cluster's scheduler) "
                                           "spreads the ranks over more cores (docs/multi-rank.md)"),
    "pipeline.remote_budget": Code("input", "the memory budget (--max-memory, NSX_MAX_MEMORY) holds for this "
                                            "machine's process only: the workers of the Dask cluster at {address} "
                                            "are bounded by their own memory limit (dask worker --memory-limit), "
                                            "and a rank whose worker Dask ends is reported as not diagnosed"),
    "pipeline.rank_note": Code("same", "[{rank}] {note}"),
    "pipeline.rank_failed": Code("warning", "[{rank}] not diagnosed: {error}; the job is diagnosed from the other {n} "
                                            "of {total} ranks"),
    "engine.no_stacks": Code("input", "the profile holds no call stacks, so {rules} cannot say where in your code the "
                                      "cause sits; nsys profile --python-backtrace=cuda --cudabacktrace=all records them "
                                      "(the playbook's template B; nsys-expert command pytorch)",
                             torch="the trace holds no Python stacks, so {rules} cannot say where in your code the "
                                   "cause sits; torch.profiler.profile(..., with_stack=True) records them"),
    "engine.too_little_work": Code("warning", "only {work:.3g} ms of GPU work in the {window:.3g} ms window (less than "
                                              "{limit:g} ms): too little to judge the run; findings are capped at low "
                                              "severity; profile more steps"),
    "engine.too_few_gpu_ops": Code("warning", "only {ops} GPU kernel(s) in the {window:.3g} ms window (fewer than "
                                              "{least}): they show what those kernels are, not where a run's time "
                                              "goes; too little to judge the run; findings are capped at low "
                                              "severity; profile more steps"),
    "engine.one_profiler_step": Code("warning", "the trace holds one torch.profiler step ({window:.3g} ms window): the "
                                                "profiler's stop may have cut it short, and with no other step to "
                                                "compare it cannot be told from a stub; too little to judge the run; "
                                                "findings are capped at low severity; record three or more steps "
                                                "(schedule(wait=1, warmup=1, active=3))"),
    "engine.too_little_work_summaries": Code("warning", "only {work:.3g} ms of GPU work in the whole profile (kernels "
                                                        "and copies in the summary reports) (less than {limit:g} ms): "
                                                        "too little to judge the run; findings are capped at low "
                                                        "severity; profile more steps"),
    "collect.profile_exit": Code("warning", "nsys profile exited with {rc} (usually the application's own exit code); "
                                            "the report was written and is used"),
    "collect.stats_exit": Code("warning", "nsys stats exited with {rc}: {tail}"),
}
