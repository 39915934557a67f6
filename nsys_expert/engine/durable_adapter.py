"""The only module that imports durable-rules. It owns every workaround from notes/durable-rules.md.

- ``_SyncHost``: the stock Host starts two timer threads that never stop and run actions late on
  another thread; overriding ``_run`` keeps everything synchronous in the caller's thread.
- More than 256 rules on one node of the network are refused (error 108): rules are split over
  rulesets of at most CHUNK rules, and every fact batch is asserted into each.
- Every rule has a ``cap`` (compiler.CAP): one action call gets all the facts the rule matched.
- Rulesets are compiled once per definition and reused (rulesets and regex state machines leak if
  created per diagnosis); each diagnosis runs in a fresh session id that is deleted afterwards
  (at most 1,024 live sessions per ruleset).
- ``set_rulesets`` mutates its argument: it gets a deep copy.
- Facts get a unique ``id`` (content hashes collide), reserved keys are refused, values are
  sanitised (no None / NaN / inf, no exponent-without-dot floats, strings cut to 4 KB).
- Facts are asserted in batches of BATCH, each in its own session: a catch-all rule (in the definition) makes every fact handled,
  so no batch is held back. Actions only record; errors inside them are collected and raised.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import threading
import traceback
import uuid
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"durable\.engine")

from durable import engine  # noqa: E402

from .compiler import RESERVED, SINK, safe_number  # noqa: E402

MAX_STR = 4096
MAX_PROPS = 240
RULESET = "nsx"
# durable's C engine links at most 256 rules to one node of its network (BETA_LIST_LENGTH; error 108 at
# "Could not create ruleset"): 258 rules on the same condition fail. Rules are split over several rulesets
# of at most CHUNK rules each (one host; the facts are asserted into each), which lifts the limit.
CHUNK = 200
# ... and it aborts the process (free(): invalid pointer, exit 134) when one ruleset tests one fact
# against more than about 64 different conditions (65 rules `a >= i/n` pass, 70 abort): a chunk also
# holds at most PER_FACT different conditions on any one fact (_chunks), so 10,000 rules on one fact run
PER_FACT = 48
BATCH = 1000          # facts asserted per session (see Engine.run)


def _leaves(d, out: set) -> set:
    """The (fact, condition) leaves of a pattern: ``{"$gte": {"a0": 0.5}}`` -> ("a0", '$gte 0.5')."""
    if isinstance(d, dict):
        for k, v in d.items():
            if k in ("$and", "$or"):
                for x in v if isinstance(v, list) else []:
                    _leaves(x, out)
            elif k in _CMP and isinstance(v, dict):
                for f, x in v.items():
                    out.add((f, f"{k} {x!r}"))
            elif not k.startswith("$"):
                out.add((k, f"= {v!r}"))
    return out


def _chunks(names: list[str], definition: dict) -> list[list[str]]:
    """The rules in order, split into rulesets of at most CHUNK rules and PER_FACT different conditions
    on any one fact (see PER_FACT)."""
    chunks: list[list[str]] = [[]]
    seen: dict[str, set] = {}
    for n in names:
        leaves: set = set()
        for c in definition[n].get("all", []) if isinstance(definition[n], dict) else []:
            _leaves(c.get("m") if isinstance(c, dict) else None, leaves)
        grow = {f: seen.get(f, set()) | {cond for g, cond in leaves if g == f} for f, _ in leaves}
        if chunks[-1] and (len(chunks[-1]) >= CHUNK or any(len(v) > PER_FACT for v in grow.values())):
            chunks.append([])
            seen = {}
            grow = {f: {cond for g, cond in leaves if g == f} for f, _ in leaves}
        chunks[-1].append(n)
        seen.update(grow)
    return chunks


class _SyncHost(engine.Host):
    def __init__(self, actions):
        self._actions = actions
        super().__init__()

    def _run(self):  # no dispatcher threads
        pass

    def get_action(self, action_name):
        return self._actions[action_name]


_CMP = frozenset({"$lt", "$lte", "$gt", "$gte", "$neq", "$ex", "$nex", "$mt", "$imt"})


def _fnv1(name: str) -> int:
    h = 0x811C9DC5
    for b in name.encode():
        h = (h * 0x01000193) & 0xFFFFFFFF ^ b
    return h


def aliases(definition: dict) -> dict[str, str] | None:
    """Short names for the facts the rules read ({fact: "a0", ...}), or None when a condition has a shape
    not known here (then the facts keep their names). The engine passes every matched fact back to its
    action as JSON: at 1,000 kernel facts, decoding the long names cost ~10 ms. A fact's keys that no
    rule names are not sent (no condition can see them)."""
    names: list[str] = []

    def rhs(v) -> bool:
        if isinstance(v, dict):
            if set(v) == {"$m"} and isinstance(v["$m"], str):
                names.append(v["$m"])
                return True
            if len(v) == 1 and next(iter(v)) in ("$mul", "$add"):
                inner = next(iter(v.values()))
                return isinstance(inner, dict) and set(inner) == {"$l", "$r"} and rhs(inner["$l"]) and rhs(inner["$r"])
            return False
        return not isinstance(v, list)

    def pattern(d) -> bool:
        if not isinstance(d, dict):
            return False
        for k, v in d.items():
            if k in ("$and", "$or"):
                if not isinstance(v, list) or not all(pattern(x) for x in v):
                    return False
            elif k in _CMP:
                if not isinstance(v, dict) or len(v) != 1:
                    return False
                fact, val = next(iter(v.items()))
                if fact.startswith("$") or not rhs(val):
                    return False
                names.append(fact)
            elif k.startswith("$") or not rhs(v):
                return False
            else:
                names.append(k)
        return True

    for rule in definition.values():
        conds = rule.get("all") if isinstance(rule, dict) else None
        if not isinstance(conds, list) or not all(isinstance(c, dict) and set(c) == {"m"} and pattern(c["m"]) for c in conds):
            return None
    out: dict[str, str] = {}
    for n in names:
        if n not in RESERVED and n not in out:
            out[n] = f"a{len(out)}"
    # durable keys properties by a 32-bit FNV-1 hash of the name: the short names must not collide
    hashes = {_fnv1(n) for n in list(out.values()) + sorted(RESERVED)}
    return out if len(hashes) == len(out) + len(RESERVED) else None


def _rename(d, alias: dict[str, str]):
    """A pattern (or right-hand side) with the facts' short names."""
    if isinstance(d, list):
        return [_rename(x, alias) for x in d]
    if not isinstance(d, dict):
        return d
    out = {}
    for k, v in d.items():
        if k == "$m":
            out[k] = alias.get(v, v)
        elif k in _CMP:
            out[k] = {alias.get(f, f): _rename(x, alias) for f, x in v.items()}
        else:
            out[alias.get(k, k)] = _rename(v, alias)
    return out


