"""Side by side: two revisions of nsys-expert on the benchmark inputs, in one run, alternating (issue 57).

    python benchmarks/compare.py BASE HEAD [--inputs small,csv-1M,sqlite-1M,long-iteration,autograd,kineto]
                                           [--repeat 5] [--work DIR] [--profile PATH ...] [--markdown]

BASE and HEAD are git revisions (``.`` is this checkout's working tree, uncommitted changes included).
Each revision is built once into ``--work`` (default ``$TMPDIR/nsx-compare-<uid>``, kept between runs):
its package, rules and pyproject by ``git archive`` (``src-<commit>``; the built-in rules linked where the installed package
finds them, so a revision runs its own rules, not this checkout's), run by this venv's Python with the
tree first on PYTHONPATH when the revision's dependency set is this checkout's (the usual case: nothing
is compiled), else by a venv made for that dependency set (``venv-<hash>``, reused by every revision that
has it). Each side gets its own TMPDIR, so the two never share a pack or template cache.

The inputs are made once into ``--work``/inputs (seconds to a minute; kept): ``small`` (the shared healthy
case, every file of it), ``csv-1M`` (fixtures/launch_bound tiled to 1 M GPU operations, ``bench_diagnose``),
``sqlite-1M`` (the shared launch_bound export tiled to 1 M kernels, ``bench_sqlite``), ``long-iteration``
and ``autograd`` (``make_long.py``: 560 k kernels in 6 iterations; plus one autograd NVTX range a launch),
``kineto`` (the shared launch_bound torch.profiler trace); ``--profile PATH`` adds a real export or trace
(the lead's long profiles: every ``*.sqlite[.gz]`` / ``*.json[.gz]`` in benchmarks/long/ of this and of the
main checkout and in /work/devout/bench/ is added when ``--inputs`` names ``real``; benchmarks/long/README.md
says how they are made).

For each input, after one warm-up round, --repeat rounds of fresh processes in alternating order (the
reference read, BASE, HEAD; then HEAD, BASE, reference): each process's wall time, CPU time (user +
system) and peak RSS (``_measure.run``). It prints the medians, the median of the round-by-round ratios
HEAD / BASE (wall, CPU, peak RSS) with their range, each side's ratio to the reference read (ADBC of the
tables the loader reads for SQLite, a typed Polars scan for CSV, ``json`` for a Kineto trace, ``import
polars`` for the small case) and the issue's target; --markdown ends with the table benchmarks/README.md
keeps. Numbers are printed, never asserted: speed is not a unit test. Each side's package is compiled to
bytecode first (``compileall``; for ``.`` into this checkout's ``__pycache__`` folders, which git ignores), as an
installed copy is: rounds 1-8 ran every side from source, compiled again in each process where
PYTHONDONTWRITEBYTECODE is set (~0.35 s of CPU a run on both sides alike).
"""
from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import _measure  # noqa: E402

SHARED = os.path.join(os.path.dirname(ROOT), "shared")
INPUTS = ("small", "csv-1M", "sqlite-1M", "long-iteration", "autograd", "kineto")
REAL_DIRS = (os.path.join(ROOT, "benchmarks", "long"), "/work/main/benchmarks/long", "/work/devout/bench")


def git(*args: str, cwd: str = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def dependencies(tree: str) -> list[str]:
    """The revision's install requirements (its pyproject's dependencies and extras), sorted."""
    with open(os.path.join(tree, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]
    deps = list(project.get("dependencies", []))
    for extra in sorted(project.get("optional-dependencies", {})):
        deps += project["optional-dependencies"][extra]
    return sorted(deps)


def source(rev: str, work: str) -> tuple[str, str]:
    """-> (label, source tree) of ``rev``: ``.`` is this checkout; a commit is archived once into ``work``."""
    if rev == ".":
        return "working tree", ROOT
    sha = git("rev-parse", "--verify", rev + "^{commit}")
    dst = os.path.join(work, f"src-{sha[:12]}")
    if not os.path.isdir(dst):
        tmp = tempfile.mkdtemp(dir=work, prefix="partial-")
        # what runs: the package, its rules and its pyproject (not the fixtures: 200+ MB)
        paths = [p for p in ("pyproject.toml", "nsys_expert", "rules") if git("ls-tree", sha, p)]
        archive = subprocess.Popen(["git", "archive", sha, *paths], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout, check=True)
        if archive.wait():
            raise SystemExit(f"git archive {sha} failed")
        rules = os.path.join(tmp, "nsys_expert", "builtin_rules")
        if os.path.isdir(os.path.join(tmp, "rules")) and not os.path.exists(rules):
            # the installed package maps nsys_expert.builtin_rules to rules/; on PYTHONPATH that
            # lookup would fall through to the editable install's (this checkout's) rules
            os.symlink(os.path.join("..", "rules"), rules)
        os.rename(tmp, dst)
    return f"{rev} ({sha[:7]})", dst


def python_for(tree: str, work: str) -> str:
    """This venv's Python when ``tree`` needs what this checkout needs, else a venv for its dependency set."""
    deps = dependencies(tree)
    if deps == dependencies(ROOT):
        return sys.executable
    venv = os.path.join(work, "venv-" + hashlib.sha256("\n".join(deps).encode()).hexdigest()[:12])
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".complete")):
        print(f"making a venv for {tree}'s dependencies (once): {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", *deps], check=True)
        open(os.path.join(venv, ".complete"), "w").close()
    return py


