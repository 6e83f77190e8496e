"""Each demo of ``loopdbg/demos/`` opens in the debugger and its lesson's keys work (the demos'
files and runs are tested in ``tests/unit/test_demos.py``). Here, with the UI tests' rules
(``conftest.py``): frames drawn when read, an internal error fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

DEMOS_DIR = Path(__file__).resolve().parents[2] / "loopdbg" / "demos"
NAMES = sorted(p.name for p in DEMOS_DIR.iterdir() if (p / "model.xml").exists())
CAPS = {"infinite_loop": 20}        # its lesson runs it with --max-iterations 20


@pytest.mark.parametrize("name", NAMES)
async def test_demo_opens_in_the_debugger_and_steps(name):
    """The lesson's keys work: n, n, N, s, then c runs to the end (the infinite loop capped)."""
    pytest.importorskip("textual")
    from screen import settle

    from loopdbg.debug.session import Session
    from loopdbg.tui.app import LoopdbgApp

    folder = DEMOS_DIR / name
    options = {"max_iterations": CAPS[name]} if name in CAPS else {}
    session = Session.open(folder / "model.xml", folder / "inputs.npz", **options)
    app = LoopdbgApp(session, title=name)
    async with app.run_test(size=(160, 48)) as pilot:
        for key in ("n", "n", "N", "s", "c"):
            await settle(pilot)         # a key while a command runs is refused ("busy")
            await pilot.press(key)
        await settle(pilot)
    assert session.stop.kind == "end"
