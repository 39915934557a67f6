"""report: rank the findings and put the diagnosis into words (Markdown, JSON).

``build`` produces the JSON contract of design.md (schema_version 1) plus the tables the Markdown
report shows; ``render_markdown`` fills the Jinja2 template. The words of each finding come from its
rule file; the words around them come from ``LABELS`` (en / zh).

Past ~400 lines on purpose: the en / zh label tables (a third of the file, data) sit beside ``build`` and
the Markdown rendering that read them.
"""
from __future__ import annotations

import functools
import json
import math
import os

import jinja2

from .. import __version__, cache
from ..engine.rules import SEVERITIES
from ..facts import FactSet, registry
from ..facts.names import short_kernel_name
from ..load import Profile
from ..textsafe import visible
from . import gpu_metrics as gm_report, verdict

SCHEMA_VERSION = 1


def rank_findings(findings: list[dict]) -> list[dict]:
    """Fix first what wins back the most time; then by severity; then the system-level cause before other
    ways to win the same time (sync_bound: removing the syncs and TF32 GEMMs both give back the host's
    wait); then by rule id (stable)."""
    def key(f):
        gain = f.get("estimated_gain_pct")
        return (-(round(gain, 1) if gain is not None else -1.0), -SEVERITIES.index(f["severity"]),
                f.get("category") not in verdict.SYSTEM_CATEGORIES, f["rule"],
                str(f.get("scope", {}).get("kernel") or ""))
    out = sorted(findings, key=key)
    for i, f in enumerate(out):
        f["rank"] = i + 1
    return out


def clean_value(v):
    """A fact's value as the JSON report writes it (floats rounded to 4 places, non-finite as null)."""
    return _clean(v)


def _clean(v):
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return round(v, 4)
    return v


def build(prof: Profile, fs: FactSet, evaluation, lang: str = "en") -> dict:
    findings = rank_findings(evaluation.findings)
    ordered = []
    for f in findings:
        ordered.append({"rule": f["rule"], "category": f["category"], "severity": f["severity"], "rank": f["rank"],
                        "title": f["title"], "message": f["message"], "evidence": f["evidence"],
                        "advice": f["advice"], "estimated_gain_pct": f["estimated_gain_pct"],
                        **({"gain_basis": f["gain_basis"]} if f.get("gain_basis") else {}),
                        **({"estimated_gain_range_pct": f["estimated_gain_range_pct"]}
                           if f.get("estimated_gain_range_pct") else {}),
                        "confidence": f.get("confidence", "measured"), "scope": f["scope"],
                        "pack": f.get("pack"), "references": f.get("references", []),
                        "subject": f.get("subject"), "subject_share_pct": f.get("subject_share_pct"),
                        "cause": f.get("cause"), "supporting": f.get("supporting", [])})
    w = fs.window.to_json() if fs.window else {"start_ns": None, "end_ns": None, "source": "whole", "iterations": 0}
    tables = {k: v for k, v in sorted(fs.tables.items()) if not k.startswith("_")}   # one order (threads)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "nsys-expert", "version": __version__},
        "inputs": prof.inputs,
        "window": w,
        "facts": {k: _clean(v) for k, v in sorted(fs.run.items())},
        "findings": ordered,
        "not_evaluated": evaluation.not_evaluated,
        "warnings": getattr(evaluation, "notes", []) + prof.warnings + fs.warnings,
        "recoverable": getattr(evaluation, "recoverable", {}) or {},
        "too_little_work": getattr(evaluation, "too_little_work", None),
        "fact_sources": dict(sorted(fs.sources.items())),   # the fact groups run in threads: one order
        "facts_absent": {k: v for k, v in sorted(fs.absent.items())},
        "environment": {"gpus": prof.meta.get("gpus", []), "report_eras": prof.meta.get("report_eras", []),
                        **{k: v for k, v in prof.meta.items() if k not in ("gpus", "report_eras")}},
        "tables": tables,
        "lang": lang,
    }
    doc["next_steps"] = _next_steps(doc)
    doc["verdict"] = verdict.decide(ordered, evaluation.not_evaluated, doc["facts"], doc["next_steps"])
    if doc["too_little_work"]:     # engine/resolve.py's minimum-work guard: no finding decides the run
        doc["verdict"].update(state="undetermined", reason="too_little_work", category=None, rule=None, severity=None,
                              confidence=None)
        doc["verdict"].pop("gpu_idle_attributed_pct", None)
    return doc


