"""Issue 28: the pseudo-code of a big body folds by the groups of its picture (a block is one line
that opens in place), and a stop writes the values of the lines in view only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from bigbody import decoder_model  # noqa: E402
from screen import model_files, press, rows_of, settle  # noqa: E402

pytest.importorskip("textual")

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.code import CodePanel, PseudoCode  # noqa: E402


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    return decoder_model(tmp_path_factory.mktemp("decoder"), blocks=30)


def code_rows(app) -> list[str]:
    """The pseudo-code rows on the screen."""
    return [strip.text.rstrip() for _, strip in rows_of(app, app.query_one(CodePanel))]


async def _cursor_to(pilot, app, want: str) -> None:
    """Move the pseudo-code's cursor with the arrows to the first row holding ``want``."""
    code = app.query_one(PseudoCode)
    await press(pilot, "home")
    for _ in range(code.line_count()):
        if want in code.line(code.cursor).plain:
            return
        await pilot.press("down")
    raise AssertionError(f"no row holds {want!r}")


async def test_a_big_body_s_code_shows_its_blocks_and_one_opens_and_closes_in_place(decoder):
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        rows = code_rows(app)
        folds = [r for r in rows if "▸ blocks." in r]
        assert len(folds) >= 5, rows
        assert not any("aten::linear/MatMul_3 = MatMul(" in r for r in rows)
        # a block's line: its size, and the value that leaves it
        one = next(r for r in folds if "▸ blocks.1 {" in r)
        assert "8 lines }  // out " in one, one
        app.query_one(CodePanel).focus()
        await _cursor_to(pilot, app, "▸ blocks.1 {")
        await press(pilot, "enter")
        rows = code_rows(app)
        assert any(r.strip() == "▾ blocks.1" for r in rows), rows
        assert any("▸ fc1 {" in r for r in rows), rows       # its own groups, still closed
        assert any("aten::add/Add_1 = Add(" in r for r in rows), rows
        assert any("▸ blocks.2 {" in r for r in rows)
        await _cursor_to(pilot, app, "▸ fc1 {")
        await press(pilot, "plus")
        assert any("aten::linear/MatMul_3 = MatMul(" in r for r in code_rows(app))
        await press(pilot, "minus")                   # closes fc1, the cursor on its line
        assert "▸ fc1 {" in app.query_one(PseudoCode).row.text
        await press(pilot, "escape")                  # then blocks.1
        rows = code_rows(app)
        assert not any("▾ blocks.1" in r for r in rows)
        assert "▸ blocks.1 {" in app.query_one(PseudoCode).row.text
        # the open groups stay open from stop to stop (the lit line scrolled into view)
        await press(pilot, "enter", "n")
        lines = app.query_one(PseudoCode).content.plain.splitlines()
        assert any(r.strip() == "▾ blocks.1" for r in lines)


async def test_a_click_on_a_block_s_line_opens_it_and_on_its_head_closes_it(decoder):
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        panel, code = app.query_one(CodePanel), app.query_one(PseudoCode)
        top = int(panel.scroll_offset.y)
        y = next(k for k in range(top, code.line_count()) if "▸ blocks." in code.line(k).plain)
        name = code.line(y).plain.split("▸ ")[1].split(" {")[0]
        await pilot.click(PseudoCode, offset=(6, y))
        await settle(pilot)
        assert code.line(y).plain.strip() == f"▾ {name}"
        assert any(f"▾ {name}" == r.strip() for r in code_rows(app))
        await pilot.click(PseudoCode, offset=(6, y))
        await settle(pilot)
        assert f"▸ {name} {{" in code.line(y).plain


async def test_a_stop_writes_the_values_of_the_lines_in_view_only(decoder, monkeypatch):
    import loopdbg.tui.widgets.code as code_module

    written = []
    real = code_module.value_text

    def counted(value, width):
        written.append(width)
        return real(value, width)

    monkeypatch.setattr(code_module, "value_text", counted)
    app = LoopdbgApp(Session.open(*decoder), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        code = app.query_one(PseudoCode)
        app.query_one(CodePanel).focus()
        await _cursor_to(pilot, app, "▸ blocks.3 {")
        await press(pilot, "enter", "plus", "plus")      # blocks.3 and its groups open
        assert code.line_count() > app.query_one(CodePanel).size.height
        written.clear()
        await press(pilot, "n")
        assert written and len(written) <= app.query_one(CodePanel).size.height
        assert any("// " in r for r in code_rows(app))


async def test_a_small_body_s_code_has_no_folds_and_enter_shows_a_line_s_value():
    xml, npz = model_files("while_loop")
    app = LoopdbgApp(Session.open(xml, npz), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        assert not any("▸" in r or "▾" in r for r in code_rows(app))
        code = app.query_one(PseudoCode)
        app.query_one(CodePanel).focus()
        body = next(k for k in range(code.line_count()) if code._rows[k].step is not None)
        await press(pilot, "home", *["down"] * body)
        name = code.row_name()
        assert name is not None
        await press(pilot, "enter")
        assert name in app.query_one("#inspect-input").value


async def test_names_drop_the_loop_s_prefix_and_the_full_name_is_one_key_away():
    xml, npz = model_files("crnn_text")       # Keras: every body name repeats the loop's path
    app = LoopdbgApp(Session.open(xml, npz), title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        loop = app.view.event.spec.path
        assert loop.endswith("/while")
        back = app.query_one("#back")
        rows = [strip.text for _, strip in rows_of(app, back)]
        assert any("Placeholder_2:0 ← lstm_cell_1/mul_2" in r for r in rows), rows
        assert not any(loop in r for r in rows)
        code = app.query_one(PseudoCode).content.plain
        assert "add_1 = Add(loop_counter:0, 1);" in code and f"{loop}/add" not in code
        back.focus()
        await press(pilot, "enter")                   # the first back edge, in full
        shown = app.query_one("#inspect-input").value           # the expression inspected
        full = next(n for n in app.view.event.spec.param_names if n.endswith("loop_counter:0"))
        assert full.startswith(loop) and full in shown, shown


async def test_the_state_panel_names_the_node_run_as_the_code_does():
    xml, npz = model_files("crnn_text")
    app = LoopdbgApp(Session.open(xml, npz), title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        node = app.session.stop.node
        assert node is not None and node.layer.name.startswith(node.event.spec.path + "/")
        short = node.layer.name[len(node.event.spec.path) + 1:]
        text = " ".join(s.text.strip() for _, s in rows_of(app, app.query_one("#state")))
        assert f"'{short}'" in text and node.layer.name not in text, text


async def test_the_state_panel_names_the_loop_without_the_scope_every_loop_shares():
    xml, npz = model_files("crnn_text")       # Keras: functional_1/bidirectional_1/…_lstm_1/while
    app = LoopdbgApp(Session.open(xml, npz), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        path = app.view.event.spec.path
        assert path == "functional_1/bidirectional_1/forward_lstm_1/while"
        state = [s.text.strip() for _, s in rows_of(app, app.query_one("#state"))]
        loop = next(r for r in state if r.startswith("loop "))
        assert loop.split()[1] == "forward_lstm_1/while", state     # whole, not cut
        # the full path is in the graph's title
        assert path in rows_of(app, app.query_one("#graph"))[0][1].text
