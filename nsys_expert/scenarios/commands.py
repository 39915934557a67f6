r"""The one command builder: every nsys / ncu command nsys-expert prints is made here.

A :class:`Command` is argv plus layout (one option group per printed line, an optional ``> file``);
``line()`` quotes each word so that ``shlex.split(line)`` gives the argv back (tests/cli/test_commands.py
checks that for every command of every golden report). The primitives below build the commands the
playbook and the diagnosis need:

- ``nsys_stats(reports, source, output, era)``: report names as the nsys that wrote the input spells
  them (``cudaapitrace`` in 2021-2022, ``cuda_api_trace`` from 2023);
- ``nsys_export_sqlite(rep, sqlite)``;
- ``ncu_profile(...)`` and ``ncu_exports(rep)``, with ``kernel_regex(names)``: an anchored alternation
  of exact function names (``regex:^(stencil|copy)$``), never a pattern with escaped bars.

Checked on an H200 with Nsight Compute 2025.3.1 (2026-12): the function names ncu matches by default
(``--kernel-name-base function``) are bare (``Kernel2`` for ``cutlass::Kernel2<cutlass_80_simt_sgemm...>``,
``vectorized_elementwise_kernel`` for ``at::vectorized_elementwise_kernel<4, ...>``);
``regex:^(vectorized_elementwise_kernel|Kernel2)$`` profiled both, ``regex:.*vectorized_elementwise_kernel\|Kernel2.*``
(the bar escaped) profiled none.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml


@lru_cache(maxsize=1)
def playbook() -> dict:
    """The playbook's templates and option texts (playbook.yaml beside this file)."""
    text = resources.files("nsys_expert.scenarios").joinpath("playbook.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# --------------------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Opt:
    """One option as it is printed: ``("--trace=cuda,nvtx",)`` or ``("--launch-count", "5")``."""
    words: tuple[str, ...]

    @property
    def key(self) -> str:
        w = self.words[0]
        return w.split("=", 1)[0] if w.startswith("--") else w


@dataclass(frozen=True)
class Command:
    """``head`` (tool + verb), options (one group per printed line), the application, an optional
    ``> stdout`` redirect (ncu CSV exports)."""
    head: tuple[str, ...]
    opts: tuple[Opt, ...] = ()
    app: tuple[str, ...] = ()
    stdout: str | None = None

    @property
    def argv(self) -> list[str]:
        return [*self.head, *(w for o in self.opts for w in o.words), *self.app]

    def line(self) -> str:
        """One shell line (what the tests pin down)."""
        s = " ".join(quote(a) for a in self.argv)
        return s + (f" > {quote(self.stdout)}" if self.stdout else "")

    def multiline(self, indent: str = "  ") -> str:
        """The playbook's layout: one option per line, the application last (long commands only)."""
        if len(self.opts) < 3 or len(self.line()) <= 100:
            return self.line()
        parts = [" ".join(quote(a) for a in self.head)]
        parts += [indent + " ".join(quote(a) for a in o.words) for o in self.opts]
        tail = " ".join(quote(a) for a in self.app)
        if self.stdout:
            tail = (tail + " " if tail else "") + f"> {quote(self.stdout)}"
        if tail:
            parts.append(indent + tail)
        return " \\\n".join(parts)


class ShellWord(str):
    """A word the shell must expand (``--rdzv-endpoint=${MASTER_ADDR}:29500``): printed in double
    quotes, so the variable is read when the line runs."""


def opt(*words) -> Opt:
    return Opt(tuple(w if isinstance(w, ShellWord) else str(w) for w in words))


# ------------------------------------------------------------------------------------ quoting
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def quote(arg: str) -> str:
    """Shell quoting in the playbook's style: bare when safe, "double quotes" when nothing in the word is
    special inside them, else ``shlex.quote``. Either way ``shlex.split`` gives the word back."""
    if arg and _SAFE.match(arg):
        return arg
    if isinstance(arg, ShellWord):
        return f'"{arg}"'
    if not re.search(r'["\\$`!]', arg):
        return f'"{arg}"'
    return shlex.quote(arg)


# ------------------------------------------- user values in generated Python, comments, heredocs
def py_str(value: str) -> str:
    """A Python string literal holding exactly ``value`` (JSON's escapes are Python's: quotes, backslashes,
    newlines and lone surrogates come back as they were; nothing in it is code)."""
    return json.dumps(str(value))


def py_fstring(value: str, field: str) -> str:
    """An f-string literal that is ``value`` with ``{field}`` its one replacement field (``f"rank{rank}_x"``):
    every other brace doubled, every quote / backslash / newline escaped."""
    parts = str(value).split("{" + field + "}")
    return 'f"' + ("{" + field + "}").join(json.dumps(p)[1:-1].replace("{", "{{").replace("}", "}}")
                                            for p in parts) + '"'


def one_line(text: str) -> str:
    """``text`` kept on one line (a shell / Python comment, a docstring line): line breaks shown as ``\\n``."""
    return str(text).replace("\r", "\\r").replace("\n", "\\n")


def docstring_text(text: str) -> str:
    """``text`` as it may stand inside a triple-quoted Python docstring: backslashes doubled and quotes
    escaped, so neither a ``\"\"\"`` nor a ``\\N{`` in a user's value ends or breaks it."""
    return one_line(str(text).replace("\\", "\\\\").replace('"""', '\\"\\"\\"'))


def heredoc_tag(content: str, base: str = "EOF") -> str:
    """A here-document terminator that is no line of ``content`` (``EOF``, else ``EOF_1``, ...)."""
    lines = set(content.split("\n"))
    tag, n = base, 0
    while tag in lines:
        n += 1
        tag = f"{base}_{n}"
    return tag


# ------------------------------------------------------------------------------ report names
ERAS = ("2023+", "2021-2022", "2020-2021")


def report_name(report: str, era: str | None = None) -> str:
    """``cuda_api_trace`` as the nsys of ``era`` spells it (``cudaapitrace`` for 2021-2022)."""
    return playbook()["report_names"].get(report, {}).get(era or "2023+", report)


def era_of(inputs: list[dict]) -> str:
    """The report era of the nsys that wrote these inputs (the loader's ``version`` of each input):
    the oldest CSV / console era, or the era of an export's nsys version (``2022.4.2`` -> 2021-2022)."""
    found = []
    for i in inputs or []:
        v = str(i.get("version") or "")
        if v in ERAS:
            found.append(v)
        elif i.get("kind") == "nsys-sqlite" and re.match(r"^\d{4}\.", v):
            year = int(v[:4])
            found.append("2023+" if year >= 2023 else "2021-2022" if year >= 2021 else "2020-2021")
    return max(found, key=ERAS.index) if found else "2023+"


# ------------------------------------------------------------------------------------ nsys
def nsys_stats(reports, source: str, output: str, era: str | None = None) -> Command:
    """``nsys stats --report A,B --format csv --output PREFIX SOURCE`` (one PREFIX_<report>.csv each)."""
    names = ",".join(dict.fromkeys(report_name(r, era) for r in reports))
    return Command(("nsys", "stats"), (opt("--report", names), opt("--format", "csv"), opt("--output", output)),
                   (source,))


def nsys_export_sqlite(rep: str, sqlite: str) -> Command:
    return Command(("nsys", "export"), (opt("--type=sqlite"), opt("--force-overwrite=true"), opt(f"--output={sqlite}")),
                   (rep,))


def nsys_profile(trace: str, middle, output: str, app, common=(), force: bool = True,
                 trace_first: bool = True) -> Command:
    """``nsys profile --trace=... [middle] [common] --output=OUT [--force-overwrite=true] APP``."""
    t = [opt(f"--trace={trace}")]
    o = [*t, *middle] if trace_first else [*middle, *t]
    o += [*common, opt(f"--output={output}")]
    if force:
        o.append(opt("--force-overwrite=true"))
    return Command(("nsys", "profile"), tuple(o), tuple(app))


# ------------------------------------------------------------------------------------- ncu
_REGEX_SPECIAL = set(r".^$*+?()[]{}|\/")


def _re_escape(name: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_SPECIAL else ch for ch in name)


def kernel_regex(names) -> str:
    """``--kernel-name`` value that matches exactly these function names (ncu's default
    ``--kernel-name-base function``): ``regex:^name$`` or ``regex:^(a|b)$``. The bars stay bars."""
    names = [n for n in dict.fromkeys(names) if n]
    if not names:
        raise ValueError("kernel_regex needs at least one kernel name")
    alts = [_re_escape(n) for n in names]
    body = alts[0] if len(alts) == 1 else "(" + "|".join(alts) + ")"
    return f"regex:^{body}$"


def kernel_option(kernel: str) -> Opt:
    """A user's --kernel value: ``regex:`` / ``demangled:`` / ``mangled:`` kept, a bare pattern made a regex."""
    return opt("--kernel-name", kernel if kernel.startswith(("regex:", "demangled:", "mangled:")) else f"regex:{kernel}")


def ncu_profile(set_: str, app, out: str, extra=(), target_all: bool = True, passthrough=()) -> Command:
    o = [opt("--set", set_)]
    if target_all:
        o.append(opt("--target-processes", "all"))
    o += [*extra, *(opt(w) for w in passthrough), opt("-o", out), opt("-f")]
    return Command(("ncu",), tuple(o), tuple(app))


def ncu_exports(rep: str, pages=("details", "raw")) -> list[Command]:
    """``ncu -i X.ncu-rep --csv --page details|raw > X_<page>.csv``: the CSVs nsys-expert reads."""
    base = rep[:-len(".ncu-rep")] if rep.endswith(".ncu-rep") else rep
    return [Command(("ncu",), (opt("-i", f"{base}.ncu-rep"), opt("--csv"), opt("--page", page)), (), f"{base}_{page}.csv")
            for page in pages]
