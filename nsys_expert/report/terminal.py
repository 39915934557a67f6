"""Terminal output: a progress spinner on stderr and a compact coloured summary on stdout.

Both only when a person is watching: the spinner when stderr is a terminal (and only once the work
has taken longer than ``delay`` seconds, so quick runs print nothing), the summary when stdout is a
terminal and neither ``-o`` nor ``--format`` was given. Piped output is untouched: the CLI then
prints the Markdown report exactly as before.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from ..textsafe import one_line, visible
from . import labels, severity_word, verdict
from .labels import words as _words

SEVERITY_STYLES = {"info": "dim", "low": "blue", "medium": "yellow", "high": "bold red", "critical": "bold white on red"}

WORDS = {
    "en": {"working": "diagnosing", "loading": "loading the inputs", "facts": "computing facts",
           "rules": "evaluating rules", "charts": "computing chart series", "ranks": "ranks", "failed": "failed",
           "findings": "Findings", "gain": "gain", "window": "window", "whole": "whole profile",
           "main_idle": "main idle cause", "active": "GPU active", "of_window": "of the window",
           "not_evaluated": "rule(s) not evaluated", "warnings": "warning(s)", "notes": "note(s) on the inputs",
           "more": "Full report: add --format md (or html -o report.html); --lang zh for Chinese.",
           "iter": "median iteration", "critical": "critical path: host", "where_code": "where", "where_in": "in"},
}


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(paths: list[str] | tuple[str, ...], lang: str | None = "en", delay: float = 1.0, stream=None,
             force: bool = False) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr while the inputs load and the facts are computed.

    Yields ``step(phase)`` to name the current phase (``loading`` / ``facts`` / ``rules`` / ``charts``);
    ``step("ranks", done, total, failed)`` draws a bar over a multi-rank job's ranks as they finish.
    Shown only when ``stream`` (stderr) is a terminal, or ``force``; it appears after ``delay`` seconds
    and is erased when the work ends, so short runs and pipes see nothing.
    """
    stream = stream if stream is not None else sys.stderr
    W = _words("terminal", WORDS["en"], lang)
    state = {"phase": W["working"], "status": None, "done": False}
    if not (force or _isatty(stream)):
        yield lambda *a: None
        return
    from rich.console import Console

    console = Console(file=stream, stderr=stream is sys.stderr, force_terminal=True if force else None)
    t0 = time.monotonic()
    lock = threading.Lock()

    what = (one_line(str(paths[0])) + (f" (+{len(paths) - 1})" if len(paths) > 1 else "")) if paths else ""

    def text() -> str:
        return f"nsys-expert: {state['phase']} {what} … {time.monotonic() - t0:.0f} s"

    def start():
        with lock:
            if state["done"]:
                return
            st = console.status(text(), spinner="dots")
            st.start()
            state["status"] = st
            threading.Thread(target=tick, daemon=True).start()

    def tick():
        while True:
            time.sleep(0.5)
            with lock:
                if state["done"] or state["status"] is None:
                    return
                state["status"].update(text())

    def step(phase: str, done: int | None = None, total: int | None = None, failed: int = 0) -> None:
        with lock:
            state["phase"] = W.get(phase, phase) if total is None else rank_bar(done or 0, total, failed, W)
            if state["status"] is not None:
                state["status"].update(text())

    timer = threading.Timer(delay, start)
    timer.daemon = True
    timer.start()
    try:
        yield step
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["status"] is not None:
                state["status"].stop()


def rank_bar(done: int, total: int, failed: int = 0, words: dict | None = None, width: int = 24) -> str:
    """``█████████░░░░░░░░░░░░░░░ 37/96 ranks (1 failed)``: the ranks finished so far (no square
    brackets: the spinner's text is Rich markup)."""
    W = words or WORDS["en"]
    fill = int(width * done / total) if total else width
    text = f"{'█' * fill}{'░' * (width - fill)} {done}/{total} {W['ranks']}"
    return text + (f" ({failed} {W['failed']})" if failed else "")


