"""The HTML report in a real browser, the Chinese / English layouts, the chart series, terminal output.

Browser tests drive Debian's headless Chromium (`/usr/bin/chromium`, installed by `.ci/run`) through
the DevTools protocol over a pipe (``--remote-debugging-pipe``: no port, no extra package). They are
skipped, saying why, only when no Chromium is installed. ``NSX_SCREENSHOTS=docs`` also writes the
screenshots to ``docs/report-<case>.png`` (the ones docs/report.md shows).
"""
from __future__ import annotations

import json
import os
import re
import struct

import pytest

from conftest import FIXTURES, ROOT, fixture_cases
from nsys_expert import config, pipeline, report
from nsys_expert.report import html

BROWSER_CASES = ["healthy", "sync_bound"]
MAX_BYTES = 2 * 1024 * 1024
EN_SECTIONS = ["Collection environment", "Overall GPU utilization", "Top 10 CUDA kernels", "CUDA API time",
               "Communication", "Bottleneck diagnosis", "Optimization advice by priority"]
EVIL_KERNEL = 'evil|</title></code><script>alert(1)</script>&amp;"q\'_cutlass_80_simt_sgemm_256x128_8x4_nn_align1(T1::Params)'
EVIL_NVTX = "st<script>alert(2)</script>|ep"


def render(paths, lang="en") -> tuple[dict, dict, str]:
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(p) for p in paths], config.Settings(lang=lang)))
    return doc, ser, html.render_html(doc, ser, lang, zoom)


from chromium import Chromium, chromium_path, png_size_and_ink  # noqa: E402 - the harness beside this file


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium'; .ci/run installs it "
                    "with apt-get): the browser checks of the HTML report did not run")
    b = Chromium(exe)
    yield b
    b.close()

CHART_INFO_JS = """JSON.stringify([...document.querySelectorAll('svg.chart')].map(s => {
  const r = s.getBoundingClientRect();
  return {id: s.dataset.chart, declared: +s.dataset.series, width: r.width, height: r.height,
          series: [...s.querySelectorAll('.series')].map(e => { const b = e.getBBox();
              return {name: e.dataset.series, w: b.width, h: b.height}; }),
          bars: s.querySelectorAll('.bar').length};
}))"""


def expected_series(doc: dict, ser: dict) -> dict:
    """How many series each chart must draw, from the numbers (not from the chart code)."""
    t, f = doc["tables"], doc["facts"]
    exp = {}
    if ser.get("available"):
        n = 1
        n += 1 if ser.get("nccl_pct") and any(v > 0 for v in ser["nccl_pct"]) else 0
        n += 1 if any(v > 0 for v in ser["copy_pct"]) else 0
        n += len({c for c in ser["idle_cause"] if c})
        exp["timeline"] = n
    it = ser.get("iterations") or []
    if it:
        exp["iterations"] = int(any(r["warmup"] for r in it)) + int(any(not r["warmup"] for r in it))
    if t.get("top_kernels"):
        exp["kernels"] = 1
    if t.get("api"):
        exp["api"] = len({html._api_class(a["name"]) for a in t["api"]})
    if "gpu_active_pct" in f:
        parts = [f.get("kernel_active_pct", 0) > 0, f["gpu_active_pct"] - f.get("kernel_active_pct", 0) > 0]
        parts += [r["pct"] > 0 for r in t.get("idle_breakdown", [])]
        rest = 100 - f["gpu_active_pct"] - sum(r["pct"] for r in t.get("idle_breakdown", []))
        exp["window_bar"] = sum(parts) + (1 if rest > 0.05 else 0)
    return exp


@pytest.mark.slow
@pytest.mark.parametrize("case", BROWSER_CASES)
def test_html_in_headless_chromium(case, browser, tmp_path):
    doc, ser, page_html = render([FIXTURES / case / "input"])
    path = tmp_path / f"report-{case}.html"
    path.write_text(page_html, encoding="utf-8")
    page = browser.open(path)
    try:
        charts = json.loads(page.eval(CHART_INFO_JS))
        title = page.eval("document.title")
        h2 = page.eval("JSON.stringify([...document.querySelectorAll('h2')].map(h => h.textContent))")
        cards = page.eval("JSON.stringify([...document.querySelectorAll('.card.finding')].map(c => [+c.dataset.rank, c.dataset.severity]))")
        scripts = page.eval("document.scripts.length")
        overflow = page.eval("document.documentElement.scrollWidth - innerWidth")
        png = page.screenshot()
        thumb = page.screenshot(scale=0.1)
        # for docs/: the report down to the advice list (the lists after it are text only)
        top8 = page.eval("[...document.querySelectorAll('h2')].find(h => h.textContent.startsWith('8.'))"
                         ".getBoundingClientRect().top + scrollY")
        doc_png = page.screenshot(height=top8 - 8)
        errors = page.errors()
    finally:
        page.close()
    assert errors == [], errors
    assert scripts == 0
    assert overflow <= 0, f"the page is {overflow} px wider than the window"
    assert title.startswith("nsys-expert diagnosis")
    got = {c["id"]: c for c in charts}
    exp = expected_series(doc, ser)
    assert set(exp) <= set(got), (sorted(exp), sorted(got))
    for cid, n in exp.items():
        c = got[cid]
        assert c["width"] > 300 and c["height"] > 20, c
        assert c["declared"] == n == len(c["series"]), (cid, n, c["declared"], [s["name"] for s in c["series"]])
        for s in c["series"]:     # every series is drawn: a non-empty box on the page
            assert s["w"] > 0 and s["h"] > 0, (cid, s)
    assert got["kernels"]["bars"] == len(doc["tables"]["top_kernels"])
    assert got["api"]["bars"] == len(doc["tables"]["api"])
    sections = [re.sub(r"^\d+\.\s*", "", s) for s in json.loads(h2)]
    assert [s for s in sections if s in EN_SECTIONS] == EN_SECTIONS
    assert json.loads(cards) == [[x["rank"], x["severity"]] for x in doc["findings"]]
    assert [r for r, _ in json.loads(cards)] == sorted(r for r, _ in json.loads(cards))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] == 1200
    w, h, ink = png_size_and_ink(thumb)
    assert w == 120 and h > 200, (w, h)
    assert ink > 0.05, f"the screenshot is almost blank ({ink:.3f} of sampled pixels drawn)"
    out = os.environ.get("NSX_SCREENSHOTS")
    if out:
        dst = (ROOT / out) if not os.path.isabs(out) else __import__("pathlib").Path(out)
        dst.mkdir(parents=True, exist_ok=True)
        (dst / f"report-{case}.png").write_bytes(doc_png)


