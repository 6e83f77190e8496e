"""The UI targets of tests/benchmark.py: first screen, and keypress `n` to the refreshed screen."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LSTM = ROOT / "tests" / "corpus" / "ti_lstm_forward"


def ui_rows(rows) -> None:
    """Key to refreshed panels: from the `n` action starting (what a key press calls) to the end
    of the Stopped handler that redraws every panel, through the worker thread and back. The
    pilot's own press() also waits for the test harness to go idle, so it is not the clock."""
    from loopdbg.debug import Session
    from loopdbg.tui.app import LoopdbgApp

    marks: dict[str, float] = {}

    class Timed(LoopdbgApp):
        def action_command(self, name):
            marks["key"] = time.perf_counter()
            super().action_command(name)

        def refresh_all(self, stop):
            super().refresh_all(stop)
            marks["drawn"] = time.perf_counter()

    async def measure():
        t0 = time.perf_counter()
        session = Session.open(LSTM / "model.xml", LSTM / "inputs.npz")
        app = Timed(session, title="bench")
        async with app.run_test(size=(160, 48)) as pilot:
            while app.busy or app.last_stop.event is None:
                await pilot.pause(0.005)
            await pilot.pause()
            first = time.perf_counter() - t0
            times = []
            for _ in range(3):                          # the LSTM runs 5 iterations: n, n, n
                before = app.last_stop
                await pilot.press("n")
                while app.busy or app.last_stop is before:
                    await pilot.pause(0.001)
                times.append(marks["drawn"] - marks["key"])
            return first, min(times)

    first, key = asyncio.run(measure())
    rows.append(("UI: first screen (LSTM TensorIterator)", f"{first * 1e3:.0f} ms", "", "",
                 "< 1500 ms", first < 1.5))
    rows.append(("UI: key n to refreshed panels", f"{key * 1e3:.0f} ms", "", "", "< 50 ms",
                 key < 0.05))