def clean_fact(kind: str, n: int, fact: dict, alias: dict[str, str] | None = None) -> dict:
    if alias is not None and len(fact) <= MAX_PROPS:
        return _clean_aliased(kind, n, fact, alias)
    out = {"kind": kind, "id": f"{kind}:{n}"}
    items = [(k, v) for k, v in fact.items() if v is not None]
    if len(items) > MAX_PROPS:
        items = items[:MAX_PROPS]
    for k, v in items:
        if k in RESERVED:
            raise ValueError(f"fact key {k!r} is reserved by the rules engine")
        if alias is not None:
            k = alias.get(k)
            if k is None:        # no rule names it
                continue
        t = type(v)
        if t is float:     # the common case, checked inline (a call per value cost ~10 ms per 1,000 facts)
            if not math.isfinite(v):
                continue
            # repr writes an exponent only below 1e-4 or from 1e16 up: only those can need safe_number
            if v and not 1e-4 <= abs(v) < 1e16:
                v = safe_number(v)
            out[k] = v
            continue
        if isinstance(v, float) and not math.isfinite(v):
            continue
        if isinstance(v, str) and len(v) > MAX_STR:
            v = v[:MAX_STR]
        if isinstance(v, (dict, list)):
            continue
        out[k] = safe_number(v)
    return out


_SKIP = object()


def _value(v):
    """clean_fact's value: a finite float (a safe number outside 1e-4..1e16), an int or bool as it is, a
    string cut to MAX_STR, nothing (``_SKIP``) for None, a dict, a list or a non-finite float."""
    t = type(v)
    if t is float:
        if not math.isfinite(v):
            return _SKIP
        return safe_number(v) if v and not 1e-4 <= abs(v) < 1e16 else v
    if t is int or t is bool:
        return v
    if v is None:
        return _SKIP
    if t is str:
        return v[:MAX_STR] if len(v) > MAX_STR else v
    if isinstance(v, (dict, list)) or (isinstance(v, float) and not math.isfinite(v)):
        return _SKIP
    return safe_number(v[:MAX_STR] if isinstance(v, str) and len(v) > MAX_STR else v)


def _clean_named(kind: str, n: int, fact: dict, names: list[tuple[str, str]]) -> dict:
    """clean_fact of the fact cut down to ``names`` ([(name, alias)], no reserved one), looked up one by
    one (a kernel fact has ~60 values, the rules read ~20): the same values (in the order of ``names``:
    the engine reads a fact by its names)."""
    out = {"kind": kind, "id": f"{kind}:{n}"}
    get = fact.get
    for k, a in names:
        v = get(k)
        v = _value(v)
        if v is not _SKIP:
            out[a] = v
    return out


def _clean_aliased(kind: str, n: int, fact: dict, alias: dict[str, str]) -> dict:
    """clean_fact for a fact of at most MAX_PROPS values whose names are aliased (the common case, one
    pass with the checks inline): the same fact."""
    out = {"kind": kind, "id": f"{kind}:{n}"}
    for k, v in fact.items():
        a = alias.get(k)
        if a is None:          # no rule names it (an alias is never a reserved name)
            if k in RESERVED and v is not None:
                raise ValueError(f"fact key {k!r} is reserved by the rules engine")
            continue
        v = _value(v)
        if v is not _SKIP:
            out[a] = v
    return out


