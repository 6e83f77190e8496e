"""Issue 28: the pseudo-code as a face shows it (loopdbg.view.code): names without the prefix the
loop's name says or the body shares, cut in the middle; a big body's statements folded by group."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from loopdbg.engine import Engine
from loopdbg.ir.load import read_model
from loopdbg.layout.grouped import grouped_body
from loopdbg.view.code import CodeView, Names

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from bigbody import decoder_model  # noqa: E402


def _spec(path: str, body_names, params=()):
    layers = [SimpleNamespace(layer=SimpleNamespace(name=n)) for n in body_names]
    return SimpleNamespace(path=path, body=SimpleNamespace(steps=layers), param_names=params)


def test_names_lose_the_loop_s_own_prefix_even_repeated_and_the_scope_it_sits_in():
    loop = "functional_1/lstm_1/while"
    names = Names(_spec(loop, [f"{loop}/add", f"{loop}/lstm_cell/MatMul"],
                        (f"{loop}/{loop}/loop_counter:0",)))
    assert names.short(f"{loop}/lstm_cell/MatMul") == "lstm_cell/MatMul"
    assert names.short(f"{loop}/{loop}/loop_counter:0") == "loop_counter:0"
    assert names.short("functional_1/lstm_1/zeros") == "zeros"        # an outer value
    assert names.in_text(f"{loop}/add = Add({loop}/{loop}/loop_counter:0, 1);") == \
        "add = Add(loop_counter:0, 1);"


def test_names_lose_the_prefix_every_body_name_shares_and_are_cut_in_the_middle():
    names = Names(_spec("Loop_3", ["model/decoder/a", "model/decoder/b" + "x" * 60]))
    assert names.short("model/decoder/a") == "a"
    cut = names.short("model/decoder/b" + "x" * 60 + "_end", 20)
    assert len(cut) == 20 and cut.startswith("bxx") and cut.endswith("x_end") and "…" in cut
    assert Names(_spec("L", ["a/x", "b/y"])).short("a/x") == "a/x"    # nothing shared


def test_a_big_body_s_code_folds_to_its_blocks_in_execution_order(tmp_path):
    xml, _ = decoder_model(tmp_path, blocks=12)
    spec = next(iter(Engine(read_model(xml)).loops.values()))
    code = CodeView(spec, None, grouped_body(spec, always=True))
    rows = code.rows()
    folds = [r.text.strip() for r in rows if r.fold is not None]
    assert folds[:2] == ["▸ blocks.0 { 8 lines }", "▸ blocks.1 { 8 lines }"], folds
    assert len(rows) < len(spec.body.steps)
    # every body step is on exactly one row
    assert sorted(s for r in rows for s in r.steps) == list(range(len(spec.body.steps)))
    k = next(i for i, r in enumerate(rows) if r.fold == ("blocks.4",))
    first = code.open(k)
    rows = code.rows()
    assert rows[k].head == ("blocks.4",) and rows[k].text.strip() == "▾ blocks.4"
    assert rows[first].steps[0] == min(rows[first].steps)
    assert code.close_at(first) == k and code.rows()[k].fold == ("blocks.4",)
    step = next(i for i, s in enumerate(spec.body.steps) if s.layer.name == "aten::linear/MatMul_9")
    assert code.reveal(step) and "aten::linear/MatMul_9 = MatMul(" in \
        code.rows()[code.row_of_step(step)].text


def _interleaved(tmp_path):
    """A body whose execution order interleaves two blocks (what each reads forces it):
    blocks.0's first half, a node of blocks.1, blocks.0's second half, the rest of blocks.1."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("interleaved")
    x0 = b.parameter("x0", "f32", [1, 4])
    loop = b.loop("loop", trip=2, cond=True)
    x = loop.merged_input(x0, "x")
    body = loop.body
    a = body.op("Relu", [x], name="/blocks.0/Relu")
    a = body.op("Sigmoid", [a], name="/blocks.0/Sigmoid")
    early = body.op("Tanh", [a], name="/blocks.1/Tanh")
    a = body.op("Exp", [early], name="/blocks.0/Exp")
    a = body.op("Negative", [a], name="/blocks.0/Neg")
    h = body.op("Add", [a, early], name="/blocks.1/Add")
    h = body.op("Relu", [h], name="/blocks.1/Relu")
    loop.back_edge(h, x)
    b.result(loop.output_last(h, name="y"))
    xml, _ = write_ir(b.build(), tmp_path / "model.xml")
    return next(iter(Engine(read_model(xml)).loops.values()))


def test_a_group_interleaved_with_another_in_execution_order_is_one_fold(tmp_path):
    spec = _interleaved(tmp_path)
    names = [s.layer.name for s in spec.body.steps]
    assert names.index("/blocks.1/Tanh") < names.index("/blocks.0/Exp")   # interleaved
    code = CodeView(spec, None, grouped_body(spec, always=True))
    folds = [r.text.strip() for r in code.rows() if r.fold is not None]
    assert folds == ["▸ blocks.0 { 4 lines, run in 2 parts }",
                     "▸ blocks.1 { 3 lines, run in 2 parts }"], folds
    code.opened = frozenset({("blocks.0",), ("blocks.1",)})
    body = [r.text.strip().split(" =")[0] for r in code.rows() if r.phase == "body"]
    # each group's lines together and in execution order; a note where another's ran between
    assert body == ["▾ blocks.0", "/blocks.0/Relu", "/blocks.0/Sigmoid",
                    "┄ 1 line shown elsewhere run here (blocks.1)", "/blocks.0/Exp",
                    "/blocks.0/Neg", "▾ blocks.1", "/blocks.1/Tanh",
                    "┄ 2 lines shown elsewhere run here (blocks.0)", "/blocks.1/Add",
                    "/blocks.1/Relu"], body
    # every step still on one row, and found where it is shown
    rows = code.rows()
    assert sorted(s for r in rows for s in r.steps) == list(range(len(spec.body.steps)))
    k = code.row_of_step(names.index("/blocks.0/Exp"))
    assert rows[k].text.strip().startswith("/blocks.0/Exp =")