def wants_summary(output, fmt_given: bool, stream=None) -> bool:
    """The compact summary replaces the Markdown only for a person at a terminal who asked for nothing."""
    return output is None and not fmt_given and _isatty(stream if stream is not None else sys.stdout)


def _where(paths: list[str]) -> str:
    """The folder the inputs came from (relative when that is shorter)."""
    import os

    try:
        d = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths]) if paths else ""
    except ValueError:
        return ""
    rel = os.path.relpath(d) if d else ""
    return rel if rel and len(rel) < len(d) else d


def _pct(v) -> str:
    return "–" if v is None else f"{v:.1f} %"


class _Words:
    """The summary's words in the report's language: its labels, the severity words, Chinese punctuation."""

    def __init__(self, d, lang: str):
        self.lang, self.L, self.W = lang, labels(lang, d.facts), _words("terminal", WORDS["en"], lang)
        self.sev = severity_word(lang)
        self.colon = self.L["colon"]      # the language's punctuation: ：（） in Chinese

    def par(self, text: str) -> str:
        return self.L["paren"].replace("{}", text)


def summary(d, lang: str | None = "en", console=None, max_findings: int = 5) -> None:
    """Verdict, GPU active %, main idle cause and the top findings with severity colours, of ``d`` (a
    ``Diagnosis``)."""
    from rich.console import Console

    console = console or Console()
    say = _Words(d, lang or "en")
    _verdict_lines(console, d, say)
    for line in (_activity_line(d, say), _window_line(d, say)):
        if line.plain:
            console.print(line)
    if d.findings:
        _findings_table(console, d, say, max_findings)
    _tail(console, d, say)


def _verdict_lines(console, d, say: _Words) -> None:
    """The title and the inputs' folder, the verdict, what limits the run, the command to run next."""
    from rich.text import Text

    L, sev, colon = say.L, say.sev, say.colon
    head = Text()
    head.append(L["title"], style="bold")
    where = _where([i["path"] for i in d.inputs])
    if where:
        head.append(f"  {visible(where)}", style="dim")
    console.print(head)

    vw = verdict.words(d, L, sev)
    v = Text(f"{vw['label']}{colon}", style="bold")
    v.append(visible(vw["text"]), style="green" if vw["ok"] else "")
    if vw["severity"]:
        v.append(f"  [{sev(vw['severity'])}]", style=SEVERITY_STYLES.get(vw["severity"], ""))
    console.print(v)
    lim = d.verdict.limiter
    if lim:
        console.print(Text("  " + L["limiter_short"].replace("{host}", f"{lim.critical_path_host_pct:,.1f}"),
                           style="yellow"))
    if vw["command"]:
        console.print(Text(f"  {vw['command_label']}{colon}{vw['command']}", style="dim"))


def _activity_line(d, say: _Words):
    """GPU active (window, whole profile) and the main idle cause."""
    from rich.text import Text

    f, t, W, colon, par = d.facts, d.tables, say.W, say.colon, say.par
    full_width = say.L["brackets"] == "full-width"   # one bracket for a value's notes
    line = Text()
    if "gpu_active_pct" in f:
        a = f["gpu_active_pct"]
        line.append(f"{W['active']} ")
        line.append(_pct(a), style="bold green" if a >= 80 else ("bold yellow" if a >= 50 else "bold red"))
        if full_width:     # 13.7 %（占窗口，整个采集 9.9 %）
            line.append("（" + W["of_window"].strip("（）"))
            if "gpu_active_pct_span" in f:
                line.append(f"，{W['whole']} {_pct(f['gpu_active_pct_span'])}", style="dim")
            line.append("）")
        else:
            line.append(f" {W['of_window']}")
            if "gpu_active_pct_span" in f:
                line.append(f" ({W['whole']} {_pct(f['gpu_active_pct_span'])})", style="dim")
    elif "gpu_active_pct_span" in f:
        line.append(f"{W['active']} {_pct(f['gpu_active_pct_span'])}{par(W['whole'])}")
    if t.get("idle_breakdown"):
        r = t["idle_breakdown"][0]
        line.append(f" · {W['main_idle']}{colon}{say.L['idle_causes'][r['cause']]}{par(_pct(r['pct']))}")
    return line


