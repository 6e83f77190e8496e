"""The code generator of engine/plan.py, tested directly.

A plan's generated source must be made of positions only (nothing read from a file can reach it:
negative or huge layer ids, names with quotes, newlines, braces or any script), it must compile,
and its three functions (``run``, ``run_all``, ``run_events``) must agree with each other, with
the step-by-step ``interpret`` and with the model before its ids and names were changed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from loopdbg.engine import Engine, IterationDone, RunFinished
from loopdbg.engine.context import RunContext
from loopdbg.engine.inputs import match_inputs
from loopdbg.engine.plan import drain
from loopdbg.errors import RunError
from loopdbg.builder import GraphBuilder
from loopdbg.ir.xml_reader import read_ir
from loopdbg.ir.xml_writer import write_ir

DATA = Path(__file__).resolve().parent.parent / "data"
_LOCAL = re.compile(r"[pcvk]\d+(_\d+)?|_S_tail_c\d+(_cut)?")   # (a constant's shape tail)
_FIXED = {"ctx", "finish", "fail", "exc", "LoopdbgError", "Exception", "_S_broadcast_check",
          "_S_CHECKED"}


# -- models ----------------------------------------------------------------------------------
def rnn_loop():
    """Loop: sliced input, merged state, MatMul/Add/Tanh, a last value and a concatenation."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("rnn")
    seq = b.parameter("seq", "f32", [5, 3])
    h0 = b.parameter("h0", "f32", [1, 4])
    loop = b.loop("rnn", trip=5, cond=True)
    x = loop.sliced_input(seq, "x_t", axis=0)
    h = loop.merged_input(h0, "h")
    body = loop.body
    a = body.op("MatMul", [x, rng.standard_normal((3, 4)).astype(np.float32)], name="xw")
    r = body.op("MatMul", [h, rng.standard_normal((4, 4)).astype(np.float32)], name="hr")
    h2 = body.op("Tanh", [body.op("Add", [a, r], name="pre")], name="h_next")
    loop.back_edge(h2, h)
    loop.condition(body.const("true", np.array(True)))
    b.result(loop.output_last(h2, name="h_final"))
    b.result(loop.output_concat(h2, axis=0, name="h_seq"))
    inputs = {"seq": rng.standard_normal((5, 3)).astype(np.float32),
              "h0": np.zeros((1, 4), np.float32)}
    return b.build(), inputs


def lstm_ti():
    """TensorIterator around LSTMCell: a kernel with two outputs (``v0_0, v0_1 = k0(...)``)."""
    rng = np.random.default_rng(2)
    hidden, inp = 3, 2
    b = GraphBuilder("lstm")
    X = b.parameter("X", "f32", [4, 1, inp])
    H0 = b.parameter("H0", "f32", [1, hidden])
    C0 = b.parameter("C0", "f32", [1, hidden])
    ti = b.tensor_iterator("lstm")
    x = ti.sliced_input(X, "x_t", axis=0)
    h = ti.merged_input(H0, "h")
    c = ti.merged_input(C0, "c")
    body = ti.body
    xs = body.op("Squeeze", [x, np.array([0], np.int64)], name="x_sq")
    W = (rng.standard_normal((4 * hidden, inp)) * 0.5).astype(np.float32)
    R = (rng.standard_normal((4 * hidden, hidden)) * 0.5).astype(np.float32)
    B = np.zeros(4 * hidden, np.float32)
    h2, c2 = body.op("LSTMCell", [xs, h, c, W, R, B], name="cell", hidden_size=hidden)
    ti.back_edge(h2, h)
    ti.back_edge(c2, c)
    b.result(ti.output_concat(body.op("Unsqueeze", [h2, np.array([0], np.int64)], name="h_u"),
                              axis=0, name="Y"))
    b.result(ti.output_last(c2, name="Co"))
    inputs = {"X": rng.standard_normal((4, 1, inp)).astype(np.float32),
              "H0": np.zeros((1, hidden), np.float32), "C0": np.zeros((1, hidden), np.float32)}
    return b.build(), inputs