def _next_steps(doc: dict) -> list[dict]:
    """The exact commands that collect what the rules under not_evaluated lacked (scenarios.next_steps)."""
    from .. import scenarios
    from ..load import schema

    name = "report.nsys-rep"
    for i in doc.get("inputs", []):
        base = os.path.basename(i["path"])
        stem, ext = os.path.splitext(base)
        if ext in (".nsys-rep", ".qdrep", ".sqlite"):
            name = f"{stem}.nsys-rep"
            break
        rep = schema.report_name_from_filename(base)
        if rep and base.lower().find(rep) > 0:
            name = base[: base.lower().find(rep)].rstrip("_.-") + ".nsys-rep"
            break
    try:
        return scenarios.next_steps(doc.get("not_evaluated", []), doc.get("facts", {}), inputs=doc.get("inputs", []),
                                    report=name, ncu_hint=(doc.get("tables") or {}).get("ncu_command"))
    except Exception:  # noqa: BLE001 - advice about the next run must never break this report
        return []


def to_json(doc: dict) -> str:
    public = {k: v for k, v in doc.items() if k != "lang" and not k.startswith("_")}
    return json.dumps(public, indent=2, ensure_ascii=False, default=str) + "\n"


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
        "no_nccl": "No NCCL kernels in the window.", "nccl_share": "NCCL share of GPU busy time",
        "overlap": "overlapped by compute", "exposed": "exposed (share of window)", "verdict": "Verdict",
        "none_found": "No system-level bottleneck found in the steady state.", "severity": "Severity",
        "none_undetermined": "No finding, and none could be made: the rules that judge a system-level bottleneck "
                             "did not have the data they need (see the verdict and what was not evaluated).",
        "evidence": "Evidence", "fact": "Fact", "value": "Value", "threshold": "Threshold", "from": "Source",
        "gain": "expected gain", "gain_replayed": "replayed", "gain_summary": "a range", "of_window": "of the window", "missing": "missing", "main_idle": "Main idle cause",
        "idle_causes": {"launch": "launching (short gaps)", "sync": "after a blocking sync", "memcpy": "in a copy call",
                        "data": "loading data", "wait": "host blocked waiting (OS call)", "sleep": "host asleep (a sleep call)", "gil": "waiting for the GIL (other Python threads)", "load": "loading kernel modules (lazy loading)", "alloc": "in cudaMalloc / cudaFree", "host": "host code outside CUDA", "other": "work already queued (dependency)"},
        "rule": "Rule", "nsys_version": "nsys version", "memcpy": "Copies in the window",
        "direction": "Direction", "memory": "Memory", "facts_from": "Numbers from", "no_findings_advice": "Nothing to do at the system level.",
        "whole": "whole profile", "ranks_title": "Ranks", "representative": "facts above from",
        "iter_ms": "iteration (ms)", "unknown_gpu": "GPU model not recorded", "compute_per_iter": "compute / iteration (ms)", "last_arrival": "last arrival",
        "verdict_likely": "Verdict (likely, from summary reports)", "verdict_partial": "Verdict (likely: not every system-level rule could run)",
        "compute_ok": "Compute-bound: the GPU is doing useful work; gains now come from the kernels or the algorithm.",
        "verdict_undetermined": "Verdict (undetermined)", "found_so_far": "Found so far", "also_noted": "Also noted",
        "confirm": "To confirm", "export_next": "To decide", "likely": "likely, from summary reports",
        "reason_utilization_unknown": "The GPU utilization is unknown: there is no GPU trace, and no NVTX step ranges in the summary reports to estimate it from",
        "reason_idle_unexplained": "The GPU is active only {active} % of the window and no rule names a cause",
        "reason_idle_explained": "The GPU is active only {active} % of the window; the idle-gap causes account for {attributed} % of the window, but no fix the rules know wins much of it back: the time is the host's work between GPU submissions (shorten it or move it off the critical path)",
        "reason_no_finding_partial": "No system-level bottleneck found by the rules that could run; the GPU is busy {active} % of the time ({basis})",
        "basis_measured": "measured on the GPU trace", "basis_estimated": "estimated from the summary reports",
        "reason_no_finding_bound": "No system-level bottleneck found by the rules that could run; the summary reports hold more GPU work than iteration time ({work} % of it: work outside the iterations or on concurrent streams), so they cannot tell how busy the GPU is inside an iteration",
        "not_checked": "Not evaluated", "input_notes": "{n} note(s) on the inputs (which file each table was read from, files not read)",
        "supporting": "Supporting evidence", "does_not_apply_cap": "Does not apply", "and_more": "and {n} more kernel(s)",
        "reason_too_little_work": "Too little GPU work in the window to judge: the GPU is busy {active} % of a short window; profile more steps",
        "phases_title": "NVTX phases", "range_name": "Range", "phase": "Phase", "parent": "Inside", "share_parent": "Share of it (%)", "instances": "Instances",
        "median_ms": "Median (ms)", "nesting_trace": "nesting from the NVTX trace", "nesting_inferred": "no NVTX trace: nesting inferred from totals and counts",
        "phase_names": {"data": "data loading", "checkpoint": "checkpoint", "eval": "evaluation", "log": "logging", "comm": "communication",
                        "optimizer": "optimizer", "backward": "backward", "forward": "forward", "step": "step"},
        "api_shares": "Share of CUDA API time by kind", "api_kinds": {"memcpy": "copies", "sync": "syncs", "launch": "launches", "alloc": "malloc / free", "load": "code loading"},
        "copy_calls_of": "copy calls", "of_span": "of the span",
        "recoverable": "Total recoverable time", "recoverable_replayed_how": "the findings' fixes replayed together on the iteration's dependency model, each on what the others leave (never a sum)",
        "cp_line": "Critical path of an iteration: host **%s %%**, GPU **%s %%** (replayed over %s iterations: %s ms each, %s ms measured)",
        "recoverable_how": "gains on one part of the window (the idle gaps, one kernel, the copies) overlap, each fix working on what the others leave; different parts add; no part gives back more than its share",
    },
    "zh": {
        "title": "Nsight Systems 性能分析报告", "environment": "采集环境", "window": "分析窗口",
        "utilization": "总体 GPU 利用率", "kernels": "Top 10 CUDA Kernel（按总耗时）", "api": "CUDA API 耗时分布",
        "comm": "通信分析（多卡场景）", "diagnosis": "瓶颈诊断", "advice": "优化建议（按优先级）",
        "not_evaluated": "未评估的规则", "next_steps": "下一步：采集上述规则缺少的数据", "warnings": "警告", "inputs": "输入文件", "gpus": "GPU",
        "span": "采集时长", "eras": "报告格式", "source": "选取依据", "start": "开始", "end": "结束",
        "length": "时长", "rel_note": "自采集的第一个事件起算；nsys 时间轴上为 {abs}，即 --window 使用的时间", "rel_note_trace": "自采集的第一个事件起算；trace 时钟上为 {abs}，即 --window 使用的时间", "startup": "窗口前的启动时间", "iterations": "迭代",
        "median_iter": "中位数", "first_iter": "预热的首次迭代", "slowest": "最慢",
        "active": "GPU 活跃时间占比", "kernel_active": "kernel", "memcpy_active": "拷贝",
        "idle_by_cause": "空闲时间按主机行为归因", "cause": "原因", "share": "占窗口比例",
        "gaps": "间隙数", "rank": "排名", "name": "Kernel 名称", "total": "总耗时 (ms)", "calls": "调用次数", "avg": "平均耗时 (us)",
        "share_gpu": "占比 (%)", "api_name": "API", "share_api": "占 API 时间 (%)", "med": "中位数 (us)",
        "cpu_ops": "torch.profiler CPU 算子", "phase": "阶段", "host_per_step": "每步主机时间 (ms)",
        "kernel_ms": "Kernel 时间 (ms)", "kernel_share": "占 Kernel 时间 (%)",
        "phases": {"dataloader": "DataLoader __next__", "optimizer": "优化器 step", "backward": "反向传播（autograd）",
                   "forward": "前向及其余部分"},
        "sync_sources": "阻塞调用按发起的算子归类", "operator": "算子", "via": "经由",
        "wait_ms": "主机等待 (ms)", "idle_after_ms": "之后 GPU 空闲 (ms)", "share_sync": "占比 (%)",
        "no_nccl": "窗口内没有 NCCL kernel。", "nccl_share": "NCCL 占 GPU 忙碌时间",
        "overlap": "与计算重叠", "exposed": "暴露时间（占窗口）", "verdict": "结论",
        "none_found": "稳态下未发现系统级瓶颈。", "severity": "严重程度",
        "none_undetermined": "没有发现，也无法判断：判断系统级瓶颈的规则缺少所需数据（见结论与未评估的规则）。",
        "evidence": "依据", "fact": "指标", "value": "数值", "threshold": "阈值", "from": "来源",
        "gain": "预期收益", "gain_replayed": "回放", "gain_summary": "范围", "of_window": "（占窗口）", "missing": "缺少", "main_idle": "主要空闲原因",
        "idle_causes": {"launch": "提交 kernel（短间隙）", "sync": "阻塞同步之后", "memcpy": "拷贝调用中",
                        "data": "加载数据", "wait": "主机阻塞等待（系统调用）", "sleep": "主机在休眠（sleep 调用）", "gil": "等待 GIL（其他 Python 线程）", "load": "加载 kernel 模块（懒加载）", "alloc": "cudaMalloc / cudaFree 调用中", "host": "CUDA 之外的主机代码", "other": "工作已排队（依赖等待）"},
        "rule": "规则", "nsys_version": "nsys 版本", "memcpy": "窗口内的拷贝",
        "direction": "方向", "memory": "内存", "facts_from": "数据来源", "no_findings_advice": "系统层面无需优化。",
        "whole": "整个采集", "ranks_title": "各 rank", "representative": "上文数据来自",
        "iter_ms": "迭代 (ms)", "unknown_gpu": "未记录 GPU 型号", "compute_per_iter": "每次迭代计算 (ms)", "last_arrival": "最后到达",
        "verdict_likely": "结论（可能，基于汇总报告）", "verdict_partial": "结论（可能：部分系统级规则无法运行）",
        "compute_ok": "计算受限：GPU 在做有用的工作；进一步的收益来自 kernel 或算法本身。",
        "verdict_undetermined": "结论（无法判定）", "found_so_far": "目前已发现", "also_noted": "另见",
        "confirm": "确认方法", "export_next": "判定所需", "likely": "可能，基于汇总报告",
        "reason_utilization_unknown": "GPU 利用率未知：没有 GPU trace，汇总报告中也没有可用于估计的 NVTX 步骤区间",
        "reason_idle_unexplained": "GPU 仅 {active} % 的时间活跃，且没有规则指出原因",
        "reason_idle_explained": "GPU 仅 {active} % 的时间活跃；空闲间隙的原因解释了窗口的 {attributed} %，但规则所知的修改都收回不了多少：这段时间是两次 GPU 提交之间主机自身的工作（缩短它，或把它移出关键路径）",
        "reason_no_finding_partial": "可运行的规则未发现系统级瓶颈；GPU 忙碌 {active} %（{basis}）",
        "basis_measured": "由 GPU trace 测得", "basis_estimated": "由汇总报告估计",
        "reason_no_finding_bound": "可运行的规则未发现系统级瓶颈；汇总报告中的 GPU 工作量多于迭代时间（为其 {work} %：迭代之外或并发 stream 上的工作），因此无法据此判断迭代内 GPU 的忙碌程度",
        "not_checked": "未评估", "input_notes": "关于输入的 {n} 条说明（各表读自哪个文件、未读取的文件）",
        "supporting": "佐证", "does_not_apply_cap": "不适用", "and_more": "及另外 {n} 个 kernel",
        "reason_too_little_work": "窗口内 GPU 工作太少，无法判断：在很短的窗口内 GPU 仅 {active} % 的时间忙碌；请采集更多步",
        "phases_title": "NVTX 阶段", "range_name": "区间", "phase": "阶段", "parent": "所在区间", "share_parent": "占所在区间 (%)", "instances": "实例数",
        "median_ms": "中位数 (ms)", "nesting_trace": "嵌套关系来自 NVTX trace", "nesting_inferred": "没有 NVTX trace：嵌套关系由总时间与次数推断",
        "phase_names": {"data": "数据加载", "checkpoint": "保存检查点", "eval": "评估", "log": "日志", "comm": "通信",
                        "optimizer": "优化器", "backward": "反向", "forward": "前向", "step": "训练步"},
        "api_shares": "CUDA API 时间按类别的占比", "api_kinds": {"memcpy": "拷贝", "sync": "同步", "launch": "launch", "alloc": "分配 / 释放", "load": "加载代码"},
        "copy_calls_of": "拷贝调用", "of_span": "（占采集时长）",
        "recoverable": "可挽回的总时间", "recoverable_replayed_how": "各项发现的优化在迭代的依赖模型上一起回放，每项作用于其余优化剩下的部分（绝不是简单相加）",
        "cp_line": "一次迭代的关键路径：主机 **%s %%**，GPU **%s %%**（在 %s 次迭代上回放：每次 %s ms，实测 %s ms）",
        "recoverable_how": "同一部分时间（空闲间隙、某个 kernel、拷贝）上的收益相互重叠，每项优化作用于其余优化剩下的时间；不同部分相加；任何部分都不超过它所占的份额",
    },
}
SEVERITY_ZH = {"info": "提示", "low": "低", "medium": "中", "high": "高", "critical": "严重"}

