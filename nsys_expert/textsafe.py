"""Text from a profile or a file name, made safe to show: a terminal must not obey an escape
sequence hidden in a file name, and a reader of the Markdown or HTML report must see a kernel name as
it is, not reordered by a right-to-left override or split by invisible characters.

Control characters (C0 but newline and tab, DEL, C1), bidirectional controls (U+202A-202E,
U+2066-2069, U+200E/F, U+061C) and zero-width or invisible characters (U+200B-200D, U+2060-2064,
U+FEFF, U+180E, U+00AD) are written as visible escapes: ``\\x1b``, ``\\u202e``.
"""
from __future__ import annotations

import re

_INVISIBLE = ("\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
              "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff")
_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _INVISIBLE + "]")
_LINE = re.compile("[\x00-\x1f\x7f-\x9f" + _INVISIBLE + "]")


def _escape(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """A report's text with every hidden or controlling character shown as an escape (newlines and
    tabs kept)."""
    return _TEXT.sub(_escape, text) if _TEXT.search(text) else text


def one_line(text: str) -> str:
    """A message for the terminal: one line, every control character (newlines too) escaped."""
    return _LINE.sub(_escape, text)
