"""No English reaches a report in another language (issue 59, item 2): a pseudo-locale, ``qps``, made from
the catalogs alone (every message id's words wrapped in ⟦ ⟧, its fields kept), is put in a folder of its own
(``NSX_LOCALE_PATH``: no Python names it), and the Markdown, HTML and terminal reports of real fixtures in
it hold no run of English words outside the markers but for names (kernels, files, tools, units)."""
from __future__ import annotations

import html as _html
import io
import os
import re

import pytest

from conftest import FIXTURES, slow_ones
from nsys_expert import config, pipeline, report
from nsys_expert.notes import catalogs
from nsys_expert.report import html, i18n, terminal

LANG = "qps"
OPEN, CLOSE = "⟦", "⟧"
_FIELD = re.compile(r"(\{\{.*?\}\}|\{%.*?%\}|\{[^{}]*\}|%%|%s)", re.S)   # a field, a rule's Jinja2, a %s


def pseudo(msgid: str) -> str:
    """``msgid`` with each run of words between its fields wrapped in markers: a field's value (a number, a
    name, another note said in the same language) stays outside them, so an English one is caught."""
    out = []
    for part in _FIELD.split(msgid):
        if _FIELD.fullmatch(part) or not re.search(r"[A-Za-z]", part):
            out.append(part)
        else:
            lead = part[:len(part) - len(part.lstrip())]
            tail = part[len(part.rstrip()):]
            out.append(f"{lead}{OPEN}{part.strip()}{CLOSE}{tail}")
    return "".join(out)


def write_pseudo_locale(root) -> list[str]:
    """The ``qps`` catalogs under ``root`` (``.po`` and compiled ``.mo``): every message a language
    translates (``i18n.messages``: the zh catalogs' message ids and the rules' English words), said by
    :func:`pseudo`; -> the files written."""
    return i18n.write_templates(str(root / LANG / "LC_MESSAGES"), pseudo)


# A name the reports show as it is, in any language: tools, APIs, units, the words of a kernel's or a
# report's name. Small on purpose: anything else in Latin letters outside the markers is a leak.
NAMES = {
    "GPU", "GPUs", "CPU", "CUDA", "NVTX", "NCCL", "API", "APIs", "HIP", "ROCm", "SQLite", "CSV", "JSON", "HTML",
    "nsys", "ncu", "nvidia-smi", "torch", "profiler", "PyTorch", "DataLoader", "OSRT", "GIL", "NVLink", "PCIe",
    "ms", "us", "ns", "s", "MB", "GB", "KB", "GiB", "MiB", "TB", "TFLOPS", "SM", "SMs", "DRAM", "H2D", "D2H", "D2D",
    "memcpy", "memset", "cudaMalloc", "cudaFree", "hipMalloc", "hipFree", "nsys-expert", "Nsight", "Systems",
    "Compute", "ProfilerStep", "NVIDIA", "H100", "A100", "V100", "MI250", "kernel", "kernels", "rank", "ranks",
    "Quadro", "RTX", "GeForce", "Tesla",                                        # a GPU's model name
    "const", "unsigned", "long", "int", "float", "double", "char", "void", "bool", "T",   # a kernel's signature
}


def leaks(text: str) -> list[str]:
    """The runs of two or more English words in ``text`` outside the markers, names and code."""
    text = re.sub(f"{OPEN}[^{CLOSE}]*{CLOSE}", " | ", text)
    text = re.sub(r"```.*?```", " | ", text, flags=re.S)
    text = re.sub(r"(?<!\S)--?[A-Za-z][\w-]*(?:[ =](?!-)\S+)?", " | ", text)    # a command's options and values
    text = re.sub(r"`[^`\n]*`|“[^”]*”|'[^'\n]*'|https?://\S+|\S*[/\\]\S*|\S*[_:.#=<>]\S*", " | ", text)
    out = []
    for run in re.findall(r"(?:[A-Za-z][A-Za-z'-]*[ ]){1,}[A-Za-z][A-Za-z'-]*", text):
        words = [w for w in run.split() if w.strip("'-") not in NAMES]
        if len(words) >= 2:
            out.append(run)
    return out


def page_text(page: str) -> str:
    page = re.sub(r"<(style|script|code|pre)\b.*?</\1>", " | ", page, flags=re.S)
    return _html.unescape(re.sub(r"<[^>]+>", " | ", page))


