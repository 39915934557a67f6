"""Every nsys / ncu command a golden report prints parses with the tools' own grammar (tests/toolgrammar.py,
from their --help), quotes back to itself, uses the report names of the nsys that wrote the input, and
never exports what the input already holds. Plus the builder's pieces: kernel regex, report names, quoting."""
import json
import re
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolgrammar
from conftest import expected_doc, fixture_cases, FIXTURES
from nsys_expert import scenarios as sc
from nsys_expert.load import schema

_CMD = re.compile(r"`((?:nsys (?:profile|stats|export)|ncu) [^`]*)`")


def _inputs(expected: dict) -> list[dict]:
    out = []
    for path, report, version, _rows in expected["inputs"]:
        kind = "nsys-sqlite" if path.endswith(".sqlite") else "ncu" if str(version).startswith("ncu") else "nsys-csv"
        spec = schema.SPEC_BY_NAME.get(report)
        table = spec.table if spec else ("ncu" if kind == "ncu" else report)
        out.append({"path": path, "report": report, "version": version, "kind": kind, "table": table})
    return out


def printed_commands(md: str) -> list[tuple[str, str]]:
    """(where, command line) for every nsys / ncu command in a Markdown report: code-block lines and
    commands quoted inside advice items."""
    out, block = [], False
    for line in md.splitlines():
        s = line.strip()
        if s.startswith("```"):
            block = not block
            continue
        if block and (s.startswith("nsys ") or s.startswith("ncu ")):
            out.append(("next steps", s))
        elif not block and s.startswith("- ") and line.startswith("   "):
            out += [("advice", m.group(1).strip()) for m in _CMD.finditer(s)]
            rest = _CMD.sub("", s)
            assert not re.search(r"\b(nsys (profile|stats|export)|ncu) -", rest), f"a command outside backticks: {s}"
    return out


def _report_names(era: str) -> set[str]:
    return {sc.report_name(r, era) for r in sc.STATS_REPORTS}


