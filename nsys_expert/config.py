"""Settings from ``[tool.nsys-expert]`` in pyproject.toml or an ``nsys-expert.toml`` (the CLI wins),
resolved once: :func:`resolve` merges the command line's values with the file's into one frozen
:class:`Settings`, which the pipeline passes down (the rule packs it names become the engine's
``RuleSet`` there, once; facts get their ``Options`` from it). Nothing below re-reads a setting.

Keys: ``rules`` (pack folders, relative to the settings file), ``select``, ``ignore`` (rule ids or
categories), ``set`` (a table ``{"rule.param" = value}`` or a list of ``"rule.param=value"``),
``fail-on``, ``lang``, ``skip-iterations``, ``iteration-range``, ``scheduler`` (``local``, ``dask`` or
``tcp://HOST:PORT``: where a multi-rank job's per-rank work runs, docs/multi-rank.md).
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass

from .errors import InputError
from .safe_open import open_regular

MAX_BYTES = 1 << 20    # a settings file (or a pyproject.toml) is a few kB

KEYS = {"rules", "select", "ignore", "set", "fail-on", "lang", "skip-iterations", "iteration-range", "scheduler"}


def _candidates(start: str | None = None) -> list[str]:
    """``nsys-expert.toml`` then ``pyproject.toml`` of the current folder, then of each folder above it
    up to the file system's root, as ruff and pytest look (issue 48, item 16: a run from a subfolder of
    the project found no settings). The current folder's are named as before (relative)."""
    here = os.path.abspath(start or os.getcwd())
    out, d = [], here
    while True:
        for name in ("nsys-expert.toml", "pyproject.toml"):
            out.append(name if d == here else os.path.relpath(os.path.join(d, name), here))
        up = os.path.dirname(d)
        if up == d:
            return out
        d = up


def load(path: str | None = None) -> dict:
    """The settings (empty when there is no file). ``path`` forces a file; else the nearest
    ``nsys-expert.toml``, or ``pyproject.toml`` with a ``[tool.nsys-expert]`` table, from the current
    folder up."""
    candidates = [path] if path else _candidates()
    for c in candidates:
        if not c or not os.path.exists(c):
            if path:
                raise InputError("no such settings file", path)
            continue
        try:
            with open_regular(c) as fh:   # a FIFO or /dev/zero is refused, not read forever
                raw = fh.read(MAX_BYTES + 1)
            if len(raw) > MAX_BYTES:
                raise InputError(f"settings file is larger than {MAX_BYTES >> 10} KB (a settings file is a few lines)", c)
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"settings file is not valid TOML ({str(e).splitlines()[0][:120]})", c) from None
        except OSError as e:
            raise InputError(f"cannot read the settings file ({e.strerror})", c) from None
        if os.path.basename(c) == "pyproject.toml" or "tool" in data:
            data = data.get("tool", {}).get("nsys-expert")
            if data is None:
                continue
        unknown = set(data) - KEYS
        if unknown:
            raise InputError(f"unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(KEYS))}", c)
        data = dict(data)
        _check_values(data, c)
        base = os.path.dirname(os.path.abspath(c))
        data["rules"] = [p if os.path.isabs(p) else os.path.join(base, p) for p in _list(data.get("rules"), c, "rules")]
        data["_file"] = c
        return data
    return {}


def _check_values(data: dict, where: str) -> None:
    """Settings of the wrong type are the user's error, named with the file (never a crash later)."""
    skip = data.get("skip-iterations")
    if skip is not None and (isinstance(skip, bool) or not isinstance(skip, int) or skip < 0):
        raise InputError(f"setting 'skip-iterations' must be a whole number, 0 or more (it is {skip!r})", where)
    for key in ("fail-on", "lang", "iteration-range"):
        if key in data and not isinstance(data[key], str):
            raise InputError(f"setting '{key}' must be a string (it is {data[key]!r})", where)
    if "set" in data and not isinstance(data["set"], (dict, list, str)):
        raise InputError(f"setting 'set' must be a table or a list of strings (it is {data['set']!r})", where)


def _list(v, where: str, key: str) -> list:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return v
    raise InputError(f"setting '{key}' must be a string or a list of strings", where)


@dataclass(frozen=True)
class Settings:
    """Everything a diagnosis was asked for, merged from the command line and the settings file."""
    packs: tuple[str, ...] = ()            # extra rule pack folders (the file's, then the command line's)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()        # RULE.param=VALUE (the file's, then the command line's: it wins)
    window: tuple[int, int] | None = None
    skip_iterations: int | None = None
    iteration_range: str | None = None
    lang: str = "en"
    scheduler: str | None = None           # local (None), dask or tcp://HOST:PORT; checked by the scheduler
    jobs: int | None = None
    fail_on: str | None = None
    file: str | None = None                # the settings file read, if any


def resolve(cli, cfg: dict | None = None) -> Settings:
    """The settings of a run: ``cli`` holds the command line's values (any object with the attributes
    of :class:`Settings` but ``file``; None or empty: not given), ``cfg`` the settings file's
    (:func:`load`). What the command line gave wins; a list setting is the file's plus the command
    line's (``set``: one value per key, the command line's)."""
    cfg = cfg or {}
    where = cfg.get("_file", "settings")

    def given(name):
        return getattr(cli, name, None)

    file_packs = list(cfg.get("rules", []))
    packs = file_packs + [p for p in given("packs") or () if p not in file_packs]
    sets = cfg.get("set", {})
    from_cfg = [f"{k}={v}" for k, v in sets.items()] if isinstance(sets, dict) else _list(sets, where, "set")
    cli_sets = list(given("overrides") or ())
    keys = {o.split("=", 1)[0] for o in cli_sets}
    skip = given("skip_iterations")
    if skip is None and cfg.get("skip-iterations") is not None:
        skip = int(cfg["skip-iterations"])
    sched = given("scheduler")
    if sched is None and cfg.get("scheduler") is not None:
        sched = str(cfg["scheduler"])
    return Settings(
        packs=tuple(packs),
        select=tuple(given("select") or _list(cfg.get("select"), where, "select")),
        ignore=tuple(given("ignore") or _list(cfg.get("ignore"), where, "ignore")),
        overrides=tuple([o for o in from_cfg if o.split("=", 1)[0] not in keys] + cli_sets),
        window=given("window"),
        skip_iterations=skip,
        iteration_range=given("iteration_range") or (str(cfg["iteration-range"]) if cfg.get("iteration-range") else None),
        lang=given("lang") or cfg.get("lang") or "en",
        scheduler=sched,
        jobs=given("jobs"),
        fail_on=given("fail_on") or cfg.get("fail-on"),
        file=cfg.get("_file"))
