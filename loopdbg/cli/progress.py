"""A progress line for long headless runs: on a terminal only, at most a few updates a second."""

from __future__ import annotations

import sys
import time

from loopdbg.text import safe


class Progress:
    """Counts iterations per loop from the event stream and redraws one stderr line now and then."""

    def __init__(self, enabled: bool = True, stream=None, interval: float = 0.25):
        self.stream = stream or sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.interval = interval
        self.start = time.perf_counter()
        self.last_draw = self.start
        self.count = 0
        self.current: tuple[str, int] | None = None
        self.last = None                      # the last IterationDone, for its state on Ctrl+C
        self.drawn = False

    def update(self, event) -> None:
        iteration = getattr(event, "iteration", None)
        if iteration is None:
            return
        self.count += 1
        self.current = (event.path, iteration)
        self.last = event
        if self.enabled and not self.count & 255:
            now = time.perf_counter()
            if now - self.last_draw >= self.interval:
                self.last_draw = now
                self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.count / max(now - self.start, 1e-9)
        path, i = self.current
        self.stream.write(f"\r  loop {safe(path)}: iteration {i}  ({self.count} iterations, "
                          f"{rate:,.0f}/s)  Ctrl+C stops\x1b[K")
        self.stream.flush()
        self.drawn = True

    def summary(self) -> str:
        if self.current is None:
            return "no iteration had finished"
        path, i = self.current
        return f"the last finished iteration was {i} of loop '{safe(path)}' ({self.count} in all)"

    def state(self) -> str | None:
        """The values the last finished iteration passes on (its back edges), one per line."""
        if self.last is None or not self.last.spec.back_edges:
            return None
        from loopdbg.debug.report import fmt_value

        values = {safe(name): v for name, v in self.last.back_edges.items()}
        width = max(len(name) for name in values)
        return "\n".join([f"state after iteration {self.last.iteration} of loop "
                          f"'{safe(self.last.path)}':"] +
                         [f"  {name:<{width}}  {fmt_value(v)}" for name, v in values.items()])

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False
