"""The comparison of two runs in words: Markdown and HTML (``render_markdown``, ``render_html``), the lines
of what BEFORE's findings promised against the measured gain, and the regression gate's one line."""
from __future__ import annotations

def _promise_lines(p: dict) -> list[str]:
    out = [f"per step: {p['step_ms_before']:.4g} ms → {p['step_ms_after']:.4g} ms ({p['basis']}): "
           f"**{p['measured_gain_pct']:.1f} % measured**"]
    together = p.get("applied_promised_pct")      # one change matched the advice of several findings
    for r in p["rows"]:
        head = f"`{r['rule']}` promised {r['promised_pct']:.1f} %"
        if r["applied"]:
            ev = f" (`{r['fact']}` {_num(r['fact_before'], r['fact'])} → {_num(r['fact_after'], r['fact'])})" \
                if r["fact"] else ""
            out.append(f"{head}; the change matches its advice{ev}" +
                       ("" if together is not None else ": " + _came_true(r["promised_pct"], p)))
        elif (r["evidence_drop_pct"] or 0) >= 50:
            out.append(f"{head}; its evidence fell {r['evidence_drop_pct']:.0f} % but the after-run still has the "
                       "finding: not the change made")
        else:
            out.append(f"{head}; its evidence did not fall: not the change made")
    if together is not None:
        names = ", ".join(f"`{r['rule']}`" for r in p["rows"] if r["applied"])
        out.append(f"one change, several findings ({names}): {together:.1f} % promised together (overlapping "
                   f"gains combined, not summed): {_came_true(together, p)}")
    return out


def _came_true(promised: float, p: dict) -> str:
    off = abs(promised - p["measured_gain_pct"])
    return "came true" if off <= p["within_points"] else f"**did not come true**: {off:.1f} points off"


def _why(basis: dict | None) -> str:
    """What the verdict rests on, after it: the time per step, or the counts of what got better and worse."""
    if not basis:
        return ""
    if basis["by"] == "step_time":
        ch = basis["change_pct"]
        how = (f"{abs(ch):.1f} % faster" if ch < 0 else f"{ch:.1f} % slower") if abs(ch) >= basis["noise_pct"] else \
            f"within {basis['noise_pct']:g} %"
        return (f" (time per step {basis['step_ms_before']:.4g} → {basis['step_ms_after']:.4g} ms, {how}; "
                f"{basis['basis']})")
    return (f" (no time per step on both sides: {basis['better']} key facts or findings got better, "
            f"{basis['worse']} worse)")


def gate_reasons(d: dict, n: int = 3) -> str:
    """What tripped the regression gate, in one line (the first ``n`` reasons)."""
    regs = d.get("regressions") or []
    return "; ".join(regs[:n]) + (f" and {len(regs) - n} more" if len(regs) > n else "")


KERNEL_CUT = 60


def _num(v, fact: str = "") -> str:
    """A fact's value: counts without decimals, the rest with two."""
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int) or (float(v).is_integer() and (fact.endswith(("_count", "_calls")) or "count" in fact)):
        return f"{int(v):,}"
    return f"{v:,.2f}"


def _change(r: dict) -> str:
    if r["change"] is None:
        return "–"
    if r["fact"].endswith("_pct"):   # a share: the change is in percentage points, not relative
        return f"{r['change']:+,.1f} pp"
    whole = isinstance(r["before"], int) and isinstance(r["after"], int)
    ch = f"{int(r['change']):+,}" if whole else f"{r['change']:+,.2f}"
    return ch + (f" ({r['change_pct']:+.1f} %)" if r["change_pct"] is not None else "")


# facts that count the kernels one by one: a run whose kernels are all inside CUDA graphs (nsys's
# default --cuda-graph-trace=graph) has none of them, while its kernel time is there (issue 48, item 11:
# 'kernel_count 39,800 -> 0' beside 'kernel_active_pct 98.85')
GRAPH_HIDDEN = ("kernel_count", "kernels_per_iter", "kernel_small_share_pct", "kernel_median_us")
GRAPH_NOTE = ("not comparable: the {side} run's kernels are inside CUDA graphs, traced as whole graphs "
              "(profile with --cuda-graph-trace=node to count them)")


def _graphed_sides(rows: list[dict]) -> str | None:
    """'before', 'after' or 'both': the run(s) with CUDA graph launches and no kernel counted."""
    by = {r["fact"]: r for r in rows}
    g, k = by.get("graph_launch_count") or {}, by.get("kernel_count") or {}
    sides = [s for s in ("before", "after") if (g.get(s) or 0) > 0 and not k.get(s)]
    return None if not sides else sides[0] if len(sides) == 1 else "both"


