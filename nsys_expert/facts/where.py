"""Where in the user's program a cause sits (issue 55): from the stacks a profile holds, the innermost
frame of the user's own code above each call that a finding counts.

A *point* is one host-side call (a blocking sync, a copy, an allocation, a kernel launch) with its
thread, its time and a weight (the time it accounts for). Its stack comes from:

- a torch.profiler trace recorded with ``with_stack=True``: the ``python_function`` events
  (``py_trace``) that hold the call on its thread, found by time (``nesting_times.parents`` with the
  call as a zero-length range among the user's frames). Kineto names a frame ``file(LINE): function``
  with the function's first line, so the location is the function (its ``def`` line);
- an nsys export with Python backtraces (``--python-backtrace=cuda``): the call's ``callchainId``
  into the call-chain table (facts/where_nsys.py), which gives the line of the call itself.

User code is any frame outside the Python installation, site-packages and the tool chain: a frame whose
path runs through ``site-packages`` / ``dist-packages`` / ``lib/pythonX.Y``, whose first path part is a
standard-library module or a known library (torch, numpy, transformers, ...), or that is not Python
(``<built-in ...>``, ``<frozen ...>``). ``NSX_LIBRARY_ROOTS`` names more roots to skip and
``NSX_USER_ROOTS`` roots to keep (a user's package installed in site-packages), comma-separated.

The points of one cause are grouped by location; the largest shares come first.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

import polars as pl

from ..reads import Reads
from . import nesting_times

LIBRARIES = frozenset("""
torch torchvision torchaudio torchtext torchdata torchrec functorch triton apex deepspeed megatron
transformers accelerate datasets tokenizers safetensors huggingface_hub peft trl diffusers timm
lightning pytorch_lightning lightning_fabric lightning_utilities torchmetrics ignite fairscale
numpy scipy pandas sklearn einops flash_attn xformers vllm sglang tensorrt_llm cupy jax jaxlib nvtx
tqdm wandb tensorboard tensorboardX mlflow hydra omegaconf yaml PIL cv2 h5py pyarrow polars
_pytest pytest pluggy IPython ipykernel traitlets tornado zmq
""".split())
_SITE = re.compile(r"[/\\](site-packages|dist-packages|lib[/\\]python\d(\.\d+)?)[/\\]")
_KINETO = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
TOP = 5            # locations a finding lists
CHAIN = 6          # user frames above a location


@dataclass(slots=True)
class Location(Reads):
    """One place in the user's code and the share of a cause's time (or calls) it accounts for. The JSON
    contract's ``findings[].locations[]``: ``file``, ``line`` (the call's line from nsys backtraces,
    the function's first line from torch.profiler), ``function``, ``operator`` (the library call or
    PyTorch operator under it), ``share_pct``, ``chain`` (the user frames above it, outermost first)
    and ``source`` (where the stacks came from)."""
    file: str
    line: int | None
    function: str
    operator: str | None
    share_pct: float
    chain: list[str] = field(default_factory=list)
    source: str | None = None


@dataclass(slots=True)
class Where:
    """The located points of one cause: its locations (largest share first), how many points there were
    and how many of them had a stack (``located``), and why it says less (``library_only``: the stacks
    held library frames only; ``few``: too few points to rank)."""
    locations: list[Location]
    points: int
    located: int
    library_only: bool = False
    few: bool = False


def _roots(var: str) -> frozenset:
    return frozenset(r.strip() for r in os.environ.get(var, "").split(",") if r.strip())


def is_user(path: str) -> bool:
    """A frame's file is the user's own code (module docstring)."""
    if not path or path.startswith("<"):
        return path == "<stdin>" or path.startswith("<ipython-input")
    norm = path.replace("\\", "/")
    first = norm.lstrip("/").split("/", 1)[0].removesuffix(".py")
    keep = _roots("NSX_USER_ROOTS")
    if keep and any(f"/{k}/" in f"/{norm}" or first == k for k in keep):
        return True
    if _SITE.search(norm):
        return False
    skip = LIBRARIES | _roots("NSX_LIBRARY_ROOTS")
    if norm.startswith("/"):       # a full path outside the installation: the user's
        return not any(f"/{r}/" in norm for r in _roots("NSX_LIBRARY_ROOTS"))
    return first not in skip and first not in sys.stdlib_module_names


def kineto_frame(name: str) -> tuple[str, int | None, str] | None:
    """``file(LINE): function`` -> (file, line, function); None for a C call (``<built-in ...>``)."""
    m = _KINETO.match(name)
    if not m:
        return None
    return m.group("file"), int(m.group("line")), m.group("func")


def user_frames_kineto(py: pl.DataFrame) -> pl.DataFrame:
    """The user's frames of a ``py_trace`` (start_ns, end_ns, pid, tid, name) with file, line, function."""
    names = py.select(pl.col("name").cast(pl.String)).unique()["name"].to_list()
    keep = {}
    for n in names:
        f = kineto_frame(n)
        if f and is_user(f[0]):
            keep[n] = f
    if not keep:
        return pl.DataFrame(schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "pid": pl.Int64, "tid": pl.Int64,
                                    "file": pl.String, "line": pl.Int64, "function": pl.String})
    lut = pl.DataFrame({"name": list(keep), "file": [v[0] for v in keep.values()],
                        "line": [v[1] for v in keep.values()], "function": [v[2] for v in keep.values()]})
    return (py.with_columns(pl.col("name").cast(pl.String))
            .join(lut, on="name", how="inner")
            .select("start_ns", "end_ns", "pid", "tid", "file", "line", "function"))


