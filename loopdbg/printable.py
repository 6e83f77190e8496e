"""Text from a file made safe for a terminal: what cannot be printed is shown as an escape.

Names in a model (ONNX tensor names, IR layer names) can hold anything: a newline that would fake
a line of a report, an ESC that would start a terminal control sequence, a right-to-left
override. ``printable`` turns every character Python does not call printable (besides the plain
space) into its escape (``\\n``, ``\\x1b``, ``\\u202e``), so one line stays one line.
"""

from __future__ import annotations

_SIMPLE = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with every unprintable character escaped (printable text comes back as it is)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _SIMPLE.get(ch) or _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"
