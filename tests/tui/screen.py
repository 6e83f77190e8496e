"""What reaches the terminal, for the UI's tests: the screen's rows as the compositor renders
them (text and styles), and waiting for the engine worker between keys.

A test that reads a widget's Text checks what the widget meant to draw; these helpers read what
was drawn (a Text's own style lost on the way, a pane of zero rows, a line cut short).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rich.style import Style
from textual.strip import Strip

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def model_files(case: str) -> tuple[Path, Path]:
    """model.xml (or .onnx) and inputs.npz of a demo, corpus, data or converted case."""
    for base in (ROOT / "loopdbg" / "demos" / case, TESTS / "corpus" / case, TESTS / "data" / case,
                 TESTS / "converted" / case):
        for name in ("model.xml", "model.onnx"):
            if (base / name).exists():
                return base / name, base / "inputs.npz"
    raise FileNotFoundError(case)


ENGINE_POLL = 0.002     # s between two looks at the engine's thread and the layout's


def working(app) -> bool:
    """The engine's thread runs a command, or the graph's ``dot`` (or its timer to lay out
    ahead) is not done: a stop or a picture is still to come."""
    return app.busy or app.query_one("#graph").laying_out


async def settle(pilot, timeout: float = 20.0) -> None:
    """Wait until the engine worker has finished and its Stop has been drawn."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while True:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not working(app):
            return
        while working(app):     # the threads hand their result to the app, then say done
            if time.monotonic() > deadline:
                raise AssertionError("the app is still busy")
            await asyncio.sleep(ENGINE_POLL)


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def open_tab(pilot, tab_id: str) -> None:
    """Bring tab ``tab_id`` in front as a person does, by a click on its title (a panel in a
    tab not selected shows the last stop only then, or once the person pauses)."""
    await pilot.click(f"#--content-tab-{tab_id}")
    await pilot.pause()
    assert pilot.app.query_one("#tabs").active == tab_id


def screen_rows(app) -> list[Strip]:
    """Every row of the screen as the terminal gets it."""
    return app.screen._compositor.render_strips()


def screen_text(app) -> list[str]:
    return [strip.text for strip in screen_rows(app)]


def style_at(strip: Strip, x: int) -> Style:
    """The style of the cell at column ``x`` of a rendered row."""
    at = 0
    for segment in strip:
        if at <= x < at + segment.cell_length:
            return segment.style or Style.null()
        at += segment.cell_length
    return Style.null()


def rows_of(app, widget) -> list[tuple[int, Strip]]:
    """The screen rows inside ``widget``'s region, cut to its columns: (screen y, strip)."""
    region = widget.region
    rows = screen_rows(app)
    return [(y, rows[y].crop(region.x, region.right))
            for y in range(region.y, min(region.bottom, len(rows)))]
