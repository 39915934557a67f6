"""Nsight Compute findings that agree with each other (issue 56, item 5): a kernel titled "at the memory
roof: DRAM bandwidth near peak" whose text said "DRAM throughput 14.0 %", advising "tuning will not help",
beside a finding on the same kernel that promised 77.6 % from coalescing.

The real memory_bound_ncu input (ncu 2025.3.1, H200) with its ncu details edited as such a kernel reads:
DRAM throughput 14 % (the memory throughput, the busiest unit, stays at 88 %) and ncu's
UncoalescedGlobalAccess rule estimating 77.6 %."""
import csv
import io
import shutil

from conftest import expected_doc, FIXTURES
from nsys_expert import config, pipeline

SRC = FIXTURES / "memory_bound_ncu" / "input"


def _variant(tmp_path, dram="14.0", uncoalesced="77.6"):
    shutil.copytree(SRC, tmp_path / "input")
    (tmp_path / "input" / "ncu" / "memory_bound_raw.csv").unlink()     # the details page alone
    p = tmp_path / "input" / "ncu" / "memory_bound_details.csv"
    rows = list(csv.reader(io.StringIO(p.read_text(encoding="utf-8"))))
    head, out, added = rows[0], [rows[0]], set()
    col = {n: i for i, n in enumerate(head)}
    for r in rows[1:]:
        if len(r) <= col["Metric Value"]:
            out.append(r)
            continue
        if r[col["Section Name"]] == "GPU Speed Of Light Throughput" and r[col["Metric Name"]] == "DRAM Throughput":
            r[col["Metric Value"]] = dram
        out.append(r)
        if uncoalesced and len(r) == len(head) and r[col["Rule Type"]] == "OPT" and r[col["ID"]] not in added:
            added.add(r[col["ID"]])
            u = list(r)
            u[col["Rule Name"]], u[col["Rule Description"]] = "UncoalescedGlobalAccess", "excess sectors"
            u[col["Estimated Speedup Type"]], u[col["Estimated Speedup"]] = "global", uncoalesced
            out.append(u)
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(out)
    p.write_text(buf.getvalue(), encoding="utf-8")
    return pipeline.diagnose(pipeline.Request([str(tmp_path / "input")], config.Settings()))


def test_a_cache_roof_with_uncoalesced_access_is_not_told_tuning_will_not_help(tmp_path):
    doc = _variant(tmp_path)
    rules = [f["rule"] for f in doc["findings"]]
    assert "uncoalesced-access" in rules and "kernel-memory-bound" not in rules
    f = next(f for f in doc["findings"] if f["rule"] == "uncoalesced-access")
    refuted = [s for s in f["supporting"] if s["relation"] == "refuted"]
    assert refuted and refuted[0]["rule"] == "kernel-memory-bound" and "a cache, not DRAM" in refuted[0]["because"]
    text = " ".join(" ".join(x["advice"]) for x in doc["findings"])
    assert "will not help" not in text


def test_a_cache_roof_alone_says_which_unit_and_what_helps(tmp_path):
    doc = _variant(tmp_path, uncoalesced=None)
    f = next(f for f in doc["findings"] if f["rule"] == "kernel-memory-bound")
    assert "DRAM bandwidth near peak" not in f["title"] and "not DRAM's: DRAM is at 14" in f["message"]
    assert not any("will not help" in a for a in f["advice"]) and any("coalesced" in a for a in f["advice"])


def test_at_the_dram_roof_the_advice_stays():
    import json
    doc = expected_doc("memory_bound_ncu")
    f = doc["findings"][0]
    assert f["rule"] == "kernel-memory-bound" and "not DRAM" not in f["message"]


def test_a_combined_finding_says_its_gain_is_several_kernels():
    """Issue 56, item 5: a kernel that is 21.7 % of the kernel time was given 69.9 % of the window: the gain
    of a `combine: kernels` finding adds the other kernels'. memory_bound_ncu: the add kernel is 50.2 % of
    the kernel time, the gain 69.7 % is three kernels'."""
    md = (FIXTURES / "memory_bound_ncu" / "expected.md").read_text(encoding="utf-8")
    assert "expected gain ≈ 74.4 % of the window, 3 kernels together" in md
