"""SVG chart primitives of the HTML report: elements, number and tick formatting, the time axis, legends
and the chart frame. Both ``html`` and ``gpu_metrics`` draw with them (no circle between the two)."""
from __future__ import annotations

import math

def _el(tag: str, text: str | None = None, title: str | None = None, **attrs) -> dict:
    return {"tag": tag, "attrs": {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items() if v is not None},
            "text": text, "title": title}


def _n(x: float) -> str:
    """A coordinate, short."""
    r = round(x, 1)
    return str(int(r)) if r == int(r) else f"{r:.1f}"


def _nice_step(span: float, target: int = 8) -> float:
    raw = span / max(1, target)
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _ticks(lo: float, hi: float, target: int = 8) -> list[float]:
    step = _nice_step(hi - lo, target)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9 * step:
        out.append(round(t, 10))
        t += step
    return out


def _time_axis(s0: int, s1: int, px, y1: float) -> list[dict]:
    """Ticks and second labels under a time chart from ``s0`` to ``s1`` ns (``px``: ns -> x)."""
    els = []
    t0, t1 = s0 / 1e9, s1 / 1e9
    step = _nice_step(t1 - t0, 10)
    for t in _ticks(t0, t1, 10):
        x = px(t * 1e9)
        els.append(_el("line", x1=_n(x), x2=_n(x), y1=y1, y2=y1 + 5, class_="tick"))
        els.append(_el("text", _tick_label(t, step), x=_n(x), y=y1 + 18, class_="axis", text_anchor="middle"))
    return els


def _tick_label(v: float, step: float) -> str:
    nd = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    return f"{v:.{nd}f}"


def _text_w(s: str, px: float = 7.0) -> float:
    """Rough width of a label at 12 px (CJK characters are about twice as wide)."""
    return sum(2 * px if ord(ch) > 0x2E80 else px for ch in s)


def _legend(items: list[tuple[str, str, str]], x: float, y: float, max_w: float) -> tuple[list[dict], float]:
    """Legend swatches in rows: (label, colour, extra class). Returns the elements and the bottom y."""
    out, cx, cy = [], x, y
    for label, color, cls in items:
        w = 18 + _text_w(label) + 16
        if cx + w > x + max_w and cx > x:
            cx, cy = x, cy + 18
        out.append(_el("rect", x=_n(cx), y=_n(cy - 9), width="12", height="12", fill=color, class_="swatch " + cls))
        out.append(_el("text", label, x=_n(cx + 17), y=_n(cy + 1), class_="legend"))
        cx += w
    return out, cy + 8


def _ink(color: str) -> str:
    """Black or white text on a fill colour (#rrggbb)."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#111827" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def _chart(cid: str, title: str, w: int, h: int, elements: list[dict], n_series: int) -> dict:
    return {"id": cid, "title": title, "w": w, "h": h, "elements": elements, "series": n_series}


# ---------------------------------------------------------------------------------------- charts
