"""load: find the inputs, read each into one canonical Polars frame per table, record what is missing.

Public entry point: :func:`load_paths`. It knows file formats and nothing else (no facts, no rules).

Past ~400 lines on purpose: the order in which inputs are listed, read, grouped by run and ranked by source
(the one idea of this module); the records are in ``profile``, each format in its own reader.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from .. import budget
from ..errors import InputError
from ..notes import CODES, Note
from . import compressed, consistency, csv_reports, normalize, sanity, schema
from . import files as files_mod
from .profile import Part, Profile  # the records the readers fill (profile.py)


# When two inputs hold the same table, the richer source wins: the SQLite export (ground truth,
# every column) over a CSV report (derived from it) over a table parsed from console text.
RANK = {"kineto": 1, "nsys-sqlite": 3, "nsys-rep": 3, "nsys-csv": 2, "nsys-console": 1, "ncu-details": 2, "ncu-raw": 2}


@dataclass
class _Entry:
    table: str
    frame: pl.DataFrame
    path: str
    kind: str
    report: str
    era: str | None
    warnings: list = field(default_factory=list)     # notes.Note


def load_paths(paths: list[str]) -> Profile:
    """Read every recognisable input under ``paths`` (files, or folders one level deep) as one run."""
    files, skipped_dirs = files_mod.list_files(paths)
    return load_files(files, skipped_dirs, paths)


def list_inputs(paths: list[str]) -> tuple[list[list[str]], list[str]]:
    """The files of each path (folders one level deep), and the subfolders that were not read."""
    per_path, skipped = [], []
    for p in paths:
        files, dirs = files_mod.list_files([p])
        per_path.append(files)
        skipped += dirs
    return per_path, skipped


def load_files(files: list[str], skipped_dirs: list[str] | None = None, paths: list[str] | None = None,
               pid: int | None = None) -> Profile:
    """Read these files as one run (``pid``: keep only that process of a multi-process export)."""
    skipped_dirs = skipped_dirs or []
    paths = paths or [os.path.dirname(files[0]) if files else "."]
    prof = Profile()
    # what a file is comes from its name without .gz ('x.sqlite.gz' is an SQLite export, 'x_osrt_sum.csv.gz' osrt_sum)
    logical = {f: compressed.logical_path(f) for f in files}
    stems = {os.path.splitext(logical[f])[0] for f in files if logical[f].endswith(".sqlite")}
    sniffs = {path: csv_reports.sniff(path) for path in files}
    # text files (Nsight Compute pages, console captures: Python, on the GIL) are read on a second thread
    # while the SQLite export is (ADBC, mostly off it); each result (or error) is taken at the file's
    # place in the loop below, so what is said, and which error wins, does not change
    texts = [f for f in files if sniffs[f].kind == "text" and not logical[f].endswith((".nsys-rep", ".qdrep"))]
    early = ThreadPoolExecutor(max_workers=1) if texts and any(
        sniffs[f].kind == "sqlite" and logical[f].endswith(".sqlite") for f in files) else None
    prefetched: dict = {}
    try:
        for f in texts if early is not None else []:
            prefetched[f] = early.submit(_read_other, f, sniffs[f])
        exports, unread = _read_exports(files, logical, sniffs)
    except BaseException:
        if early is not None:
            for fut in prefetched.values():
                fut.cancel()
            early.shutdown(wait=True)
        raise
    try:
        return _load_read(files, logical, stems, sniffs, exports, unread, prefetched, prof, skipped_dirs, paths, pid)
    finally:
        if early is not None:
            early.shutdown(wait=True)


def _read_normalized(sn) -> tuple[csv_reports.Loaded, Exception | None]:
    """One CSV report read and normalized (in a reader thread): its frame the normalized one, its
    warnings both steps'; and the error that stopped it, if one did (raised by the caller, in file order)."""
    path = sn.path
    with budget.reading(path), _unchanged(path, sn):   # named by the memory watch if the budget runs out here
        item = csv_reports.read_report(sn)
    if item.sections:
        return item, None
    try:
        missing = normalize.check_required(item.table, item.frame, path)
        if missing:
            raise InputError(f"this {item.table} report has no '{missing}' column", path,
                             "re-export it with nsys stats --format csv")
        if item.table in ("api_sum", "osrt_sum") and sn.report is None:
            item.table = "api_sum" if normalize.looks_like_api_names(item.frame) else "osrt_sum"
        frame, w = normalize.normalize(item.table, item.frame, path)
    except Exception as e:  # noqa: BLE001 - raised by the caller, in file order
        return item, e
    item.frame, item.warnings = frame, item.warnings + w
    return item, None


