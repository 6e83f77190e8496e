"""Text from files made safe for a terminal: every control character shown, none obeyed.

Names in a model (layers, tensors, npz keys, ONNX values), trace headers and paths are chosen by
whoever wrote the file. Printed raw, an ESC can clear the screen, retitle the terminal or write
the clipboard (OSC 52), a bidi override can make a line read differently from its bytes, and a
newline can make a one-sentence error look like two, the second one forged. So everything loopdbg
prints goes through one of these two functions:

* ``safe(text)``: one line; every control character is shown as an escape (``\\x1b``, ``\\n``,
  ``\\u202e``). Use it for a name (or anything from a file) put into a line, and for an error.
* ``safe_lines(text)``: the same, but the newlines stay (for a report loopdbg laid out itself,
  whose names were already passed through ``safe``).

What is escaped: C0 controls (U+0000-U+001F, tab and newline included), DEL, C1 controls
(U+0080-U+009F, the 8-bit CSI and OSC among them), the bidi marks, embeddings, overrides and
isolates (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), the line and paragraph
separators (U+2028, U+2029) and lone surrogates (a file name that is not UTF-8, which would
otherwise make the print itself fail). Both functions are idempotent: escaped text has no control
character left, so escaping it again changes nothing.
"""

from __future__ import annotations

import re

__all__ = ["safe", "safe_lines", "listing", "short"]

# One pattern (each costs ~1 ms to compile), compiled at its first use (``loopdbg run -q`` has
# none): ``safe`` escapes the newlines after.
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_BUT_NEWLINE: list[re.Pattern] = []
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe(text) -> str:
    """``text`` (any object: ``str()`` of it) on one line, every control character escaped."""
    text = safe_lines(text)
    return text.replace("\n", _NAMED["\n"]) if "\n" in text else text


def safe_lines(text) -> str:
    """``text`` with every control character escaped except the newlines between its lines."""
    text = text if isinstance(text, str) else str(text)
    if not _BUT_NEWLINE:
        _BUT_NEWLINE.append(re.compile(f"[\x00-\x09\x0b-\x1f{_OTHERS}]"))
    pattern = _BUT_NEWLINE[0]
    return pattern.sub(_escape, text) if pattern.search(text) else text


def byte_size(n: float) -> str:
    """Bytes as people read them: 512 bytes, 3.0 MiB, 2.0 GiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


LISTED = 8              # names a message lists before "... and N more"
LINE = 1000             # characters of an error line before it is cut


def listing(items, limit: int = LISTED, sep: str = ", ") -> str:
    """At most ``limit`` of ``items`` (strings, or anything ``str()`` of which is wanted), joined,
    then "... and N more": a file with 200,000 members keeps its message one short line."""
    shown, more = [], 0
    for item in items:
        if len(shown) < limit:
            shown.append(item if isinstance(item, str) else str(item))
        else:
            more += 1
    return sep.join(shown) + (f"{sep}... and {more} more" if more else "")


def short(text: str, limit: int = LINE) -> str:
    """``text`` cut to about ``limit`` characters, saying how many more there were (the last
    defence for a message that lists what a file holds)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} ... ({len(text) - limit} more characters)"
