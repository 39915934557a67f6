"""YAML from a rule pack, read with limits: a pack is someone else's file.

- A document is at most ``MAX_BYTES`` (a rule file is a few KB; the built-in pack's largest is 6 KB).
- Anchors and aliases are allowed, but what they expand to is bounded: a 542-byte alias bomb
  (``a: &a [x, x, ...]; b: &b [*a, *a, ...]; ...``) is a handful of nodes that stand for billions, and
  whatever walks the data afterwards (validation, a cache write) walks all of them. The expanded size
  is counted on the composed node graph (each shared node once, its expansion memoised) before any
  Python object is built; past ``MAX_NODES`` the file is refused.
Only the safe loader is used (plain data, no tags that run code). Errors are RuleError: one line,
naming the file.
"""
from __future__ import annotations

import yaml

from ..errors import RuleError
from ..safe_open import open_regular

MAX_BYTES = 1 << 20          # 1 MiB per YAML document
MAX_NODES = 100_000          # nodes a document may expand to, aliases counted at their full size
MAX_DEPTH = 64               # nesting (a rule's deepest condition is 5 levels; 10,000 levels exhaust the stack)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: str) -> str:
    """A YAML file's text, refused (RuleError) past MAX_BYTES or when it is not UTF-8."""
    try:
        with open_regular(path) as fh:      # a FIFO as a rule file is refused, not waited on
            raw = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise RuleError(f"cannot read the file ({e.strerror or e})", path) from e
    if len(raw) > MAX_BYTES:
        raise RuleError(f"the file is larger than {MAX_BYTES // 1024} KB: a rule pack's YAML is a few KB; "
                        "split it or shorten it", path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleError(f"the file is not UTF-8 ({e.reason} at byte {e.start})", path) from e


class _TooDeep(Exception):
    pass


def _expanded_size(root) -> int:
    """Nodes the graph stands for when every alias is expanded (stops counting past MAX_NODES)."""
    memo: dict[int, int] = {}
    on_path: set[int] = set()

    def size(node, depth: int = 0) -> int:
        if depth > MAX_DEPTH:
            raise _TooDeep()
        key = id(node)
        if key in memo:
            return memo[key]
        if key in on_path:                      # a recursive alias: unbounded
            return MAX_NODES + 1
        on_path.add(key)
        n = 1
        if isinstance(node, yaml.SequenceNode):
            for c in node.value:
                n += size(c, depth + 1)
                if n > MAX_NODES:
                    break
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                n += size(k, depth + 1) + size(v, depth + 1)
                if n > MAX_NODES:
                    break
        on_path.discard(key)
        memo[key] = n
        return n

    return size(root)


def loads(text: str, path: str):
    """Parse one YAML document with the limits above; YAMLError passes through (callers word it)."""
    if len(text) > MAX_BYTES:
        raise RuleError(f"the document is larger than {MAX_BYTES // 1024} KB", path)
    node = yaml.compose(text, Loader=_LOADER)
    try:
        big = node is not None and _expanded_size(node) > MAX_NODES
    except _TooDeep:
        raise RuleError(f"the YAML is nested more than {MAX_DEPTH} levels deep; flatten the conditions", path) from None
    if big:
            raise RuleError(f"YAML anchors and aliases expand to more than {MAX_NODES:,} values (an alias bomb?); "
                            "write the values out or use fewer aliases", path)
    return yaml.load(text, Loader=_LOADER)


def load_file(path: str):
    return loads(read_text(path), path)
