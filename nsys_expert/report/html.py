"""HTML report: one self-contained page (no script, no network), charts as inline SVG.

The charts are built here as lists of SVG primitives (``rect`` / ``path`` / ``line`` / ``text``
with numeric geometry computed in Python) and written out by ``templates/report.html.j2`` with
Jinja2 autoescaping, so every name from the profile (kernels, NVTX ranges, file names) is escaped
in text and attributes alike. The numbers come from the ``Diagnosis`` (``report.build``) and, for
the timeline, from the series of :func:`nsys_expert.facts.series.series`, which the caller computes
and hands in (``pipeline.diagnose_with_series``): the report draws them, it does not compute them.
docs/report.md says how to read each chart and why the charts are hand-built SVG.

Every chart is an ``<svg class="chart" data-chart="ID" data-series="N">`` whose N drawn series are
elements with class ``series`` (the browser test counts them).

One function per chart, each drawing with the primitives of ``svg``; the page's own words are
``labels.HTML_LABELS``.
"""
from __future__ import annotations

import functools
import math

import jinja2

from ..facts.names import ASYNC_MEM_APIS, KERNEL_LAUNCH_APIS, SYNC_APIS, SYNC_MEM_APIS, short_kernel_name
from ..textsafe import visible
from . import labels, number_text, window_span_text, localized, severity_word, shown_name, template_env, verdict
from . import gbps_text as report_gbps
from .shaping import actionable as report_actionable
from .shaping import memkind as report_memkind
from . import gpu_metrics as gm_report
from .labels import HTML_LABELS, with_categories  # noqa: F401 - html.HTML_LABELS
from .svg import draw_chart, element, ink, draw_legend, num_text, nice_step, text_width, tick_label, ticks, time_axis  # noqa: F401

# ------------------------------------------------------------------------------------------ colours
SEVERITY_COLORS = {"info": "#6b7280", "low": "#2563eb", "medium": "#d97706", "high": "#dc2626", "critical": "#7f1d1d"}
BUSY_COLORS = {"compute": "#2563eb", "nccl": "#7c3aed", "copy": "#0d9488"}
CAUSE_COLORS = {"sync": "#ef4444", "launch": "#f59e0b", "memcpy": "#ec4899", "data": "#92400e",
                "host": "#84cc16", "wait": "#0ea5e9", "sleep": "#38bdf8", "gil": "#fb923c", "load": "#a78bfa", "alloc": "#f472b6",
                "other": "#94a3b8"}
API_CLASS_COLORS = {"sync": "#ef4444", "launch": "#2563eb", "memcpy": "#ec4899", "other": "#94a3b8"}
WARMUP_COLOR = "#f97316"
STEADY_COLOR = "#2563eb"

# words the Markdown report does not need (chart titles, legends)
# ------------------------------------------------------------------------------------ SVG helpers
def timeline_chart(ser: dict, L: dict, H: dict, cid: str = "timeline", title: str | None = None) -> dict | None:
    """Stacked busy shares per bin (compute / NCCL / copies) and, above them, the idle part coloured by
    the bin's dominant attributed cause; start-up shaded, window outlined."""
    if not ser or not ser.get("available"):
        return None
    W = 1100
    x0, x1, y0, y1 = 56, W - 16, 34, 230      # plot box (y0 top)
    s0, s1 = ser["span_start_ns"], ser["span_end_ns"]
    span = s1 - s0
    px = lambda t: x0 + (t - s0) / span * (x1 - x0)  # noqa: E731
    py = lambda p: y1 - p / 100.0 * (y1 - y0)        # noqa: E731
    els: list[dict] = [element("rect", x=x0, y=y0, width=x1 - x0, height=y1 - y0, class_="plotbg")]
    for p in (0, 25, 50, 75, 100):   # grid first: the series are drawn over it
        els.append(element("line", x1=x0, x2=x1, y1=num_text(py(p)), y2=num_text(py(p)), class_="grid"))
        els.append(element("text", str(p), x=x0 - 6, y=num_text(py(p) + 4), class_="axis", text_anchor="end"))
    starts, widths = ser["bin_start_ns"], ser["bin_ns"]
    n = len(starts)
    # stacked busy layers
    layers = [("compute", ser["compute_pct"])]
    if ser.get("nccl_pct") is not None:
        layers.append(("nccl", ser["nccl_pct"]))
    layers.append(("copy", ser["copy_pct"]))
    base = [0.0] * n
    n_series = 0
    legend = []
    for key, vals in layers:
        if not any(v > 0 for v in vals) and key != "compute":
            continue
        d = []
        for i in range(n):
            if vals[i] <= 0:
                continue
            xa, xb = px(starts[i]), px(starts[i] + widths[i])
            ya, yb = py(base[i]), py(base[i] + vals[i])
            d.append(f"M{num_text(xa)} {num_text(ya)}H{num_text(xb)}V{num_text(yb)}H{num_text(xa)}Z")
        for i in range(n):
            base[i] += vals[i]
        els.append(element("path", d="".join(d) or "M0 0", fill=BUSY_COLORS[key], class_="series",
                       data_series=key, title=H[key]))
        legend.append((H[key], BUSY_COLORS[key], ""))
        n_series += 1
    n_series += _idle_layers(ser, L, H, px, py, base, y0, els, legend)
    legend.append((H["unattributed"], "#ffffff", "blank"))
    els += _bands(ser, H, px, (x0, x1, y0, y1))
    # axes
    els += time_axis(s0, s1, px, y1)
    els.append(element("text", H["time_s"], x=num_text((x0 + x1) / 2), y=y1 + 34, class_="axis-title", text_anchor="middle"))
    els.append(element("text", "%", x=x0 - 30, y=num_text((y0 + y1) / 2), class_="axis-title", text_anchor="middle"))
    leg, bottom = draw_legend(legend, x0, y1 + 58, x1 - x0)
    return draw_chart(cid, title or H["timeline"], W, int(bottom + 6), els + leg, n_series)


