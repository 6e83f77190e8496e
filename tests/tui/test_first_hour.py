"""Issue 30: what a student and an engineer hit in their first hour, checked on what reaches the
terminal (the compositor's rows and their styles, ``screen.py``), not on the widgets' Text."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from screen import model_files, press, rows_of, settle, style_at  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.code import PseudoCode  # noqa: E402

SIZE = (160, 48)


def app_for(case: str, size=SIZE, **options) -> LoopdbgApp:
    xml, npz = model_files(case)
    return LoopdbgApp(Session.open(xml, npz, **options), title=f"{case}/model.xml")


def lit_rows(app, widget) -> list[str]:
    """The rows of ``widget`` drawn in reverse video (at their first non-blank cell)."""
    out = []
    for _, strip in rows_of(app, widget):
        text = strip.text
        x = len(text) - len(text.lstrip())
        if text.strip() and style_at(strip, x).reverse:
            out.append(text.strip())
    return out


# -- 1. the current pseudo-code line is lit on screen ----------------------------------------------

async def test_the_current_pseudocode_line_is_drawn_in_reverse_video():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s", "s")
        stop = app.session.stop
        assert stop.node is not None
        lit = lit_rows(app, app.query_one(PseudoCode))
        assert len(lit) == 1, lit
        assert stop.node.layer.name in lit[0]
