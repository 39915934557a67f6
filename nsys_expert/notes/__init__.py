"""What the layers below the report have to say: a warning, a note about the inputs, why a fact is absent.

Each is a :class:`Note`: a code from the one catalog (``notes/codes.py``: its kind and English template)
and its fields (numbers and names, never sentences; a field may hold another Note, a tuple of names or of
Notes). Load and the fact groups make Notes; the engine reads their codes and fields; the report classifies
them by kind and puts them into words (``report/i18n.py``: the English template, or its translation from
the message catalog, whose message id is the English template). ``str(note)`` is its English text: the
words of the JSON report.

Field conventions (the one place they are read is :func:`render`):

- ``inputs``: input ids (``registry.INPUTS``), said as their phrases (``input.<id>`` codes) joined with "or";
  ``all_inputs`` the same joined with "and";
- ``then``: Notes said after the note's own text, each as a clause of it ("; " between them); a field whose
  name ends in ``_clauses`` holds Notes said as clauses in the same way, where its template puts them;
- ``file`` with ``more_files``: the first names of a group of files and how many more ("a.csv, b.csv and 3 more");
- a tuple of names is said joined with ", ", a tuple of Notes the same (each in the same language).

``words`` says which form of the template: ``full`` (as the facts say it, with the commands that collect
what is missing), ``plain`` (without the commands: "not evaluated" names what is missing and the Next steps
give the commands) or ``torch`` (plain, in the words of a torch.profiler trace, which has ProfilerStep
ranges instead of NVTX ranges and no OS runtime trace).

A text made elsewhere as a plain ``str`` (the pipeline's and the CLI's own few) is accepted wherever a
Note is: it is already English, and the report says it as it is (or as the catalog translates it).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Union

from .codes import CODES, Code

KINDS = ("warning", "input", "absent", "phrase", "same")


@dataclass(frozen=True)
class Note:
    code: str
    fields: dict = field(default_factory=dict)
    words: str = "full"            # full | plain | torch (see the module's doc)

    def __post_init__(self):
        if self.code not in CODES:
            raise KeyError(f"unknown note code {self.code!r}: declare it in nsys_expert/notes/codes.py")

    def __hash__(self):
        return hash((self.code, _frozen(self.fields), self.words))

    def __str__(self):
        return render(self)

    @property
    def kind(self) -> str:
        k = CODES[self.code].kind
        return kind(self.fields.get("note")) if k == "same" else k

    def said(self, words: str) -> "Note":
        """This note in another form of its words (``plain``, ``torch``)."""
        return self if words == self.words else replace(self, words=words)

    def with_fields(self, **fields) -> "Note":
        return replace(self, fields={**self.fields, **fields})


Said = Union[Note, str]


def note(code: str, **fields) -> Note:
    return Note(code, fields)


def kind(x: Said) -> str:
    """A Note's kind; a plain text is a warning (it changes what to believe until said otherwise)."""
    return x.kind if isinstance(x, Note) else "warning"


def _frozen(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    return v


@dataclass(frozen=True)
class Language:
    """How a language says the notes: ``template`` gives its template for an English one (None: none)."""
    template: Callable[[str], "str | None"] = lambda en: None
    names: str = ", "             # between names
    items: str = ", "             # between notes said in a row
    either: str = " or "          # between alternatives (the inputs a fact needs)
    both: str = " and "           # between inputs that are all needed
    clauses: str = "; "           # between the clauses of a note
    and_more: str = "{names} and {more} more"
    fill: Callable[[str, dict], str] = lambda template, values: template.format(**values)
    join_either: "Callable[[list[str]], str] | None" = None     # alternatives joined (else with ``either``)


ENGLISH = Language()


def template(code: Code, words: str) -> str:
    """The English template of ``code`` in the form ``words``."""
    if words == "torch" and code.torch is not None:
        return code.torch
    if words in ("plain", "torch") and code.plain is not None:
        return code.plain
    return code.en


def render(x: Said, lang: Language = ENGLISH) -> str:
    """``x`` in the words of ``lang`` (a plain text as it is)."""
    if not isinstance(x, Note):
        return "" if x is None else str(x)
    code = CODES[x.code]
    en = template(code, x.words)
    text = lang.template(en) or en
    values = {k: _value(k, v, x, lang) for k, v in {**(code.defaults or {}), **x.fields}.items()}
    out = lang.fill(text, values)
    then = [_inner(n, x, lang) for n in x.fields.get("then") or ()]
    return lang.clauses.join([out, *then]) if then else out


def _inner(n, x: Note, lang: Language) -> str:
    """A Note inside ``x``, in ``x``'s form of words unless it has its own; a name as it is."""
    if isinstance(n, Note):
        return render(n.said(x.words) if n.words == "full" else n, lang)
    return str(n)


def _value(name: str, v, x: Note, lang: Language):
    if isinstance(v, Note):
        return _inner(v, x, lang)
    if name in ("inputs", "all_inputs"):
        phrases = [render(Note("input." + i, words=x.words), lang) if "input." + i in CODES else i
                   for i in _torch_inputs(v, x.words)]
        phrases = list(dict.fromkeys(phrases))
        if name == "inputs" and lang.join_either is not None:
            return lang.join_either(phrases)
        return (lang.either if name == "inputs" else lang.both).join(phrases)
    if isinstance(v, (list, tuple)) and name.endswith("_clauses"):
        return lang.clauses.join(_inner(n, x, lang) for n in v)
    if isinstance(v, (list, tuple)):
        said = (lang.items if v and all(isinstance(n, Note) for n in v) else lang.names).join(_inner(n, x, lang) for n in v)
        if name == "file" and x.fields.get("more_files"):
            return lang.and_more.format(names=said, more=x.fields["more_files"])
        return said
    if name == "file" and x.fields.get("more_files"):
        return lang.and_more.format(names=v, more=x.fields["more_files"])
    if name == "why" and isinstance(v, str):
        # why a file was not read: a reader's one-line error, said in the language where the catalog has it
        # (issue 56, item 9: "an ncu CSV without a Kernel Name column" stayed English in a Chinese report)
        return lang.template(v) or v
    return v


def _torch_inputs(ids, words: str):
    """A torch.profiler trace's steps are its ProfilerStep ranges: NVTX ranges with timestamps or the
    nvtx_sum report are one need there (step ranges)."""
    ids = list(ids)
    if words == "torch" and "nvtx_trace" in ids:
        ids = [i for i in ids if i != "nvtx_sum"]
    return ids


def parts(x: Said):
    """``x`` and every Note inside it (its fields' Notes, the phrases of its inputs), for a check that
    each is in a catalog."""
    if not isinstance(x, Note):
        return
    yield x
    for k, v in x.fields.items():
        for i in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(i, Note):
                yield from parts(i.said(x.words) if i.words == "full" else i)
            elif k in ("inputs", "all_inputs") and "input." + str(i) in CODES:
                yield Note("input." + i, words=x.words)


def renamed(x: Said, old: str, new: str) -> Said:
    """``x`` with a file's name ``old`` said as ``new`` (a temporary copy's name as the input's)."""
    if not isinstance(x, Note):
        return x.replace(old, new)
    def one(v):
        if isinstance(v, str):
            return v.replace(old, new)
        if isinstance(v, Note):
            return renamed(v, old, new)
        if isinstance(v, (list, tuple)):
            return type(v)(one(i) for i in v)
        return v
    return replace(x, fields={k: one(v) for k, v in x.fields.items()})


__all__ = ["Note", "Said", "note", "kind", "render", "renamed", "Language", "ENGLISH", "CODES", "KINDS"]