def _idle_layers(ser: dict, L: dict, H: dict, px, py, base: list, y0, els: list, legend: list) -> int:
    """The idle part of each bin, above its busy layers, coloured by the bin's dominant cause; -> series drawn."""
    starts, widths, n = ser["bin_start_ns"], ser["bin_ns"], len(ser["bin_start_ns"])
    n_series = 0
    causes = [c for c in ser["causes"] if c in set(x for x in ser["idle_cause"] if x)]
    for c in causes:
        d = []
        for i in range(n):
            if ser["idle_cause"][i] != c:
                continue
            xa, xb = px(starts[i]), px(starts[i] + widths[i])
            d.append(f"M{num_text(xa)} {num_text(py(min(100.0, base[i])))}H{num_text(xb)}V{num_text(y0)}H{num_text(xa)}Z")
        els.append(element("path", d="".join(d), fill=CAUSE_COLORS[c], class_="series idle", data_series="idle-" + c,
                       title=f"{H['idle']}: {L['idle_causes'][c]}"))
        legend.append((f"{H['idle']}: {L['idle_causes'][c]}", CAUSE_COLORS[c], "idle"))
        n_series += 1
    return n_series


def _bands(ser: dict, H: dict, px, box: tuple) -> list[dict]:
    """The start-up band (hatched) and the window's outline, each labelled above the plot."""
    x0, x1, y0, y1 = box
    s0, s1 = ser["span_start_ns"], ser["span_end_ns"]
    els: list[dict] = []
    su = ser.get("startup")
    if su:
        xa, xb = px(su["start_ns"]), px(su["end_ns"])
        els.append(element("rect", x=num_text(xa), y=y0, width=num_text(max(0.5, xb - xa)), height=y1 - y0, fill="url(#hatch)",
                       class_="startup", title=f"{H['startup_band']}: {(su['end_ns'] - su['start_ns']) / 1e9:.2f} s"))
        if xb - xa > 60:
            els.append(element("text", f"{H['startup_band']} {(su['end_ns'] - su['start_ns']) / 1e9:.2f} s",
                           x=num_text((xa + xb) / 2), y=y0 - 8, class_="band-label", text_anchor="middle"))
    win = ser.get("window")
    if win:
        xa, xb = px(max(s0, win["start_ns"])), px(min(s1, win["end_ns"]))
        if xb > xa:
            els.append(element("rect", x=num_text(xa), y=y0 - 2, width=num_text(max(1.0, xb - xa)), height=y1 - y0 + 4, class_="window",
                           title=f"{H['window_band']}: {win['start_ns'] / 1e9:.3f}–{win['end_ns'] / 1e9:.3f} s"))
            label_x = min(max((xa + xb) / 2, x0 + 60), x1 - 60)
            els.append(element("text", H["window_band"], x=num_text(label_x), y=y0 - 8, class_="band-label window-label",
                           text_anchor="middle"))
    return els