OVERFLOW_JS = """JSON.stringify((() => {
  const main = document.querySelector('main').getBoundingClientRect();
  const out = [];
  for (const e of document.querySelectorAll('main *')) {
    if (e instanceof SVGElement && !(e instanceof SVGSVGElement)) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const wider = r.right > main.right + 1 || r.left < main.left - 1;
    const spills = e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible';
    if (wider || spills)
      out.push({tag: e.tagName, cls: e.className && e.className.baseVal === undefined ? e.className : '',
                text: (e.textContent || '').slice(0, 60), right: Math.round(r.right), main: Math.round(main.right),
                scroll: e.scrollWidth, client: e.clientWidth});
  }
  return out;
})())"""


@pytest.mark.slow
@pytest.mark.parametrize("case, width", [("compute_bound_ncu", 1200), ("memory_bound_ncu", 600)])
def test_no_element_is_wider_than_the_page(case, width, browser, tmp_path):
    """The ncu fact tables (long metric values, kernel names) wrap: no element of the page reaches
    past the main column, none spills its own content (by element width, in Chromium), at the
    screenshot width and at a half-screen window (600 px: the evidence table's headers wrap)."""
    doc, ser, page_html = render([FIXTURES / case / "input"])
    assert any(k.get("ncu") or k.get("registers_per_thread") for k in doc["tables"].get("top_kernels", [])) or \
        any("ncu" in str(src) or "details" in str(src) for src in doc["fact_sources"].values())
    path = tmp_path / f"report-{case}.html"
    path.write_text(page_html, encoding="utf-8")
    page = browser.open(path, width=width)
    try:
        bad = json.loads(page.eval(OVERFLOW_JS))
        scroll = page.eval("document.documentElement.scrollWidth - innerWidth")
        png = page.screenshot(scale=0.5)
    finally:
        page.close()
    assert bad == [], bad[:5]
    assert scroll <= 0
    w, h, ink = png_size_and_ink(png)
    assert w == width // 2 and ink > 0.05


# ------------------------------------------------------------------------------------- escaping
@pytest.fixture
def evil_case(tmp_case):
    """sync_bound with a kernel and the iteration NVTX range renamed to names full of markup and pipes."""
    d = tmp_case("sync_bound")
    for p in d.iterdir():
        s = p.read_text(encoding="utf-8")
        s2 = s.replace("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)",
                       '"' + EVIL_KERNEL.replace('"', '""') + '"')
        s2 = s2.replace(",:step,", ",:" + EVIL_NVTX + ",")
        if s2 != s:
            p.write_text(s2, encoding="utf-8")
    return d


@pytest.mark.slow
def test_names_with_markup_are_escaped(evil_case, tmp_path):
    doc, ser, page_html = render([evil_case])
    assert any(k["name"] == EVIL_KERNEL for k in doc["tables"]["top_kernels"])   # the rename took
    assert doc["window"]["source"] == "nvtx:" + EVIL_NVTX
    assert "<script" not in page_html.lower()
    assert "</title></code>" not in page_html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page_html and "&lt;script&gt;alert(2)&lt;/script&gt;" in page_html
    md = report.render_markdown(doc, "en")
    rows = [ln for ln in md.splitlines() if ln.startswith("| 1 | ")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", r)) == 7 for r in rows[:1]), rows
    # markup only inside code spans, shown as text, or escaped ('\\<': Markdown's literal '<', issue 48)
    assert not re.search(r"(?<!\\)<script", re.sub(r"`[^`\n]*`", "", md))
    exe = chromium_path()
    if exe is None:
        pytest.skip("headless Chromium is not installed: the page was checked as text only")
    path = tmp_path / "evil.html"
    path.write_text(page_html, encoding="utf-8")
    b = Chromium(exe)
    try:
        page = b.open(path)
        text = page.eval("document.body.innerText")
        tips = page.eval("JSON.stringify([...document.querySelectorAll('svg.chart[data-chart=kernels] title')].map(t => t.textContent))")
        scripts = page.eval("document.scripts.length")
        errors = page.errors()
    finally:
        b.close()
    assert scripts == 0 and errors == []
    assert EVIL_NVTX in text
    assert any(t.startswith(EVIL_KERNEL) for t in json.loads(tips))


# ------------------------------------------------------------------------------- size, no network
@pytest.mark.slow
@pytest.mark.parametrize("case", fixture_cases())
def test_html_is_small_and_self_contained(case):
    _, _, page = render([FIXTURES / case / "input"])
    size = len(page.encode("utf-8"))
    assert size < MAX_BYTES, f"{case}: {size} bytes"
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page                   # the page may load nothing at all
    assert not re.search(r"""(?i)(src|href|xlink:href)\s*=\s*["']?\s*(https?:|//)""", page)
    assert "<script" not in page.lower()
    assert "@import" not in page and "url(http" not in page
