"""The words around the findings (the words of each finding come from its rule file): the Markdown
report's, the terminal's and the HTML page's shared labels, with the GPU metrics section's
(report/gpu_metrics.py), in English. Another language's are its ``labels`` catalog
(``locale/<lang>/LC_MESSAGES/labels.po``): each entry's message context is the table and key
(``report.window``, ``html.priority.high``), its message id the English words, so an English label that
changes falls back to English until its translation is updated. No language is named here."""
from __future__ import annotations

import functools

from ..notes import catalogs
from . import gpu_metrics as gm_report

LABELS = {
    "en": {
        "title": "nsys-expert diagnosis", "environment": "Collection environment", "window": "Analysis window",
        "utilization": "Overall GPU utilization", "kernels": "Top 10 CUDA kernels", "api": "CUDA API time",
        "comm": "Communication", "diagnosis": "Bottleneck diagnosis", "advice": "Optimization advice by priority",
        "not_evaluated": "Not evaluated", "next_steps": "Next steps: collect what the rules above lacked", "warnings": "Warnings", "inputs": "Inputs", "gpus": "GPUs",
        "span": "Profile span", "eras": "Report formats", "source": "Chosen by", "start": "Start", "end": "End",
        "length": "Length", "rel_note": "from the profile's first event; {abs} on the nsys timeline, as --window takes them", "rel_note_trace": "from the profile's first event; {abs} on the trace's clock, as --window takes them", "startup": "Start-up before the window", "iterations": "Iterations",
        "median_iter": "median", "first_iter": "first (warm-up)", "slowest": "slowest",
        "active": "GPU active", "kernel_active": "kernels", "memcpy_active": "memcpy",
        "idle_by_cause": "Idle time by what the host was doing", "cause": "Cause", "share": "Share of window",
        "gaps": "Gaps", "rank": "#", "name": "Name", "total": "Total (ms)", "calls": "Calls", "avg": "Avg (us)",
        "share_gpu": "Share (%)", "api_name": "API", "share_api": "Share of API time (%)", "med": "Median (us)",
        "cpu_ops": "torch.profiler CPU operators", "phase": "Phase", "host_per_step": "Host ms / step",
        "kernel_ms": "Kernel time (ms)", "kernel_share": "Share of kernel time (%)",
        "phases": {"dataloader": "DataLoader __next__", "optimizer": "optimizer step", "backward": "backward (autograd)",
                   "forward": "forward and the rest"},
        "sync_sources": "Blocking calls by the operator that made them", "operator": "Operator", "via": "via",
        "wait_ms": "Host wait (ms)", "idle_after_ms": "GPU idle after (ms)", "share_sync": "Share (%)",
        "no_nccl": "No NCCL kernels in the window.", "nccl_unknown": "NCCL kernels: not known (these inputs hold no GPU kernel trace or summary).", "nccl_share": "NCCL share of GPU busy time",
        "overlap": "overlapped by compute", "exposed": "exposed (share of window)", "verdict": "Verdict",
        "none_found": "No system-level bottleneck found in the steady state.", "severity": "Severity",
        "none_undetermined": "No finding, and none could be made: the rules that judge a system-level bottleneck "
                             "did not have the data they need (see the verdict and what was not evaluated).",
        "evidence": "Evidence", "fact": "Fact", "value": "Value", "threshold": "Threshold", "from": "Source",
        "gain": "expected gain", "gain_replayed": "replayed", "limiter_short": "limiter: host work no finding names, {host} % of the critical path (the full report says how to profile it)", "limiter_host": "The limiter is the host's own work between CUDA calls, which no finding names: {host} % of each iteration's critical path (taking it off the path would win back up to {offload} % of the window); Next steps say how to profile it.", "gain_capped": "at most what the critical path leaves it", "gain_capped_copies": "at most the kernels' time to hide them under and the pageable copies' time",
        "recoverable_capped": "at most 100 % less the {side} ({value} % of the critical path), which no finding's fix shortens", "side_host": "host's own time", "side_gpu": "GPU's work",
        "gain_summary": "a range", "of_window": "of the window", "missing": "missing", "main_idle": "Main idle cause",
        "idle_causes": {"launch": "launching (short gaps)", "sync": "after a blocking sync", "memcpy": "in a copy call",
                        "data": "loading data", "wait": "host blocked waiting (OS call)", "sleep": "host asleep (a sleep call)", "gil": "waiting for the GIL (other Python threads)", "load": "loading kernel modules (lazy loading)", "alloc": "in cudaMalloc / cudaFree", "host": "host code outside CUDA", "other": "work already queued (dependency)"},
        "rule": "Rule", "nsys_version": "nsys version", "memcpy": "Copies in the window",
        "direction": "Direction", "memory": "Memory", "facts_from": "Numbers from", "no_findings_advice": "Nothing to do at the system level.", "no_advice_undecided": "No advice yet: the verdict is open, and what would decide it is under the verdict and in the next steps.",
        "settings": "Settings", "settings_file": "from", "settings_packs": "extra rule packs",
        "settings_only": "only", "settings_ignored": "left out", "settings_params": "parameters changed",
        "settings_default": "default",
        "whole": "whole profile", "ranks_title": "Ranks", "representative": "facts above from",
        "iter_ms": "iteration (ms)", "unknown_gpu": "GPU model not recorded", "compute_per_iter": "compute / iteration (ms)", "last_arrival": "last arrival",
        "verdict_likely": "Verdict (likely, from summary reports)", "verdict_partial": "Verdict (likely: not every system-level rule could run)",
        "compute_ok": "Compute-bound: the GPU is doing useful work; gains now come from the kernels or the algorithm.",
        "verdict_undetermined": "Verdict (undetermined)", "found_so_far": "Found so far", "also_noted": "Also noted",
        "confirm": "To confirm", "export_next": "To decide", "likely": "likely, from summary reports",
        "reason_utilization_unknown": "The GPU utilization is unknown: there is no GPU trace, and no NVTX step ranges in the summary reports to estimate it from",
        "reason_idle_unexplained": "The GPU is active only {active} % of the window and no rule names a cause",
        "reason_idle_explained": "The GPU is active only {active} % of the window; the idle-gap causes account for {attributed} % of the window, but no fix the rules know wins much of it back: the time is the host's work between GPU submissions (shorten it or move it off the critical path)",
        "active_est": "From the summary reports: GPU work for at most {est} % of each {iter} ms iteration (an upper bound: start-up work outside the steps counts in it)",
        "reason_no_rows": "Nothing to judge: every report read has no rows (no GPU work, CUDA API call or NVTX range was recorded); profile again with the program's steady state inside the capture",
        "reason_no_gpu_work": "Nothing to judge: no GPU work (kernel, copy or memset) was recorded; profile again with the program's GPU steps inside the capture",
        "reason_window_not_steady": "Cannot decide from this input: the window ({window_ms} ms, the GPU trace's dense part: no NVTX timestamps) is mostly not the steady state: the {steps} steady '{range}' steps of the NVTX summary fill {steady_ms} ms of it ({median_ms} ms each), so a slow warm-up step or start-up is inside it and its GPU-active {active} % is not the steps'; the NVTX trace bounds the window",
        "reason_estimate_near_threshold": "Cannot decide from this input: the GPU is busy at most {active} % of each iteration ({basis}, an upper bound), too close to 50 % to tell a busy GPU from a starved one",
        "reason_copies_unjudged": "Cannot decide from the summary reports: host-device copies are {copies} % of the GPU's busy time, and only the trace tells whether they run under the kernels or hold them up (memcpy-bound)",
        "reason_no_finding_partial": "No system-level bottleneck found by the rules that could run; the GPU is busy {active} % of the time ({basis})",
        "basis_measured": "measured on the GPU trace", "basis_estimated": "estimated from the summary reports",
        "reason_steps_unbounded": "Cannot decide from the summary reports: they hold {work} % of the NVTX steps' time in GPU work, so the steps do not hold the run's time (work between the step ranges, such as a data loader or a checkpoint, or outside them), and only a trace tells where it goes",
        "reason_no_finding_bound": "No system-level bottleneck found by the rules that could run; the summary reports hold more GPU work than iteration time ({work} % of it: work outside the iterations or on concurrent streams), so they cannot tell how busy the GPU is inside an iteration",
        "not_checked": "Not evaluated", "input_notes": "{n} note(s) on the inputs (which file each table was read from, files not read)",
        "supporting": "Supporting evidence", "does_not_apply_cap": "Does not apply", "and_more": "and {n} more kernel(s)", "gain_together": ", {n} kernels together (the gains of the kernels listed under Supporting evidence add to this one's)",
        "reason_too_little_work": "Too little GPU work in the window to judge: the GPU is busy {active} % of a short window; profile more steps",
        "reason_too_little_work_ops": "Too little GPU work in the window to judge: only {ops} GPU kernel(s) in {window_ms} ms, which show what those kernels are, not where a run's time goes; profile more steps",
        "reason_too_little_work_steps": "Too little to judge: the trace holds one torch.profiler step, which the profiler's stop may have cut short and which no other step can be compared with; record three or more steps",
        "reason_too_little_work_summary": "Too little GPU work to judge: the summary reports hold only {work_ms} ms of kernels and copies in the whole profile; profile more steps",
        "phase_holds": "Where: {share} % of the GPU's idle time lies in the NVTX {phase} phase ({names}); that phase's fix comes first.",
        "where_code": "Where in the code", "where_in": "in", "where_called_from": "called from",
        "where_share": "of this cause's time", "where_source_kineto": "torch.profiler stacks: the line is the function's first line",
        "where_source_nsys": "nsys Python backtraces",
        "phase_work_title": "Where each step's time goes, by phase (launch times joined to the NVTX ranges)", "ms_per_step": "ms a step",
        "share_window": "Share of window (%)", "kernels_per_step": "Kernels a step", "gpu_busy_in_it": "GPU busy in it (%)",
        "d2h_per_step": "To host (MB a step)",
        "async_step": "The '{range}' ranges time the host alone ({host} ms median): the loop queues its GPU work and goes on, so an iteration of the window runs on to the end of the GPU work it launched ({iter} ms median).",
        "phases_title": "NVTX phases", "range_name": "Range", "phase": "Phase", "parent": "Inside", "share_parent": "Share of it (%)", "instances": "Instances",
        "median_ms": "Median (ms)", "nesting_trace": "nesting from the NVTX trace", "nesting_inferred": "no NVTX trace: nesting inferred from totals and counts",
        "phase_names": {"data": "data loading", "checkpoint": "checkpoint", "eval": "evaluation", "log": "logging", "comm": "communication",
                        "optimizer": "optimizer", "backward": "backward", "forward": "forward", "step": "step", "pauses": "pauses"},
        "api_shares": "Share of CUDA API time by kind", "api_kinds": {"memcpy": "copies", "sync": "syncs", "launch": "launches", "alloc": "malloc / free", "load": "code loading"},
        "copy_calls_of": "copy calls", "of_span": "of the span",
        "recoverable": "Total recoverable time", "recoverable_replayed_how": "the findings' fixes replayed together on the iteration's dependency model, each on what the others leave (never a sum)",
        "cp_line": "Critical path of an iteration: host **%s %%**, GPU **%s %%** (replayed over %s iterations: %s ms each, %s ms measured)",
        "recoverable_how": "gains on one part of the window (the idle gaps, one kernel, the copies) overlap, each fix working on what the others leave; different parts add; no part gives back more than its share",
        "mem_kinds": {"Pageable": "Pageable", "Pinned": "Pinned", "Device": "Device", "Managed": "Managed",
                      "Array": "Array", "Unknown": "Unknown"},
        # the punctuation between a label and its value, and the language's settings
        "colon": ": ", "comma": ", ", "semicolon": "; ", "paren": " ({})",
        "phases_line": "{title} (numbers from {source}; {nesting}):",
        "html_lang": "en",          # the HTML page's lang attribute
        "brackets": "ascii",        # full-width: prose brackets and punctuation set full-width (i18n.zh_markdown_brackets)
    },
}
SEVERITY = {"info": "info", "low": "low", "medium": "medium", "high": "high", "critical": "critical"}