def rank_timeline_chart(rows: list[dict], H: dict) -> dict | None:
    """A multi-rank job: one row per rank over its own analysis window (time from the window's start,
    one scale for all rows), each bin stacked from the bottom: compute kernels, NCCL kernels, copies;
    the rest of the row's height is idle. A rank without a GPU trace gets a labelled empty row."""
    rows = [r for r in rows or [] if r.get("rank") is not None]
    if not rows or not any(r.get("bin_start_ns") for r in rows):
        return None
    W, row_h, gap = 1100, 26, 6
    label_w = min(180, 12 + 7 * max(len(str(r["rank"])) for r in rows))
    x0, x1, y0 = label_w, W - 16, 12
    longest = max(r["end_ns"] - r["start_ns"] for r in rows if r.get("bin_start_ns"))
    px = lambda dt: x0 + dt / longest * (x1 - x0)  # noqa: E731
    els: list[dict] = []
    drawn: dict[str, list[str]] = {"compute": [], "nccl": [], "copy": []}
    for i, r in enumerate(rows):
        top = y0 + i * (row_h + gap)
        bottom = top + row_h
        els.append(element("text", str(r["rank"]), x=x0 - 8, y=num_text(top + row_h / 2 + 4), class_="axis", text_anchor="end"))
        if not r.get("bin_start_ns"):
            els.append(element("text", H["no_timeline"], x=x0 + 6, y=num_text(top + row_h / 2 + 4), class_="axis"))
            continue
        els.append(element("rect", x=x0, y=top, width=num_text(px(r["end_ns"] - r["start_ns"]) - x0), height=row_h,
                       class_="plotbg", title=f"{r['rank']}: {H['idle']}"))
        base = [0.0] * len(r["bin_start_ns"])
        for key in ("compute", "nccl", "copy"):
            vals = r.get(f"{key}_pct") or []
            for j, v in enumerate(vals):
                if v <= 0:
                    continue
                xa = px(r["bin_start_ns"][j] - r["start_ns"])
                xb = px(r["bin_start_ns"][j] + r["bin_ns"][j] - r["start_ns"])
                ya = bottom - base[j] / 100.0 * row_h
                yb = bottom - min(100.0, base[j] + v) / 100.0 * row_h
                drawn[key].append(f"M{num_text(xa)} {num_text(ya)}H{num_text(xb)}V{num_text(yb)}H{num_text(xa)}Z")
                base[j] += v
    n_series = 0
    legend = []
    for key, d in drawn.items():
        if d:
            els.append(element("path", d="".join(d), fill=BUSY_COLORS[key], class_="series", data_series=key, title=H[key]))
            legend.append((H[key], BUSY_COLORS[key], ""))
            n_series += 1
    legend.append((H["idle"], "#f3f4f6", "idle"))
    y1 = y0 + len(rows) * (row_h + gap) - gap
    step = nice_step(longest / 1e6, 8)
    for t in ticks(0.0, longest / 1e6, 8):
        x = px(t * 1e6)
        els.append(element("line", x1=num_text(x), x2=num_text(x), y1=y1, y2=y1 + 5, class_="tick"))
        els.append(element("text", tick_label(t, step), x=num_text(x), y=y1 + 18, class_="axis", text_anchor="middle"))
    els.append(element("text", H["rank_time"], x=num_text((x0 + x1) / 2), y=y1 + 34, class_="axis-title", text_anchor="middle"))
    leg, legend_bottom = draw_legend(legend, x0, y1 + 58, x1 - x0)
    return draw_chart("ranks", H["rank_timeline"], W, int(legend_bottom + 6), els + leg, n_series)


