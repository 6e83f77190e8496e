"""Issue 28: a big body drawn by its groups (blocks, the head), each one box that opens in place."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine
from loopdbg.ir.load import read_model
from loopdbg.layout import dot_available, layout_body, render_text
from loopdbg.layout.grouped import GROUP, grouped_body

sys.path.insert(0, str(Path(__file__).parent))
from bigbody import decoder_model  # noqa: E402

needs_dot = pytest.mark.skipif(not dot_available(), reason="Graphviz 'dot' is not installed")


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    return decoder_model(tmp_path_factory.mktemp("decoder"), blocks=30)


def _spec(xml):
    return next(iter(Engine(read_model(xml)).loops.values()))


def test_a_big_body_closes_to_its_blocks_and_opens_one_in_place(decoder):
    spec = _spec(decoder[0])
    gb = grouped_body(spec)
    assert gb is not None
    assert [g.name for g in gb.root.children] == [f"blocks.{k}" for k in range(30)] + ["head"]
    top = gb.view()
    groups = [n for n in top.nodes if n.kind == GROUP]
    assert len(groups) == 31 and len(top.nodes) < 40
    b7 = next(n for n in groups if n.name == "blocks.7")
    assert b7.lines[0] == "▸ blocks.7" and b7.lines[1].endswith("nodes")
    assert "aten::add/Add_7" in b7.lines[2]                     # the value that leaves it
    # the residual stream runs block to block: one edge between neighbours
    ids = {n.name: n.id for n in groups}
    assert any(e.src == ids["blocks.6"] and e.dst == ids["blocks.7"] for e in top.edges)
    opened = gb.view({("blocks.7",)})
    names = {n.name for n in opened.nodes}
    assert "blocks.7" not in names and "blocks.7/fc1" in names and "blocks.6" in names
    assert len(opened.nodes) < len(top.nodes) + 8
    assert gb.view({("blocks.7",)}) is opened                   # cached by what is open


def test_the_way_to_a_node_inside_closed_groups(decoder):
    spec = _spec(decoder[0])
    gb = grouped_body(spec)
    mm = next(lid for lid, layer in spec.body.graph.layers.items()
              if layer.name == "aten::linear/MatMul_9")            # blocks.4's fc1
    assert gb.way_to(mm) == [("blocks.4",), ("blocks.4", "fc1")]
    assert gb.box_of(mm, ()) == gb.ids[("blocks.4",)]
    assert gb.box_of(mm, gb.way_to(mm)) == mm


def test_small_bodies_stay_flat():
    root = Path(__file__).resolve().parents[2]
    for demo in ("prefix_sum", "nested_loop", "vandermonde"):
        engine = Engine(read_model(root / "loopdbg" / "demos" / demo / "model.xml"))
        for spec in engine.loops.values():
            assert grouped_body(spec) is None, demo


@needs_dot
def test_the_closed_body_is_laid_out_alone_and_small(decoder):
    spec = _spec(decoder[0])
    gb = grouped_body(spec)
    text = render_text(layout_body(gb.view()))
    assert "▸ blocks.29" in text and "MatMul_9" not in text
    text = render_text(layout_body(gb.view({("blocks.4",)})))
    assert "▸ blocks.4/fc1" in text and "MatMul_9" not in text
    text = render_text(layout_body(gb.view({("blocks.4",), ("blocks.4", "fc1")})))
    assert "MatMul_9" in text and "▸ blocks.29" in text


# -- in the debugger ------------------------------------------------------------------------------
def _debugger(decoder):
    """The debugger on the decoder model, and its graph pane's class."""
    pytest.importorskip("textual")
    from loopdbg.debug.session import Session
    from loopdbg.tui.app import LoopdbgApp
    from loopdbg.tui.widgets.graph import GraphView

    return LoopdbgApp(Session.open(*decoder), title="m"), GraphView