LABELS["en"]["gm"] = gm_report.LABELS["en"]   # the GPU metrics words (report/gpu_metrics.py)


# the HTML page's own words (report/html.py)
HTML_LABELS = {
    "en": {
        "timeline": "GPU utilization over the profile", "rank_timeline": "Each rank over its analysis window",
        "rank_time": "time since the window start (ms)", "timeline_zoom": "GPU utilization inside the analysis window",
        "time_s": "time (s)", "busy_axis": "% of each bin", "compute": "compute kernels", "nccl": "NCCL kernels",
        "copy": "copies / memsets", "idle": "idle", "unattributed": "idle (cause not attributed)",
        "startup_band": "start-up", "window_band": "analysis window",
        "iter_chart": "Iteration times", "iter_axis": "ms", "warmup": "warm-up (left out)", "steady": "steady state",
        "median_line": "median", "clipped": "clipped",
        "kern_chart": "Top kernels by total time in the window", "api_chart": "CUDA API time by call",
        "api_classes": {"sync": "synchronising", "launch": "launch", "memcpy": "copy / set", "other": "other"},
        "window_bar": "The window at a glance", "nccl_chart": "NCCL share of GPU busy time",
        "nccl_overlapped": "NCCL, overlapped by compute", "nccl_exposed": "NCCL, exposed", "non_nccl": "other GPU work",
        "no_timeline": "No GPU timeline to draw", "no_iterations": "No NVTX iterations in the profile.",
        "graph_hidden": "CUDA graph work is not in the GPU trace: the empty parts of this chart are unseen, not idle.",
        "hover": "Hover a bar for the full name and numbers.", "generated": "Generated by",
        "summary_active": "GPU active in the window", "summary_span": "GPU active, whole profile",
        "summary_iter": "Median iteration", "summary_idle": "Main idle cause", "summary_gain": "Top expected gain",
        "advice_for": "for", "priority": {"critical": "critical", "high": "high", "medium": "medium", "low": "low", "info": "info"},
        "bin": "bin", "busy": "busy", "name_cut": "{n} characters; the whole name is in the JSON report",
    },
}


