"""Text from files never reaches Rich or Textual markup (issue 14, class 3).

A model whose every name is markup — a closing tag with nothing open (``[/oops]``, which made
Rich raise MarkupError), an action link (``[@click=app.quit]``), styles, and ``$variable``
(Textual's content markup substitutes those) — is driven through every panel, prompt, the help,
the palette, notifications and the log. The app must neither crash nor obey: the names are
shown as they are written, and clicking where an action link would be quits nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("textual")

from screen import open_tab, settle  # noqa: E402
from textual.widgets import DataTable, Input, RichLog, Static  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.graph import GraphView  # noqa: E402

LOOP = "[/oops]"
STATE = "[@click=app.quit]h[/]"
STEP = "[bold red]step[/bold red]"
SUM = "$sum[/]"
OUT = "[link=https://example.com]out"
NAMES = (LOOP, STATE, STEP, SUM, OUT)


def hostile_model(folder: Path) -> tuple[Path, Path]:
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("[red]net")
    h0 = b.parameter("[i]h0", "f32", [2])
    loop = b.loop(LOOP, trip=4, cond=True)
    h = loop.merged_input(h0, STATE)
    it = loop.current_iteration("[b]iter")
    step = loop.body.op("Add", [h, np.array([1.0, 2.0], np.float32)], name=STEP)
    total = loop.body.op("Multiply", [step, np.array([0.5, 0.5], np.float32)], name=SUM)
    loop.back_edge(total, h)
    loop.condition(loop.body.op("Less", [it, np.array([9], np.int64)], name="[/keep]"))
    b.result(loop.output_last(total, name=OUT))
    b.result(loop.output_concat(loop.body.op("Unsqueeze", [step, np.array([0], np.int64)],
                                             name="[u]row"), axis=0, name="[s]rows"))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    npz = folder / "inputs.npz"
    np.savez(npz, **{"[i]h0": np.zeros(2, np.float32)})
    return Path(xml), npz


def plain(widget) -> str:
    content = widget.content if isinstance(widget, Static) else widget.render()
    return getattr(content, "plain", str(content))


@pytest.mark.long
async def test_names_that_are_markup_are_shown_as_written_and_obeyed_never(tmp_path):
    xml, npz = hostile_model(tmp_path)
    session = Session.open(xml, npz)
    session.breakpoints.add(f't["{SUM}"][0] > 2')
    session.breakpoints.watch(f't["{STEP}"]')
    app = LoopdbgApp(session, title=f"{LOOP}/model.xml")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for key in ("n", "s", "s", "c", "N"):       # node stepping, a breakpoint (a toast)
            await pilot.press(key)
            await settle(pilot)
        assert app.is_running and app.last_stop.event is not None
        graph = app.query_one(GraphView)
        picture = "\n".join(graph._lines)
        for name in (STATE, STEP, SUM):
            assert name in picture, name
        assert LOOP in str(graph.border_title)
        assert LOOP in plain(app.query_one("#state"))
        code = plain(app.query_one("#code"))
        assert STEP in code and SUM in code and OUT in code
        back = app.query_one("#back", DataTable)
        assert STATE in str(back.get_row_at(0)[0])
        await open_tab(pilot, "tab-bp")
        bps = app.query_one("#bps", DataTable)
        assert SUM in str(bps.get_row_at(0)[1])
        await open_tab(pilot, "tab-watch")
        watches = app.query_one("#watches", DataTable)
        assert STEP in str(watches.get_row_at(0)[1])
        app.query_one("#tabs").active = "tab-log"          # a RichLog writes once it is shown
        await pilot.pause()
        log = "\n".join(line.text for line in app.query_one("#log", RichLog).lines)
        assert LOOP in log
        # the full value of the node under the cursor, by name, in the Inspector
        graph.focus()
        assert graph.find(SUM) == SUM
        await pilot.press("enter")
        await pilot.pause()
        view = plain(app.query_one("#inspect-view"))
        assert "dtype float32" in view, view
        # an error that quotes the name
        app.show_value(f't["{LOOP}"]')
        await pilot.pause()
        assert LOOP in plain(app.query_one("#inspect-view"))
        # prompts quoting names, the help, the palette searching node names
        await pilot.press("b")
        await pilot.pause()
        app.query_one("#prompt-input", Input).value = f't["{LOOP}"] > 1'
        await pilot.press("enter")
        await pilot.pause()
        assert LOOP in plain(app.query_one("#prompt-error"))
        await pilot.press("escape")
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"find node")
        await pilot.pause(0.5)
        await pilot.press("escape")
        await pilot.pause()
        # where an action link would be drawn, a click does nothing
        state = app.query_one("#state")
        await pilot.click("#state", offset=(20, 2))
        await pilot.click(GraphView, offset=(10, 5))
        await pilot.pause()
        assert app.is_running and state.is_attached


def test_the_palette_shows_node_names_as_text(tmp_path):
    """Textual's own fuzzy highlight reads its candidate as markup; ours must not."""
    from textual.fuzzy import Matcher

    from loopdbg.tui.commands import _highlight

    for name in NAMES:
        title = f"find node {name}"
        content = _highlight(Matcher("node"), title)
        assert content.plain == title


def test_control_characters_are_shown_never_sent():
    """An ESC in a name (possible in ONNX and npz keys) is shown as \\x1b by every panel's
    text helper, the graph's labels included."""
    from loopdbg.layout.graph import graph_from_parts
    from loopdbg.ir.model import Graph, Layer, Port
    from loopdbg.tui.plain import plain as plain_text

    evil = "\x1b]0;pwned\x07\x1b[2J"
    assert "\x1b" not in plain_text(evil).plain and "\\x1b" in plain_text(evil).plain
    g = Graph(name="g", layers={0: Layer(0, evil, "Parameter", "opset1",
                                         outputs=(Port(0, 0),))}, edges=[],
              parameters=[0], results=[])
    node = graph_from_parts(g).nodes[0]
    assert all("\x1b" not in line for line in node.lines)
