"""The command-line grammars of nsys profile / stats / export and ncu, read from their own --help
(tests/data/tool_help/, captured from Nsight Systems and Nsight Compute 2025.3.1 on the H200 machine).

``check(argv)`` walks a command the way the tool's parser does: every option must be one the tool
lists, an option that takes a value gets one, the values the help enumerates are among them, and the
positional arguments are what the verb expects. It returns a list of problems (empty: the command parses).
"""
from __future__ import annotations

import os
import re
import shlex

HELP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tool_help")


def _read(name: str) -> str:
    with open(os.path.join(HELP, f"{name}_2025.3.1.txt"), encoding="utf-8") as fh:
        return fh.read()


def _nsys_options(text: str) -> dict[str, str]:
    """--name -> 'value' (takes one), 'optional' ([true|false]) or 'flag'."""
    out = {}
    for m in re.finditer(r"^\t(?:-(\w), )?--([\w-]+)(=|\s+\[|\s+<|\s*$)?", text, re.M):
        kind = {"=": "value", "<": "value"}.get((m.group(3) or "").strip(), None)
        if kind is None:
            kind = "optional" if (m.group(3) or "").strip() == "[" else "flag"
        out["--" + m.group(2)] = kind
        if m.group(1):
            out["-" + m.group(1)] = kind
    return out


def _ncu_options(text: str) -> dict[str, str]:
    out = {}
    for m in re.finditer(r"^  (?:-(\w) \[ )?--([\w-]+)(?: \])?( arg)?", text, re.M):
        kind = "value" if m.group(3) else "flag"
        out["--" + m.group(2)] = kind
        if m.group(1):
            out["-" + m.group(1)] = kind
    return out


def _values(text: str, option: str) -> set[str]:
    """The values an nsys option's help lists ('Possible values are ...' / "'a', 'b' or 'c'")."""
    m = re.search(r"^\t(?:-\w, )?" + re.escape(option) + r"\b.*?(?=^\t-)", text, re.M | re.S)
    body = m.group(0) if m else ""
    quoted = set(re.findall(r"'([\w:-]+)'", body))
    listed = re.search(r"Possible values are:?\s*(.*?)(?:\.\s|$)", body, re.S)
    if listed:
        quoted |= {v.strip() for v in re.split(r"[,\s]+", listed.group(1)) if v.strip() and v.strip() != "or"}
    return quoted


GRAMMARS = {
    ("nsys", "profile"): _nsys_options(_read("nsys_profile")),
    ("nsys", "stats"): _nsys_options(_read("nsys_stats")),
    ("nsys", "export"): _nsys_options(_read("nsys_export")),
    ("ncu",): _ncu_options(_read("ncu")),
}
PROFILE_TEXT = _read("nsys_profile")
EXPORT_TEXT = _read("nsys_export")
TRACE_VALUES = _values(PROFILE_TEXT, "--trace")
GRAPH_VALUES = _values(PROFILE_TEXT, "--cuda-graph-trace")
EXPORT_TYPES = _values(EXPORT_TEXT, "--type")


def check(argv: list[str], report_names: set[str] | None = None) -> list[str]:
    """Problems with one nsys / ncu command line (as argv). Past ~60 lines on purpose: one pass over the
    arguments, whose state (the open option, the value it awaits) every branch reads."""
    head = tuple(argv[:2]) if argv[0] == "nsys" else ("ncu",)
    grammar = GRAMMARS.get(head)
    if grammar is None:
        return [f"not an nsys / ncu command: {argv[:2]}"]
    words = argv[len(head):]
    problems, values, positional = [], {}, []
    i = 0
    while i < len(words):
        w = words[i]
        if positional or not w.startswith("-"):
            positional.append(w)
            i += 1
            continue
        name, eq, val = w.partition("=")
        kind = grammar.get(name)
        if kind is None:
            problems.append(f"unknown option {name}")
            i += 1
            continue
        if kind == "value" and not eq:
            if i + 1 >= len(words):
                problems.append(f"{name} needs a value")
                break
            val = words[i + 1]
            i += 1
        elif kind == "flag" and eq:
            problems.append(f"{name} takes no value")
        values[name] = val
        i += 1
    if head == ("nsys", "profile"):
        for t in values.get("--trace", values.get("-t", "")).split(","):
            if t and t not in TRACE_VALUES:
                problems.append(f"--trace value {t!r} is not one nsys lists")
        g = values.get("--cuda-graph-trace")
        if g is not None and g.split(":")[0] not in GRAPH_VALUES:
            problems.append(f"--cuda-graph-trace {g!r}")
        if not positional:
            problems.append("no application to profile")
    elif head in (("nsys", "stats"), ("nsys", "export")):
        if len(positional) != 1:
            problems.append(f"expects one input report, got {positional}")
        if head == ("nsys", "export") and values.get("--type", values.get("-t")) not in EXPORT_TYPES:
            problems.append(f"--type {values.get('--type')!r}")
        if head == ("nsys", "stats"):
            if values.get("--format", values.get("-f")) != "csv":
                problems.append("nsys-expert reads --format csv")
            for r in values.get("--report", values.get("-r", "")).split(","):
                if report_names is not None and r not in report_names:
                    problems.append(f"report {r!r} is not a report name of the input's nsys version")
    else:
        k = values.get("--kernel-name", values.get("-k"))
        if k is not None and k.startswith("regex:"):
            pattern = k[len("regex:"):]
            if "\\|" in pattern:
                problems.append(f"kernel regex {pattern!r} escapes the alternation: it matches a literal bar")
            try:
                re.compile(pattern)
            except re.error as e:
                problems.append(f"kernel regex {pattern!r}: {e}")
        if "-i" in values or "--import" in values:
            if positional:
                problems.append(f"ncu -i takes no application: {positional}")
            if values.get("--page") not in (None, "details", "raw", "source", "session"):
                problems.append(f"--page {values.get('--page')!r}")
        elif not positional:
            problems.append("no application to profile")
    return problems


def split(line: str) -> list[str]:
    """A printed command line -> argv (an ``> file`` redirect dropped)."""
    argv = shlex.split(line)
    if ">" in argv:
        argv = argv[:argv.index(">")]
    return argv
