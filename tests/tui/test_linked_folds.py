"""Issue 28: the pseudo-code and the graph show one set of open groups: a group opened or closed
in one opens or closes in the other, and the graph's ``/`` shows the statement found in the code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from bigbody import decoder_model  # noqa: E402
from screen import press, rows_of, settle, style_at  # noqa: E402

pytest.importorskip("textual")

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.layout import dot_available  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.code import CodePanel, PseudoCode  # noqa: E402
from loopdbg.tui.widgets.graph import GraphView  # noqa: E402

needs_dot = pytest.mark.skipif(not dot_available(), reason="Graphviz 'dot' is not installed")


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    return decoder_model(tmp_path_factory.mktemp("decoder"), blocks=30)


def code_rows(app) -> list[str]:
    """The pseudo-code rows on the screen."""
    return [strip.text.rstrip() for _, strip in rows_of(app, app.query_one(CodePanel))]


def picture(app) -> str:
    """The graph's whole picture, as drawn (the part on screen is a window onto it)."""
    return "\n".join(app.query_one(GraphView)._lines)


@needs_dot
async def test_a_group_opened_or_closed_in_the_graph_opens_or_closes_in_the_code(decoder):
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        assert any("▸ blocks.0 {" in r for r in code_rows(app)), code_rows(app)
        graph = app.query_one(GraphView)
        graph.focus()
        await press(pilot, "enter")                       # the graph's cursor is on blocks.0
        assert "▾ blocks.0 · " in picture(app) and "▸ fc1" in picture(app)   # its frame
        rows = code_rows(app)
        assert any(r.strip() == "▾ blocks.0" for r in rows), rows
        assert any("▸ fc1 {" in r for r in rows), rows
        await press(pilot, "plus")                        # fc1 too
        assert any("aten::linear/MatMul_1 = MatMul(" in r for r in code_rows(app))
        await press(pilot, "minus", "minus")              # fc1, then blocks.0 close
        rows = code_rows(app)
        assert not any("▾ blocks.0" in r for r in rows), rows
        assert any("▸ blocks.0 {" in r for r in rows), rows


@needs_dot
async def test_a_group_opened_or_closed_in_the_code_opens_or_closes_in_the_graph(decoder):
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        code = app.query_one(PseudoCode)
        app.query_one(CodePanel).focus()
        await press(pilot, "home")
        for _ in range(code.line_count()):
            if "▸ blocks.1 {" in code.row.text:
                break
            await pilot.press("down")
        await press(pilot, "enter")
        assert any(r.strip() == "▾ blocks.1" for r in code_rows(app))
        drawn = picture(app)
        assert "▾ blocks.1 · " in drawn and "▸ fc1" in drawn and "▸ blocks.1 " not in drawn, drawn
        assert "▸ blocks.0 " in drawn                     # the other blocks stay closed
        await press(pilot, "escape")                      # closes blocks.1 in the code
        drawn = picture(app)
        assert "▸ blocks.1 " in drawn and "▾ blocks.1" not in drawn and "▸ fc1" not in drawn, \
            drawn


@needs_dot
async def test_the_graph_s_find_shows_the_statement_in_the_code(decoder):
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        assert not any("aten::linear/MatMul_9 = MatMul(" in r for r in code_rows(app))
        app.query_one(GraphView).focus()
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"MatMul_9", "enter")
        await settle(pilot)
        rows = rows_of(app, app.query_one(CodePanel))
        found = [(y, strip) for y, strip in rows if "aten::linear/MatMul_9 = MatMul(" in strip.text]
        assert found, [s.text for _, s in rows]            # blocks.4 and its fc1 opened, in view
        texts = [s.text.strip() for _, s in rows]
        assert "▾ blocks.4" in texts and "▾ fc1" in texts, texts
        _, strip = found[0]                                # the cursor's row, unfocused too
        x = strip.text.index("aten::linear/MatMul_9")
        assert style_at(strip, x).bgcolor is not None


def test_the_picture_follows_the_code_s_open_groups_within_its_box_limit(decoder, monkeypatch):
    from loopdbg.view import body as bodymod

    monkeypatch.setattr(bodymod, "MAX_BOXES", 100)

    spec = next(iter(Session.open(*decoder).engine.loops.values()))
    view = bodymod.BodyView(spec)
    gb = view.groups
    mm = next(lid for lid, layer in spec.body.graph.layers.items()
              if layer.name == "aten::linear/MatMul_9")            # blocks.4's fc1
    # the code opened blocks.4 and its fc1: the cursor on MatMul_9 stays on it
    assert view.follow(frozenset({("blocks.4",), ("blocks.4", "fc1")}), mm) == mm
    assert view.opened == {("blocks.4",), ("blocks.4", "fc1")}
    # the code closed fc1: the cursor goes to fc1's box
    assert view.follow(frozenset({("blocks.4",)}), mm) == gb.ids[("blocks.4", "fc1")]
    # the code has every block open: more than a picture holds, so only what it just opened
    every = [(f"blocks.{k}",) for k in range(30)]
    for k in range(1, 31):                           # the code opens them one by one
        view.follow(frozenset(every[:k]), None)
        assert len(view.target().nodes) <= bodymod.MAX_BOXES
        assert every[k - 1] in view.opened
    assert len(view.opened) < 30
    fresh = bodymod.BodyView(spec)
    fresh.follow(frozenset(every), None)             # all at once: none fits, none opens
    assert fresh.opened == frozenset()


@needs_dot
async def test_a_group_the_graph_opens_is_scrolled_into_view_in_the_code(decoder):
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(80, 24)) as pilot:       # a few rows of pseudo-code
        await settle(pilot)
        await press(pilot, "n")
        app.query_one(CodePanel).focus()
        await press(pilot, "end")                         # the code scrolled to its last lines
        assert not any("blocks.0" in r for r in code_rows(app))
        app.query_one(GraphView).focus()
        await press(pilot, "enter")                       # the graph's cursor is on blocks.0
        rows = code_rows(app)
        assert any(r.strip() == "▾ blocks.0" for r in rows), rows       # its head on screen
        assert not any("▸ blocks.1 {" in r for r in rows[:2]), rows


async def test_the_code_shows_a_group_the_graph_opens_in_the_same_frame(decoder):
    """The first frame with the group's frame in the graph has the code scrolled to its head
    too: not a frame of the rows before and then a scroll (the pane grew with the group's
    rows; its new height is known before the layout)."""
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        app.query_one(CodePanel).focus()
        await press(pilot, "end")                         # the code scrolled to its last lines
        graph = app.query_one(GraphView)
        graph.focus()
        frames: list[list[str]] = []
        original = app._display

        def display(screen, renderable):
            original(screen, renderable)
            if renderable is not None and "▾ blocks.0 · " in picture(app) and not frames:
                frames.append(code_rows(app))
        app._display = display
        await press(pilot, "enter")                       # the graph's cursor is on blocks.0
        assert frames and any(r.strip() == "▾ blocks.0" for r in frames[0]), frames