@dataclass
class _Reading:
    """What one load has found so far: the listing's findings in, the tables and what was set aside out."""
    logical: dict
    stems: set
    sniffs: dict
    exports: dict
    unread: dict
    prefetched: dict
    paths: list
    prof: Profile
    parsed: dict = field(default_factory=dict)
    loaded: dict = field(default_factory=dict)
    ignored: list = field(default_factory=list)
    stray: list = field(default_factory=list)     # why text files found in a folder were not read


def _load_read(files, logical, stems, sniffs, exports, unread, prefetched, prof, skipped_dirs, paths, pid) -> Profile:
    r = _Reading(logical, stems, sniffs, exports, unread, prefetched, paths, prof)
    # the CSV reports are parsed side by side (Polars releases the GIL); they are added in file order
    # and normalized where they were read (the API trace's normalizing ran after every read had ended: 0.3 s
    # at 20 M calls, now beside the GPU trace's read); an error is raised below, in file order
    with ThreadPoolExecutor(max_workers=4) as pool:
        parsed = {path: pool.submit(_read_normalized, sn) for path, sn in sniffs.items()
                  if sn.kind == "csv-report" and path not in unread}
        r.parsed = {path: fut.result() for path, fut in parsed.items()}
    for path in files:
        _read_one(path, r)
    loaded = r.loaded
    _one_profiler(loaded, prof)
    if pid is not None:
        _keep_process(loaded, pid, prof)
    used = {e.path for e in loaded.values()}
    said_empty = _said_of_parts(prof, used, {(e.path, e.table) for e in loaded.values()})
    _said_superseded(prof, used)
    for e in loaded.values():
        prof.tables[e.table] = e.frame
        prof.sources[e.table] = e.path
        prof.warnings += e.warnings
        prof.inputs.append({"path": e.path, "kind": e.kind, "report": e.report, "version": e.era,
                            "rows": e.frame.height, "table": e.table})
    if not prof.tables:
        _nothing_read(r.stray, said_empty, paths)
    consistency.check(prof)
    if r.ignored:
        prof.warnings.append(Note("load.not_read", {"files": tuple(r.ignored)}))
    if skipped_dirs:
        prof.warnings.append(Note("load.subfolders", {"dirs": tuple(os.path.basename(d) for d in skipped_dirs)}))
    sanity.long_names(prof.tables, prof.warnings)
    sanity.stretched(prof.tables, prof.warnings, prof.sources.get("gpu_trace"))
    prof.meta.update(consistency.meta(prof))
    prof.warnings = _grouped(prof.warnings)
    return prof


