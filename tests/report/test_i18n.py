"""The Chinese report (issue 22): every sentence the program writes at run time comes from the
message catalog (``nsys_expert/locale/zh/LC_MESSAGES``), the shipped ``.mo`` is the compiled ``.po``,
and the prose uses one kind of bracket."""
from __future__ import annotations

import io
import os
import re

import pytest

from conftest import FIXTURES, fixture_cases, diagnosed
from nsys_expert import config, pipeline, report
from nsys_expert.notes import Note
from nsys_expert.report import i18n

# three or more English words in a row, outside code spans, fenced blocks and quoted tool text
# (ncu's own rule descriptions are quoted as ncu wrote them)
ENGLISH = re.compile(r"(?<![-\w])[A-Za-z][a-z]+(?: [a-z]{2,}){2,}(?![-\w])")
# a few fixtures that between them hit every kind of run-time sentence: an NVTX window with
# passed-over library ranges, summaries only, a multi-run console log, CUDA graphs, a SQLite
# without some tables, too little work, ncu data
FAST_CASES = ["library_nvtx", "sync_bound_summaries", "console_deep_dive", "launch_bound_graphed_sqlite",
              "cupy_nsys2020_sqlite", "nccl_single", "compute_bound_ncu", "ddp_derived_4rank"]


def prose(md: str) -> str:
    md = re.sub(r"```.*?```", "", md, flags=re.S)
    return re.sub(r"`[^`\n]*`|“[^”]*”", "", md)


def english_lines(md: str) -> list[str]:
    return [ln for ln in prose(md).splitlines() if ENGLISH.search(ln)]


def test_the_shipped_mo_is_the_compiled_po():
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    files = i18n.catalog_files()
    assert {os.path.basename(p) for p, _ in files} >= {f"{i18n.DOMAIN}.po", "facts.po"}
    for po, lang in files:
        with open(po, "rb") as fh:
            cat = read_po(fh, locale=lang)
        buf = io.BytesIO()
        write_mo(buf, cat, use_fuzzy=False)
        with open(po[:-3] + ".mo", "rb") as fh:
            assert fh.read() == buf.getvalue(), f"{po}: run python -m nsys_expert.report.i18n"
        assert len(cat) > 40 and all(m.string for m in cat if m.id), po   # every entry translated


def test_fields_reorder_and_nest():
    t = i18n.translate
    needs = [Note("absent.needs", {"inputs": ins}, words="plain") for ins in (("gpu_trace", "nvtx_trace"), ("nvtx_trace", "gpu_trace"))]
    assert [str(n) for n in needs] == ["needs the cuda_gpu_trace report or NVTX ranges with timestamps",
                                       "needs NVTX ranges with timestamps or the cuda_gpu_trace report"]
    assert i18n.say(needs[0], "zh") == "需要 cuda_gpu_trace 报告或带时间戳的 NVTX 区间"   # 或 and 需要 take a space beside a Latin word only
    assert i18n.say(needs[1], "zh") == "需要带时间戳的 NVTX 区间或 cuda_gpu_trace 报告"
    little = Note("engine.too_little_work", {"work": 0.02, "window": 4.1, "limit": 1})
    assert str(little).startswith("only 0.02 ms of GPU work in the 4.1 ms window (less than 1 ms)")
    assert i18n.say(little, "zh").startswith("4.1 ms 的窗口内只有 0.02 ms")
    assert t("something new; iteration 1 left out as warm-up", "zh") == "something new；第 1 次迭代作为预热被排除"
    assert i18n.untranslated("something new; iteration 1 left out as warm-up", "zh") == ["something new"]
    assert t("iteration 1 left out as warm-up", "en") == "iteration 1 left out as warm-up"


def _check(case):
    doc = diagnosed(FIXTURES / case / "input", lang="zh")
    md = report.render_markdown(doc, "zh")
    assert english_lines(md) == [], case
    # the run-time sentences one by one, so a miss names the sentence to add to the catalog
    texts = [doc.window.get("reason")] + [m for n in doc.not_evaluated for m in n.missing]
    texts += doc.warnings + [s[k] for s in doc.next_steps for k in ("need", "why")]
    missing = [c for t in texts if t for c in i18n.untranslated(t, "zh") if ENGLISH.search(c)]
    assert missing == [], f"{case}: add to the zh catalog: {missing}"
    # one kind of bracket in the prose: no ASCII "(" opening a parenthesis after a space or a CJK character
    assert not re.search(r"(^|[\s\u3000-\u9fff])\((?!\))", prose(md), re.M), case
    return md


