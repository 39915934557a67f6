"""``Reads``: the read-only mapping view of a slots dataclass (``e["fact"]``, ``s.get("because")``) for the
rule cases, tests and templates that read a typed value as the report's dict; new code reads the attributes.
An optional field that is ``None`` reads as absent (``get`` gives its default). Shared by the engine's
finding parts and the facts' ``Location``, which sit in different layers."""
from __future__ import annotations


class Reads:
    __slots__ = ()
    __getitem__ = object.__getattribute__      # C-level: a Python method took 3x a dict's time

    def get(self, key: str, default=None):
        v = getattr(self, key, None)
        return default if v is None else v

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, None) is not None