def _read_one(path: str, r: _Reading) -> None:
    """One file of the listing read (or set aside, said why) into ``r.loaded``."""
    base = os.path.basename(path)
    name = r.logical[path]
    loaded, prof = r.loaded, r.prof
    if name.endswith((".nsys-rep", ".qdrep")) and os.path.splitext(name)[0] in r.stems:
        prof.warnings.append(Note("load.sqlite_beside", {"file": base}))
        return
    sn = r.sniffs[path]
    if path in r.unread:   # the export beside it gives this table: said "not used", never parsed
        _add(loaded, _Entry(r.unread[path], _UNREAD, path, "nsys-csv", sn.report, None), prof)
    elif sn.kind == "csv-report" and r.parsed[path][0].sections:
        # `nsys stats --format csv` printed to the console: several reports, each after its own
        # Processing / title lines: read as console text, every section
        part = _read_other(path, dataclasses.replace(sn, kind="text"))
        if part is None:
            raise InputError("this file holds several nsys stats sections but no table could be read",
                             path, csv_reports.EXPORT_HINT)
        _add_part(loaded, part, prof)
    elif sn.kind == "csv-report":
        item, err = r.parsed[path]
        if err is not None:
            raise err
        _add(loaded, _Entry(item.table, item.frame, path, "nsys-csv", item.report, item.era, item.warnings), prof)
    elif sn.kind == "empty":
        if sn.spec is None:
            r.ignored.append(Note("phrase.file_empty", {"file": base}))
            return
        era = "2021-2022" if sn.report and sn.report != sn.spec.names[0] else "2023+"
        _add(loaded, _Entry(sn.spec.table, normalize.empty_frame(sn.spec.table), path, "nsys-csv",
                            sn.report or sn.spec.names[0], era), prof)
    elif sn.kind == "binary" and sn.report:
        raise InputError(f"this should be the {sn.report} report but it holds binary data, not CSV text", path,
                         f"re-export it: nsys stats --format csv -r {sn.report} -o prof report.nsys-rep")
    elif sn.kind == "unknown-csv" and not name.endswith((".csv", ".tsv")):
        # `nsys stats -f column -o prof` writes prof_<report>.txt: console text, not CSV
        part = _read_other(path, dataclasses.replace(sn, kind="text"))
        if part is None:
            raise InputError(f"the file name says {sn.report} but no nsys stats table was found in it", path,
                             f"re-export it: nsys stats --format csv -r {sn.report} -o prof report.nsys-rep")
        _add_part(loaded, part, prof)
    elif sn.kind == "unknown-csv":
        raise InputError(f"the file name says {sn.report} but its header is not an nsys stats "
                         f"{sn.report} header", path,
                         f"re-export it: nsys stats --format csv -r {sn.report} -o prof report.nsys-rep")
    else:
        _read_export_or_text(path, sn, r)


def _read_export_or_text(path: str, sn, r: _Reading) -> None:
    try:
        part = r.exports[path] if path in r.exports else \
            r.prefetched[path].result() if path in r.prefetched else _read_other(path, sn)
    except InputError as e:
        # a text file that is no profile (an ncu run's .log beside its CSVs), found in a folder
        # of profiles: listed as not read, never fatal (issue 48, item 7); named itself: its error
        if sn.kind != "text" or _named(path, r.paths) or _ncu_failed(path):
            raise
        r.ignored.append(Note("phrase.file_why", {"file": os.path.basename(path), "why": e.message}))
        r.stray.append(e)
        return
    if part is None:
        r.ignored.append(os.path.basename(path))
        return
    _add_part(r.loaded, part, r.prof)


def _ncu_failed(path: str) -> bool:
    """A failed Nsight Compute run's output (``==ERROR==``, no table): the kernel data the user meant to give
    is not there, so its error is the answer (issue 58), not a "not read" note under a report without it."""
    from . import ncu

    return ncu.looks_like(path) and any(ln.startswith("==ERROR==") for ln in ncu.head_text(path).splitlines())


def _said_of_parts(prof: Profile, used: set, used_tables: set) -> list:
    """The parts' own warnings, said where one of their tables is used or where a file gave nothing
    (it still says why); a warning about some of a file's tables (``tables``: names cut by nsys) only where
    one of those is used, not where a richer source gave them (issue 56, item 11); -> the warnings of the
    files with nsys sections that gave no table."""
    said_empty = []
    for path, (ws, had_tables) in prof.meta.pop("_part_warnings", {}).items():
        if not had_tables:
            said_empty += ws
        if path in used or not had_tables:
            prof.warnings += [w for w in ws if not (had_tables and isinstance(w, Note) and w.fields.get("tables")
                                                    and w.code == "load.console_truncated"
                                                    and not any((path, t) in used_tables for t in w.fields["tables"]))]
    return said_empty


def _said_superseded(prof: Profile, used: set) -> None:
    """One line per winning source: which tables it gave, and what was left unused."""
    superseded = prof.meta.pop("_superseded", [])
    by_keep: dict[str, tuple[list, list]] = {}
    for table, keep, drop in superseded:
        tables, drops = by_keep.setdefault(keep, ([], []))
        tables.append(table)
        drops.append(os.path.basename(drop))
    for keep, (tables, drops) in by_keep.items():
        unused = sorted(set(drops) - {os.path.basename(p) for p in used})
        also = sorted(set(drops) - set(unused))
        then = ((Note("phrase.not_used", {"files": tuple(unused)}),) if unused else ()) + \
            ((Note("phrase.also_present", {"files": tuple(also)}),) if also else ())
        prof.warnings.append(Note("load.richest_source", {"tables": tuple(dict.fromkeys(tables)),
                                                          "file": os.path.basename(keep),
                                                          **({"then": then} if then else {})}))