@pytest.mark.parametrize("case", FAST_CASES)
def test_zh_report_has_no_english_sentence(case):
    _check(case)


@pytest.mark.slow
def test_zh_report_of_every_fixture_has_no_english_sentence():
    for case in fixture_cases():
        _check(case)


def test_zh_html_uses_full_width_brackets_outside_code():
    from nsys_expert.report import html

    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(FIXTURES / "sync_bound" / "input")], config.Settings(lang="zh")))
    page = html.render_html(doc, ser, "zh", zoom)
    body = re.sub(r"<(style|svg|code|pre|title)\b.*?</\1>", "", page, flags=re.S)
    import html as _html

    text = _html.unescape(re.sub(r"<[^>]+>", "", body))
    assert "（" in text and not re.search(r"[\u3000-\u9fff] ?\((?!\))", text)
    assert "400 个 NVTX 'step' 区间标记迭代" in text


def _builtin_rules():
    from nsys_expert.engine import load_packs

    return [r for p in load_packs([]) for r in p.rules if p.name == "builtin"]


def test_every_builtin_rule_has_a_chinese_why_and_param_docs():
    """``explain --lang zh`` prints a rule's why and its parameters' docs: each built-in rule has
    them in Chinese (a missing one falls back to English, which this catches)."""
    rules = _builtin_rules()
    assert len(rules) >= 35
    cjk = re.compile(r"[\u4e00-\u9fff]")
    no_why = [r.id for r in rules if not cjk.search((r.why or {}).get("zh") or "")]
    assert no_why == [], f"add a zh why to: {no_why}"
    no_doc = [f"{r.id}.{k}" for r in rules for k, v in r.params.items()
              if not (isinstance(v.get("doc"), dict) and cjk.search(v["doc"].get("zh") or ""))]
    assert no_doc == [], f"add a zh doc to the params: {no_doc}"
    no_est = [r.id for r in rules if r.estimate and r.estimate.get("doc")
              and not (isinstance(r.estimate["doc"], dict) and cjk.search(r.estimate["doc"].get("zh") or ""))]
    assert no_est == [], f"add a zh doc to the estimate of: {no_est}"
    # one kind of bracket in the prose: no ASCII "(" opening a parenthesis outside code spans
    ascii_paren = [r.id for r in rules if re.search(r"(^|[\s\u3000-\u9fff])\((?!\))", prose(r.why["zh"]))]
    assert ascii_paren == []


def test_explain_lang_zh_prints_the_chinese_why_and_param_docs():
    from click.testing import CliRunner

    from nsys_expert.cli import main

    rule = next(r for r in _builtin_rules() if r.id == "pageable-memcpy")
    zh = CliRunner().invoke(main, ["explain", "pageable-memcpy", "--lang", "zh"])
    assert zh.exit_code == 0, zh.output
    assert rule.why["zh"].strip() in zh.output and "中转缓冲区" in zh.output
    assert rule.why["en"].split(":")[0] not in zh.output
    assert "- `min_pageable_pct` = 50：使用可分页内存的主机-设备拷贝时间所占比例" in zh.output
    # the estimate in words, not its Jinja2 expression (issue 48, item 16; docs/rules.md keeps the formula)
    assert "预估收益：回放：pageable 拷贝按 pinned 带宽" in zh.output and "is number" not in zh.output
    assert "没有 trace 时：pinned 拷贝通常比可分页内存拷贝快 2-5 倍" in zh.output
    # explain's own words are Chinese too, and the facts' docs; what stays English is code and the
    # references' titles
    own = [ln for ln in zh.output.splitlines()
           if ENGLISH.search(prose(ln)) and not ln.startswith(("- docs/", "- nsys analyze", "- http"))]
    assert own == [], own
    assert "触发条件：" in zh.output and "- 全部满足：" in zh.output and "参考资料：" in zh.output
    en = CliRunner().invoke(main, ["explain", "pageable-memcpy"])
    assert rule.why["en"].split(":")[0] in en.output and "中转" not in en.output
    assert "- `min_pageable_pct` = 50: share of host-device copy time that is pageable" in en.output