def _blocks(d: dict) -> list[tuple]:
    """The diff as blocks both renderers draw: ("h1"|"h2"|"p", text), ("ul", items),
    ("table", header, rows); text marks code with backticks and bold with ``**``."""
    out: list[tuple] = [("h1", "nsys-expert diff"), ("p", f"**Verdict:** {d['verdict']}" + _why(d.get("verdict_basis")))]
    head = [f"before: `{d['before']['inputs']}` ({d['before']['window'].get('source')})",
            f"after: `{d['after']['inputs']}` ({d['after']['window'].get('source')})"]
    if d["gate"]:
        head.append(f"regression gate ({d['gate']['threshold_pct']}): " + ("**tripped**" if d["gate"]["tripped"] else "passed"))
    head += [f"regression: {r}" for r in d["regressions"]]
    head += [f"not gated (a share of a shorter step, each step faster): {r}" for r in (d["gate"] or {}).get("not_gated", [])]
    out.append(("ul", head))
    if d["comparability"]:
        out += [("p", "Comparability:"), ("ul", list(d["comparability"]))]
    if d.get("promises"):
        out += [("h2", "Promised and measured"), ("ul", _promise_lines(d["promises"]))]
    if d.get("places_gone"):
        out += [("p", "The change made, in the code (places that held a cause before and none of it after):"),
                ("ul", [f"`{g['file']}:{g['line']}` in `{g['function']}`" + (f" (`{g['operator']}`)" if g.get("operator") else "")
                        + f": {g['share_before_pct']} % of `{g['rule']}` before" for g in d["places_gone"][:5]])]
    out.append(("h2", "Findings"))
    cut: dict[str, str] = {}
    empty = []
    for title, rows in (("Resolved", d["resolved"]), ("New", d["new"]), ("Persisting", d["persisting"]),
                        ("Not comparable (the rule could not run on the other side)", d["not_comparable"])):
        if not rows:
            empty.append(title.split(" (")[0].lower())
            continue
        items = []
        for f in rows:
            sev = f["severity"] if "severity_before" not in f or f["severity_before"] == f["severity"] else \
                f"{f['severity_before']} → {f['severity']}"
            k = (f.get("scope") or {}).get("kernel") or ""
            if len(k) > KERNEL_CUT:
                cut[k[:KERNEL_CUT] + "…"] = k
                k = k[:KERNEL_CUT] + "…"
            inside = (f"; before, part of `{f['inside_before']}`" if f.get("inside_before") else
                      f"; now part of `{f['inside_after']}`" if f.get("inside_after") else "")
            items.append(f"`{f['rule']}` ({f['category']}, {sev}{inside})" + (f" `{k}`" if k else "")
                         + f": {f.get('title') or ''}")
        out += [("p", f"**{title}** ({len(rows)})"), ("ul", items)]
    if empty:
        names = ", ".join(empty[:-1]) + (" or " if len(empty) > 1 else "") + empty[-1]
        out.append(("p", f"No {names} findings."))
    changed = [r for r in d["facts"] if not (r["before"] == r["after"] or r["change"] == 0)]
    same = [r["fact"] for r in d["facts"] if r not in changed]
    out.append(("h2", "Facts"))
    hidden = _graphed_sides(d["facts"])
    if changed:   # no table without rows (a run diffed with itself: issue 48, item 16)
        out.append(("table", ["fact", "before", "after", "change", "verdict"],
                    [[f"`{r['fact']}`", _num(r["before"], r["fact"]), _num(r["after"], r["fact"]), _change(r),
                      (GRAPH_NOTE.format(side=hidden) if hidden and r["fact"] in GRAPH_HIDDEN else r["verdict"] or "")]
                     for r in changed]))
    elif same:
        out.append(("p", "No fact changed."))
    if same:
        out.append(("p", f"{len(same)} facts unchanged: " + ", ".join(f"`{n}`" for n in same) + "."))
    if cut:
        out += [("h2", "Kernel names in full"), ("ul", [f"`{short}`: `{full}`" for short, full in cut.items()])]
    return out


def render_markdown(d: dict) -> str:
    lines: list[str] = []
    for b in _blocks(d):
        kind = b[0]
        if kind == "h1":
            lines += [f"# {b[1]}", ""]
        elif kind == "h2":
            lines += [f"## {b[1]}", ""]
        elif kind == "p":
            lines += [b[1], ""]
        elif kind == "ul":
            lines += [f"- {x}" for x in b[1]] + [""]
        else:
            lines += ["| " + " | ".join(b[1]) + " |", "|---|---:|---:|---:|---|"]
            lines += ["| " + " | ".join(r) + " |" for r in b[2]] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _inline(text: str) -> str:
    import html
    import re

    t = html.escape(text, quote=False)
    t = re.sub(r"`([^`]*)`", r"<code>\1</code>", t)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)


def render_html(d: dict) -> str:
    """The diff as one self-contained page: the same blocks as the Markdown, as HTML elements."""
    parts = ["<!doctype html>", "<html lang='en'><head><meta charset='utf-8'>",
             "<meta name='generator' content='nsys-expert'><title>nsys-expert diff</title>",
             "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:1160px;margin:0 auto;padding:24px}"
             "table{border-collapse:collapse}td,th{border-bottom:1px solid #e5e7eb;padding:3px 10px;text-align:left}"
             "td.num,th.num{text-align:right}code{background:#f3f4f6;padding:1px 4px;overflow-wrap:anywhere}</style>",
             "</head><body><main>"]
    for b in _blocks(d):
        kind = b[0]
        if kind in ("h1", "h2", "p"):
            parts.append(f"<{kind}>{_inline(b[1])}</{kind}>")
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in b[1]) + "</ul>")
        else:
            num = lambda i: " class='num'" if 0 < i < 4 else ""  # noqa: E731
            parts.append("<table><tr>" + "".join(f"<th{num(i)}>{_inline(h)}</th>" for i, h in enumerate(b[1])) + "</tr>")
            parts += ["<tr>" + "".join(f"<td{num(i)}>{_inline(c)}</td>" for i, c in enumerate(r)) + "</tr>" for r in b[2]]
            parts.append("</table>")
    return "\n".join(parts + ["</main></body></html>"]) + "\n"
