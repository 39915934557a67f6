"""The HTML report shows what the Markdown shows (issue 56, item 6: the HTML left out "Where each step's
time goes, by phase", the sentence that names the phase holding the idle time and "and N more kernel(s)").

Statically: every label, table, fact and document key the Markdown template reads, the HTML template reads
too. Rendered: on the fixtures that have them, the HTML holds the phase table's rows and those sentences."""
import html as htmlmod
import re

import pytest

from conftest import FIXTURES, ROOT, slow_ones
from nsys_expert import config, pipeline, report
from nsys_expert.report import html

TEMPLATES = ROOT / "nsys_expert" / "report" / "templates"
KEYS = re.compile(r"\b(?:L|t|f|doc)\.[a-z_]+")


def _keys(name: str) -> set[str]:
    return set(KEYS.findall((TEMPLATES / name).read_text(encoding="utf-8")))


def test_every_key_the_markdown_reads_the_html_reads():
    missing = _keys("report.md.j2") - _keys("report.html.j2")
    assert not missing, f"the HTML report leaves out what the Markdown shows: {sorted(missing)}"


def _both(case):
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / case / "input")], config.Settings()))
    return report.render_markdown(doc, "en"), htmlmod.unescape(re.sub(r"<[^>]+>", "", html.render_html(doc, ser, "en", zoom)))


@pytest.mark.parametrize("case,texts", [
    ("dataloader_bound", ["Where each step's time goes, by phase", "Where: "]),
    ("memory_bound_ncu", ["more kernel(s)"]),
])
def test_the_html_holds_the_sections_of_the_markdown(case, texts):
    md, page = _both(case)
    for text in texts:
        assert text in md, (case, text)        # the fixture still has it
        assert text in page, (case, text)
    if "by phase" in texts[0]:
        table = md.split("Where each step's time goes, by phase")[1].split("\n\n")[1]
        for row in table.splitlines()[2:]:
            assert row.split(" | ")[1] in page, row       # each phase's ms a step


@pytest.mark.parametrize("case", slow_ones(["sync_bound_console", "kineto_optimizer", "pair_checkpoint_sqlite",
                                            "launch_bound_graphed_sqlite", "console_deep_dive", "kineto_3rank_straggler"],
                                           {"kineto_3rank_straggler"}))   # 2.9 s (issue 56, item 14)
def test_every_markdown_section_is_in_the_html(case):
    """Every heading of the Markdown report (a section, or a finding's title) is on the HTML page too, for a
    console log, a torch.profiler trace, an SQLite export, CUDA graphs, a several-runs file and a multi-rank job."""
    md, page = _both(case)
    page = re.sub(r"\s+", " ", page)
    heads = [re.sub(r"^#+ (\d+\. )?", "", line).split(" (")[0].replace("`", "").strip()
             for line in md.splitlines() if line.startswith("#")]
    assert len(heads) >= 5, heads
    missing = [h for h in heads if h not in page]
    assert not missing, f"{case}: the HTML report leaves out {missing}"