def test_a_pack_param_doc_is_text_or_en_zh(tmp_path):
    """A user's pack keeps its plain-string param docs; ``{en, zh}`` is the optional form, shown by
    ``explain --lang``; any other key is a one-line error (exit 2) naming the file."""
    from click.testing import CliRunner

    from conftest import ROOT
    from nsys_expert.cli import main

    text = (ROOT / "examples" / "team-pack" / "rules" / "team-min-gpu-util.yaml").read_text()
    old = 'doc: "lowest acceptable GPU-active % in the steady state"'
    assert old in text
    pack = tmp_path / "pack"
    (pack / "rules").mkdir(parents=True)
    (pack / "pack.yaml").write_text("name: team\nversion: '1'\n")
    rule = pack / "rules" / "team-min-gpu-util.yaml"
    rule.write_text(text.replace(old, 'doc: {en: "lowest GPU-active %", zh: "稳态下可接受的最低 GPU 活跃 %"}'))
    run = lambda *a: CliRunner().invoke(main, ["explain", "team-min-gpu-util", "--rules", str(pack), *a])  # noqa: E731
    zh, en = run("--lang", "zh"), run()
    assert zh.exit_code == 0 and "- `floor` = 90：稳态下可接受的最低 GPU 活跃 %" in zh.output, zh.output
    assert en.exit_code == 0 and "- `floor` = 90: lowest GPU-active %" in en.output, en.output
    rule.write_text(text.replace(old, 'doc: {en: "lowest GPU-active %", fr: "plancher"}'))
    bad = run()
    assert bad.exit_code == 2 and "team-min-gpu-util.yaml" in bad.output and "Traceback" not in bad.output


# --- the facts' descriptions (issue 35 item 9): facts/registry.py in English, facts.po in Chinese ---

def test_every_registered_fact_has_a_chinese_description():
    """Each fact's doc has an entry in ``locale/zh/LC_MESSAGES/facts.po`` keyed by its name and its
    English doc as the registry has it (a fact added, or a doc reworded, without its Chinese text is
    listed here), in real Chinese: no three English words in a row outside code, full-width brackets."""
    from nsys_expert.facts import registry

    assert registry.untranslated("zh") == [], "add to locale/zh/LC_MESSAGES/facts.po: " + ", ".join(registry.untranslated("zh"))
    cjk = re.compile(r"[\u4e00-\u9fff]")
    bad = []
    for scope, table in registry.SCOPES.items():
        for f in table.values():
            zh = registry.doc(f, "zh")
            if not cjk.search(zh) or ENGLISH.search(prose(zh)) or re.search(r"(^|[\s\u3000-\u9fff])\((?!\))", prose(zh)):
                bad.append(f"{scope}:{f.name}: {zh}")
    assert bad == []
    assert len([f for t in registry.SCOPES.values() for f in t.values()]) > 200


def test_a_fact_without_chinese_text_falls_back_to_english():
    from nsys_expert.facts import registry

    new = registry.Fact("brand_new_fact_pct", "%", "run", "a fact nobody has translated yet", ("gpu_trace",))
    assert registry.doc(new, "zh") == new.doc
    reworded = registry.Fact("gpu_idle_pct", "%", "run", "100 - gpu_active_pct, reworded", ("gpu_trace",))
    assert registry.doc(reworded, "zh") == reworded.doc            # a stale translation is not shown
    assert registry.doc(registry.lookup("run", "gpu_idle_pct"), "zh") == "100 减去 gpu_active_pct"
    span = registry.lookup("run", "memcpy_active_pct_span")
    assert registry.doc(span, "zh") == "memcpy 区间的并集占窗口的比例（整个采集，含启动阶段）"
    assert registry.doc(span, "en") == "union of memcpy intervals as a share of the window (whole profile, start-up included)"
    registry.register("run", new)
    try:
        assert registry.untranslated("zh") == ["run:brand_new_fact_pct"]
    finally:
        del registry.RUN_FACTS["brand_new_fact_pct"]