async def _palette(pilot, query: str) -> list[str]:
    """The palette opened and ``query`` typed: the entries it offers, best first."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*query)
    found = []
    for _ in range(100):
        await pilot.pause(0.02)
        found = [o for o in pilot.app.screen.query("CommandList") if o.option_count]
        if found:
            break
    return [str(found[0].get_option_at_index(k).prompt)
            for k in range(found[0].option_count)] if found else []


@needs_dot
async def test_the_debugger_shows_the_blocks_and_opens_and_closes_them_from_the_keyboard(decoder):
    from test_keyboard import press, settle

    app, GraphView = _debugger(decoder)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        graph = app.query_one(GraphView)
        screen = "\n".join(graph._lines)
        assert "▸ blocks.0" in screen and "aten::linear/MatMul_1" not in screen
        gb = grouped_body(graph._spec)
        assert graph.selected == gb.ids[("blocks.0",)]         # the first group, in view
        box = graph._layout.box(graph.selected)
        assert graph.scroll_offset.y <= box.y < graph.scroll_offset.y + graph.size.height
        graph.focus()
        await press(pilot, "n")
        assert graph.selected == gb.ids[("blocks.0",)]
        await press(pilot, "enter")                       # opens blocks.0 in place
        screen = "\n".join(graph._lines)
        assert "▾ blocks.0 · " in screen and "▸ blocks.1" in screen
        assert "▸ fc1" in screen and "▸ blocks.0 " not in screen   # named inside its frame
        assert graph.selected == gb.ids[("blocks.0", "fc1")]   # the cursor on what it holds
        await press(pilot, "plus")
        assert "aten::linear/MatMul_1" in "\n".join(graph._lines)
        await press(pilot, "escape")                      # closes the innermost open group
        assert graph.selected == gb.ids[("blocks.0", "fc1")]
        await press(pilot, "minus")
        assert "▸ blocks.0 " in "\n".join(graph._lines)
        # / finds a node inside closed groups and opens the way to it
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"MatMul_9", "enter")
        await settle(pilot)
        assert graph.selected_name == "aten::linear/MatMul_9"
        box = graph._layout.box(graph.selected)
        assert "aten::linear/MatMul_9" in graph._lines[box.y + 1]


@needs_dot
async def test_the_palette_finds_a_node_inside_a_closed_group(decoder):
    from test_keyboard import settle

    app, GraphView = _debugger(decoder)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        texts = await _palette(pilot, "find node aten::relu/Relu_41")
        assert texts and "Relu_41" in texts[0], texts
        await pilot.press("enter")
        await settle(pilot)
        graph = app.query_one(GraphView)
        assert graph.selected_name == "aten::relu/Relu_41"
        assert any("aten::relu/Relu_41" in line for line in graph._lines)


# -- loopdbg graph ------------------------------------------------------------------------------
def test_loopdbg_graph_draws_a_big_body_by_its_groups(decoder, tmp_path, capsys):
    from loopdbg.cli import main

    xml = str(decoder[0])
    out = tmp_path / "g.dot"
    assert main(["graph", xml, "-o", str(out)]) == 0
    text = out.read_text()
    assert "▸ blocks.7" in text and "shape=box3d" in text and "MatMul_9" not in text
    assert main(["graph", xml, "-o", str(out), "--expand", "blocks.4/fc1"]) == 0
    text = out.read_text()
    assert "aten::linear/MatMul_9" in text and "▸ blocks.4\\n" not in text and "▸ blocks.7" in text
    assert main(["graph", xml, "-o", str(out), "--depth", "1"]) == 0
    text = out.read_text()
    assert "▸ blocks.7/fc1" in text and "▸ blocks.7\\n" not in text
    assert main(["graph", xml, "-o", str(out), "--flat"]) == 0
    text = out.read_text()
    assert "▸" not in text and "aten::linear/MatMul_9" in text
    capsys.readouterr()
    assert main(["graph", xml, "-o", str(out), "--expand", "blocks.99"]) != 0
    err = capsys.readouterr().err
    assert "--expand blocks.99: no such group" in err and "blocks.0, blocks.1" in err


def test_loopdbg_graph_values_go_on_the_groups_boxes(decoder, tmp_path):
    from loopdbg.cli import main

    out = tmp_path / "g.dot"
    assert main(["graph", str(decoder[0]), str(decoder[1]), "-o", str(out),
                 "--iteration", "1"]) == 0
    text = out.read_text()
    line = next(s for s in text.splitlines() if "▸ blocks.7" in s)
    assert "= " in line and 'color="#dc2626"' in line          # its value, changed since 0


def test_finding_a_group_by_its_name_finds_the_group_not_a_weight_named_after_it(decoder):
    from loopdbg.view.body import BodyView

    body = BodyView(_spec(decoder[0]))
    found = body.find("blocks.5", None)
    assert found == (body.groups.ids[("blocks.5",)], "blocks.5")
    node, name = body.find("relu_11", None)
    assert name == "aten::relu/Relu_11" and body.reveal(node)
    assert body.box_of(node) == node and ("blocks.5",) in body.opened
    assert body.close_at(node) == body.groups.ids[("blocks.5",)] and not body.opened


def test_decompression_converts_fold_into_what_reads_them(tmp_path):
    """An f16 IR's weights reach the body through Converts: no box of their own, a line in their
    reader's box, and finding one selects its reader."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir
    from loopdbg.view.body import BodyView

    b = GraphBuilder("f16")
    x0 = b.parameter("x0", "f32", [1, 4])
    loop = b.loop("loop", trip=2, cond=True)
    x = loop.merged_input(x0, "x")
    body, h = loop.body, x
    for k in range(40):
        w = body.const(f"self.blocks.{k}.fc.weight_compressed", np.eye(4, dtype=np.float16))
        w = body.op("Convert", [w], name=f"self.blocks.{k}.fc.weight", destination_type="f32")
        h = body.op("MatMul", [h, w], name=f"aten::linear/MatMul_{k}")
        h = body.op("Relu", [h], name=f"aten::relu/Relu_{k}")
    loop.back_edge(h, x)
    b.result(loop.output_last(h, name="y"))
    xml, _ = write_ir(b.build(), tmp_path / "model.xml")
    view = BodyView(_spec(xml))
    assert view.grouped and len(view.groups.folded) == 40
    view.reveal(view.find("blocks.7.fc.weight", None)[0])
    top = {n.name: n for n in view.target().nodes}
    assert "self.blocks.7.fc.weight" not in top
    assert "weights <4×4>" in top["aten::linear/MatMul_7"].lines
    convert = next(i for i in view.groups.folded if view.groups.full.node(i).name.startswith(
        "self.blocks.7."))
    assert view.box_of(convert) == top["aten::linear/MatMul_7"].id


def test_opening_group_after_group_never_lays_out_more_than_a_few_hundred_boxes(tmp_path):
    from loopdbg.view import body as bodymod

    xml, _ = decoder_model(tmp_path, blocks=30, extra=30)
    view = bodymod.BodyView(_spec(xml))
    for k in range(30):
        view.open(view.groups.ids[(f"blocks.{k}",)])
        assert len(view.target().nodes) <= bodymod.MAX_BOXES
        assert (f"blocks.{k}",) in view.opened
    assert len(view.opened) < 30                      # the first ones closed on the way


def test_loopdbg_graph_says_when_the_groups_opened_are_too_many_to_draw(decoder, tmp_path,
                                                                         capsys, monkeypatch):
    from loopdbg.cli import cmd_graph, main

    monkeypatch.setattr(cmd_graph, "MAX_DRAWN", 100)
    out = tmp_path / "g.svg"
    assert main(["graph", str(decoder[0]), "-o", str(out), "--depth", "2"]) != 0
    err = capsys.readouterr().err
    assert "boxes; Graphviz takes minutes on more than 100" in err and "--expand" in err
    assert not out.exists()
    assert main(["graph", str(decoder[0]), "-o", str(tmp_path / "g.dot"), "--depth", "2"]) == 0
