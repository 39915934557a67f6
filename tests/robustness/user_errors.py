"""Issue 18 class 5: user errors (links, FIFOs, permissions, settings, options, SQLite views) as inputs."""
from __future__ import annotations

import os

from robustness.build import ROOT, copy_case, diagnose, edit_sqlite, rewrite_rows, sqlite_copy, trace_of


# --------------------------------------------------------------------- class 5: user errors, not bugs
def _symlink_loop_in_folder(dst):
    d = copy_case(dst)
    os.symlink("loop_b.csv", d / "loop_a.csv")
    os.symlink("loop_a.csv", d / "loop_b.csv")
    return diagnose(d)


def _symlink_loop_arg(dst):
    os.symlink(dst / "b", dst / "a")
    os.symlink(dst / "a", dst / "b")
    return diagnose(dst / "a")


def _dangling_in_folder(dst):
    d = copy_case(dst)
    os.symlink(dst / "gone_cuda_api_trace.csv", d / "sync_bound_extra_cuda_gpu_trace.csv")
    return diagnose(d)


def _dangling_arg(dst):
    os.symlink(dst / "gone.sqlite", dst / "link.sqlite")
    return diagnose(dst / "link.sqlite")


def _unreadable_file(dst):
    d = copy_case(dst)
    os.chmod(trace_of(d), 0)
    os.chmod(dst, 0o755)
    return diagnose(d)


def _unreadable_folder(dst):
    d = copy_case(dst)
    os.chmod(d, 0)
    os.chmod(dst, 0o755)
    return diagnose(d)


def _fifo(dst):
    d = copy_case(dst)
    os.mkfifo(d / "sync_bound_osrt_trace.csv")
    return diagnose(d)


def _fifo_arg(dst):
    os.mkfifo(dst / "prof.sqlite")
    return diagnose(dst / "prof.sqlite")


def _pack_with_cases(dst, cases: bytes | None, folder: bool = False):
    """A team pack holding a copy of a built-in rule (renamed) and a broken cases file beside it."""
    pack = dst / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text("name: team\nversion: \"1\"\n")
    src = ROOT / "rules" / "kernel" / "bank-conflicts.yaml"
    rule = src.read_text().replace("id: bank-conflicts", "id: team-bank-conflicts", 1)
    (pack / "team-bank-conflicts.yaml").write_text(rule)
    target = pack / "team-bank-conflicts.cases.yaml"
    if folder:
        target.mkdir()
    else:
        target.write_bytes(cases)
    return ["check-rules", str(pack)]


def _cases_latin1(dst):
    text = (ROOT / "rules" / "kernel" / "bank-conflicts.cases.yaml").read_bytes()
    return _pack_with_cases(dst, text.replace(b"conflicts", b"conflicts caf\xe9", 1))


def _cases_folder(dst):
    return _pack_with_cases(dst, None, folder=True)


def _sqlite_kernel_without_end(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, 'ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN "end"')
    return diagnose(db)


def _csv_trace_without_duration(dst):
    d = copy_case(dst)
    rewrite_rows(trace_of(d), lambda rows: [r[:1] + r[2:] for r in rows])
    return diagnose(d)


def _console_cut_in_number(dst):
    d = copy_case(dst, "sync_bound_console")
    f = d / "stats_column.txt"
    text = f.read_text()
    cut = text.index("137,388,386") + len("137,38")
    f.write_text(text[:cut])
    return diagnose(d)


def _console_cut_in_count_then_newline(dst):
    """Cut inside the Instances column ('4' of '400'), then a newline: a count that would be a lie."""
    d = copy_case(dst, "sync_bound_console")
    f = d / "stats_column.txt"
    text = f.read_text()
    cut = text.index("137,388,386        4") + len("137,388,386        4")
    f.write_text(text[:cut] + "\n")
    return diagnose(d)


def _window(spec):
    def build(dst):
        return diagnose(copy_case(dst), f"--window={spec}")
    return build


def _binary_config(dst):
    d = copy_case(dst)
    cfg = dst / "nsys-expert.toml"
    cfg.write_bytes(bytes(range(256)) * 8)
    return diagnose(d, "--config", str(cfg))


def _config_skip_many(dst):
    d = copy_case(dst)
    cfg = dst / "nsys-expert.toml"
    cfg.write_text('skip-iterations = "many"\n')
    return diagnose(d, "--config", str(cfg))


def _config_negative_skip(dst):
    d = copy_case(dst)
    cfg = dst / "nsys-expert.toml"
    cfg.write_text("skip-iterations = -3\n")
    return diagnose(d, "--config", str(cfg))


def _config_is_folder(dst):
    d = copy_case(dst)
    (dst / "cfgdir").mkdir()
    return diagnose(d, "--config", str(dst / "cfgdir"))


def _sqlite_view_endless(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO kernels_real",
                "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                "SELECT x + 1 FROM c) SELECT k.* FROM kernels_real k, c")
    return diagnose(db)
