"""The HTML report in a real browser, the Chinese / English layouts, the chart series, terminal output.

Browser tests drive Debian's headless Chromium (`/usr/bin/chromium`, installed by `.ci/run`) through
the DevTools protocol over a pipe (``--remote-debugging-pipe``: no port, no extra package). They are
skipped, saying why, only when no Chromium is installed. ``NSX_SCREENSHOTS=docs`` also writes the
screenshots to ``docs/report-<case>.png`` (the ones docs/report.md shows).
"""
from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import re
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import pytest

from conftest import FIXTURES, ROOT, SHARED, fixture_cases
from nsys_expert import config, facts, load, pipeline, report
from nsys_expert.facts.series import series
from nsys_expert.report import html, terminal

BROWSER_CASES = ["healthy", "sync_bound"]
MAX_BYTES = 2 * 1024 * 1024
ZH_SECTIONS = ["采集环境", "总体 GPU 利用率", "Top 10 CUDA Kernel", "CUDA API 耗时分布", "通信分析", "瓶颈诊断", "优化建议"]
EN_SECTIONS = ["Collection environment", "Overall GPU utilization", "Top 10 CUDA kernels", "CUDA API time",
               "Communication", "Bottleneck diagnosis", "Optimization advice by priority"]
EVIL_KERNEL = 'evil|</title></code><script>alert(1)</script>&amp;"q\'_cutlass_80_simt_sgemm_256x128_8x4_nn_align1(T1::Params)'
EVIL_NVTX = "st<script>alert(2)</script>|ep"


def render(paths, lang="en") -> tuple[dict, dict, str]:
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(p) for p in paths], config.Settings(lang=lang)))
    return doc, ser, html.render_html(doc, ser, lang, zoom)


# ------------------------------------------------------------------------------ headless Chromium
def chromium_path() -> str | None:
    for c in (os.environ.get("NSX_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


class Chromium:
    """A minimal DevTools client over --remote-debugging-pipe (fd 3: commands in, fd 4: replies out,
    each message JSON ended by a NUL byte)."""

    FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--hide-scrollbars", "--mute-audio", "--force-device-scale-factor=1",
             "--remote-debugging-pipe", "about:blank"]

    def __init__(self, exe: str, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="nsx-chromium-")
        to_r, self.w = os.pipe()
        self.r, from_w = os.pipe()
        # park the child's ends above fd 10 so that moving them to 3 and 4 cannot clobber each other
        a, b = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_r)
        os.close(from_w)

        def child_fds():
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([exe, f"--user-data-dir={self.profile}", *self.FLAGS], preexec_fn=child_fds,
                                     pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        os.close(a)
        os.close(b)
        self.buf, self.next_id, self.events = b"", 0, []

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("headless Chromium did not answer in time")
            if select.select([self.r], [], [], left)[0]:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                    raise RuntimeError(f"Chromium closed the DevTools pipe: {err[-2000:]}")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        mid = self.next_id
        m = {"id": mid, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            r = self._read(deadline)
            if r.get("id") == mid:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r.get("result", {})
            self.events.append(r)

    def wait_event(self, method: str, session: str) -> dict:
        for i, e in enumerate(self.events):
            if e.get("method") == method and e.get("sessionId") == session:
                return self.events.pop(i)
        deadline = time.monotonic() + self.timeout
        while True:
            e = self._read(deadline)
            if e.get("method") == method and e.get("sessionId") == session:
                return e
            self.events.append(e)

    def open(self, path, width: int = 1200, height: int = 900) -> "Page":
        t = self.send("Target.createTarget", {"url": "about:blank"})
        sid = self.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(m, session=sid)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=sid)
        self.send("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=sid)
        self.wait_event("Page.loadEventFired", sid)
        return Page(self, sid, t["targetId"])

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Chromium, sid: str, target: str):
        self.b, self.sid, self.target = browser, sid, target

    def eval(self, expr: str):
        r = self.b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=self.sid)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations, failed loads)."""
        out = []
        for e in self.b.events:
            if e.get("sessionId") != self.sid:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def screenshot(self, scale: float = 1.0, height: float | None = None) -> bytes:
        """The page as PNG, from the top (``height``: only that much; ``scale`` < 1: a small copy)."""
        size = self.b.send("Page.getLayoutMetrics", session=self.sid)["cssContentSize"]
        shot = self.b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": 0, "y": 0, "width": size["width"], "height": min(height or size["height"], size["height"]),
            "scale": scale}}, session=self.sid)
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        self.b.send("Target.closeTarget", {"targetId": self.target})


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium'; .ci/run installs it "
                    "with apt-get): the browser checks of the HTML report did not run")
    b = Chromium(exe)
    yield b
    b.close()


def png_size_and_ink(data: bytes) -> tuple[int, int, float]:
    """Width, height and the share of non-white pixels of an 8-bit RGB(A) PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    w = h = ctype = 0
    while pos < len(data):
        ln, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + ln]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8
        elif typ == b"IDAT":
            idat += body
        pos += 12 + ln
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    ink = total = 0
    for y in range(0, h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):   # undo the PNG row filter
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        prev = line
        if True:
            for x in range(w):
                px = line[x * bpp:x * bpp + 3]
                total += 1
                ink += 1 if min(px) < 200 else 0
    return w, h, ink / max(1, total)


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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_sections_follow_the_report_layout(lang):
    _, _, page = render([FIXTURES / "sync_bound" / "input"], lang)
    h2 = [re.sub(r"^\d+\.\s*", "", h) for h in re.findall(r"<h2>(.*?)</h2>", page)]
    want = ZH_SECTIONS if lang == "zh" else EN_SECTIONS
    found = [next((h for h in h2 if h.startswith(w)), None) for w in want]
    assert None not in found, (want, h2)
    assert [h2.index(x) for x in found] == sorted(h2.index(x) for x in found)