def test_explain_lang_zh_prints_the_chinese_fact_descriptions():
    from click.testing import CliRunner

    from nsys_expert.cli import main

    zh = CliRunner().invoke(main, ["explain", "pageable-memcpy", "--lang", "zh"])
    assert zh.exit_code == 0, zh.output
    assert "- `memcpy_pageable_share_pct`（%）：主机-设备拷贝时间中使用可分页（非 pinned）主机内存的比例；来自 cuda_gpu_trace" in zh.output
    assert "share of host-device copy time that uses pageable" not in zh.output
    en = CliRunner().invoke(main, ["explain", "pageable-memcpy"])
    assert "- `memcpy_pageable_share_pct` (%): share of host-device copy time that uses pageable (not pinned) host memory; from cuda_gpu_trace" in en.output
    # every built-in rule: the facts it reads are described in Chinese, and so are the inputs they come from
    for rule in _builtin_rules():
        out = CliRunner().invoke(main, ["explain", rule.id, "--lang", "zh"]).output
        facts = out.split("读取的事实：", 1)[1].split("\n\n", 1)[0].splitlines() if "读取的事实：" in out else []
        english = [ln for ln in facts if ln.strip() and ENGLISH.search(prose(ln))]
        assert english == [], (rule.id, english)
    gil = CliRunner().invoke(main, ["explain", "gil-contention", "--lang", "zh"]).output
    assert "来自 SQLite 导出（需用 --trace=osrt 采集）" in gil and "SQLite export with" not in gil


def test_facts_lang_zh_lists_the_chinese_descriptions():
    import json

    from click.testing import CliRunner

    from nsys_expert.cli import main

    zh = CliRunner().invoke(main, ["facts", "--lang", "zh"])
    assert zh.exit_code == 0, zh.output
    row = next(ln for ln in zh.output.splitlines() if ln.startswith("memcpy_h2d_gbps "))
    assert row.endswith("主机到设备的拷贝带宽（字节数 / 拷贝时间）") and "cuda_gpu_trace 或 cuda_gpu_mem_time_sum" in row
    assert "每个运行级事实都另有 <name>_span" in zh.output
    rows = json.loads(CliRunner().invoke(main, ["facts", "--lang", "zh", "--format", "json"]).output)
    assert next(r for r in rows if r["name"] == "sm_count")["doc"] == "GPU 的 SM 数"
    en = CliRunner().invoke(main, ["facts"]).output
    assert "host-to-device copy bandwidth (bytes / copy time)" in en and "主机" not in en


def test_why_a_fact_is_missing_reads_in_chinese_for_every_input():
    """The not-evaluated lines and ``--show-facts`` say which input a fact needs (registry.INPUTS, with
    its command or without): every fact's reason translates whole, a text holding " or " of its own
    (the ranks input) included."""
    from nsys_expert.facts import registry

    reasons = {Note("absent.needs", {"inputs": tuple(f.needs)}, words=w)
               for table in registry.SCOPES.values() for f in table.values() for w in ("full", "plain", "torch")}
    english = [(str(r), i18n.say(r, "zh")) for r in sorted(reasons, key=str) if ENGLISH.search(prose(i18n.say(r, "zh")))]
    assert english == []
    assert i18n.say(Note("absent.needs", {"inputs": ("ranks",)}), "zh") == \
        "需要同一作业的多个 rank（每个 rank 一组 CSV 或一个 SQLite 文件，或一个包含多个进程的导出）"


def test_show_facts_in_chinese_says_why_each_fact_is_absent_in_chinese():
    from click.testing import CliRunner

    from nsys_expert.cli import main

    out = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "sync_bound_summaries" / "input"), "--lang", "zh",
                                    "--show-facts", "--format", "md"]).output
    tail = out.split("\n## 指标\n", 1)[1]
    assert "缺失（需要它们的规则未被评估）：" in tail
    assert "- `gpu_active_pct`：需要 cuda_gpu_trace 报告（nsys stats -r cuda_gpu_trace）" in tail
    absent = [ln for ln in tail.split("缺失", 1)[1].splitlines() if ln.startswith("- ")]
    assert len(absent) > 50 and [ln for ln in absent if ENGLISH.search(prose(ln))] == []