def nested_with_if():
    """A loop in a loop whose body holds an If: generated generators at three depths."""
    b = GraphBuilder("nested_if")
    x0 = b.parameter("x0", "f32", [2])
    outer = b.loop("outer", trip=3)
    x = outer.merged_input(x0, "x")
    it = outer.current_iteration("i")
    inner = outer.body.loop("inner", trip=2)
    y = inner.merged_input(x, "y")
    y2 = inner.body.op("Multiply", [y, np.array([2.0, 3.0], np.float32)], name="twice")
    inner.back_edge(y2, y)
    inner.condition(inner.body.const("go", np.array(True)))
    grown = inner.output_last(y2, name="grown")
    even = outer.body.op("Equal", [outer.body.op("Mod", [it, np.array([2], np.int64)],
                                                 name="parity"), np.array([0], np.int64)],
                         name="is_even")
    choose = outer.body.if_("pick", even)
    t, e = choose.input(grown, "g")
    picked = choose.output(choose.then_body.op("Add", [t, np.array([1.0], np.float32)],
                                               name="plus"),
                           choose.else_body.op("Negative", [e], name="minus"), name="picked")
    outer.back_edge(picked, x)
    outer.condition(outer.body.const("on", np.array(True)))
    b.result(outer.output_last(picked, name="x_final"))
    b.result(outer.output_concat(picked, axis=0, name="x_all"))
    return b.build(), {"x0": np.array([0.5, -1.0], np.float32)}


def no_loop():
    """No control flow: the top plan is a plain function, run_events still drives it."""
    b = GraphBuilder("plain")
    a = b.parameter("a", "f32", [3])
    b.result(b.op("Multiply", [b.op("Add", [a, np.float32(1)], name="inc"), a], name="sq"),
             name="out")
    return b.build(), {"a": np.array([1.0, 2.0, 3.0], np.float32)}


MODELS = {"rnn_loop": rnn_loop, "lstm_ti": lstm_ti, "nested_with_if": nested_with_if,
          "no_loop": no_loop}

# How the copies of a model renumber (every graph) and rename (every body) its layers.
IDS = {"negative": lambda i: -5 - i, "huge": lambda i: 10 ** 20 + 7 * i,
       "past_int64": lambda i: 2 ** 64 + i, "reversed": lambda i: 1000 - i}
NAMES = {"hostile": lambda n: f"{n} \"q\" 'x' {{0}} \\n\n# ünï 名 )(",
         "python": lambda n: f"__import__('os').system({n!r})"}


def remap(graph_el, new_id, new_name=None) -> None:
    """Renumber the layers of ``graph_el`` (a <net> or a <body>) and every reference to them;
    recurse into bodies and branches, renaming their layers with ``new_name``."""
    def fix(el, attr):
        el.set(attr, str(new_id(int(el.get(attr)))))

    for layer in graph_el.find("layers"):
        fix(layer, "id")
        if new_name is not None and graph_el.tag != "net":
            layer.set("name", new_name(layer.get("name")))
        for body_tag, map_tag in (("body", "port_map"), ("then_body", "then_port_map"),
                                  ("else_body", "else_port_map")):
            body = layer.find(body_tag)
            if body is None:
                continue
            for entry in layer.find(map_tag):
                fix(entry, "internal_layer_id")
            if body_tag == "body" and layer.find("back_edges") is not None:
                for edge in layer.find("back_edges"):
                    fix(edge, "from-layer")
                    fix(edge, "to-layer")
            remap(body, new_id, new_name)
    for edge in graph_el.find("edges"):
        fix(edge, "from-layer")
        fix(edge, "to-layer")