def _nothing_read(stray: list, said_empty: list, paths: list) -> None:
    """No table was read: the InputError that says why."""
    if stray:   # nothing else was read: the first such file's own error
        raise stray[0]
    where = paths[0] if len(paths) == 1 else ", ".join(paths)
    if said_empty:   # a file with nsys sections whose tables could not be read: say which and why
        more = f" (and {len(said_empty) - 1} more)" if len(said_empty) > 1 else ""
        raise InputError(f"no table could be read; {said_empty[0]}{more}", where, csv_reports.EXPORT_HINT)
    if len(paths) == 1 and os.path.isfile(paths[0]):   # one file that is no profile: not the folder message
        msg, hint = files_mod.not_a_profile(paths[0])
        raise InputError(msg, where, hint)
    raise InputError("no nsys stats report, SQLite export, Nsight Compute CSV or torch.profiler trace found "
                     "(looked for CSV reports such as *_cuda_gpu_trace.csv, *_cuda_gpu_kern_sum.csv, "
                     "*_cuda_api_sum.csv, and *.pt.trace.json)", where,
                     csv_reports.EXPORT_HINT)


def _named(path: str, paths: list[str]) -> bool:
    """Whether ``path`` was given itself on the command line (not found by listing a folder)."""
    return os.path.abspath(path) in {os.path.abspath(p) for p in paths}


def _grouped(warnings: list) -> list:
    """'a.csv: X' and 'b.csv: X' (the same note about several files: a BOM, CR line ends, units) as one,
    'a.csv, b.csv and 11 more: X', at the place of the first."""
    def key(w):
        name = w.fields.get("file") if isinstance(w, Note) and CODES[w.code].en.startswith("{file}: ") else None
        if isinstance(name, str) and name.endswith((".csv", ".tsv", ".txt", ".gz")) and " " not in name:
            return w.code, str(w.with_fields(file=""))
        return None
    by_text: dict[tuple, list[str]] = {}
    for w in warnings:
        k = key(w)
        if k is not None:
            by_text.setdefault(k, []).append(w.fields["file"])
    out, said = [], set()
    for w in warnings:
        k = key(w)
        names = by_text.get(k) if k is not None else None
        if not names or len(names) < 2:
            out.append(w)
        elif k not in said:
            said.add(k)
            out.append(w.with_fields(file=tuple(names[:2]), **({"more_files": len(names) - 2} if len(names) > 2 else {})))
    return out


# Stands for a CSV report that was not parsed because an SQLite export beside it gives the same
# table with rows: it always loses to the export (RANK), so only its name is ever used ("not used: ...").
_UNREAD = pl.DataFrame({"unread": [True]})


def _read_exports(files: list[str], logical: dict[str, str], sniffs: dict) -> tuple[dict[str, Part], dict[str, str]]:
    """The SQLite exports, read first; and the CSV reports they make redundant (path -> table): a
    report named for a table an export gives with rows, and that has rows itself (an empty report
    loses without a word, as before). A million-row CSV parsed only to be discarded cost seconds."""
    exports = {f: _read_other(f, sniffs[f]) for f in files if sniffs[f].kind == "sqlite" and logical[f].endswith(".sqlite")}
    given = {t for part in exports.values() if part is not None for t, frame in part.tables.items() if frame.height}
    unread = {f: sn.spec.table for f, sn in sniffs.items()
              if sn.kind == "csv-report" and sn.report and sn.spec is not None and sn.spec.table in given
              and csv_reports.has_rows(sn)}
    return {f: p for f, p in exports.items() if p is not None}, unread