def test_zh_report_punctuation_and_brackets_read_as_chinese():
    """Issue 35 item 9, the bracket spacing: Chinese punctuation beside Chinese words, a value's notes in
    one bracket, no bracket closing right inside another, no space between 需要 and a Chinese input."""
    md = report.render_markdown(diagnosed(FIXTURES / "sync_bound" / "input", lang="zh"), "zh")
    head = md.splitlines()[2]   # the verdict, its severity, then (issue 48) the limiter no finding names
    assert head.startswith("**结论：** 同步瓶颈") and "GPU 空等（高）。瓶颈是主机" in head and head.endswith("。")
    assert "- GPU 活跃时间占比：**13.7 %**（占窗口，kernel 13.6 %，拷贝 0.0595 %）；整个采集：9.9 %" in md
    assert "- 主要空闲原因：阻塞同步之后（85.9 %，占窗口）" in md
    assert "（高，预期收益 ≈ 10 %，占窗口，回放）" in md
    assert "- 开始 0.412 s，结束 1.460 s，时长 1,048 ms" in md and "（中位数 2.62 ms，预热的首次迭代 73.7×，最慢 1.20×）" in md
    assert "：需要按线程的 OS runtime trace" in md   # (the ncu-only rules: said once, in the next steps: issue 48)
    text = prose(md)
    assert not re.search(r"[\u4e00-\u9fff][,;:] |[,;:] [\u4e00-\u9fff]", text)
    assert not re.search(r"（[^（）]*（[^（）]*））", text)
    assert not re.search(r"需要 [\u4e00-\u9fff]", text)


def test_a_note_is_said_clause_by_clause_from_its_fields():
    """A multi-run log's clauses and a need whose input phrase holds a "; " are notes: each said from its own
    template and fields (no sentence is matched back from English)."""
    runs = tuple(Note("phrase.run_lines", {"n": i, "lines": x}) for i, x in ((1, "1-86"), (2, "87-170"), (3, "171-end")))
    assert i18n.language("zh").clauses.join(i18n.say(r, "zh") for r in runs) == \
        "第 1 次运行：第 1-86 行；第 2 次运行：第 87-170 行；第 3 次运行：第 171-end 行"
    assert i18n.say(Note("absent.needs", {"inputs": ("osrt_sum",)}), "zh") == \
        "需要 osrt_sum 报告（nsys stats -r osrt_sum；用 --trace=osrt 采集）"


def test_zh_terminal_summary_uses_chinese_punctuation():
    from rich.console import Console

    from nsys_expert.report import terminal

    doc = diagnosed(FIXTURES / "sync_bound" / "input", lang="zh")
    buf = io.StringIO()
    terminal.summary(doc, "zh", console=Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "结论：同步瓶颈" in out and "发现的问题：" in out
    assert "GPU 活跃 13.7 %（占窗口，整个采集 9.9 %） · 主要空闲原因：阻塞同步之后（85.9 %）" in out
    assert "窗口 0.412–1.460 s（nvtx:step）" in out and " (" not in out


def test_the_ncu_sentences_are_said_in_chinese(tmp_path):
    """Issue 56, item 9: the raw-page next step, the "nsys records them only when they are traced" step and
    why an Nsight Compute file was not read stayed English in a Chinese report."""
    import shutil

    for note in (Note("step.need_ncu_raw"), Note("step.why_ncu_raw"),
                 Note("step.why_not_traced", {"trace": "cuda,nvtx,osrt", "what": ("osrt_sum",)})):
        assert i18n.untranslated(note, "zh") == [], note
        assert not ENGLISH.search(re.sub(r"\(--trace=[^)]*\)|--trace=\S+", "", i18n.say(note, "zh"))), note
    (tmp_path / "ncu").mkdir()
    for f in (FIXTURES / "sync_bound" / "input").glob("*.csv"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "ncu" / "x_details.csv").write_text('"ID","Process ID"\n', encoding="utf-8")
    doc = pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings(lang="zh")))
    md = report.render_markdown(doc, "zh")
    assert "x_details.csv（缺少 Kernel Name 列的 ncu CSV）" in md and "without a Kernel Name" not in md