def variant(model, folder: Path, ids=None, names=None):
    """``model`` written to ``folder``, renumbered and renamed, read back."""
    xml, _ = write_ir(model, folder / "model.xml")
    if ids is not None:
        tree = etree.parse(str(xml))
        remap(tree.getroot(), IDS[ids], NAMES[names] if names else None)
        tree.write(str(xml), xml_declaration=True, encoding="UTF-8")
    return read_ir(xml)


def all_plans(engine: Engine):
    yield "top", engine.plan
    for path, spec in engine.loops.items():
        yield path, spec.body
    for lid, spec in engine.ifs.items():
        for role, (plan, _, _) in spec.branches.items():
            yield f"{lid}/{role}", plan


def final(engine: Engine, inputs, **options) -> tuple[RunFinished, list[IterationDone]]:
    events = list(engine.run(inputs, **options))
    assert isinstance(events[-1], RunFinished)
    return events[-1], [e for e in events if isinstance(e, IterationDone)]


def same(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# -- the generated source ----------------------------------------------------------------------
@pytest.mark.parametrize("ids,names", [("negative", "hostile"), ("huge", "python"),
                                       ("past_int64", "hostile"), ("reversed", None)])
@pytest.mark.parametrize("make", MODELS)
def test_generated_source_holds_positions_only(make, ids, names, tmp_path):
    model, _ = MODELS[make]()
    engine = Engine(variant(model, tmp_path, ids, names))
    for where, plan in all_plans(engine):
        n_params = len(plan.param_ids)
        for kind in ("run", "run_all", "run_events"):
            src, lines = plan.source(kind)
            compile(src, "<test>", "exec")
            tree = ast.parse(src)
            (fn,) = tree.body
            assert isinstance(fn, ast.FunctionDef) and fn.name == kind
            args = [a.arg for a in fn.args.args]
            extra = ["finish", "fail"] if kind == "run_events" else []
            assert args == ["ctx", *extra] + [f"p{k}" for k in range(n_params)], (where, src)
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    assert node.id in _FIXED or _LOCAL.fullmatch(node.id), (where, node.id)
                elif isinstance(node, ast.Constant):
                    assert node.value is None, (where, node.value)   # no string, no number
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    assert node.name == "exc"
            # every step has its line, in order, and the line calls that step's kernel (a
            # ufunc's line may be preceded by the budget's broadcast check, mapped to it too)
            calls = {line: k for line, k in lines.items()
                     if "_S_broadcast_check(" not in src.splitlines()[line - 1]}
            assert sorted(calls.values()) == list(range(len(plan.steps)))
            text = src.splitlines()
            for line, k in calls.items():
                assert re.search(rf"\bk{k}\(", text[line - 1]), text[line - 1]


def test_a_plan_without_steps_still_compiles(tmp_path):
    b = GraphBuilder("identity")
    b.result(b.parameter("a", "f32", [2]), name="out")
    engine = Engine(b.build())
    assert engine.plan.steps == []
    done, _ = final(engine, {"a": np.array([1.0, 2.0], np.float32)})
    same(done.outputs.values(), [[1.0, 2.0]])


# -- behaviour ---------------------------------------------------------------------------------
@pytest.mark.parametrize("ids,names", [(None, None), ("negative", "hostile"),
                                       ("huge", "python"), ("reversed", "hostile")])
@pytest.mark.parametrize("make", MODELS)
def test_run_run_all_and_run_events_agree(make, ids, names, tmp_path):
    model, inputs = MODELS[make]()
    engine = Engine(variant(model, tmp_path, ids, names))
    done, iterations = final(engine, inputs, record_nodes=True)      # run_events, run_all
    outputs = list(done.outputs.values())
    # The top plan called directly, both ways.
    values = match_inputs(engine.model, inputs)
    plan = engine.plan
    same(drain(plan.run(RunContext(), *values)), outputs)
    outs, every = drain(plan.run_all(RunContext(), *values))
    same(outs, outputs)
    assert len(every) == len(plan.all_value_names)
    same(every[:len(values)], values)
    # Every iteration again: run gives the body outputs, run_all every recorded node,
    # interpret the same values layer by layer.
    assert bool(iterations) == (make != "no_loop")
    for e in iterations:
        body = e.spec.body
        same(drain(body.run(RunContext(), *e.body_in)), e.body_out)
        outs, every = drain(body.run_all(RunContext(), *e.body_in))
        same(outs, e.body_out)
        assert body.result_values(every).keys() == e.nodes.keys()
        same(body.result_values(every).values(), e.nodes.values())
        stepped = {}
        for layer, layer_outs in body.interpret(RunContext(), e.body_in):
            for j, v in enumerate(layer_outs):
                stepped[layer.name if j == 0 else f"{layer.name}:{j}"] = v
        same([stepped[k] for k in stepped], [e.nodes[k] for k in stepped])
    # And the same run without recording nodes (run, not run_all, in the loops).
    plain, _ = final(engine, inputs)
    same(plain.outputs.values(), outputs)


@pytest.mark.parametrize("ids,names", [("negative", "hostile"), ("huge", "python"),
                                       ("past_int64", None)])
@pytest.mark.parametrize("make", MODELS)
def test_ids_and_names_do_not_change_the_results(make, ids, names, tmp_path):
    model, inputs = MODELS[make]()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, _ = final(Engine(variant(model, tmp_path / "a")), inputs)
    changed, _ = final(Engine(variant(model, tmp_path / "b", ids, names)), inputs)
    assert list(plain.outputs) == list(changed.outputs)
    same(plain.outputs.values(), changed.outputs.values())
    assert [(f.iterations, f.reason) for f in plain.loops] == \
        [(f.iterations, f.reason) for f in changed.loops]


def test_negative_ids_are_run_with_a_notice_that_openvino_refuses_them(tmp_path):
    model, inputs = rnn_loop()
    done, _ = final(Engine(variant(model, tmp_path, "negative")), inputs)
    said = [n.message for n in done.notices]
    assert any("has a negative id" in m and "OpenVINO refuses" in m for m in said), said
    plain, _ = final(Engine(model), inputs)
    assert not any("negative id" in n.message for n in plain.notices)


def test_a_failing_kernel_is_located_by_its_step_whatever_its_id(tmp_path):
    tree = etree.parse(str(DATA / "failing_loop" / "model.xml"))
    remap(tree.getroot(), IDS["negative"], NAMES["hostile"])
    xml = tmp_path / "model.xml"
    tree.write(str(xml), xml_declaration=True, encoding="UTF-8")
    (tmp_path / "model.bin").write_bytes((DATA / "failing_loop" / "model.bin").read_bytes())
    inputs = dict(np.load(DATA / "failing_loop" / "inputs.npz"))
    engine = Engine(read_ir(xml))
    widen = next(layer for spec in engine.loops.values() for layer in spec.body.graph.layers.values()
                 if layer.name.startswith("widen "))
    assert widen.id < 0
    with pytest.raises(RunError) as info:
        final(engine, inputs)
    assert widen.describe() in str(info.value)
    assert info.value.layer == widen.name and info.value.iteration == 2


def test_drain_returns_a_generators_value_and_passes_anything_else():
    def gen():
        yield 1
        yield 2
        return ("done",)

    assert drain(gen()) == ("done",)
    assert drain((1, 2)) == (1, 2)
    assert drain(None) is None


# -- generated code a debugger can show ----------------------------------------------------
def test_a_traceback_through_generated_code_shows_its_lines():
    import traceback

    b = GraphBuilder("sum")
    x, y = b.parameter("x", "f32", [2]), b.parameter("y", "f32", [3])
    b.result(b.op("Add", [x, y], name="x 'plus'\ny"), name="out")
    plan = Engine(b.build()).plan
    with pytest.raises(ValueError) as info:
        plan.run(RunContext(), np.zeros(2, np.float32), np.zeros(3, np.float32))
    text = "".join(traceback.format_exception(info.value))
    assert "v0_0 = k0(p0, p1)  # Add \"x 'plus'\\ny\"" in text, text
    (filename, source), = plan.generated.items()
    line = next(n for n, s in enumerate(source.splitlines(), 1)
                if s.strip().startswith("v0_0 = k0(p0, p1)"))
    assert filename.startswith("<loopdbg plan ") and f'File "{filename}", line {line}' in text


def test_every_generated_source_is_registered_and_kept_on_its_plan():
    import linecache

    model, inputs = rnn_loop()
    engine = Engine(model)
    final(engine, inputs)
    kept = {f: s for p in engine.plans for f, s in p.generated.items()}
    assert any(f.startswith("<loopdbg loop code ") for f in kept)     # the loop's own code
    assert any(f.startswith("<loopdbg plan ") for f in kept)          # the top graph's
    for filename, source in kept.items():
        assert "".join(linecache.getlines(filename)) == source
        for line in source.splitlines():
            if re.search(r"= \(?(yield from )?k\d+\(", line):           # every step names its layer
                assert re.search(r"  # \w+ '", line), line


def test_stepping_node_by_node_checks_a_broadcast_as_a_run_does():
    """``interpret`` (the debugger's node-by-node stepping, the If branch views) walks the
    interpreter's step table: an Add whose broadcast output would not fit in the memory budget
    is refused before numpy allocates it, as in a run, instead of allocating it."""
    from loopdbg.ops import budget

    b = GraphBuilder("outer")
    x = b.parameter("x", "f32", [2048, 1])
    y = b.parameter("y", "f32", [1, 2048])
    b.result(b.op("Add", [b.op("Relu", [x], name="r"), y], name="outer_sum"))
    engine = Engine(b.build())
    values = (np.zeros((2048, 1), np.float32), np.zeros((1, 2048), np.float32))
    with pytest.raises(RunError, match="'outer_sum'.*would need"):
        engine.run_to_end(dict(zip(("x", "y"), values)), max_memory=8 << 20)
    stepped = []
    budget.start(8 << 20)                   # 16 MiB of output against 8
    try:
        with pytest.raises(budget.BudgetExceeded, match="would need"):
            for layer, _ in engine.plan.interpret(RunContext(), values):
                stepped.append(layer.name)
    finally:
        budget.start(None)
    assert stepped == ["r"]
    assert [layer.name for layer, _ in engine.plan.interpret(RunContext(), values)] == \
        ["r", "outer_sum"]


def _bias_loop(x_shape, bias_shape):
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", list(x_shape))
    loop = b.loop("loop", trip=3, cond=True)
    x = loop.merged_input(x0, "x")
    y = loop.body.op("Add", [x, np.full(bias_shape, 0.5, np.float32)], name="bias")
    loop.back_edge(loop.body.op("Relu", [y], name="act"), x)
    b.result(loop.output_last(y, name="out"))
    return b.build()


def _checks_counted(monkeypatch) -> list:
    """The inputs' shapes of every broadcast check the plans' code calls from now on."""
    from loopdbg.engine import plan as plan_module
    from loopdbg.ops.sizes import broadcast_check

    calls = []

    def counting(*ins):
        calls.append([np.shape(a) for a in ins])
        return broadcast_check(*ins)

    monkeypatch.setattr(plan_module, "broadcast_check", counting)
    return calls


def test_a_constant_that_fits_the_end_of_its_other_input_is_never_checked(monkeypatch):
    """A bias or a scale ends the shape of the value it is added to: the output is that value's
    size, so the loop's code compares shapes and calls no broadcast check; a constant that
    broadcasts the other input up (an outer sum) is still checked and refused."""
    calls = _checks_counted(monkeypatch)
    x = np.ones((1, 64, 512), np.float32)           # 64x512 times 512: past _S_CHECKED
    events = list(Engine(_bias_loop(x.shape, (512,))).run({"x0": x}))
    np.testing.assert_array_equal(events[-1].outputs["out"], x + 1.5)
    assert calls == []
    x = np.ones((4096, 1), np.float32)              # (4096, 1) + (4096,): 64 MiB out
    with pytest.raises(RunError, match="'bias'.*would need"):
        Engine(_bias_loop(x.shape, (4096,))).run_to_end({"x0": x}, max_memory=32 << 20)
    assert calls and calls[0] == [(4096, 1), (4096,)]


def test_a_constant_with_leading_ones_that_fits_the_end_of_its_other_input_is_never_checked(
        monkeypatch):
    """A converter's bias is (1, 1, N) against a (1, T, N) value: the output is still that value's
    size, so the loop's code compares the value's last dimensions with the bias's shape less its
    leading 1s (kept beside the constant) and calls no broadcast check; a (1, 1, N) constant that
    broadcasts an (N, 1) value up is still checked and refused."""
    calls = _checks_counted(monkeypatch)
    x = np.ones((1, 64, 512), np.float32)           # 64x512 times 512: past _S_CHECKED
    engine = Engine(_bias_loop(x.shape, (1, 1, 512)))
    events = list(engine.run({"x0": x}))
    np.testing.assert_array_equal(events[-1].outputs["out"], x + 1.5)
    assert calls == []
    assert any("_S_tail_c" in src for _, _, src in engine.generated_code() if src)
    x = np.ones((4096, 1), np.float32)              # (4096, 1) + (1, 1, 4096): 64 MiB out
    with pytest.raises(RunError, match="'bias'.*would need"):
        Engine(_bias_loop(x.shape, (1, 1, 4096))).run_to_end({"x0": x}, max_memory=32 << 20)
    assert calls and calls[0] == [(4096, 1), (1, 1, 4096)]


def _outer_bias_loop(x_shape, bias_shape, flip=False):
    """As _bias_loop, the bias an outer value (an invariant input, as ONNX bodies read their
    weights), not a constant of the body; ``flip``: the bias the first input."""
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", list(x_shape))
    bias0 = b.parameter("bias0", "f32", list(bias_shape))
    loop = b.loop("loop", trip=3, cond=True)
    x = loop.merged_input(x0, "x")
    bias = loop.invariant_input(bias0, "b")
    y = loop.body.op("Add", [bias, x] if flip else [x, bias], name="bias")
    loop.back_edge(loop.body.op("Relu", [y], name="act"), x)
    b.result(loop.output_last(y, name="out"))
    return b.build()


@pytest.mark.parametrize("flip", [False, True])
def test_a_value_that_fits_the_end_of_its_other_input_is_never_checked(monkeypatch, flip):
    """Two values, neither a constant, one ending in the other's shape (a bias read from the
    outer graph, a causal mask added to every head's scores): the loop's code compares shapes
    and calls no broadcast check; values broadcast up (an outer sum) are still checked and
    refused, as before."""
    calls = _checks_counted(monkeypatch)
    x = np.ones((1, 64, 512), np.float32)           # 64x512 times 512: past _S_CHECKED
    bias = np.full(512, 1.5, np.float32)
    feed = {"x0": x, "bias0": bias}
    events = list(Engine(_outer_bias_loop(x.shape, bias.shape, flip)).run(feed))
    np.testing.assert_array_equal(events[-1].outputs["out"], x + 4.5)
    assert calls == []
    x = np.ones((4096, 1), np.float32)              # (4096, 1) + (4096,): 64 MiB out
    bias = np.ones(4096, np.float32)
    with pytest.raises(RunError, match="'bias'.*would need"):
        Engine(_outer_bias_loop(x.shape, bias.shape, flip)).run_to_end(
            {"x0": x, "bias0": bias}, max_memory=32 << 20)
    assert calls and sorted(calls[0]) == sorted([(4096, 1), (4096,)])