# the words that name NVIDIA's API, and what a ROCm run (gpu_vendor amd: hip* calls) calls them
_VENDOR = {"amd": (("CUDA API", "HIP API"), ("CUDA kernels", "GPU kernels"), ("CUDA Kernel", "GPU Kernel"),
                   ("outside CUDA", "outside HIP"), ("CUDA 之外", "HIP 之外"),
                   ("cudaMalloc / cudaFree", "hipMalloc / hipFree"))}


def with_categories(L: dict, categories: dict, lang: str) -> dict:
    """``L`` with ``categories``: each category's title in ``lang`` (pack.yaml ``categories:``), for a language
    other than English (an English report names a category by its id, what ``explain`` takes)."""
    if lang == "en":
        return L
    titles = {name: c.title_in(lang) for name, c in categories.items() if c.title_in(lang)}
    return {**L, "categories": titles} if titles else L


# how the notes and lists join their parts (notes.Language): the ``join`` entries of the labels catalog
JOIN = {"names": ", ", "items": ", ", "either": " or ", "both": " and ", "clauses": "; ",
        "and_more": "{names} and {more} more"}

DOMAIN = "labels"


def words(name: str, english: dict, lang: str | None) -> dict:
    """``english`` (a table of words, nested) in ``lang``: each word its ``labels`` catalog entry (context
    ``name.key``, message id the English word), else the English word."""
    if not lang or lang == "en":
        return english
    return _words(name, _Frozen(english), lang, tuple(catalogs.locale_dirs()))