class Side:
    """One revision: its tree, the Python that runs it and its own TMPDIR (cache folder)."""

    def __init__(self, rev: str, work: str):
        self.label, self.tree = source(rev, work)
        self.python = python_for(self.tree, work)
        # the package's bytecode made once, as pip does when it installs a package: with
        # PYTHONDONTWRITEBYTECODE set (as on the shared machine) every run of a side would compile
        # nsys-expert's modules from source again (~0.35 s of CPU a run, in no installed copy's time)
        subprocess.run([self.python, "-m", "compileall", "-q", os.path.join(self.tree, "nsys_expert")],
                       check=True, stdout=subprocess.DEVNULL)
        self.tmp = os.path.join(work, "tmp-" + hashlib.sha256(self.tree.encode()).hexdigest()[:8])
        os.makedirs(self.tmp, mode=0o700, exist_ok=True)

    def command(self, path: str, out: str) -> list[str]:
        env = [f"PYTHONPATH={self.tree}", f"TMPDIR={self.tmp}"]
        # -P: not the current folder first on sys.path (it would put this checkout before the tree)
        return ["env", *env, self.python, "-P", "-m", "nsys_expert", "diagnose", path, "-o", out]


def _sqlite_read(path: str, head: Side) -> tuple[str, list[str]]:
    """The ADBC read of every table query HEAD's loader issues for this export (``bench_long.READ``)."""
    import bench_long
    q = subprocess.run(["env", f"PYTHONPATH={head.tree}:{HERE}", head.python, "-c",
                        "import sys, json, bench_long; print(json.dumps(bench_long.queries(sys.argv[1])))", path],
                       check=True, capture_output=True, text=True).stdout.strip()
    return "ADBC read", [sys.executable, "-c", bench_long.READ, path, q]


def _made(name: str, dst: str) -> None:
    """Make input ``name`` at ``dst`` (a folder for CSV, a file for SQLite)."""
    import bench_sqlite
    import make_long
    src = os.path.join(SHARED, "cases", "launch_bound", "launch_bound.sqlite")
    if name == "csv-1M":
        import bench_diagnose
        case = os.path.join(ROOT, "fixtures", "launch_bound", "input")
        per = len(open(glob.glob(os.path.join(case, "*_cuda_gpu_trace.csv"))[0]).readlines()) - 1
        bench_diagnose.tile(case, max(1, round(1e6 / per)), dst)
    elif name == "sqlite-1M":
        bench_sqlite.tile(src, 25, dst)
    else:
        make_long.tile_steps(src, 14, dst)
        make_long.lengthen(dst, 93_000)
        if name == "autograd":
            make_long.autograd(dst)