def _window_line(d, say: _Words):
    """The window, the iteration time, the critical path's host / GPU shares."""
    from rich.text import Text

    f, w, W, par = d.facts, d.window, say.W, say.par
    line = Text(style="dim")
    if w.get("start_ns") is not None and w.get("end_ns") is not None and w.get("source") != "whole":
        t0 = w.get("span_start_ns") or 0      # times from the profile's first event, as the report says them
        line.append(f"{W['window']} {(w['start_ns'] - t0) / 1e9:.3f}–{(w['end_ns'] - t0) / 1e9:.3f} s{par(w['source'])}")
    if "iter_median_ms" in f:
        line.append(f"{' · ' if line.plain else ''}{W['iter']} {f['iter_median_ms']:.2f} ms")
    if "critical_path_host_pct" in f and "critical_path_gpu_pct" in f:
        line.append(f"{' · ' if line.plain else ''}{W['critical']} {_pct(f['critical_path_host_pct'])} / "
                    f"GPU {_pct(f['critical_path_gpu_pct'])}")
    return line


def _findings_table(console, d, say: _Words, max_findings: int) -> None:
    from rich.table import Table
    from rich.text import Text

    W, sev = say.W, say.sev
    tab = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1), title=None)
    tab.add_column(justify="right", style="dim")
    tab.add_column(no_wrap=True)
    tab.add_column(ratio=1, overflow="fold")
    tab.add_column(justify="right", no_wrap=True)
    for x in d.findings[:max_findings]:
        g, rng = x.estimated_gain_pct, x.estimated_gain_range_pct
        gain = (f"{W['gain']} {rng[0]:.1f}–{rng[1]:.1f} %" if rng else f"{W['gain']} ≈ {g:.1f} %") if g is not None else ""
        tab.add_row(str(x.rank), Text(sev(x.severity).upper(),
                                      style=SEVERITY_STYLES.get(x.severity, "")),
                    visible(x.title), gain)
        if x.locations:
            loc = x.locations[0]
            tab.add_row("", "", Text(f"{W['where_code']}{say.colon}{visible(loc.file)}:{loc.line} "
                                     f"{W['where_in']} {visible(loc.function)} ({loc.share_pct:.0f} %)", style="dim"), "")
    console.print(Text(f"{W['findings']}{say.colon.strip()}", style="bold"))
    console.print(tab)
    if len(d.findings) > max_findings:
        console.print(Text(f"  … +{len(d.findings) - max_findings}", style="dim"))


def _tail(console, d, say: _Words) -> None:
    """The counts of the full report's own lists (issue 48, item 15): its Not evaluated section (without
    the cross-rank rules of a single GPU, and the ncu rules said in Next steps), its Warnings (the notes
    on the inputs apart)."""
    from rich.text import Text

    from . import group_not_evaluated, split_warnings

    W = say.W
    tail = []
    n_ne = sum(len(rules) for rules, _ in group_not_evaluated(d.not_evaluated, d))
    important, notes = split_warnings(d.warnings)
    if n_ne:
        tail.append(f"{n_ne} {W['not_evaluated']}")
    if important:
        tail.append(f"{len(important)} {W['warnings']}")
    if notes:
        tail.append(f"{len(notes)} {W['notes']}")
    if tail:
        console.print(Text(" · ".join(tail), style="yellow"))
    console.print(Text(W["more"], style="dim"))


def plain_details(md: str) -> str:
    """Markdown for a terminal, where HTML is not drawn: a folded ``<details><summary>S</summary>
    X</details>`` becomes ``S: X``."""
    import re

    return re.sub(r"<details><summary>(.*?)</summary>\s*(.*?)</details>", r"\1: \2", md, flags=re.S)