# ------------------------------------------------------------------------------ Markdown zh / en
def _sections(md: str) -> list[str]:
    return [re.sub(r"^##\s+(\d+\.\s+)?", "", ln) for ln in md.splitlines() if ln.startswith("## ")]


def test_zh_markdown_has_the_seven_playbook_sections_in_order():
    doc = pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")], config.Settings(lang="zh")))
    md = report.render_markdown(doc, "zh")
    secs = _sections(md)
    pos = []
    for name in ZH_SECTIONS:
        hits = [i for i, s in enumerate(secs) if s.startswith(name)]
        assert hits, f"section {name} missing: {secs}"
        pos.append(hits[0])
    assert pos == sorted(pos), secs
    assert md.startswith("# Nsight Systems 性能分析报告")
    playbook = SHARED / "playbook.zh.txt"
    if playbook.is_file():   # the headings are the playbook's own, word for word
        text = playbook.read_text(encoding="utf-8")
        layout = text[text.index("第五步"):]
        heads = [ln[3:].strip() for ln in layout.splitlines() if ln.startswith("## ")][:7]
        assert [secs[i] for i in pos] == heads


def test_en_markdown_has_the_same_sections_in_english():
    en = _sections(report.render_markdown(pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")])), "en"))
    zh = _sections(report.render_markdown(
        pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")], config.Settings(lang="zh"))), "zh"))
    assert len(en) == len(zh)
    pos = [en.index(name) for name in EN_SECTIONS]
    assert pos == sorted(pos)
    zpos = [next(i for i, s in enumerate(zh) if s.startswith(name)) for name in ZH_SECTIONS]
    assert pos == zpos    # the same section at the same place in both languages


# --------------------------------------------------------------------------------------- series
@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in fixture_cases() if c != "launch_bound_summaries"])
def test_series_agree_with_the_facts(case):
    from nsys_expert.errors import InputError

    try:
        prof = load.load_paths([str(FIXTURES / case / "input")])
    except InputError:   # only a multi-rank job may not load as one profile: its page has no timeline
        doc, ser, _ = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / case / "input")]))
        assert doc.get("ranks") and not ser["available"]
        return
    fs = facts.compute(prof, facts.Options())
    s = series(prof, fs, bins=400)
    if "gpu_trace" not in prof.tables:   # console text / summaries only: nothing to bin, said so
        assert not s["available"] and s["reason"]
        return
    assert s["available"] and s["bins"] == len(s["busy_pct"]) == len(s["idle_cause"])
    span = s["span_end_ns"] - s["span_start_ns"]
    if "gpu_active_pct_span" in fs.run:
        assert abs(100 * s["busy_ns_total"] / span - fs.run["gpu_active_pct_span"]) < 1e-3
    if s.get("nccl_pct") is None:
        for v in zip(s["busy_pct"], s["compute_pct"], s["copy_pct"]):
            assert 0 <= v[0] <= 100.0001 and abs(v[0] - v[1] - v[2]) < 0.02
    else:   # NCCL kernels are their own series (compute leaves them out), overlapping compute on other streams
        for b, c, cp, n in zip(s["busy_pct"], s["compute_pct"], s["copy_pct"], s["nccl_pct"]):
            assert 0 <= b <= 100.0001 and max(c, cp, n) - 0.02 <= b <= c + cp + n + 0.02
    got = {c: ns / 1e6 for c, ns in s.get("idle_ns_total", {}).items()}
    want = {r["cause"]: r["ms"] for r in fs.tables.get("idle_breakdown", [])}
    assert set(got) == set(want)
    for c in want:
        assert abs(got[c] - want[c]) < 1e-6 * max(1.0, want[c]), (c, got[c], want[c])
    assert [r["ms"] for r in s["iterations"]] == [r["ms"] for r in fs.tables.get("iterations", [])]