def inputs(names: list[str], extra: list[str], work: str, head: Side) -> list[tuple[str, str, str, list[str]]]:
    """-> (name, path, reference label, reference command) for each input, made once into ``work``."""
    folder = os.path.join(work, "inputs")
    os.makedirs(folder, exist_ok=True)
    out = []
    for name in names:
        if name == "real":
            extra = extra + sorted(p for d in REAL_DIRS for p in glob.glob(os.path.join(d, "*"))
                                   if p.endswith((".sqlite", ".sqlite.gz", ".json", ".json.gz")))
            continue
        if name == "small":
            out.append((name, os.path.join(SHARED, "cases", "healthy"), "import polars",
                        [sys.executable, "-c", "import polars"]))
            continue
        if name == "kineto":
            path = os.path.join(SHARED, "cases", "kineto", "launch_bound.pt.trace.json.gz")
            out.append((name, path, "json", _json_read(path)))
            continue
        path = os.path.join(folder, name + ("" if name.startswith("csv") else ".sqlite"))
        if not os.path.exists(path):
            print(f"making {name} (once): {path}", flush=True)
            partial = path + ".partial"
            if os.path.isdir(partial):
                shutil.rmtree(partial)
            elif os.path.exists(partial):
                os.remove(partial)
            # in a child process: what the parent holds after making it (hundreds of MB for the SQLite
            # inputs) would be every later child's peak RSS as well (Linux counts a forked child's peak
            # from its parent's at the fork), and every side would read the same floor
            subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import compare; "
                            "compare._made(sys.argv[2], sys.argv[3])", HERE, name, partial], check=True)
            os.rename(partial, path)
        out.append((name, path, *_reference(path, head)))
    for p in extra:
        out.append((os.path.basename(p), *_given(p, folder, head)))
    return out


def _json_read(path: str) -> list[str]:
    return [sys.executable, "-c", "import gzip, json, sys; p = sys.argv[1]; f = gzip.open(p) if p.endswith('.gz') "
            "else open(p, 'rb'); assert json.loads(f.read())['traceEvents']", path]


def _reference(path: str, head: Side) -> tuple[str, list[str]]:
    if path.endswith((".sqlite", ".sqlite.gz")):
        return _sqlite_read(path, head)
    if path.endswith((".json", ".json.gz")):
        return "json", _json_read(path)
    import bench_diagnose
    trace = glob.glob(os.path.join(path, "*_cuda_gpu_trace.csv"))[0]
    return "typed scan", [sys.executable, "-c", bench_diagnose.TYPED_SCAN, trace]


def _given(path: str, folder: str, head: Side) -> tuple[str, str, list[str]]:
    """A real profile: a gzipped export is decompressed once into ``folder`` (not timed)."""
    if path.endswith(".sqlite.gz"):
        dst = os.path.join(folder, os.path.basename(path)[:-3])
        if not os.path.exists(dst):
            with gzip.open(path, "rb") as f, open(dst + ".partial", "wb") as g:
                shutil.copyfileobj(f, g, 1 << 22)
            os.rename(dst + ".partial", dst)
        path = dst
    return (path, *_reference(path, head))


def target(name: str, ref_wall: float, path: str) -> tuple[float, str]:
    """The issue's target for this input's diagnosis (seconds of wall time) and how it is stated."""
    if name == "small":
        return float("inf"), "no slower than BASE"
    if name == "sqlite-1M":
        return 1.3 * ref_wall, "<= 1.3 x read"
    if name == "csv-1M":
        return ref_wall + 0.25 + 0.08, "<= scan + 0.25 s + 0.08 s x 1 M"
    if name == "kineto":
        return float("inf"), "(none)"
    return 2 * ref_wall + 0.5, "<= 2 x read + 0.5 s"


def measure(name: str, path: str, ref: tuple[str, list[str]], sides: list[Side], repeat: int, work: str) -> dict:
    """Alternating rounds of the reference and both sides; -> the medians and ratios of this input."""
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    cmds = {"ref": ref[1]}
    for k, s in zip(("base", "head"), sides):
        cmds[k] = s.command(path, os.path.join(out, f"{name}-{k}.md"))
    for cmd in cmds.values():                           # warm-up: bytecode, page cache, pack cache
        _measure.run(cmd, quiet=True)
    runs: dict[str, list] = {k: [] for k in cmds}
    for i in range(repeat):
        for k in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
            runs[k].append(_measure.run(cmds[k], quiet=True))
    # each run is (wall s, peak RSS MB, CPU s), as _measure.run gives it
    med = {k: [_measure.median([r[j] for r in v]) for j in range(3)] for k, v in runs.items()}
    ratio = [sorted(h[j] / b[j] for b, h in zip(runs["base"], runs["head"])) for j in range(3)]
    return {"name": name, "path": path, "ref": ref[0], "med": med, "ratio": ratio,
            "same_report": _same(os.path.join(out, f"{name}-base.md"), os.path.join(out, f"{name}-head.md"))}


