"""What a fact group really reads and puts, recorded while it runs (issue 59, item 4).

Each group declares what it reads and puts (``declare.Group``); ``facts/order.py`` derives the order from
those declarations. This module checks them against what the code does: :func:`watch` swaps the fact
set's mappings (facts, absent reasons, sources, tiers, tables, the kernels' rows, the shared ``Work``) and
the profile's tables for recording ones, so each access is noted under the group that runs, as an item of
the same vocabulary the declarations use (``declare.py``: ``fact:iter_count``, ``absent:...``, ``source:...``,
``table:iterations``, ``work:busy``, ``input:gpu_trace``, ``kernel:class``, ``kernels``, ``warnings``, ...).
``tests/facts/test_group_order.py`` runs real profiles this way, one group at a time in the derived order,
and fails on an item a group touched but did not declare. Never used outside that check: the normal run
keeps plain dicts.
"""
from __future__ import annotations

import dataclasses
import threading

from .base import FactSet, Work

_NOW = threading.local()


class Log:
    """Per group: the items it read and the items it put."""

    def __init__(self) -> None:
        self.reads: dict[str, set[str]] = {}
        self.puts: dict[str, set[str]] = {}
        self.group: str | None = None

    def read(self, item: str) -> None:
        if self.group is not None:
            self.reads.setdefault(self.group, set()).add(item)

    def put(self, item: str) -> None:
        if self.group is not None:
            self.puts.setdefault(self.group, set()).add(item)


class _Dict(dict):
    """A dict that notes each key read (``get``, ``[]``, ``in``) and put (``[]=``, ``pop``, ``setdefault``,
    ``update``) as ``<kind>:<key>``; iterating all the keys is ``<kind>:*``."""
    __slots__ = ("log", "kind")

    def __init__(self, data, log: Log, kind: str) -> None:
        super().__init__(data)
        self.log, self.kind = log, kind

    def _r(self, key) -> None:
        self.log.read(f"{self.kind}:{key}")

    def _w(self, key) -> None:
        self.log.put(f"{self.kind}:{key}")

    def __getitem__(self, key):
        self._r(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._r(key)
        return super().get(key, default)

    def __contains__(self, key) -> bool:
        self._r(key)
        return super().__contains__(key)

    def __iter__(self):
        self._r("*")
        return super().__iter__()

    def keys(self):
        self._r("*")
        return super().keys()

    def items(self):
        self._r("*")
        return super().items()

    def values(self):
        self._r("*")
        return super().values()

    def __setitem__(self, key, value) -> None:
        self._w(key)
        super().__setitem__(key, value)

    def pop(self, key, *default):
        self._w(key)
        return super().pop(key, *default)

    def setdefault(self, key, default=None):      # put unless put before: a write, ordered like one
        self._w(key)
        return super().setdefault(key, default)

    def update(self, *args, **kw) -> None:
        for k in dict(*args, **kw):
            self._w(k)
        super().update(*args, **kw)


class _Rows(list):
    """The kernels' rows: reading the list is ``kernels``, growing it puts ``kernels``; each row notes its
    facts as ``kernel:<fact>``."""

    def __init__(self, rows, log: Log) -> None:
        super().__init__(r if isinstance(r, _Dict) else _Dict(r, log, "kernel") for r in rows)
        self.log = log

    def __iter__(self):
        self.log.read("kernels")
        return super().__iter__()

    def __getitem__(self, i):
        self.log.read("kernels")
        return super().__getitem__(i)

    def __len__(self) -> int:
        self.log.read("kernels")
        return super().__len__()

    def append(self, row) -> None:
        self.log.put("kernels")
        super().append(row if isinstance(row, _Dict) else _Dict(row, self.log, "kernel"))


class _Work(Work):
    """``Work`` whose fields note ``work:<field>`` when read or set."""

    def __getattribute__(self, name):
        if name in _WORK_FIELDS:
            object.__getattribute__(self, "_log").read("work:" + name)
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value) -> None:
        if name in _WORK_FIELDS:
            object.__getattribute__(self, "_log").put("work:" + name)
        object.__setattr__(self, name, value)


_WORK_FIELDS = frozenset(f.name for f in dataclasses.fields(Work))


class _FactSet(FactSet):
    """A fact set that notes what is put into it besides its mappings: the kernels' rows as a whole
    (``fs.kernels = rows``), the warnings, the places (``where``), what a rank sends the job."""

    def __setattr__(self, name, value) -> None:
        log = self.__dict__.get("_log")
        if log is not None and name == "kernels":
            log.put("kernels")
            value = _Rows(value, log)
        object.__setattr__(self, name, value)

    def __getattribute__(self, name):
        d = object.__getattribute__(self, "__dict__")
        log = d.get("_log")
        if log is not None:
            if name == "warnings":
                log.put("warnings")
            elif name == "where":
                log.put("where")
            elif name == "share":
                log.put("share")
        return object.__getattribute__(self, name)

    def put(self, name: str, value, source: str | None, tier: str | None = None) -> None:
        self.__dict__["_log"].put("fact:" + name)
        FactSet.put(self, name, value, source, tier)


def watch(ctx, log: Log):
    """``ctx`` with a recording fact set and profile (copies of the same data): run each group with
    ``log.group`` set to its name, then :func:`unwatch` puts the data back into the plain fact set."""
    fs = ctx.fs
    w = _Work.__new__(_Work)
    object.__setattr__(w, "_log", log)
    for f in dataclasses.fields(Work):
        object.__setattr__(w, f.name, getattr(fs.work, f.name))
    rec = _FactSet.__new__(_FactSet)
    rec.__dict__.update(fs.__dict__)
    rec.__dict__.update(run=_Dict(fs.run, log, "fact"), absent=_Dict(fs.absent, log, "absent"),
                        sources=_Dict(fs.sources, log, "source"), tiers=_Dict(fs.tiers, log, "fact"),
                        tables=_Dict(fs.tables, log, "table"), kernels=_Rows(fs.kernels, log), work=w)
    rec.__dict__["_log"] = log
    prof = dataclasses.replace(ctx.prof, tables=_Dict(ctx.prof.tables, log, "input"))
    return dataclasses.replace(ctx, fs=rec, prof=prof)


def unwatch(ctx, into: FactSet) -> FactSet:
    """Put what a watched context's fact set holds back into the plain fact set ``into`` (plain dicts and
    lists again) and return it."""
    d = ctx.fs.__dict__
    for f in dataclasses.fields(Work):
        setattr(into.work, f.name, object.__getattribute__(d["work"], f.name))
    for f in dataclasses.fields(FactSet):
        if f.name != "work":
            setattr(into, f.name, d[f.name])
    into.run, into.absent, into.sources, into.tiers, into.tables = (
        dict(d["run"]), dict(d["absent"]), dict(d["sources"]), dict(d["tiers"]), dict(d["tables"]))
    into.kernels = [dict(r) for r in list.__iter__(d["kernels"])]
    return into


def run(ctx, sequence, log: Log) -> None:
    """Run the groups of ``sequence`` one after the other, each watched under its name (a runner for
    ``facts.compute``)."""
    w = watch(ctx, log)
    try:
        for g in sequence:
            log.group = g.name
            g.run(w)
    finally:
        log.group = None
        unwatch(w, ctx.fs)