class _Frozen:
    """A table of words as a cache key (the tables are module constants: by identity)."""
    __slots__ = ("table",)

    def __init__(self, table):
        self.table = table

    def __hash__(self):
        return id(self.table)

    def __eq__(self, other):
        return isinstance(other, _Frozen) and other.table is self.table


@functools.lru_cache(maxsize=None)
def _words(name: str, english: _Frozen, lang: str, dirs: tuple[str, ...]) -> dict:
    cat = catalogs.catalog(DOMAIN, lang)

    def one(prefix, v):
        if isinstance(v, dict):
            return {k: one(f"{prefix}.{k}", x) for k, x in v.items()}
        if isinstance(v, str):
            return cat.get(f"{prefix}\x04{v}", v)
        return v
    return one(name, english.table)


def severity(lang: str | None):
    """A finding's severity (info … critical) as ``lang`` says it."""
    said = words("severity", SEVERITY, lang)
    return lambda s: said.get(s, s)


def labels(lang: str, facts: dict | None = None, table: dict | None = None) -> dict:
    """The labels of ``lang`` (``table``: another table of labels, e.g. the HTML page's), in the words of
    the run's GPU maker (``facts``: the run's facts): a ROCm run's report says HIP API, not CUDA API."""
    table = LABELS if table is None else table
    words_ = words("html" if table is HTML_LABELS else "report", table["en"], lang)
    swaps = _VENDOR.get((facts or {}).get("gpu_vendor"))
    if not swaps:
        return words_
    def swap(v):
        if isinstance(v, dict):          # a table of words (the idle causes)
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, str) and "cuda" in v.lower():
            for a, b in swaps:
                v = v.replace(a, b)
        return v

    return swap(words_)
