"""The words around the findings, en / zh (the words of each finding come from its rule file): the
Markdown report's, the terminal's and the HTML page's shared labels, with the GPU metrics section's
(report/gpu_metrics.py)."""
from __future__ import annotations

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
        "no_nccl": "窗口内没有 NCCL kernel。", "nccl_unknown": "NCCL kernel：未知（这些输入中没有 GPU kernel trace 或汇总）。", "nccl_share": "NCCL 占 GPU 忙碌时间",
        "overlap": "与计算重叠", "exposed": "暴露时间（占窗口）", "verdict": "结论",
        "none_found": "稳态下未发现系统级瓶颈。", "severity": "严重程度",
        "none_undetermined": "没有发现，也无法判断：判断系统级瓶颈的规则缺少所需数据（见结论与未评估的规则）。",
        "evidence": "依据", "fact": "指标", "value": "数值", "threshold": "阈值", "from": "来源",
        "gain": "预期收益", "gain_replayed": "回放", "limiter_short": "瓶颈：没有发现指出的主机工作，占关键路径的 {host} %（完整报告给出分析方法）", "limiter_host": "瓶颈是主机在 CUDA 调用之间自身的工作，没有任何发现指出它：占每次迭代关键路径的 {host} %（把它移出关键路径最多可挽回窗口的 {offload} %）；分析方法见“后续步骤”。", "gain_capped": "至多为关键路径所允许的部分", "gain_capped_copies": "至多为可用来掩盖拷贝的 kernel 时间加上可分页拷贝的时间",
        "recoverable_capped": "至多为 100 % 减去{side}（关键路径的 {value} %），没有任何发现的优化能缩短它", "side_host": "主机自身的时间", "side_gpu": "GPU 的工作",
        "gain_summary": "范围", "of_window": "（占窗口）", "missing": "缺少", "main_idle": "主要空闲原因",
        "idle_causes": {"launch": "提交 kernel（短间隙）", "sync": "阻塞同步之后", "memcpy": "拷贝调用中",
                        "data": "加载数据", "wait": "主机阻塞等待（系统调用）", "sleep": "主机在休眠（sleep 调用）", "gil": "等待 GIL（其他 Python 线程）", "load": "加载 kernel 模块（懒加载）", "alloc": "cudaMalloc / cudaFree 调用中", "host": "CUDA 之外的主机代码", "other": "工作已排队（依赖等待）"},
        "rule": "规则", "nsys_version": "nsys 版本", "memcpy": "窗口内的拷贝",
        "direction": "方向", "memory": "内存", "facts_from": "数据来源", "no_findings_advice": "系统层面无需优化。", "no_advice_undecided": "暂无建议：结论尚未确定，能确定它的做法见结论与后续步骤。",
        "settings": "设置", "settings_file": "来自", "settings_packs": "附加规则包",
        "settings_only": "仅运行", "settings_ignored": "排除", "settings_params": "修改过的参数",
        "settings_default": "默认",
        "whole": "整个采集", "ranks_title": "各 rank", "representative": "上文数据来自",
        "iter_ms": "迭代 (ms)", "unknown_gpu": "未记录 GPU 型号", "compute_per_iter": "每次迭代计算 (ms)", "last_arrival": "最后到达",
        "verdict_likely": "结论（可能，基于汇总报告）", "verdict_partial": "结论（可能：部分系统级规则无法运行）",
        "compute_ok": "计算受限：GPU 在做有用的工作；进一步的收益来自 kernel 或算法本身。",
        "verdict_undetermined": "结论（无法判定）", "found_so_far": "目前已发现", "also_noted": "另见",
        "confirm": "确认方法", "export_next": "判定所需", "likely": "可能，基于汇总报告",
        "reason_utilization_unknown": "GPU 利用率未知：没有 GPU trace，汇总报告中也没有可用于估计的 NVTX 步骤区间",
        "reason_idle_unexplained": "GPU 仅 {active} % 的时间活跃，且没有规则指出原因",
        "reason_idle_explained": "GPU 仅 {active} % 的时间活跃；空闲间隙的原因解释了窗口的 {attributed} %，但规则所知的修改都收回不了多少：这段时间是两次 GPU 提交之间主机自身的工作（缩短它，或把它移出关键路径）",
        "active_est": "据汇总报告：每次 {iter} ms 的迭代中 GPU 至多 {est} % 的时间有工作（上界：步骤之外的启动阶段工作也计入其中）",
        "reason_no_rows": "没有可判断的内容：读取的每个报告都没有数据行（没有记录到 GPU 工作、CUDA API 调用或 NVTX 区间）；请重新采集，让程序的稳态落在采集范围内",
        "reason_no_gpu_work": "没有可判断的内容：没有记录到 GPU 工作（kernel、拷贝或 memset）；请重新采集，让程序的 GPU 步骤落在采集范围内",
        "reason_window_not_steady": "无法据此输入判定：窗口（{window_ms} ms，取自 GPU trace 的密集部分：没有 NVTX 时间戳）大部分不是稳态：NVTX 汇总中 {steps} 个稳态 '{range}' 步只占其中 {steady_ms} ms（每步 {median_ms} ms），窗口里含有很慢的预热步或启动阶段，其 GPU 活跃 {active} % 并非这些步的；NVTX trace 可以界定窗口",
        "reason_estimate_near_threshold": "无法据此输入判定：GPU 在每次迭代中至多 {active} % 的时间忙碌（{basis}，是上界），离 50 % 太近，无法区分 GPU 忙碌还是空等",
        "reason_copies_unjudged": "无法仅凭汇总报告判定：主机与设备之间的拷贝占 GPU 忙碌时间的 {copies} %，只有 trace 才能看出它们是与 kernel 重叠运行，还是拖住了 kernel（拷贝瓶颈）",
        "reason_no_finding_partial": "可运行的规则未发现系统级瓶颈；GPU 忙碌 {active} %（{basis}）",
        "basis_measured": "由 GPU trace 测得", "basis_estimated": "由汇总报告估计",
        "reason_no_finding_bound": "可运行的规则未发现系统级瓶颈；汇总报告中的 GPU 工作量多于迭代时间（为其 {work} %：迭代之外或并发 stream 上的工作），因此无法据此判断迭代内 GPU 的忙碌程度",
        "not_checked": "未评估", "input_notes": "关于输入的 {n} 条说明（各表读自哪个文件、未读取的文件）",
        "supporting": "佐证", "does_not_apply_cap": "不适用", "and_more": "及另外 {n} 个 kernel", "gain_together": "，{n} 个 kernel 合计（“佐证”中所列 kernel 的收益与此 kernel 的相加）",
        "reason_too_little_work": "窗口内 GPU 工作太少，无法判断：在很短的窗口内 GPU 仅 {active} % 的时间忙碌；请采集更多步",
        "reason_too_little_work_ops": "窗口内 GPU 工作太少，无法判断：{window_ms} ms 内只有 {ops} 个 GPU kernel，只说明这几个 kernel 是什么，说明不了一次运行的时间花在哪里；请采集更多步",
        "reason_too_little_work_steps": "无法判断：该 trace 只有一个 torch.profiler 步，profiler 停止时可能把它截断了，也没有别的步可比；请记录三步或更多",
        "reason_too_little_work_summary": "GPU 工作太少，无法判断：汇总报告中整个 profile 只有 {work_ms} ms 的 kernel 与拷贝；请采集更多步",
        "phase_holds": "位置：GPU 空闲时间的 {share} % 位于 NVTX {phase}阶段（{names}）；应先修复这一阶段。",
        "where_code": "代码位置", "where_in": "函数", "where_called_from": "调用自",
        "where_share": "占该原因的时间", "where_source_kineto": "torch.profiler 调用栈：行号是函数的第一行",
        "where_source_nsys": "nsys Python 回溯",
        "phase_work_title": "每一步的时间按阶段的去向（launch 时间对应到 NVTX 区间）", "ms_per_step": "每步 ms",
        "share_window": "占窗口 (%)", "kernels_per_step": "每步 kernel 数", "gpu_busy_in_it": "其中 GPU 忙碌 (%)",
        "d2h_per_step": "拷回主机 (每步 MB)",
        "async_step": "'{range}' 区间只计主机时间（中位数 {host} ms）：循环把 GPU 工作排入队列后继续执行，因此窗口中的一次迭代持续到它所发起的 GPU 工作结束（中位数 {iter} ms）。",
        "mem_kinds": {"Pageable": "可分页主机内存", "Pinned": "Pinned 主机内存", "Device": "设备", "Managed": "统一内存",
                      "Array": "CUDA 数组", "Unknown": "未知"},
        "phases_title": "NVTX 阶段", "range_name": "区间", "phase": "阶段", "parent": "所在区间", "share_parent": "占所在区间 (%)", "instances": "实例数",
        "median_ms": "中位数 (ms)", "nesting_trace": "嵌套关系来自 NVTX trace", "nesting_inferred": "没有 NVTX trace：嵌套关系由总时间与次数推断",
        "phase_names": {"data": "数据加载", "checkpoint": "保存检查点", "eval": "评估", "log": "日志", "comm": "通信",
                        "optimizer": "优化器", "backward": "反向", "forward": "前向", "step": "训练步", "pauses": "停顿"},
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
        "bin": "bin", "busy": "busy",
    },
    "zh": {
        "timeline": "整个采集期间的 GPU 利用率", "rank_timeline": "各 rank 在其分析窗口内的情况",
        "rank_time": "自窗口开始的时间 (ms)", "timeline_zoom": "分析窗口内的 GPU 利用率",
        "time_s": "时间 (s)", "busy_axis": "占每个时间段的 %", "compute": "计算 kernel", "nccl": "NCCL kernel",
        "copy": "拷贝 / memset", "idle": "空闲", "unattributed": "空闲（未归因）",
        "startup_band": "启动阶段", "window_band": "分析窗口",
        "iter_chart": "迭代耗时", "iter_axis": "ms", "warmup": "预热（已排除）", "steady": "稳态",
        "median_line": "中位数", "clipped": "已截断",
        "kern_chart": "窗口内总耗时最高的 kernel", "api_chart": "CUDA API 各调用耗时",
        "api_classes": {"sync": "同步", "launch": "启动 kernel", "memcpy": "拷贝 / 设置", "other": "其他"},
        "window_bar": "分析窗口概览", "nccl_chart": "NCCL 占 GPU 忙碌时间",
        "nccl_overlapped": "NCCL（与计算重叠）", "nccl_exposed": "NCCL（未重叠）", "non_nccl": "其他 GPU 工作",
        "no_timeline": "没有可绘制的 GPU 时间线", "no_iterations": "采集中没有 NVTX 迭代标注。",
        "graph_hidden": "CUDA graph 的 GPU 工作不在 GPU trace 中：图中空白部分是未采集到，而不是空闲。",
        "hover": "鼠标悬停可查看完整名称和数值。", "generated": "生成工具",
        "summary_active": "窗口内 GPU 活跃", "summary_span": "整个采集 GPU 活跃",
        "summary_iter": "迭代中位耗时", "summary_idle": "主要空闲原因", "summary_gain": "最大预期收益",
        "advice_for": "针对", "priority": SEVERITY_ZH,
        "bin": "时间段", "busy": "忙碌",
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


def labels(lang: str, facts: dict | None = None, table: dict | None = None) -> dict:
    """The labels of ``lang`` (``table``: another table of labels by language, e.g. the HTML page's),
    in the words of the run's GPU maker (``facts``: the run's facts): a ROCm run's report says HIP API,
    not CUDA API."""
    table = LABELS if table is None else table
    words = table.get(lang, table["en"])
    swaps = _VENDOR.get((facts or {}).get("gpu_vendor"))
    if not swaps:
        return words
    def swap(v):
        if isinstance(v, dict):          # a table of words (the idle causes)
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, str) and "cuda" in v.lower():
            for a, b in swaps:
                v = v.replace(a, b)
        return v

    return swap(words)