def _same(a: str, b: str) -> bool:
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


def _size(path: str) -> str:
    if os.path.isdir(path):
        return f"{sum(os.path.getsize(p) for p in glob.glob(os.path.join(path, '*')) if os.path.isfile(p)) / 1e6:.0f} MB"
    return f"{os.path.getsize(path) / 1e6:.0f} MB"


def report(r: dict, sides: list[Side]) -> list[str]:
    """The lines printed for one input."""
    (rw, rr, rc), (bw, br, bc), (hw, hr, hc) = r["med"]["ref"], r["med"]["base"], r["med"]["head"]
    goal, how = target(r["name"], rw, r["path"])
    rng = lambda xs: f"{_measure.median(xs):.2f}x ({xs[0]:.2f}-{xs[-1]:.2f})"  # noqa: E731
    lines = [f"{r['name']}: {r['path']} ({_size(r['path'])}); {_measure.load()}",
             f"  {'':<26} {'wall':>8} {'CPU':>8} {'peak RSS':>9}",
             f"  {'reference: ' + r['ref']:<26} {rw:7.2f}s {rc:7.2f}s {rr:7.0f}MB",
             f"  {'BASE ' + sides[0].label:<26} {bw:7.2f}s {bc:7.2f}s {br:7.0f}MB   {bw / rw:5.2f}x the reference",
             f"  {'HEAD ' + sides[1].label:<26} {hw:7.2f}s {hc:7.2f}s {hr:7.0f}MB   {hw / rw:5.2f}x the reference",
             f"  HEAD / BASE, median of the rounds (range): wall {rng(r['ratio'][0])}, CPU {rng(r['ratio'][2])}, "
             f"peak RSS {rng(r['ratio'][1])}; reports {'identical' if r['same_report'] else 'differ'}"]
    if goal != float("inf"):
        lines.append(f"  target {how} = {goal:.2f} s: HEAD {hw:.2f} s, {'met' if hw <= goal else 'not met'}")
    return lines


def markdown(results: list[dict], sides: list[Side]) -> list[str]:
    head = (f"| input | reference (wall / CPU) | BASE {sides[0].label} wall (CPU) | HEAD {sides[1].label} wall (CPU) "
            "| HEAD / BASE wall | CPU | peak RSS (HEAD MB) | HEAD / reference | target | met? |")
    lines = [head, "|" + "---|" * 10]
    for r in results:
        (rw, _, rc), (bw, _, bc), (hw, hr, hc) = r["med"]["ref"], r["med"]["base"], r["med"]["head"]
        goal, how = target(r["name"], rw, r["path"])
        met = "-" if goal == float("inf") else ("yes" if hw <= goal else "no")
        wall, rss, cpu = (_measure.median(x) for x in r["ratio"])   # _measure.run: (wall, peak RSS, CPU)
        lines.append(f"| {r['name']} | {r['ref']} {rw:.2f} / {rc:.2f} s | {bw:.2f} ({bc:.2f}) s | {hw:.2f} ({hc:.2f}) s "
                     f"| {wall:.2f}x | {cpu:.2f}x | {rss:.2f}x ({hr:.0f}) | {hw / rw:.2f}x | {how} | {met} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("head")
    ap.add_argument("--inputs", default=",".join(INPUTS), help=f"comma-separated, of {', '.join(INPUTS)}, real")
    ap.add_argument("--profile", action="append", default=[], help="a real export or trace to add (repeatable)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), f"nsx-compare-{os.getuid()}"))
    ap.add_argument("--markdown", action="store_true", help="end with the Markdown table of benchmarks/README.md")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    sides = [Side(a.base, a.work), Side(a.head, a.work)]
    print(f"BASE {sides[0].label}: {sides[0].tree}\nHEAD {sides[1].label}: {sides[1].tree}\n"
          f"{a.repeat} alternating rounds after a warm-up, medians; {_measure.load()}", flush=True)
    results = []
    for name, path, ref_label, ref_cmd in inputs([x for x in a.inputs.split(",") if x], a.profile, a.work, sides[1]):
        results.append(measure(name, path, (ref_label, ref_cmd), sides, a.repeat, a.work))
        print("\n".join(report(results[-1], sides)), flush=True)
    if a.markdown:
        print("\n" + "\n".join(markdown(results, sides)))
    print(f"after: {_measure.load()}")


if __name__ == "__main__":
    main()