def locate_kineto(frames: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """For each point (pid, tid, ts, weight, operator), the innermost user frame of its thread that holds
    it: ``points`` with file, line, function and chain (null where no user frame holds it)."""
    n_f = frames.height
    rows = pl.concat([
        frames.select(pl.col("start_ns"), pl.col("end_ns"), pl.col("pid"), pl.col("tid")),
        points.select(pl.col("ts").alias("start_ns"), pl.col("ts").alias("end_ns"), pl.col("pid"), pl.col("tid")),
    ], how="vertical_relaxed").with_row_index("range_id").with_columns(pl.col("range_id").cast(pl.Int64))
    par = nesting_times.parents(rows)
    if par is None:
        return points.with_columns(pl.lit(None, pl.String).alias("file"), pl.lit(None, pl.Int64).alias("line"),
                                   pl.lit(None, pl.String).alias("function"), pl.lit(None, pl.String).alias("chain"))
    # in columns (issue 57): ``up`` is each row's parent where that is a user frame of the row's own thread,
    # else null; a point's location is its ``up``, its chain the ``up`` of that and so on, CHAIN levels at
    # most (a gather by a null index gives null: the chain stops there)
    up = pl.DataFrame({"p": par.cast(pl.Int64), "tid": rows["tid"]}).select(
        pl.when((pl.col("p") < n_f) & pl.col("tid").gather(pl.col("p").fill_null(0)).eq_missing(pl.col("tid")))
        .then(pl.col("p")).alias("up"))["up"]
    frame = frames.select(pl.col("file").cast(pl.String), pl.col("line").cast(pl.Int64),
                          pl.col("function").cast(pl.String))
    text = [pl.col(c).cast(pl.String).fill_null("None") for c in ("file", "line", "function")]
    label = frame.select(pl.concat_str(text[0], pl.lit(":"), text[1], pl.lit(" in "), text[2])).to_series()
    loc = up.slice(n_f, points.height)
    levels, q = [], loc
    for _ in range(CHAIN):
        q = up.gather(q)
        levels.append(label.gather(q).alias(f"c{len(levels)}"))
    chain = pl.select(pl.when(loc.is_not_null()).then(
        pl.concat_str(levels[::-1], separator=" > ", ignore_nulls=True)).alias("chain")).to_series()
    at = frame.select(pl.all().gather(loc))
    return points.with_columns(at["file"], at["line"], at["function"], chain)


def summarize(located: pl.DataFrame, source: str, min_points: int = 3) -> Where:
    """Group located points by (file, line, function): the top ``TOP`` by their share of the weight."""
    points = located.height
    have = located.filter(pl.col("file").is_not_null())
    if not have.height:
        return Where([], points, 0, library_only=points > 0)
    total = float(located["weight"].sum()) or float(points)
    g = (have.group_by("file", "line", "function")
         .agg(pl.col("weight").sum(), pl.len().alias("n"),
              pl.col("operator").drop_nulls().mode().sort().first().alias("operator"),
              pl.col("chain").drop_nulls().mode().first().alias("chain"))
         .sort(["weight", "n", "file", "line"], descending=[True, True, False, False]).head(TOP))
    locs = []
    for r in g.iter_rows(named=True):
        share = 100.0 * (r["weight"] if total else r["n"]) / (total or points)
        chain = [c for c in (r["chain"] or "").split(" > ") if c]
        locs.append(Location(r["file"], r["line"], r["function"], r["operator"], round(share, 1), chain, source))
    return Where(locs, points, have.height, few=points < min_points)
