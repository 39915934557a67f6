"""The validated-pack cache: a pack that validated once is kept as JSON in the user's private cache
folder (``nsys_expert.cache``), keyed by the content of every file of the pack, the engine code that
validates it and the tool's version. Split out of ``rules.py`` (loading and validating packs)."""
from __future__ import annotations

import json
import os

from ..safe_open import open_regular
from . import safe_yaml
from .model import Pack, Rule


# A pack that validated once is kept, as JSON, in the user's cache folder (nsys_expert.cache), keyed by the content of every
# file of the pack and the tool's version: validating 30 rules (JSON Schema, templates) costs a
# few hundred ms, which a diagnosis should not pay each time. Any change to a file misses the cache.
# JSON, never pickle: what is read back is data (a planted file cannot run code), and it must have the
# shape of a Pack (else it is ignored and the pack validates again).
def key(folder: str, meta_path: str, paths: list[str]) -> str | None:
    import hashlib

    from .. import __version__

    h = hashlib.sha256(__version__.encode())
    try:
        for code in ("rules.py", "pack_cache.py", "relations.py", os.path.join("conditions", "nodes.py"), "operators.py", "validate.py", "model.py",
                     "sandbox.py", "safe_yaml.py", "rule_schema.json"):
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), code), "rb") as fh:
                h.update(fh.read())
        for p in [meta_path] + paths:
            h.update(os.path.relpath(p, folder).encode())
            with open_regular(p) as fh:    # a FIFO is refused (no key; safe_yaml then says why), never waited on
                h.update(fh.read(safe_yaml.MAX_BYTES + 1))
            cases = os.path.splitext(p)[0] + ".cases.yaml"
            h.update(str(os.path.exists(cases)).encode())
    except OSError:
        return None
    h.update(os.path.abspath(folder).encode())
    return h.hexdigest()


def _file(key: str) -> str | None:
    from .. import cache

    d = cache.folder("packs")
    return os.path.join(d, f"pack-{key[:32]}.json") if d else None


_RULE_FIELDS = None


def _pack_from_json(data) -> Pack | None:
    """A Pack from its JSON form, or None when the data is not exactly that shape."""
    import dataclasses

    global _RULE_FIELDS
    if _RULE_FIELDS is None:
        _RULE_FIELDS = {f.name for f in dataclasses.fields(Rule)}
    pack_fields = {f.name for f in dataclasses.fields(Pack)}
    if not isinstance(data, dict) or set(data) != pack_fields or not isinstance(data["rules"], list):
        return None
    rules = []
    named: tuple = (None, None)    # the last rule's named conditions, (YAML form, parsed): the rules of a pack share them
    for r in data["rules"]:
        if not isinstance(r, dict) or set(r) != _RULE_FIELDS:
            return None
        if r["pack_conditions"] == named[0]:
            r = {**r, "pack_conditions": named[1]}
        rules.append(Rule(**r))
        named = (data["rules"][len(rules) - 1]["pack_conditions"], rules[-1].pack_conditions)
    return Pack(**{**data, "rules": rules})


def _pack_json(pack: Pack) -> dict:
    """The pack as JSON data: its fields, the rules' and the pack's conditions in their YAML form (a
    Rule or Pack made from it parses them again)."""
    import copy
    import dataclasses

    def fields(obj, raw: dict) -> dict:
        return {f.name: copy.deepcopy(raw[f.name] if f.name in raw else getattr(obj, f.name))
                for f in dataclasses.fields(obj)}

    rules = [fields(r, r.conditions_raw()) for r in pack.rules]
    return {**fields(pack, {"rules": None, "conditions": {k: c.raw() for k, c in pack.conditions.items()}}), "rules": rules}


def get(folder: str, meta_path: str, paths: list[str]) -> Pack | None:
    from .. import cache

    k = key(folder, meta_path, paths)
    path = _file(k) if k is not None else None
    if path is None or not os.path.exists(path) or not cache.private_file(path):
        return None
    try:
        with open(path, "rb") as fh:
            raw = fh.read(8 * safe_yaml.MAX_BYTES + 1)
        if len(raw) > 8 * safe_yaml.MAX_BYTES:
            return None
        return _pack_from_json(json.loads(raw))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # a missing, damaged or stale cache only costs a validation
        return None


def put(folder: str, meta_path: str, paths: list[str], pack: Pack) -> None:
    k = key(folder, meta_path, paths)
    path = _file(k) if k is not None else None
    if path is None:
        return
    data = _pack_json(pack)
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):      # a value JSON cannot hold (a YAML date, NaN): not cached
        return
    if json.loads(text) != data:         # keys or types JSON would change (int keys): not cached
        return
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