for _lang, _words in gm_report.LABELS.items():   # the GPU metrics words (report/gpu_metrics.py)
    LABELS[_lang]["gm"] = _words

def _md_code(s) -> str:
    s = str(s).replace("`", "'").replace("|", "\\|").replace("\n", " ")
    return f"`{s}`"


def _md_text(s) -> str:
    """Escape text from the profile (kernel / NVTX names) for Markdown prose and tables."""
    s = str(s)
    for ch in ("\\", "|", "<", ">", "*", "_", "[", "]", "`"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _md_safe(s) -> str:
    """Prose that may quote profile text (kernel names in a message): no raw HTML, no table breaks."""
    return str(s).replace("<", "&lt;").replace("\n", " ")   # a lone ">" cannot open a tag


def _fmt(v, nd: int = 1) -> str:
    """A number for a reader (Babel's number formatting, the CLDR patterns; the root locale, whose
    data loads in a third of the time of en and writes numbers the same way): thousands grouped,
    ``nd`` decimals from 1 up, no decimals from 100 up or for a whole number (``grid_size 1``, not
    ``1.00``), three significant digits under 1 and never scientific notation (``0.000009``, not
    ``9e-06``)."""
    from babel.numbers import format_decimal

    if v is None or isinstance(v, jinja2.Undefined):
        return "–"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return format_decimal(v, "#,##0", locale="root")
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if abs(v) >= 100 or (v.is_integer() and abs(v) < 1e15):
            return format_decimal(v, "#,##0", locale="root")
        if abs(v) >= 1:
            return format_decimal(v, "#,##0." + "0" * nd if nd > 0 else "#,##0", locale="root")
        return format_decimal(v, "@##", locale="root")
    return str(v)


# A name shown in full (an HTML tooltip) is cut to this many characters: a 1 MB kernel name is kept once,
# whole, in the JSON report (tables.top_kernels), not copied into every tooltip.
MAX_SHOWN_NAME = 1000


def shown_name(name) -> str:
    """``name`` as a tooltip shows it: whole up to MAX_SHOWN_NAME characters, else cut with its length said."""
    s = str(name)
    if len(s) <= MAX_SHOWN_NAME:
        return s
    return s[:MAX_SHOWN_NAME - 1] + f"… ({len(s):,} characters; the whole name is in the JSON report)"


@functools.lru_cache(maxsize=None)
def template_env(autoescape: bool) -> jinja2.Environment:
    """The Jinja2 environment of the report templates, made once per process. Compiled templates are
    kept beside the validated rule packs (``nsys_expert.cache``, off with ``NSX_NO_CACHE=1``):
    compiling the report template costs more than rendering it."""
    bcc = cache.bytecode_cache("templates")     # entries verified before use (cache.py)
    kw = {} if autoescape else {"keep_trailing_newline": True}
    return jinja2.Environment(loader=jinja2.PackageLoader("nsys_expert.report", "templates"),
                              autoescape=autoescape, trim_blocks=True, lstrip_blocks=True,
                              undefined=jinja2.Undefined,
                              bytecode_cache=bcc, **kw)


@functools.lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    env = template_env(False)
    env.filters["code"] = _md_code
    env.filters["mdtext"] = _md_text
    env.filters["mdsafe"] = _md_safe
    env.filters["fmt"] = _fmt
    env.filters["short"] = short_kernel_name
    env.filters["basename"] = lambda p: os.path.basename(str(p))
    return env


def group_not_evaluated(items: list[dict], doc: dict | None = None) -> list[tuple[list[str], str]]:
    """Rules that miss the same inputs are listed together (one line per distinct reason, each need
    said once). On a single-GPU run (``doc`` without ranks) the cross-rank rules are left out: they
    cannot apply, and listing them on every report is noise (the JSON keeps them)."""
    single = doc is not None and not doc.get("ranks")
    groups: dict[str, list[str]] = {}
    for n in items:
        if single and f"needs {registry.INPUTS['ranks']}" in n["missing"]:
            continue
        groups.setdefault("; ".join(dict.fromkeys(n["missing"])), []).append(n["rule"])
    return [(rules, missing) for missing, rules in groups.items()]


# warnings that say where the numbers came from, not what to believe about them: folded into one
# collapsed line (which source won, files not read, tables nsys writes only when it recorded some)
_NOTE_MARKS = ("the richest source", "not read (not a report", "nsys writes a table only when it recorded")


def split_warnings(warnings: list[str]) -> tuple[list[str], list[str]]:
    """(warnings that change what the reader should believe, notes about the inputs)."""
    notes = [w for w in warnings if any(m in w for m in _NOTE_MARKS)]
    return [w for w in warnings if w not in notes], notes


def localized(doc: dict, lang: str) -> dict:
    """The run-time sentences of a report in ``lang`` (``i18n``: the message catalog), for both
    renderers: the window (its reason), the not-evaluated groups, the warnings (split into those
    that matter and the notes on the inputs) and the next steps."""
    from .i18n import translate

    def tr(s):
        return translate(s, lang)

    groups = [(rules, tr(missing) if "; " not in missing else "; ".join(tr(m) for m in missing.split("; ")))
              for rules, missing in group_not_evaluated(doc.get("not_evaluated", []), doc)]
    important, notes = split_warnings(doc.get("warnings", []))
    return {"w": dict(doc["window"], reason=tr(doc["window"].get("reason"))),
            "not_evaluated_groups": groups, "warnings": ([tr(x) for x in important], [tr(x) for x in notes]),
            "next_steps": [dict(st, need=tr(st["need"]), why=tr(st["why"])) for st in doc.get("next_steps") or []],
            "absent_active": _unnest(tr(doc.get("facts_absent", {}).get("gpu_active_pct") or "not computed"))}


def _unnest(text: str) -> str:
    """A reason shown in parentheses keeps no parentheses of its own at its end: "needs X (cmd)" is
    "needs X: cmd" (no doubled "))")."""
    for o, c in (("(", ")"), ("（", "）")):
        if text.endswith(c) and o in text:
            i = text.rindex(o)
            return text[:i].rstrip() + ": " + text[i + 1:-1]
    return text


def render_markdown(doc: dict, lang: str = "en") -> str:
    L = LABELS.get(lang, LABELS["en"])
    units = {n: (registry.lookup("run", n).unit if registry.lookup("run", n) else "") for n in doc["facts"]}
    tpl = _env().get_template("report.md.j2")
    sev = severity_word(lang)
    text = tpl.render(doc=doc, L=L, f=doc["facts"], t=doc["tables"], units=units, lang=lang, sev=sev,
                      vw=verdict.words(doc, L, sev), **localized(doc, lang)).rstrip() + "\n"
    if lang == "zh":
        from .i18n import zh_markdown_brackets

        text = zh_markdown_brackets(text)
    return visible(text)   # a kernel name's RTL override or zero-width space is shown, not obeyed


def severity_word(lang: str):
    return lambda s: SEVERITY_ZH.get(s, s) if lang == "zh" else s


_FACTS_WORDS = {"en": ("Facts", "| Fact | Value | Unit | Source |", "Absent (rules that need them are not evaluated):", ": "),
               "zh": ("指标", "| 指标 | 数值 | 单位 | 来源 |", "缺失（需要它们的规则未被评估）：", "：")}


def render_facts(doc: dict, lang: str = "en") -> str:
    """``--show-facts``: every fact of the run with unit and source, for rule authors; why each absent
    fact is absent in ``lang`` (the message catalog, as the not-evaluated lines)."""
    from .i18n import translate

    title, head, absent_title, colon = _FACTS_WORDS.get(lang, _FACTS_WORDS["en"])
    lines = ["", f"## {title}", "", head, "|---|---:|---|---|"]
    for name, value in doc["facts"].items():
        d = registry.lookup("run", name)
        src = doc.get("fact_sources", {}).get(name)
        lines.append(f"| `{name}` | {_fmt(value, 3)} | {d.unit if d else ''} | {_md_code(src) if src else '–'} |")
    absent = doc.get("facts_absent", {})
    if absent:
        lines += ["", absent_title, ""]
        lines += [f"- `{k}`{colon}{translate(v, lang)}" for k, v in absent.items()]
    return "\n".join(lines) + "\n"