CASES = ["library_nvtx", "sync_bound_summaries", "console_deep_dive", "launch_bound_graphed_sqlite",
         "cupy_nsys2020_sqlite", "nccl_single", "compute_bound_ncu", "memcpy_bound_sqlite",
         "gpu_metrics_memcpy_pageable_sqlite", "pair_loss_item_sqlite"]


@pytest.fixture(scope="module")
def pseudo_locale(tmp_path_factory):
    root = tmp_path_factory.mktemp("locale")
    write_pseudo_locale(root)
    old = os.environ.get("NSX_LOCALE_PATH")
    os.environ["NSX_LOCALE_PATH"] = str(root)
    yield root
    if old is None:
        del os.environ["NSX_LOCALE_PATH"]
    else:
        os.environ["NSX_LOCALE_PATH"] = old


def rendered(case: str) -> dict[str, str]:
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / case / "input")],
                                                                    config.Settings(lang=LANG)))
    buf = io.StringIO()
    from rich.console import Console

    terminal.summary(doc, LANG, Console(file=buf, width=200, color_system=None, force_terminal=False))
    return {"md": report.render_markdown(doc, LANG), "html": page_text(html.render_html(doc, ser, LANG, zoom)),
            "terminal": buf.getvalue()}


def test_the_pseudo_locale_is_catalog_files_only(pseudo_locale):
    """A new language is its catalog files: written outside the package, found through NSX_LOCALE_PATH,
    every domain there (the notes' and run-time sentences, the labels, the facts, the rules' words)."""
    assert LANG in catalogs.languages() and "qps" not in os.listdir(catalogs.PACKAGE_LOCALE)
    folder = pseudo_locale / LANG / "LC_MESSAGES"
    assert {f for f in os.listdir(folder) if f.endswith(".mo")} >= {"nsys_expert.mo", "labels.mo", "facts.mo", "rules.mo"}
    assert i18n.say("iteration 1 left out as warm-up", LANG) == "⟦iteration 1 left out as warm-up⟧"
    from nsys_expert.report.labels import LABELS, labels

    assert labels(LANG)["window"] == "⟦Analysis window⟧" and LABELS["en"]["window"] == "Analysis window"


def test_the_leak_finder_finds_english():
    assert leaks("⟦Analysis window⟧: 12.5 ms (`nvtx:step`)") == []
    assert leaks("⟦Analysis window⟧: the window ends here") == ["the window ends here"]
    assert leaks("kernel `void foo<float>` on 2 GPUs, nsys stats --format csv --output report") == []


@pytest.mark.parametrize("case", slow_ones(CASES, {   # 0.3-1.8 s each (issue 56, item 14)
    "gpu_metrics_memcpy_pageable_sqlite", "nccl_single", "memcpy_bound_sqlite", "pair_loss_item_sqlite"}))
def test_no_english_outside_the_catalogs(pseudo_locale, case):
    found = {k: leaks(v) for k, v in rendered(case).items()}
    found = {k: v for k, v in found.items() if v}
    assert found == {}, case


def _comments(script: str) -> str:
    """The comment lines of ``nsys-expert command``'s script, without the wrapper files' own code and the
    commands and options it quotes (``#   docker run ...``, ``#   --delay=60``: indented by three)."""
    script = re.sub(r"<<'(\w+)'\n.*?\n\1\n", "\n", script, flags=re.S)
    return "\n".join(ln for ln in script.splitlines() if ln.startswith("#") and not re.match(r"#   \S", ln))


def test_nsys_expert_command_says_its_words_from_the_catalogs(pseudo_locale):
    """``nsys-expert command --lang``: each scenario's title, notes and why each option is there (the playbook's
    words, a plan.* note where they hold a value) come from the catalogs, as the report's words do."""
    from nsys_expert import scenarios as sc
    from nsys_expert.cli.command import render_plan

    for name in sc.SCENARIOS:
        plan = sc.build(name, sc.Options(nnodes=2, container="docker", kernel="k" if "ncu" in name else None))
        text = _comments(render_plan(plan, None, True, lang=LANG))
        assert OPEN in text and leaks(text) == [], (name, leaks(text))
