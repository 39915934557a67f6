"""The notes (issue 49, item 2): every warning and every reason a fact is absent is a ``Note(code, fields)``
from one catalog (``nsys_expert/notes/codes.py``), classified by its code's kind and put into words only by
``report/i18n.py``. Each code renders in English (its template) and in Chinese (the .po entry whose message
id is that template) with no English clause left."""
from __future__ import annotations

import re
import string

import pytest

from nsys_expert import notes
from nsys_expert.notes import CODES, Note
from nsys_expert.report import i18n, split_warnings

from test_i18n import ENGLISH, prose

# sample values: numbers where the template formats a number, plain names elsewhere (no English words)
_NUMBER = re.compile(r"[,.+]|[dfgeG%]$")


def _sample(name: str, spec: str):
    if name in ("inputs", "all_inputs"):
        return ("gpu_trace", "nvtx_trace", "osrt_trace")
    if name.endswith("_clauses") or name == "then":
        return (Note("phrase.console_no_table"), Note("phrase.the_gpu_trace"))
    if spec and _NUMBER.search(spec):
        return 1234.5 if ("f" in spec or "g" in spec) else 12345
    if name in ("n", "more", "others", "line", "bad", "rows", "first", "sources", "gpus", "built", "kib", "id"):
        return 7
    return "x_" + name


def _fields(code: str) -> dict:
    c = CODES[code]
    out = dict(c.defaults or {})
    for t in (c.en, c.plain, c.torch):
        for _, name, spec, _ in string.Formatter().parse(t or ""):
            if name and name not in out:
                out[name] = _sample(name, spec or "")
    return out


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_renders_in_english_and_chinese(code):
    c = CODES[code]
    assert c.kind in notes.KINDS
    for words in ("full", "plain", "torch"):
        n = Note(code, _fields(code), words=words)
        en = str(n)
        assert "{" not in en and en == i18n.say(n, "en")
        assert i18n.untranslated(n, "zh") == [], f"add to the zh catalog: {i18n.untranslated(n, 'zh')}"
        zh = i18n.say(n, "zh")
        assert zh != en or not ENGLISH.search(en), code
        assert not ENGLISH.search(prose(zh)), (code, zh)


def test_a_note_is_hashable_and_equal_by_code_fields_and_words():
    a = Note("load.bom", {"file": "a.csv"})
    assert a == Note("load.bom", {"file": "a.csv"}) and len({a, Note("load.bom", {"file": "a.csv"})}) == 1
    assert a != Note("load.bom", {"file": "b.csv"}) and a.said("plain") != a
    with pytest.raises(KeyError, match="notes/codes.py"):
        Note("no.such.code")


def test_warnings_split_by_kind_not_by_words():
    """Which warnings are folded as notes about the inputs is the code's kind: rewording a template
    cannot move a warning between the two lists; a plain text (made outside the notes) is a warning."""
    src = Note("load.richest_source", {"tables": ("gpu_trace",), "file": "x.sqlite"})
    bom = Note("load.bom", {"file": "a.csv"})
    important, inputs = split_warnings([src, bom, "a text of the pipeline's"])
    assert important == [bom, "a text of the pipeline's"] and inputs == [src]
    ranked = [Note("pipeline.rank_note", {"rank": "rank1", "note": n}) for n in (src, bom)]
    assert split_warnings(ranked) == ([ranked[1]], [ranked[0]])     # a rank's note keeps its note's kind
    assert str(ranked[1]) == "[rank1] a.csv: begins with a UTF-8 byte-order mark (nsys writes none: re-saved by " \
        "another program?); read without it"


def test_the_forms_of_words_of_an_absent_reason():
    """``full`` keeps the commands (the JSON's facts_absent), ``plain`` drops them ("not evaluated"),
    ``torch`` says a torch.profiler trace's steps and lack of an OS runtime trace."""
    n = Note("absent.needs", {"inputs": ("nvtx_trace", "nvtx_sum")})
    assert str(n) == ("needs NVTX ranges with timestamps (nsys stats -r nvtx_pushpop_trace; profile with "
                      "--trace=nvtx and mark each step with an NVTX range) or the nvtx_sum report (nsys stats -r nvtx_sum)")
    assert str(n.said("plain")) == "needs NVTX ranges with timestamps or the nvtx_sum report"
    assert str(n.said("torch")) == "needs step ranges (ProfilerStep#N: call prof.step() once per step)"
    assert str(Note("absent.needs", {"inputs": ("osrt_trace",)}, words="torch")) == \
        "needs the per-thread OS runtime trace, which torch.profiler does not record"
    assert i18n.say(n.said("torch"), "zh") == "需要步骤区间（ProfilerStep#N：每一步调用一次 prof.step()）"


def test_files_said_alike_are_one_line():
    from nsys_expert.load import _grouped

    ws = [Note("load.bom", {"file": f"{i}.csv"}) for i in range(4)] + [Note("load.cr_only", {"file": "z.csv"})]
    out = _grouped(ws)
    assert [str(w) for w in out] == [
        "0.csv, 1.csv and 2 more: begins with a UTF-8 byte-order mark (nsys writes none: re-saved by another "
        "program?); read without it", "z.csv: its lines end in CR only (old Mac style; nsys writes LF); read as line ends"]
    assert i18n.say(out[0], "zh").startswith("0.csv, 1.csv 等另外 2 个文件：")


def test_a_plain_text_is_said_as_it_is():
    assert i18n.say("only 3 ranks", "en") == "only 3 ranks" and notes.render("x") == "x"
    assert notes.renamed("a.csv: x", "a.csv", "b.csv") == "b.csv: x"
    assert notes.renamed(Note("load.bom", {"file": "/tmp/q/a.csv"}), "/tmp/q/a.csv", "a.csv").fields == {"file": "a.csv"}


def test_no_message_id_is_a_pattern():
    """Issue 59, item 2: no sentence is translated back from English. Every message id of a language's
    ``nsys_expert`` catalog that holds a field is a note's template (said from the note's code and fields);
    the rest are plain texts, looked up whole. A filled sentence never reaches the catalog."""
    from nsys_expert.notes import catalogs

    templates = {t for c in CODES.values() for t in (c.en, c.plain, c.torch) if t}
    for lang in catalogs.languages()[1:]:
        ids = [m for m in catalogs.catalog(i18n.DOMAIN, lang) if "\x04" not in m]
        assert ids, lang
        patterns = [m for m in ids if "{" in m and m not in templates]
        assert patterns == [], f"{lang}: message ids with fields that no note code has: {patterns}"


def test_no_python_names_a_language():
    """A new language is catalog files (docs/architecture.md, "A new language"): no module of the package
    tests for a language or keeps words by language (the --lang choices are the catalogs' languages). The
    one exception: the CLI's spelling aliases ('cn' -> 'zh'), a hint for a mistyped --lang."""
    import ast
    import pathlib

    import nsys_expert

    root = pathlib.Path(nsys_expert.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == "zh":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert [f for f in found if not f.startswith("cli/options.py:")] == []