@pytest.mark.parametrize("case", fixture_cases())
def test_every_printed_command_parses(case):
    md = (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
    expected = expected_doc(case)
    inputs = _inputs(expected)
    era = sc.era_of(inputs)
    held = {i["table"] for i in inputs}
    for where, line in printed_commands(md):
        argv = toolgrammar.split(line)
        assert " ".join(sc.quote(a) for a in argv) == line.split(" > ")[0], (case, line)     # quotes back to itself
        # the export chain of a new profile reads its own fresh SQLite (2023+ names); the rest reads this input's
        fresh = argv[0] == "nsys" and argv[1] == "stats" and argv[-1].endswith(".sqlite")
        names = _report_names("2023+" if fresh or where == "advice" else era)
        assert toolgrammar.check(argv, names) == [], (case, where, line)
        if argv[:2] == ["nsys", "stats"] and not fresh:
            reports = argv[argv.index("--report") + 1].split(",")
            again = [r for r in reports if schema.SPEC_BY_NAME[r].table in held]
            assert not again, (case, line, "exports what the input holds", again)


def test_the_commands_found_are_the_ones_printed():
    """The extraction above is not vacuous: the golden reports print this many commands, of each kind."""
    kinds = {}
    for case in fixture_cases():
        for where, line in printed_commands((FIXTURES / case / "expected.md").read_text(encoding="utf-8")):
            kinds[(where, " ".join(line.split()[:2]))] = kinds.get((where, " ".join(line.split()[:2])), 0) + 1
    assert kinds.get(("next steps", "ncu --set"), 0) >= 10
    assert kinds.get(("next steps", "nsys stats"), 0) >= 5
    assert kinds.get(("next steps", "nsys profile"), 0) >= 5
    assert kinds.get(("advice", "nsys profile"), 0) >= 3


def test_a_held_trace_is_never_exported_again():
    """The graph fixtures hold cuda_gpu_trace: the fix is a node-level trace, not an export."""
    for case in ("launch_bound_graphed", "launch_bound_graphed_sqlite"):
        md = (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
        cmds = [c for _, c in printed_commands(md)]
        assert any("--cuda-graph-trace=node" in c for c in cmds), case
        assert not any(c.startswith("nsys stats --report cuda_gpu_trace ") for c in cmds), case
    for case in ("h100_2gpu_nsys2026_sqlite", "cupy_nsys2020_sqlite"):      # SQLite exports holding NVTX events
        md = (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
        assert "nvtx_pushpop_trace --format" not in md and "NVTX step ranges" in md, case


def test_old_report_names_for_old_inputs():
    for case in ("sync_bound_nsys2022", "memcpy_bound_nsys2022", "console_alcf_nsys2022"):
        md = (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
        stats = [c for _, c in printed_commands(md) if c.startswith("nsys stats")]
        assert stats and all("cuda_api_trace" not in c and "cuda_gpu_trace" not in c for c in stats), case
        assert any("cudaapitrace" in c for c in stats), case


# ------------------------------------------------------------------------------ the builder's pieces
def test_kernel_regex_keeps_the_alternation():
    assert sc.kernel_regex(["stencil", "copy"]) == "regex:^(stencil|copy)$"
    assert sc.kernel_regex(["Kernel2"]) == "regex:^Kernel2$"
    assert sc.kernel_regex(["a$b", "a$b"]) == r"regex:^a\$b$"
    pattern = sc.kernel_regex(["stencil", "copy"])[len("regex:"):]
    assert re.fullmatch(pattern, "copy") and re.fullmatch(pattern, "stencil") and not re.search(pattern, "stencil|copy")
    with pytest.raises(ValueError):
        sc.kernel_regex([])


def test_report_names_by_era():
    assert sc.report_name("cuda_api_trace", "2021-2022") == "cudaapitrace"
    assert sc.report_name("cuda_api_trace", "2023+") == "cuda_api_trace"
    assert sc.report_name("nvtx_sum", "2020-2021") == "nvtxppsum"
    for era in sc.commands.ERAS:           # every name the builder can print is one the loader knows
        for r in sc.STATS_REPORTS:
            assert sc.report_name(r, era) in schema.SPEC_BY_NAME
    assert sc.era_of([{"kind": "nsys-sqlite", "version": "2022.4.2.1"}]) == "2021-2022"
    assert sc.era_of([{"kind": "nsys-csv", "version": "2023+"}, {"kind": "nsys-csv", "version": "2021-2022"}]) == "2021-2022"
    assert sc.era_of([]) == "2023+"
    cmd = sc.nsys_stats(["cuda_api_trace", "cuda_gpu_trace"], "p.nsys-rep", "p", "2021-2022")
    assert cmd.line() == "nsys stats --report cudaapitrace,gputrace --format csv --output p p.nsys-rep"


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5))
def test_quote_round_trips_through_the_shell_parser(words):
    line = " ".join(sc.quote(w) for w in words)
    assert shlex.split(line) == words


def test_grammar_rejects_what_the_tools_reject():
    """The checker is not a rubber stamp."""
    bad = {
        "ncu --set full --kernel-name 'regex:.*a\\|b.*' -o k -f python t.py": "escapes the alternation",
        "ncu --set full --launch-counts 5 python t.py": "unknown option",
        "nsys stats --report cuda_api_trace --format csv --output x": "expects one input",
        "nsys profile --trace=cuda,nccl --output=x python t.py": "--trace value",
        "nsys export --type=sqlit --output=x.sqlite x.nsys-rep": "--type",
        "ncu -i x.ncu-rep --csv --page everything": "--page",
    }
    for line, why in bad.items():
        problems = toolgrammar.check(toolgrammar.split(line), _report_names("2023+"))
        assert any(why in p for p in problems), (line, problems)
    assert toolgrammar.check(toolgrammar.split("nsys stats --report cuda_api_trace --format csv --output x x.sqlite"),
                             _report_names("2021-2022"))


@pytest.mark.parametrize("scenario,full", [("quick", False), ("pytorch", True)])
def test_the_torch_profiler_twin_is_printed_beside_the_nsys_command(scenario, full):
    """Issue 33, item 6: the torch.profiler snippet for the same steps, valid Python with the schedule,
    the activities, record_shapes, with_stack and on_trace_ready, and the folder diagnose then reads."""
    import ast

    from nsys_expert import scenarios as sc

    plan = sc.build(scenario, sc.Options(app=("python", "train.py")))
    snippet = next(f for f in plan.files if f.name == "torch_profiler_steps.py")
    assert not snippet.executable
    tree = ast.parse(snippet.content)
    kw = {k.arg: ast.unparse(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call)
          and ast.unparse(n.func) == "profile" for k in n.keywords}
    assert set(kw) >= {"activities", "schedule", "record_shapes", "with_stack", "on_trace_ready"}
    assert kw["with_stack"] == str(full) and "tensorboard_trace_handler('kineto_trace')" == kw["on_trace_ready"]
    assert "prof.step()" in snippet.content and "nsys-expert diagnose kineto_trace" in snippet.content


def test_every_scenario_says_its_title_and_notes_in_chinese():
    """Issue 56, item 9: `command --lang zh` translated only the --explain lines."""
    from nsys_expert import scenarios as sc
    from nsys_expert.cli.command import render_plan
    from nsys_expert.report import i18n
    for name in sc.SCENARIOS:
        plan = sc.build(name, sc.Options(nnodes=2, container="docker"))
        texts = [plan.title, *plan.notes, *(why for _, why in plan.explain)]
        missing = [t for t in texts if i18n.untranslated(t, "zh")]
        assert not missing, (name, missing)
        text = render_plan(plan, None, True, lang="zh")
        assert "# note:" not in text and "writes it for you" not in text and "why each option" not in text
