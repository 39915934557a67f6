"""Hostile inputs of issue 18, classes 5, 6, 7, 8 and 10, each derived from a real case.

Every input is a :class:`Case`: ``build(dst)`` writes it under the folder ``dst`` (from copies of the
fixtures in ``fixtures/`` or, for a few, ``../shared/cases``) and returns the command line after
``nsys-expert``. ``expect`` is what the program must do with it:

- ``"report"``: exit 0, a JSON report, and a warning containing ``text`` (a damaged input is never
  read as if it were whole);
- ``"error"``: exit 2 and one line on stderr containing ``text`` (which names the file or option).

``spawn`` marks the inputs that need their own process (a hang to bound, a user without root, or a
FIFO); the rest run in-process through click's runner. ``needs_shared`` marks those built from
``../shared``. Nothing here writes beside the fixtures: every input is a copy under ``dst``.

The builders live by class: ``user_errors.py`` (5), ``damaged.py`` (6), ``unrelated.py`` (7, 8, 10),
their shared helpers in ``build.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from robustness import build, damaged, unrelated, user_errors
from robustness.build import diagnose


@dataclass
class Case:
    name: str
    cls: int
    build: Callable[[Path], list[str]]
    expect: str                  # "report" or "error"
    text: str | None = None      # in a warning (report) or in the error line
    spawn: bool = False          # needs a subprocess (a hang, another user, a FIFO)
    needs_shared: bool = False
    needs_user: bool = False     # must run as a user without root (unreadable files)


CASES: list[Case] = [
    # class 5
    Case("symlink-loop-in-folder", 5, user_errors._symlink_loop_in_folder, "error", "loop_a.csv"),
    Case("symlink-loop-argument", 5, user_errors._symlink_loop_arg, "error", "symbolic links"),
    Case("dangling-symlink-in-folder", 5, user_errors._dangling_in_folder, "error",
         "sync_bound_extra_cuda_gpu_trace.csv"),
    Case("dangling-symlink-argument", 5, user_errors._dangling_arg, "error", "link.sqlite"),
    Case("unreadable-file", 5, user_errors._unreadable_file, "error", "permission", spawn=True, needs_user=True),
    Case("unreadable-folder", 5, user_errors._unreadable_folder, "error", "readable", spawn=True, needs_user=True),
    Case("fifo-in-folder", 5, user_errors._fifo, "error", "sync_bound_osrt_trace.csv", spawn=True),
    Case("fifo-argument", 5, user_errors._fifo_arg, "error", "prof.sqlite", spawn=True),
    Case("cases-yaml-latin1", 5, user_errors._cases_latin1, "error", ".cases.yaml"),
    Case("cases-yaml-folder", 5, user_errors._cases_folder, "error", ".cases.yaml"),
    Case("sqlite-kernel-without-end", 5, user_errors._sqlite_kernel_without_end, "error", "'end'"),
    Case("csv-trace-without-duration", 5, user_errors._csv_trace_without_duration, "error",
         "sync_bound_cuda_gpu_trace.csv"),
    Case("console-cut-in-number", 5, user_errors._console_cut_in_number, "report", "cut short inside the numbers"),
    Case("console-cut-in-count-then-newline", 6, user_errors._console_cut_in_count_then_newline, "report",
         "cut short inside the numbers"),
    Case("window-1e300", 5, user_errors._window("1e300:2e300"), "error", "--window"),
    Case("window-1e19", 5, user_errors._window("0:1e19"), "error", "--window"),
    Case("window-1e400", 5, user_errors._window("1e400:1e401"), "error", "--window"),
    Case("window-nan", 5, user_errors._window("nan:inf"), "error", "--window"),
    Case("binary-config", 5, user_errors._binary_config, "error", "nsys-expert.toml"),
    Case("config-skip-many", 5, user_errors._config_skip_many, "error", "skip-iterations"),
    Case("config-skip-negative", 5, user_errors._config_negative_skip, "error", "skip-iterations"),
    Case("config-is-folder", 5, user_errors._config_is_folder, "error", "cfgdir"),
    Case("sqlite-view-endless", 5, user_errors._sqlite_view_endless, "report", "not a table", spawn=True),
    # class 6
    Case("thousands-separators", 6, build.fixture(damaged.dmg_thousands), "report", "thousands separators"),
    Case("thousands-separators-summary", 6, damaged._thousands_summary, "report", "thousands separators"),
    Case("scientific-notation", 6, damaged._scientific, "report", "scientific notation"),
    Case("unit-microseconds", 6, damaged._unit_micro, "report", "Duration (\u00b5s)"),
    Case("unit-mib", 6, damaged._unit_mib, "report", "MiB"),
    Case("unit-unknown", 6, damaged._unit_unknown, "error", "fortnights"),
    Case("cut-then-newline", 6, build.fixture(damaged.dmg_cut_then_newline), "report", "cut"),
    Case("cut-inside-quoted-name", 6, damaged._cut_inside_quote, "report", "cut"),
    Case("negative-durations", 6, damaged._negative_durations, "report", "negative"),
    Case("negative-durations-sqlite", 6, damaged._negative_sqlite, "report", "negative"),
    Case("overlap-one-stream", 6, build.fixture(damaged.dmg_overlap), "report", None),   # kept: PDL overlap is data (tests/facts/test_overlap.py)
    Case("292-year-kernel", 6, build.fixture(damaged.dmg_292_years), "report", "longer than a day"),
    Case("292-year-kernel-sqlite", 6, damaged._292_years_sqlite, "report", "past any clock"),
    Case("ncu-details-cut", 6, damaged._ncu_cut, "report", "sync_bound_details.csv: the file was cut at line"),
    Case("names-replaced-by-fffd", 6, damaged._fffd_names, "report", "U+FFFD"),
    Case("sqlite-without-stringids", 6, damaged._no_stringids, "report", "StringIds"),
    Case("nul-bytes-in-trace", 6, damaged._nul_bytes, "error", "sync_bound_cuda_gpu_trace.csv"),
    # class 7
    Case("two-runs-one-folder", 7, unrelated._two_runs_one_folder, "error", "different runs"),
    Case("two-runs-two-folders", 7, unrelated._two_runs_two_folders, "error", "different runs"),
    Case("two-exports-one-folder", 7, unrelated._two_exports_one_folder, "error", "different runs"),
    Case("one-export-copied-twice", 7, unrelated._same_export_twice, "report", "copy of"),
    Case("one-run-two-folders", 7, unrelated._same_run_two_folders, "report", "copy of"),
    Case("one-run-exported-twice-usec", 7, build.fixture(unrelated.dmg_usec_twice), "report", "same run"),
    Case("summary-of-another-run", 7, unrelated._summaries_of_another_run, "report", "summary of another run"),
    # class 8
    Case("all-reports-empty", 8, unrelated._all_empty, "report", "no rows"),
    Case("all-reports-header-only", 8, unrelated._header_only, "report", "no rows"),
    Case("window-after-profile", 8, unrelated._window_outside, "error", "--window"),
    # a window before the profile's first event is read as seconds from it (issue 35): 1 ns is too little work
    Case("window-before-profile", 8, unrelated._window_before, "report", "too little to judge the run"),
    Case("window-after-profile", 8, unrelated._window_after, "error", "lies outside the profile"),
    Case("starved-gpu", 8, unrelated._starved, "report", None),
    Case("sqlite-without-gpu-work", 8, unrelated._empty_sqlite_tables, "report", "no rows of GPU work"),
    # class 10
    Case("sqlite-wal-uncheckpointed", 10, unrelated._wal, "report", "-wal"),
    Case("sqlite-wal-no-shm", 10, lambda d: unrelated._wal(d, shm=False), "report", "-wal"),
    Case("sqlite-wal-as-folder", 10, lambda d: diagnose(Path(unrelated._wal(d)[1]).parent), "report", "-wal beside it"),
    Case("sqlite-wal-checkpointed", 10, lambda d: unrelated._wal(d, checkpointed=True), "report", None),
    # the same damage to the real shared cases (../shared/cases): other shapes, sizes and stream layouts
    *[Case(f"{case}-{kind}", cls, build.shared(case, dmg), "report", text, needs_shared=True)
      for case in ("healthy", "launch_bound", "memcpy_bound")
      for kind, cls, dmg, text in (("thousands-separators", 6, damaged.dmg_thousands, "thousands separators"),
                                   ("cut-then-newline", 6, damaged.dmg_cut_then_newline, "was cut at line"),
                                   ("overlap-one-stream", 6, damaged.dmg_overlap, None),
                                   ("292-year-kernel", 6, damaged.dmg_292_years, "longer than a day"),
                                   ("exported-twice-usec", 7, unrelated.dmg_usec_twice, "same run"))],
]
