"""Settings from ``[tool.nsys-expert]`` in pyproject.toml or an ``nsys-expert.toml`` (the CLI wins).

Keys: ``rules`` (pack folders, relative to the settings file), ``select``, ``ignore`` (rule ids or
categories), ``set`` (a table ``{"rule.param" = value}`` or a list of ``"rule.param=value"``),
``fail-on``, ``lang``, ``skip-iterations``, ``iteration-range``, ``scheduler`` (``local``, ``dask`` or
``tcp://HOST:PORT``: where a multi-rank job's per-rank work runs, docs/multi-rank.md).
"""
from __future__ import annotations

import os
import tomllib

from .errors import InputError

KEYS = {"rules", "select", "ignore", "set", "fail-on", "lang", "skip-iterations", "iteration-range", "scheduler"}


def load(path: str | None = None) -> dict:
    """The settings (empty when there is no file). ``path`` forces a file."""
    candidates = [path] if path else ["nsys-expert.toml", "pyproject.toml"]
    for c in candidates:
        if not c or not os.path.exists(c):
            if path:
                raise InputError("no such settings file", path)
            continue
        try:
            with open(c, "rb") as fh:
                data = tomllib.load(fh)
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


def merge(cfg: dict, req):
    """Fill the request from the settings; what the command line gave wins."""
    if not cfg:
        if req.lang is None:
            req.lang = "en"
        return req
    where = cfg.get("_file", "settings")
    req.packs = list(cfg.get("rules", [])) + [p for p in req.packs if p not in cfg.get("rules", [])]
    if not req.select:
        req.select = _list(cfg.get("select"), where, "select")
    if not req.ignore:
        req.ignore = _list(cfg.get("ignore"), where, "ignore")
    sets = cfg.get("set", {})
    if isinstance(sets, dict):
        from_cfg = [f"{k}={v}" for k, v in sets.items()]
    else:
        from_cfg = _list(sets, where, "set")
    given = {o.split("=", 1)[0] for o in req.overrides}
    req.overrides = [o for o in from_cfg if o.split("=", 1)[0] not in given] + list(req.overrides)
    if req.lang is None:
        req.lang = cfg.get("lang", "en")
    if getattr(req, "iteration_range", None) is None and cfg.get("iteration-range"):
        req.iteration_range = str(cfg["iteration-range"])
    if getattr(req, "scheduler", None) is None and cfg.get("scheduler") is not None:
        req.scheduler = str(cfg["scheduler"])
    if req.skip_iterations is None and cfg.get("skip-iterations") is not None:
        req.skip_iterations = int(cfg["skip-iterations"])
    return req