def test_series_nccl_and_zoom(tmp_case):
    d = tmp_case("sync_bound")
    for p in d.iterdir():
        if p.name.endswith(("gpu_trace.csv", "kern_sum.csv")):
            s = re.sub(r'"void at::native::reduce_kernel<[^"]*"',
                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
                       p.read_text(encoding="utf-8"))
            p.write_text(s, encoding="utf-8")
    doc, ser, page = render([d])
    assert doc["facts"]["nccl_kernel_count"] > 0
    assert ser["nccl_pct"] is not None and sum(ser["nccl_pct"]) > 0
    assert 'data-chart="nccl"' in page and 'data-series="nccl' in page
    prof = load.load_paths([str(d)])
    fs = facts.compute(prof, facts.Options())
    w = fs.window
    z = series(prof, fs, bins=100, between=(w.start_ns, w.end_ns))
    assert z["bins"] == 100 and z["span_start_ns"] == w.start_ns and z["startup"] is None
    # inside the window every bin is busy or idle with an attributed cause
    assert all(c is not None for c, b in zip(z["idle_cause"], z["busy_pct"]) if b < 99.9)


def test_html_report_is_the_pipeline_report_and_the_charts_match_it():
    """The page's report is pipeline.diagnose's; the chart series, computed again from the same inputs,
    have its window."""
    a = json.loads(report.to_json(pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")]))))
    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / "sync_bound" / "input")]))
    assert json.loads(report.to_json(doc)) == a
    assert (ser["window"]["start_ns"], ser["window"]["end_ns"]) == (a["window"]["start_ns"], a["window"]["end_ns"])
    assert zoom is None   # the window is most of this profile: no zoom


def test_graphed_profile_says_the_gaps_are_unseen():
    doc, ser, page = render([FIXTURES / "launch_bound_graphed" / "input"])
    assert ser["graph_hidden"]
    assert html.HTML_LABELS["en"]["graph_hidden"] in page


def test_summary_reports_without_timeline():
    doc, ser, page = render([FIXTURES / "launch_bound_summaries" / "input"])
    assert not ser["available"]
    assert 'data-chart="timeline"' not in page and html.HTML_LABELS["en"]["no_timeline"] in page


# ---------------------------------------------------------------------------------------- CLI
def test_cli_html_output(tmp_path):
    from click.testing import CliRunner

    from nsys_expert.cli import main

    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "--format", "html", "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'data-chart="timeline"' in page and 'data-chart="timeline_zoom"' in page
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "sync_bound" / "input"), "--format", "html", "--lang", "zh",
                                  "-o", str(out), "--force"])   # another run's report (issue 35)
    assert r.exit_code == 0 and '<html lang="zh-CN">' in out.read_text(encoding="utf-8")