def _one_profiler(loaded: dict, prof: Profile) -> None:
    """nsys inputs and a torch.profiler trace side by side are two recordings (two runs): the nsys ones
    are read, the trace is set aside and said so (diagnose it on its own)."""
    traces = {e.path for e in loaded.values() if e.kind == "kineto"}
    if traces and any(e.kind != "kineto" and e.table in ("gpu_trace", "kern_sum", "api_trace", "api_sum")
                      for e in loaded.values()):
        for table in [t for t, e in loaded.items() if e.kind == "kineto"]:
            del loaded[table]
        prof.warnings.append(Note("load.torch_beside_nsys",
                                  {"files": tuple(sorted(os.path.basename(p) for p in traces))}))


def _keep_process(loaded: dict, pid: int, prof: Profile) -> None:
    """One process of a multi-process export: its rows of the tables that name processes; summary
    tables over every process are dropped (they would mix the ranks)."""
    for table in list(loaded):
        e = loaded[table]
        if "pid" in e.frame.columns:
            e.frame = e.frame.filter(pl.col("pid") == pid)
        elif table in ("nvtx_trace",):
            prof.warnings.append(Note("load.nvtx_all_processes", {"table": table}))
        elif table == "gpu_metrics":   # samples belong to GPUs, not processes
            prof.warnings.append(Note("load.gpu_metrics_per_process"))
            del loaded[table]
        else:
            del loaded[table]
    prof.meta["pid"] = pid


def _read_other(path: str, sn) -> Part | None:
    """SQLite exports, .nsys-rep files, Nsight Compute CSVs and console text (each in its own module)."""
    from . import readers
    with budget.reading(path), _unchanged(path, None):
        return readers.read(path, sn)


def _header_moved(path: str, sn) -> bool:
    try:
        return csv_reports.sniff(path).cells != sn.cells
    except (InputError, OSError):
        return True


@contextlib.contextmanager
def _unchanged(path: str, sn):
    """A file rewritten while it is read (its stamp moved, or its CSV header is no longer the one sniffed,
    which Polars reports as a column not found) is one line naming it (files_mod.changed), never a frame
    of half the old and half the new file, nor an internal error."""
    before = files_mod.stamp(path)
    try:
        yield
    except (pl.exceptions.PolarsError, InputError, OSError):
        if files_mod.stamp(path) != before or (sn is not None and _header_moved(path, sn)):
            raise files_mod.changed(path) from None
        raise
    if files_mod.stamp(path) != before:
        raise files_mod.changed(path)


def _add_part(loaded: dict, part: Part, prof: Profile) -> None:
    # the part's own warnings are said only if one of its tables is used (see load_files)
    prof.meta.setdefault("_part_warnings", {})[part.path] = (list(part.warnings), bool(part.tables))
    for k, v in part.meta.items():
        prof.meta.setdefault(k, v)
    for table, frame in part.tables.items():
        missing = normalize.check_required(table, frame, part.path)
        if missing:
            prof.warnings.append(Note("load.missing_column", {"file": os.path.basename(part.path), "table": table,
                                                              "column": missing}))
            continue
        frame, w = normalize.normalize(table, frame, part.path)
        _add(loaded, _Entry(table, frame, part.path, part.kind, part.report or table, part.version, w), prof)


def _add(loaded: dict, item: _Entry, prof: Profile) -> None:
    prev = loaded.get(item.table)
    if prev is None:
        loaded[item.table] = item
        return
    if prev.frame.equals(item.frame):
        prof.warnings.append(Note("load.copy", {"file": os.path.basename(item.path),
                                                "other": os.path.basename(prev.path), "table": item.table}))
        return
    if prev.frame.height == 0 and item.frame.height > 0:  # an empty placeholder loses to real rows
        loaded[item.table] = item
        return
    if item.frame.height == 0 and prev.frame.height > 0:
        return
    rp, ri = RANK.get(prev.kind, 0), RANK.get(item.kind, 0)
    if rp != ri:
        keep, drop = (prev, item) if rp > ri else (item, prev)
        loaded[item.table] = keep
        prof.meta.setdefault("_superseded", []).append((item.table, keep.path, drop.path))
        return
    raise InputError(f"two different {item.table} reports in one input: {os.path.basename(prev.path)} and "
                     f"{os.path.basename(item.path)}", os.path.dirname(item.path) or ".",
                     "diagnose one profile at a time: put each run's files in a folder of their own")


__all__ = ["Profile", "Part", "load_paths", "load_files", "list_inputs", "schema"]
