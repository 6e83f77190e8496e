"""Opening the app: work done once per process is not done again for each app (the UI tests
open ~170 of them; ``loopdbg.tui.stylesheet``)."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from screen import model_files, screen_text, settle  # noqa: E402
from textual.css.stylesheet import Stylesheet  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402

SIZE = (120, 36)


async def opened(case: str = "while_loop") -> list[str]:
    """The screen of a freshly opened app at its first stop."""
    app = LoopdbgApp(Session.open(*model_files(case)), title="m")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        return screen_text(app)


async def test_a_second_app_parses_no_css_and_looks_the_same(monkeypatch):
    parsed = []
    parse = Stylesheet._parse_rules

    def counted(self, css, read_from, *args, **kwargs):
        parsed.append(read_from)
        return parse(self, css, read_from, *args, **kwargs)
    monkeypatch.setattr(Stylesheet, "_parse_rules", counted)
    first = await opened()
    parsed.clear()
    assert await opened() == first
    assert parsed == []


async def test_a_theme_of_other_colours_is_parsed_with_its_own():
    """The parsed CSS is kept per set of theme variables: another theme is not drawn in the
    colours of the first."""
    await opened()
    app = LoopdbgApp(Session.open(*model_files("while_loop")), title="m")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dark = app.screen.styles.background
        app.theme = "textual-light"
        await pilot.pause()
        assert app.screen.styles.background != dark
    light = LoopdbgApp(Session.open(*model_files("while_loop")), title="m")
    light.theme = "textual-light"
    async with light.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert light.screen.styles.background != dark
