"""Finding nodes of a body by name or type: every match in order, and which one the cursor is on.

    found = Search.of(items, "add")          # items: (id, name, type) in reading order
    found.ids, found.total                   # every match; how many
    box_id = found.move(current, +1)         # the next match after box ``current`` (wrapping)
    found.status()                           # "match 2 of 5"

No UI toolkit: the terminal UI's graph keeps one ``Search`` while the same text is searched
again (``/`` Enter, F3), so "k of n" counts over one list.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Search:
    """The matches of ``needle`` among a body's items, in order: a group named exactly so,
    then the names holding it, then the types holding it (``Add`` finds every Add)."""

    needle: str
    ids: tuple[int, ...]
    names: tuple[str, ...]
    position: int = -1                  # the index in ``ids`` the cursor was last moved to

    @classmethod
    def of(cls, items, needle: str) -> "Search":
        needle = needle.strip().lower()
        items = list(items)
        order: dict[int, str] = {}
        if needle:
            for it in items:
                if it[2] == "group" and it[1].lower() == needle:
                    order.setdefault(it[0], it[1])
            for field in (1, 2):
                for it in items:
                    if needle in it[field].lower():
                        order.setdefault(it[0], it[1])
        return cls(needle, tuple(order), tuple(order.values()))

    @property
    def total(self) -> int:
        return len(self.ids)

    def move(self, current: int | None, step: int = 1) -> "Search":
        """The search with its cursor on the match ``step`` places from ``current`` (the box
        under the cursor; not a match or None: the first match, or the last going back)."""
        if not self.ids:
            return self
        if self.position >= 0 and self.ids[self.position] == current:
            at = (self.position + step) % len(self.ids)
        elif current in self.ids:
            at = (self.ids.index(current) + step) % len(self.ids)
        else:
            at = 0 if step > 0 else len(self.ids) - 1
        return Search(self.needle, self.ids, self.names, at)

    @property
    def id(self) -> int | None:
        return self.ids[self.position] if self.position >= 0 else None

    @property
    def name(self) -> str | None:
        return self.names[self.position] if self.position >= 0 else None

    def status(self) -> str:
        """``match 2 of 5`` (or ``no match``)."""
        if not self.ids:
            return "no match"
        return f"match {self.position + 1} of {len(self.ids)}"
