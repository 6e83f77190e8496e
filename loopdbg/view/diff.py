"""Which values changed since the last stop, decided per name when a face asks (a body of 2,000
values shows a few dozen of them: comparing them all at every stop costs more than the step)."""

from __future__ import annotations

from typing import Any, Hashable, Mapping

from loopdbg.debug.values import same_value


class Changes:
    """``name in changes``: the value called ``name`` differs from the one the previous stop
    showed for the same ``key`` (the loop and its outer iterations); nothing changed after a
    stop of another key (another loop, another execution)."""

    def __init__(self) -> None:
        self._key: Hashable = object()
        self._before: Mapping[str, Any] = {}
        self._now: Mapping[str, Any] = {}
        self._known: dict[str, bool] = {}

    def update(self, key: Hashable, values: Mapping[str, Any]) -> "Changes":
        """A new stop showing ``values`` for ``key``; returns itself."""
        self._before = self._now if key == self._key else {}
        self._key, self._now, self._known = key, values, {}
        return self

    def __contains__(self, name: object) -> bool:
        hit = self._known.get(name)            # type: ignore[arg-type]
        if hit is None:
            old, new = self._before.get(name), self._now.get(name)   # type: ignore[arg-type]
            hit = old is not None and new is not None and not _same(old, new)
            self._known[name] = hit            # type: ignore[index]
        return hit


def _same(a, b) -> bool:
    try:
        return same_value(a, b)
    except Exception:  # noqa: BLE001 - an odd value (a sequence of tensors) counts as changed
        return False
