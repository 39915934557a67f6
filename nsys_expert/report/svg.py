"""SVG chart primitives of the HTML report: elements, number and tick formatting, the time axis, legends
and the chart frame. Both ``html`` and ``gpu_metrics`` draw with them (no circle between the two)."""
from __future__ import annotations

import math

def element(tag: str, text: str | None = None, title: str | None = None, **attrs) -> dict:
    return {"tag": tag, "attrs": {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items() if v is not None},
            "text": text, "title": title}


def num_text(x: float) -> str:
    """A coordinate, short."""
    r = round(x, 1)
    return str(int(r)) if r == int(r) else f"{r:.1f}"


def nice_step(span: float, target: int = 8) -> float:
    raw = span / max(1, target)
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def ticks(lo: float, hi: float, target: int = 8) -> list[float]:
    step = nice_step(hi - lo, target)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9 * step:
        out.append(round(t, 10))
        t += step
    return out


def time_axis(s0: int, s1: int, px, y1: float) -> list[dict]:
    """Ticks and second labels under a time chart from ``s0`` to ``s1`` ns (``px``: ns -> x)."""
    els = []
    t0, t1 = s0 / 1e9, s1 / 1e9
    step = nice_step(t1 - t0, 10)
    for t in ticks(t0, t1, 10):
        x = px(t * 1e9)
        els.append(element("line", x1=num_text(x), x2=num_text(x), y1=y1, y2=y1 + 5, class_="tick"))
        els.append(element("text", tick_label(t, step), x=num_text(x), y=y1 + 18, class_="axis", text_anchor="middle"))
    return els


def tick_label(v: float, step: float) -> str:
    nd = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    return f"{v:.{nd}f}"


def text_width(s: str, px: float = 7.0) -> float:
    """Rough width of a label at 12 px (CJK characters are about twice as wide)."""
    return sum(2 * px if ord(ch) > 0x2E80 else px for ch in s)


def draw_legend(items: list[tuple[str, str, str]], x: float, y: float, max_w: float) -> tuple[list[dict], float]:
    """Legend swatches in rows: (label, colour, extra class). Returns the elements and the bottom y."""
    out, cx, cy = [], x, y
    for label, color, cls in items:
        w = 18 + text_width(label) + 16
        if cx + w > x + max_w and cx > x:
            cx, cy = x, cy + 18
        out.append(element("rect", x=num_text(cx), y=num_text(cy - 9), width="12", height="12", fill=color, class_="swatch " + cls))
        out.append(element("text", label, x=num_text(cx + 17), y=num_text(cy + 1), class_="legend"))
        cx += w
    return out, cy + 8


def ink(color: str) -> str:
    """Black or white text on a fill colour (#rrggbb)."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#111827" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def draw_chart(cid: str, title: str, w: int, h: int, elements: list[dict], n_series: int) -> dict:
    return {"id": cid, "title": title, "w": w, "h": h, "elements": elements, "series": n_series}


# ---------------------------------------------------------------------------------------- charts