class Engine:
    """One compiled ruleset; ``run`` is safe to call many times (and from several threads)."""

    def __init__(self, definition: dict):
        self.definition = definition
        self._lock = threading.Lock()
        self._runs: dict[str, list] = {}
        self._errors: dict[str, list] = {}
        actions = {name: self._make_action(name) for name in definition if name != SINK}
        actions[SINK] = lambda c: None
        self._host = _SyncHost(actions)
        self._alias = aliases(definition)
        if self._alias is not None:
            definition = {name: {**rule, "all": [{"m": _rename(c["m"], self._alias)} for c in rule["all"]]}
                          for name, rule in definition.items()}
        names = [n for n in definition if n != SINK]
        chunks = _chunks(names, definition)
        self._rulesets = [f"{RULESET}{i}" for i in range(len(chunks))]
        rulesets = {rs: {**{n: definition[n] for n in chunk}, **({SINK: definition[SINK]} if SINK in definition else {})}
                    for rs, chunk in zip(self._rulesets, chunks)}
        try:
            # each ruleset gets its own deep copy (set_rulesets deletes the ``run`` keys, and the sink is in every one)
            self._host.set_rulesets({rs: copy.deepcopy(d) for rs, d in rulesets.items()})
        except Exception as e:  # the C engine says only "error code N": a condition it cannot take (a rule's, not ours)
            from ..errors import RuleError
            raise RuleError(f"the rules engine refused the compiled rules ({e}): a condition it cannot take, such as a "
                            f"string test on a numeric fact or a pattern with characters its matcher rejects",
                            None, "simplify the rule's conditions (check-rules names the rule)") from e

    def _make_action(self, name: str):
        def action(c):
            try:
                self._record(c, name)
            except Exception:  # durable would swallow it into state['exception']: collect, raise later
                self._errors.setdefault(c.s.sid, []).append(traceback.format_exc())
        return action

    def _clean_kept(self, facts: list[tuple[str, dict]], keys: dict[str, set]) -> list[dict]:
        alias = self._alias
        kept: dict[str, list | None] = {}      # kind -> [(name, alias)] of the names kept (None: the general path)
        out = []
        for i, (kind, f) in enumerate(facts):
            names = keys.get(kind, ())
            a = kept.get(kind, False)
            if a is False:
                a = kept[kind] = None if alias is None or any(k in RESERVED for k in names) else \
                    [(k, alias[k]) for k in sorted(names) if k in alias]
            if a is None or len(f) > MAX_PROPS:
                out.append(clean_fact(kind, i, {k: v for k, v in f.items() if k in names}, alias))
            else:
                out.append(_clean_named(kind, i, f, a))
        return out

    def _record(self, c, name: str) -> None:
        m = c.m            # a list of facts: the rules have a ``cap`` (compiler.CAP)
        self._runs[c.s.sid].extend((name, f["id"]) for f in (m if isinstance(m, list) else [m]))

    def run(self, facts: list[tuple[str, dict]], keys: dict[str, set] | None = None) -> list[tuple[str, str]]:
        """Assert ``[(kind, fact)]``; -> ``[(durable rule name, fact id)]`` in firing order, deduplicated.
        ``keys``: {kind: the names of a fact of that kind to send}, the others dropped (as if the facts held
        only those); in one pass with the cleaning when the facts' names have short aliases."""
        if keys is None:
            batch = [clean_fact(kind, i, f, self._alias) for i, (kind, f) in enumerate(facts)]
        else:
            batch = self._clean_kept(facts, keys)
        fired: list = []
        errors: list = []
        with self._lock:
            # facts never join (one pattern per rule), so they go in parts of BATCH, each in a session of
            # its own: durable's cost per fact grows with the facts a session holds (10,000 in one: 30x the
            # time of 1,000)
            for start in range(0, max(len(batch), 1), BATCH):
                part = batch[start:start + BATCH]
                sid = uuid.uuid4().hex
                self._runs[sid] = []
                try:
                    for f in part:
                        f["sid"] = sid
                    for rs in self._rulesets:
                        try:
                            if part:
                                self._host.assert_facts(rs, part)
                        finally:
                            try:
                                self._host.delete_state(rs, sid)
                            except Exception:  # noqa: BLE001 - a state that was never created
                                pass
                finally:
                    fired += self._runs.pop(sid, [])
                    errors += self._errors.pop(sid, [])
        if errors:
            raise RuntimeError("a rule action failed inside the engine:\n" + errors[0])
        seen, out = set(), []
        for item in fired:
            if item not in seen:
                seen.add(item)
                out.append(item)
        return out


_CACHE: dict[str, Engine] = {}
_CACHE_LOCK = threading.Lock()


def engine_for(definition: dict) -> Engine:
    """The compiled engine for a definition, built once per process."""
    key = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()
    with _CACHE_LOCK:
        eng = _CACHE.get(key)
        if eng is None:
            eng = _CACHE[key] = Engine(definition)
        return eng
