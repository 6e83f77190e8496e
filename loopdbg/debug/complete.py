"""Tab completion for what is typed at the UI's prompts: expressions (breakpoints, watches,
inspect, plot), iterations to go to, and node names to find.

``complete(text, cursor, words)`` completes the word that ends at the cursor from ``words``: one
candidate is written out, several are written up to what they share and listed. A model name that
an expression cannot spell bare (``"LSTM/cell:1"``) is written ``t["LSTM/cell:1"]``; inside
``t["`` the quoted name is completed. ``expression_words`` and ``loop_words`` say what there is
to complete from a session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from loopdbg.debug.dotted import quote_dotted_names
from loopdbg.debug.expr import FUNCTIONS

BUILTINS = ("i", "iteration", "cond", "trip_count", "loop")
MAX_LISTED = 12                     # candidates listed under the prompt

_BARE = re.compile(r"[A-Za-z_]\w*")
_WORD = re.compile(r"[A-Za-z_][\w.]*$|$")       # the word before the cursor (maybe empty)
_QUOTED = re.compile(r't\["([^"]*)$')
_TOKEN = re.compile(r"\S*$")                   # a loop path, a node name: up to a space


class Words(list):
    """Words to complete from, and how the word before the cursor is cut out of the text."""

    def __init__(self, words=(), pattern: re.Pattern = _WORD):
        super().__init__(words)
        self.pattern = pattern


@dataclass(frozen=True)
class Word:
    """Something to complete to: ``match`` is what the typed prefix is compared with, ``text``
    what is written (``t["a/b"]`` for the name ``a/b``, ``mean(`` for a function)."""

    match: str
    text: str
    quoted: str = ""                # the name itself, for completing inside t["


@dataclass(frozen=True)
class Completion:
    """What completing at the cursor gives: the new text and cursor, the candidates or why none."""

    text: str
    cursor: int
    choices: tuple[str, ...] = ()   # several candidates: what they are (the prompt lists them)
    message: str = ""               # nothing to complete: why


def name_word(name: str) -> Word:
    """A model value's name as an expression spells it."""
    bare = _BARE.fullmatch(name) is not None or quote_dotted_names(name) != name
    return Word(name, name if bare else f't["{name}"]', quoted=name)


def expression_words(names: Iterable[str], loops: Iterable[str] = ()) -> Words:
    """Model names, the built-ins, the functions and (for a ``loop: condition`` scope) the
    loops' paths."""
    words = [name_word(n) for n in sorted(set(names))]
    words += [Word(b, b) for b in BUILTINS]
    words += [Word(f, f + "(") for f in sorted([*FUNCTIONS, "changed"])]
    words += [Word(p, p + ": ") for p in loops]
    return Words(words)


def loop_words(loops: Iterable[str]) -> Words:
    """Loop paths and their last parts (what the `:` prompt accepts before the numbers)."""
    out: dict[str, Word] = {}
    for path in loops:
        out.setdefault(path, Word(path, path + " "))
        short = path.rsplit("/", 1)[-1]
        out.setdefault(short, Word(short, short + " "))
    return Words(out.values(), _TOKEN)


def plain_words(names: Iterable[str]) -> Words:
    """Names written as they are (the node search)."""
    return Words((Word(n, n) for n in sorted(set(names))), _TOKEN)


def complete(text: str, cursor: int, words: list[Word]) -> Completion:
    """Complete the word that ends at ``cursor`` (see the module docstring)."""
    before, after = text[:cursor], text[cursor:]
    quoted = _QUOTED.search(before)
    if quoted is not None:
        prefix = quoted.group(1)
        found = [w for w in words if w.quoted and w.quoted.startswith(prefix)]
        shown = {w.quoted: w.quoted + '"]' for w in found}
    else:
        prefix = getattr(words, "pattern", _WORD).search(before).group(0)
        found = [w for w in words if w.match.startswith(prefix) or (
            w.quoted and w.text.startswith(prefix) and w.text != w.match)]
        shown = {w.match: w.text for w in found}
    start = cursor - len(prefix)
    if not shown:
        what = f"starts with '{prefix}'" if prefix else "is known here"
        return Completion(text, cursor, message=f"nothing to complete: no name {what}")
    if len(shown) == 1:
        insert = next(iter(shown.values()))
        if quoted is not None and after.startswith('"]'):
            insert = insert[:-2]
        new = text[:start] + insert + after
        return Completion(new, start + len(insert))
    names = sorted(shown)
    common = _common_prefix(names)
    if quoted is None:
        needs_quotes = [shown[n].startswith('t["') for n in names]
        if all(needs_quotes):               # continue inside t["...: the next Tab completes there
            common = 't["' + common
        elif any(needs_quotes) and not re.fullmatch(r"[A-Za-z_][\w.]*", common):
            common = prefix                 # no bare spelling shares more: only list them
    new = text[:start] + common + after
    listed = tuple(names[:MAX_LISTED]) + ((f"... {len(names) - MAX_LISTED} more",)
                                          if len(names) > MAX_LISTED else ())
    return Completion(new, start + len(common), choices=listed)


def _common_prefix(items: list[str]) -> str:
    first, last = min(items), max(items)
    k = 0
    while k < min(len(first), len(last)) and first[k] == last[k]:
        k += 1
    return first[:k]