def test_piped_markdown_is_unchanged():
    from click.testing import CliRunner

    from nsys_expert.cli import main

    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "sync_bound" / "input")])
    assert r.exit_code == 0
    # piped: the Markdown report itself, byte for byte (test_golden pins it to expected.md)
    doc = pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")]))
    assert r.output == report.render_markdown(doc, "en")
    assert r.stderr_bytes in (None, b"")   # no spinner on a pipe


# ---------------------------------------------------------------------------------- terminal
def test_terminal_summary_is_compact_and_coloured():
    from rich.console import Console

    doc = pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")]))
    con = Console(record=True, force_terminal=True, color_system="truecolor", width=110)
    terminal.summary(doc, "en", console=con)
    text = con.export_text(clear=False)
    assert "Verdict: Sync-bound" in text and "GPU active 13.7 %" in text and "HIGH" in text
    assert "after a blocking sync" in text and len(text.splitlines()) <= 13   # + the limiter (issue 48)
    assert "  limiter: host work no finding names, 85.0 % of the critical path" in text
    ansi = con.export_text(styles=True)
    assert "\x1b[1;31m" in ansi or "\x1b[31;1m" in ansi     # high in bold red
    con = Console(record=True, force_terminal=True, width=110)
    terminal.summary(pipeline.diagnose(pipeline.Request([str(FIXTURES / "sync_bound" / "input")], config.Settings(lang="zh"))), "zh",
                     console=con)
    zh = con.export_text()
    assert "结论" in zh and "高" in zh


def test_terminal_summary_only_for_a_person_who_asked_for_nothing():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert terminal.wants_summary(None, False, Tty())
    assert not terminal.wants_summary(None, False, io.StringIO())       # piped
    assert not terminal.wants_summary("r.md", False, Tty())             # -o
    assert not terminal.wants_summary(None, True, Tty())                # --format md


def test_progress_spinner_only_on_a_terminal_and_only_when_slow():
    quiet = io.StringIO()
    with terminal.progress(["a", "b", "c"], "en", delay=0.0, stream=quiet) as step:
        step("facts")
        time.sleep(0.2)
    assert quiet.getvalue() == ""                                       # not a terminal: nothing
    fast = io.StringIO()
    with terminal.progress(["a", "b", "c"], "en", delay=5.0, stream=fast, force=True):
        pass
    assert fast.getvalue() == ""                                        # quicker than the delay: nothing
    slow = io.StringIO()
    with terminal.progress(["a", "b", "c"], "en", delay=0.0, stream=slow, force=True) as step:
        time.sleep(0.3)
        step("facts")
        time.sleep(0.7)
    assert "computing facts" in slow.getvalue() and "a (+2)" in slow.getvalue()


def test_multi_rank_job_draws_one_timeline_row_per_rank(tmp_path):
    """A multi-rank job has no single timeline: one row per rank (compute, NCCL, copies; the rest idle)
    over each rank's window, from the ranks' own traces."""
    doc, ser, page_html = render([FIXTURES / "ddp_derived_4rank" / "input"])
    ranks = [r["rank"] for r in doc["ranks"]]
    assert len(ranks) == 4 and "_rank_rows" not in doc and len(ser["ranks"]) == 4
    chart = html.charts(doc, ser, None, "en")["ranks"]
    labels = [e["text"] for e in chart["elements"] if e["tag"] == "text" and e["attrs"].get("text-anchor") == "end"]
    assert labels == ranks
    drawn = {e["attrs"]["data-series"] for e in chart["elements"] if "series" in str(e["attrs"].get("class"))}
    assert {"compute", "nccl"} <= drawn
    for row in ser["ranks"]:   # each row bins that rank's own window; busy never exceeds the bin
        assert row["start_ns"] < row["end_ns"] and len(row["compute_pct"]) == len(row["bin_start_ns"])
        assert all(0 <= c + (n or 0) + p <= 100.01 for c, n, p in zip(row["compute_pct"], row["nccl_pct"], row["copy_pct"]))
    # the straggler's row is busier with compute than the others (it is what the others wait for)
    mean = {r["rank"]: sum(r["compute_pct"]) / len(r["compute_pct"]) for r in ser["ranks"]}
    assert max(mean, key=mean.get) == doc["facts"]["straggler_rank"]
    assert 'data-chart="ranks"' in page_html and "one row per rank" not in page_html
    assert "_rank_rows" not in report.to_json(doc)
