"""GPU metrics in the report: the words (Markdown and HTML) and the HTML chart.

The Markdown block is ``report.md.j2``'s GPU metrics section (a line per metric, the hot kernels'
verdicts); the HTML page draws :func:`chart` (SM active, tensor active and DRAM bandwidth over the
same bins as the utilization timeline, from ``series["gpu_metrics"]``) beside that timeline. Both
read ``tables["gpu_metrics"]`` / ``tables["gpu_metrics_kernels"]`` and the ``gm_*`` facts; nothing
is computed here.
"""
from __future__ import annotations

# metric key (gm_<key>_pct) -> label; the order of the Markdown lines
LABELS = {
    "en": {
        "title": "GPU metrics (the GPU's own counters, nsys --gpu-metrics-devices)",
        "sampled": "sampled every", "binned": "read in bins of", "devices": "mean over GPUs",
        "metrics": {"sm_active": "SMs active", "sm_issue": "SM instruction issue", "tensor_active": "Tensor pipe active",
                    "dram": "DRAM bandwidth (read + write), % of peak", "dram_read": "DRAM read", "dram_write": "DRAM write",
                    "pcie_rx": "PCIe receive", "pcie_tx": "PCIe transmit", "nvlink_rx": "NVLink receive",
                    "nvlink_tx": "NVLink transmit"},
        "sm_busy": "SMs active while a kernel runs", "pcie_copy": "PCIe in the copy's direction while host-device copies run",
        "not_sampled": "not in this GPU's metric set", "kernels": "Hot kernels under the samples",
        "kernel": "Kernel", "share": "Share (%)", "verdict": "Verdict", "by": "From",
        "verdicts": {"memory": "memory-bound (DRAM)", "tensor": "compute-bound (tensor cores)",
                     "compute": "compute-bound (SM issue)", "underfilled": "SMs underfilled", "mixed": "mixed / latency"},
        "by_words": {"gpu metrics": "GPU metrics", "ncu": "Nsight Compute (wins where it measured the kernel)",
                     "shorter than two sampling periods": "shorter than two sampling periods: no verdict"},
        "chart": "GPU metrics over the profile", "chart_zoom": "GPU metrics inside the analysis window",
        "per_device": "Per GPU", "device": "GPU", "axis": "% of peak",
    },
}

COLORS = {"sm_active": "#2563eb", "tensor_active": "#16a34a", "dram": "#dc2626"}


def chart(ser: dict | None, G: dict, cid: str = "gpu_metrics", title: str | None = None) -> dict | None:
    """Lines of SM active, tensor active and DRAM bandwidth (% of peak) per timeline bin; the window
    outlined as in the utilization timeline. None when the series hold no GPU metrics."""
    from .svg import _chart, _el, _legend, _n, _time_axis

    lines = (ser or {}).get("gpu_metrics")
    if not ser or not ser.get("available") or not lines:
        return None
    W = 1100
    x0, x1, y0, y1 = 56, W - 16, 24, 200
    s0, s1 = ser["span_start_ns"], ser["span_end_ns"]
    span = s1 - s0
    px = lambda t: x0 + (t - s0) / span * (x1 - x0)  # noqa: E731
    py = lambda p: y1 - min(100.0, max(0.0, p)) / 100.0 * (y1 - y0)  # noqa: E731
    els: list[dict] = [_el("rect", x=x0, y=y0, width=x1 - x0, height=y1 - y0, class_="plotbg")]
    for p in (0, 25, 50, 75, 100):
        els.append(_el("line", x1=x0, x2=x1, y1=_n(py(p)), y2=_n(py(p)), class_="grid"))
        els.append(_el("text", str(p), x=x0 - 6, y=_n(py(p) + 4), class_="axis", text_anchor="end"))
    starts, widths = ser["bin_start_ns"], ser["bin_ns"]
    legend, n_series = [], 0
    for key in ("sm_active", "tensor_active", "dram"):
        vals = lines.get(key)
        if not vals:
            continue
        d, pen = [], False
        for s, w, v in zip(starts, widths, vals):
            if v is None:
                pen = False
                continue
            x = px(s + w / 2)
            d.append(f"{'L' if pen else 'M'}{_n(x)} {_n(py(v))}")
            pen = True
        label = G["metrics"][key]
        els.append(_el("path", d="".join(d) or "M0 0", fill="none", stroke=COLORS[key], stroke_width=1.6,
                       class_="series line", data_series=key, title=label))
        legend.append((label, COLORS[key], "line"))
        n_series += 1
    win = ser.get("window")
    if win:
        xa, xb = px(max(s0, win["start_ns"])), px(min(s1, win["end_ns"]))
        if xb > xa:
            els.append(_el("rect", x=_n(xa), y=y0 - 2, width=_n(max(1.0, xb - xa)), height=y1 - y0 + 4, class_="window"))
    els += _time_axis(s0, s1, px, y1)
    els.append(_el("text", G.get("axis", "% of peak"), x=x0, y=y0 - 8, class_="axis-title"))
    leg, bottom = _legend(legend, x0, y1 + 40, x1 - x0)
    return _chart(cid, title or G["chart"], W, int(bottom + 6), els + leg, n_series)