def iteration_chart(iters: list[dict], H: dict) -> dict | None:
    """One bar per iteration (completion to completion); warm-up in orange, median dashed; bars taller
    than the scale (a slow first iteration) are clipped and labelled with their value."""
    if not iters:
        return None
    W = 1100
    x0, x1, y0, y1 = 56, W - 16, 24, 180
    steady = sorted(r["ms"] for r in iters if not r["warmup"]) or sorted(r["ms"] for r in iters)
    med = steady[len(steady) // 2] if len(steady) % 2 else (steady[len(steady) // 2 - 1] + steady[len(steady) // 2]) / 2
    top = max(max(steady) * 1.15, med * 1.5) or 1.0
    n = len(iters)
    slot = (x1 - x0) / n
    bw = max(0.6, slot * 0.8)
    py = lambda v: y1 - min(v, top) / top * (y1 - y0)  # noqa: E731
    els: list[dict] = [element("rect", x=x0, y=y0, width=x1 - x0, height=y1 - y0, class_="plotbg")]
    step = nice_step(top, 4)
    for v in ticks(0, top, 4):
        els.append(element("line", x1=x0, x2=x1, y1=num_text(py(v)), y2=num_text(py(v)), class_="grid"))
        els.append(element("text", tick_label(v, step), x=x0 - 6, y=num_text(py(v) + 4), class_="axis", text_anchor="end"))
    groups = [("steady", STEADY_COLOR, [r for r in iters if not r["warmup"]]),
              ("warmup", WARMUP_COLOR, [r for r in iters if r["warmup"]])]
    n_series = 0
    legend = []
    for key, color, rows in groups:
        if not rows:
            continue
        d = []
        for r in rows:
            i = r["index"] - 1
            xa = x0 + i * slot + (slot - bw) / 2
            d.append(f"M{num_text(xa)} {num_text(y1)}V{num_text(py(r['ms']))}h{num_text(bw)}V{num_text(y1)}Z")
        els.append(element("path", d="".join(d), fill=color, class_="series", data_series=key,
                       title=f"{H[key]} ({len(rows)}): " + ", ".join(f"#{r['index']} {r['ms']:.2f} ms" for r in rows[:5])
                       + (" …" if len(rows) > 5 else "")))
        legend.append((H[key], color, ""))
        n_series += 1
    for r in iters:   # clipped bars: a marker and the value
        if r["ms"] > top:
            i = r["index"] - 1
            xc = x0 + i * slot + slot / 2
            els.append(element("path", d=f"M{num_text(xc - 5)} {num_text(y0 + 8)}L{num_text(xc)} {num_text(y0)}L{num_text(xc + 5)} {num_text(y0 + 8)}Z",
                           class_="clip-mark", title=f"#{r['index']}: {r['ms']:.2f} ms ({H['clipped']})"))
            els.append(element("text", f"#{r['index']}: {r['ms']:.1f} ms = {r['ms'] / med:.1f}× {H['median_line']}"
                           if med else f"{r['ms']:.1f} ms", x=num_text(min(xc + 8, x1 - 4)), y=y0 + 14,
                           class_="clip-label", text_anchor="start" if xc + 200 < x1 else "end"))
    els.append(element("line", x1=x0, x2=x1, y1=num_text(py(med)), y2=num_text(py(med)), class_="median",
                   title=f"{H['median_line']} {med:.2f} ms"))
    els.append(element("text", f"{H['median_line']} {med:.2f} ms", x=x1 - 4, y=num_text(py(med) - 5), class_="median-label",
                   text_anchor="end"))
    istep = max(1, int(round(nice_step(max(1, n - 1), 10))))   # iteration numbers: whole steps
    for k in ([1] if istep > 1 else []) + list(range(istep, n + 1, istep)):
        x = x0 + (k - 1) * slot + slot / 2
        els.append(element("text", str(k), x=num_text(x), y=y1 + 16, class_="axis", text_anchor="middle"))
    els.append(element("text", H["iter_axis"], x=x0 - 34, y=num_text((y0 + y1) / 2), class_="axis-title", text_anchor="middle"))
    leg, bottom = draw_legend(legend + [(f"{H['median_line']} ({med:.2f} ms)", "#111827", "line")], x0, y1 + 38, x1 - x0)
    return draw_chart("iterations", H["iter_chart"], W, int(bottom + 6), els + leg, n_series)


def hbar_chart(cid: str, title: str, rows: list[dict], H: dict, classes: dict[str, tuple[str, str]] | None = None) -> dict | None:
    """Horizontal bars: rows of {label, full, value, text, cls}; ``classes`` maps cls -> (legend, colour);
    one series per class present (one series in all without classes)."""
    if not rows:
        return None
    W = 1100
    label_w, x0, x1 = 430, 440, W - 150      # labels: about 56 characters of 12.5 px monospace
    rh, top = 24, 8
    vmax = max(r["value"] for r in rows) or 1.0
    els: list[dict] = []
    keys = [k for k in (classes or {"all": ("", "#2563eb")}) if any((r.get("cls") or "all") == k for r in rows)]
    for k in keys:
        color = (classes or {"all": ("", "#2563eb")})[k][1]
        bars = []
        for i, r in enumerate(rows):
            if (r.get("cls") or "all") != k:
                continue
            y = top + i * rh
            bars.append(element("rect", x=x0, y=num_text(y + 3), width=num_text(max(1.0, r["value"] / vmax * (x1 - x0))), height=rh - 6,
                            fill=color, class_="bar", title=f"{r['full']}: {r['text']}"))
        els.append({"tag": "g", "attrs": {"class": "series", "data-series": k}, "children": bars, "text": None,
                    "title": None})
    for i, r in enumerate(rows):
        y = top + i * rh
        els.append(element("text", r["label"], x=label_w, y=num_text(y + rh / 2 + 4), class_="bar-label", text_anchor="end",
                       title=r["full"]))
        els.append(element("text", r["text"], x=num_text(x0 + max(1.0, r["value"] / vmax * (x1 - x0)) + 6), y=num_text(y + rh / 2 + 4),
                       class_="bar-value"))
    h = top + len(rows) * rh + 8
    if classes:
        leg, bottom = draw_legend([(classes[k][0], classes[k][1], "") for k in keys], x0, h + 10, x1 - x0)
        els += leg
        h = bottom + 6
    return draw_chart(cid, title, W, int(h), els, len(keys))


def stacked_bar(cid: str, title: str, parts: list[tuple[str, str, float, str]]) -> dict | None:
    """One 100 % bar: parts of (key, label, percent, colour); parts under 0 are left out."""
    parts = [p for p in parts if p[2] and p[2] > 0]
    if not parts:
        return None
    W, x0, x1, y, h = 1100, 8, 1092, 6, 30
    tot = sum(p[2] for p in parts)
    scale = (x1 - x0) / max(100.0, tot)
    els, x = [], float(x0)
    for key, label, pct, color in parts:
        w = pct * scale
        els.append({"tag": "g", "attrs": {"class": "series", "data-series": key},
                    "children": [element("rect", x=num_text(x), y=y, width=num_text(max(0.5, w)), height=h, fill=color,
                                     class_="bar", title=f"{label}: {pct:.1f} %")], "text": None, "title": None})
        if w > 70:
            els.append(element("text", f"{pct:.1f} %", x=num_text(x + w / 2), y=y + 20, class_="seg-label", text_anchor="middle",
                           fill=ink(color)))
        x += w
    leg, bottom = draw_legend([(f"{p[1]} ({p[2]:.1f} %)", p[3], "") for p in parts], x0, y + h + 22, x1 - x0)
    return draw_chart(cid, title, W, int(bottom + 6), els + leg, len(parts))


# ------------------------------------------------------------------------------------- the page
def _api_class(name: str) -> str:
    if name in SYNC_APIS:
        return "sync"
    if name in KERNEL_LAUNCH_APIS:
        return "launch"
    if name in SYNC_MEM_APIS or name in ASYNC_MEM_APIS:
        return "memcpy"
    return "other"


def charts(d, ser: dict | None, zoom: dict | None, lang: str) -> dict:
    """The page's charts of ``d`` (a ``Diagnosis``) and the series."""
    L, H = labels(lang, d.facts), labels(lang, d.facts, HTML_LABELS)
    t, f = d.tables, d.facts
    out: dict = {}
    out["timeline"] = timeline_chart(ser, L, H) if ser else None
    out["ranks"] = rank_timeline_chart((ser or {}).get("ranks") or [], H)
    out["timeline_zoom"] = timeline_chart(zoom, L, H, "timeline_zoom", H["timeline_zoom"]) if zoom else None
    out["gpu_metrics"] = gm_report.chart(ser, L["gm"])                  # beside the timeline (report/gpu_metrics.py)
    out["gpu_metrics_zoom"] = gm_report.chart(zoom, L["gm"], "gpu_metrics_zoom", L["gm"]["chart_zoom"]) if zoom else None
    out["iterations"] = iteration_chart((ser or {}).get("iterations") or [
        {"index": r["index"], "ms": r["ms"], "warmup": r.get("warmup", False)} for r in t.get("iterations", [])], H)
    kern = [{"label": short_kernel_name(k["name"], 56), "full": shown_name(k["name"], H["name_cut"]), "value": k["total_ms"],
             "text": f"{number_text(k['total_ms'], 2)} ms" + (f" · {k['time_share_pct']:.1f} %" if k.get("time_share_pct") is not None else "")}
            for k in t.get("top_kernels", [])]
    out["kernels"] = hbar_chart("kernels", H["kern_chart"], kern, H)
    api_classes = {k: (H["api_classes"][k], API_CLASS_COLORS[k]) for k in ("sync", "launch", "memcpy", "other")}
    api = [{"label": a["name"], "full": shown_name(a["name"], H["name_cut"]), "value": a["ms"], "cls": _api_class(a["name"]),
            "text": f"{number_text(a['ms'], 2)} ms · {a['share_pct']:.1f} %"} for a in t.get("api", [])]
    out["api"] = hbar_chart("api", H["api_chart"], api, H, api_classes)
    if "gpu_active_pct" in f:
        parts = [("compute", H["compute"], f.get("kernel_active_pct", 0.0), BUSY_COLORS["compute"]),
                 ("copy", H["copy"], max(0.0, f["gpu_active_pct"] - f.get("kernel_active_pct", 0.0)), BUSY_COLORS["copy"])]
        idle_known = 0.0
        for r in t.get("idle_breakdown", []):
            parts.append(("idle-" + r["cause"], f"{H['idle']}: {L['idle_causes'][r['cause']]}", r["pct"] or 0.0,
                          CAUSE_COLORS[r["cause"]]))
            idle_known += r["pct"] or 0.0
        rest = 100.0 - f["gpu_active_pct"] - idle_known
        if rest > 0.05:
            parts.append(("idle-unattributed", H["unattributed"], rest, "#e5e7eb"))
        out["window_bar"] = stacked_bar("window_bar", H["window_bar"], parts)
    else:
        out["window_bar"] = None
    if f.get("nccl_kernel_count", 0) and f.get("nccl_share_of_busy_pct") is not None:
        share = f["nccl_share_of_busy_pct"]
        ov = f.get("nccl_overlap_pct")
        parts = ([("nccl-overlapped", H["nccl_overlapped"], share * ov / 100.0, BUSY_COLORS["nccl"]),
                  ("nccl-exposed", H["nccl_exposed"], share * (100.0 - ov) / 100.0, "#c4b5fd")] if ov is not None
                 else [("nccl", H["nccl"], share, BUSY_COLORS["nccl"])])
        parts.append(("non-nccl", H["non_nccl"], 100.0 - share, "#cbd5e1"))
        out["nccl"] = stacked_bar("nccl", H["nccl_chart"], parts)
    else:
        out["nccl"] = None
    return out


@functools.lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    env = template_env(True)
    env.filters["fmt"] = number_text
    env.filters["wspan"] = window_span_text
    env.filters["short"] = short_kernel_name
    env.filters["shown"] = shown_name
    env.filters["basename"] = lambda p: str(p).replace("\\", "/").rsplit("/", 1)[-1]
    env.filters["actionable"] = report_actionable
    env.filters["gbps"] = report_gbps
    env.filters["memkind"] = report_memkind
    return env


def render_html(d, ser: dict | None = None, lang: str = "en", zoom: dict | None = None) -> str:
    """The page of ``d`` (a ``Diagnosis``). ``ser`` (and ``zoom``) from ``pipeline.diagnose_with_series``;
    without them the timeline is left out and the iteration chart comes from the report's iteration table."""
    lang = lang or "en"
    L, H = with_categories(labels(lang, d.facts), d.categories, lang), labels(lang, d.facts, HTML_LABELS)
    tpl = _env().get_template("report.html.j2")
    sev = severity_word(lang)
    from .i18n import say, zh_html_brackets

    page = tpl.render(doc=d, L=L, H=H, f=d.facts, t=d.tables, lang=lang, **localized(d, lang),
                      ser=ser, charts=charts(d, ser, zoom, lang), sev=sev, sev_color=SEVERITY_COLORS,
                      vw=verdict.words(d, L, sev),
                      graph_hidden=bool(ser and ser.get("graph_hidden")),
                      no_timeline_reason=say((ser or {}).get("reason"), lang)).rstrip() + "\n"
    return visible(zh_html_brackets(page) if L["brackets"] == "full-width" else page)
