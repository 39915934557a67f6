"""Categories are declared in a pack's pack.yaml (issue 59, item 3): title by language, level, side. A rule
naming a category no loaded pack declares is an error; a pack adds its own; the verdict's system level and
the critical path's sides come from the declarations."""
import shutil

import pytest

from conftest import ROOT
from nsys_expert.engine import RuleSet, load_packs
from nsys_expert.engine.categories import builtin_categories
from nsys_expert.engine.rules import load_pack
from nsys_expert.errors import RuleError
from nsys_expert.report.findings import system_categories

TEAM = ROOT / "examples" / "team-pack"


def _pack(tmp_path, category: str, pack_extra: str = ""):
    shutil.copytree(TEAM, tmp_path / "pack")
    rule = tmp_path / "pack" / "rules" / "team-min-gpu-util.yaml"
    text = rule.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.startswith("category:"))
    rule.write_text(text.replace(old, f"category: {category}"), encoding="utf-8")
    meta = tmp_path / "pack" / "pack.yaml"
    meta.write_text(meta.read_text(encoding="utf-8") + pack_extra, encoding="utf-8")
    return str(tmp_path / "pack")


def test_a_rule_whose_category_is_undeclared_is_refused(tmp_path):
    with pytest.raises(RuleError, match="category 'gpu-idel' is not declared.*did you mean 'gpu-idle'"):
        load_pack(_pack(tmp_path, "gpu-idel"))


def test_a_pack_declares_its_own_category(tmp_path):
    extra = "categories:\n  team-budget: {title: {en: team budget, zh: 团队预算}, level: system, side: host}\n"
    packs = load_packs([_pack(tmp_path, "team-budget", extra)], installed=False)
    rs = RuleSet.build(packs)
    c = rs.categories["team-budget"]
    assert (c.title_in("zh"), c.level, c.side) == ("团队预算", "system", "host")
    assert "team-budget" in system_categories(rs.categories) and "gpu-idle" in rs.categories   # the built-in pack's too


@pytest.mark.parametrize("bad, why", [("{title: {en: x}, level: big}", "level is one of"),
                                      ("{title: {zh: x}, level: note}", "English words"),
                                      ("{title: {en: x}, level: note, side: gpu}", "side is one of")])
def test_a_category_declaration_is_checked_like_params(tmp_path, bad, why):
    with pytest.raises(RuleError, match=why):
        load_pack(_pack(tmp_path, "stability", f"categories:\n  mine: {bad}\n"))


def test_the_built_in_declarations():
    cats = builtin_categories()
    assert system_categories(cats) == {"launch-bound", "sync-bound", "memcpy-bound", "compute-bound", "memory-bound",
                                       "data-io-bound", "host-bound", "comm-bound", "gpu-idle"}
    assert {n for n, c in cats.items() if c.side == "host"} == {"launch-bound", "host-bound", "data-io-bound", "allocator"}
    assert cats["sync-bound"].side == "overlap"
    used = {r.category for p in load_packs([str(TEAM)], installed=False) for r in p.rules}
    assert used <= set(cats)
