"""Shape arithmetic run through memos in the FAST loop code (engine/memo) changes no value anyone
sees: every model of tests/ and an exported-style GPT decoder (tests/unit/_gpt_onnx.py: the
shape plumbing of torch.onnx-exported GPT decoders, at test size) run with the memos and without,
event by event (every body input and output, the loops' and the model's outputs, errors), with
and without a debugger asking for some iterations' every value; the memos do spare the second
block's and the repeated ``Shape``'s kernels, and a recorded iteration still shows each node.
"""

from pathlib import Path

import numpy as np
import pytest

from _gpt_onnx import gpt_loop
from loopdbg.engine import Engine, IterationDone, memo
from loopdbg.errors import LoopdbgError
from loopdbg.ir.load import read_model
from loopdbg.ir.onnx_reader import from_proto
from test_engine_hoist import MODELS, _agree, _inputs
from test_engine_keep_nodes import _pulled
from test_engine_loopcode import _same

ROOT = Path(__file__).resolve().parents[2]
CONVERTED = sorted((ROOT / "tests" / "data" / "converted").glob("*/model.onnx"))


def _events(model, inputs, on: bool, monkeypatch, wish=None, **options):
    """(engine, events, error) of a FAST run with the memos ``on`` or off."""
    with monkeypatch.context() as m:
        m.setattr(memo, "ENABLED", on)
        engine = Engine(model)
    events, error = _pulled(engine, inputs, wish, **options)
    return engine, events, error


def _compare(model, inputs, monkeypatch, wish=None, **options):
    """Runs with the memos and without agree event by event; (engine, events)."""
    engine, fast, fast_error = _events(model, inputs, True, monkeypatch, wish, **options)
    _, plain, plain_error = _events(model, inputs, False, monkeypatch, wish, **options)
    assert fast_error == plain_error
    _agree(fast, plain)
    for a, b in zip(fast, plain):           # and bit for bit (-0.0, NaNs' payloads)
        if type(a) is IterationDone:
            assert _bits(a.body_out) == _bits(b.body_out)
    return engine, fast


def _bits(values) -> list:
    return [(v.dtype.str, v.shape, v.tobytes()) if isinstance(v, (np.ndarray, np.generic))
            else repr(v) for v in values]


def _gpt(**kw):
    proto, inputs = gpt_loop(**kw)
    return from_proto(proto), inputs


def _chosen(engine) -> dict[str, list[str]]:
    """Loop path -> the names of its body layers run through a memo."""
    from loopdbg.engine.loopcode import _Inlined

    return {path: [spec.body.steps[k].layer.name for k in sorted(_Inlined(spec).memo)]
            for path, spec in engine.loops.items()}


@pytest.mark.parametrize("case", MODELS + CONVERTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_memo_runs_match_plain_ones_event_by_event(case, monkeypatch):
    options = {"max_iterations": 200} if case.parent.name == "endless_loop" else {}
    _, events = _compare(read_model(case), _inputs(case), monkeypatch, **options)
    assert events


@pytest.mark.parametrize("blocks", [1, 3])
def test_the_exported_decoder_matches_event_by_event_and_uses_its_memos(blocks, monkeypatch):
    model, inputs = _gpt(blocks=blocks)
    engine, events = _compare(model, inputs, monkeypatch)
    chosen = _chosen(engine)["generate"]
    for kind in ("shape0", "shape1", "shape2", "_d0", "_div", "_cast1", "_u0t", "_shape4_0",
                 "_shape3"):
        assert all(any(n == f"b{b}{kind}" or n == f"b{b}_{kind.lstrip('_')}" for n in chosen)
                   for b in range(blocks)), (kind, chosen)
    assert "mask_shape" in chosen and "b0_qkv" not in chosen and "b0_merged" not in chosen
    assert sum(type(e) is IterationDone for e in events) == 5


def test_a_debugger_asking_for_some_iterations_sees_every_node_and_the_same_events(monkeypatch):
    """Iterations 0 and 3 run by run_all (every node's own kernel), the others through the
    memos, which outlive the recorded ones: the stream is the plain one's, and the kept nodes
    are those of a run that records every node."""
    model, inputs = _gpt(blocks=2)

    def wish(events):
        done = sum(type(e) is IterationDone for e in events)
        return 1 << 30 if done in (0, 3) else 0

    _, asked = _compare(model, inputs, monkeypatch, wish=wish)
    recorded, _ = _pulled(Engine(model), inputs, record_nodes=True)
    kept = [(a, r) for a, r in zip(asked, recorded) if type(a) is IterationDone and a.nodes]
    assert [a.iteration for a, _ in kept] == [0, 3]
    for a, r in kept:
        assert list(a.nodes) == list(r.nodes)
        _same(a.nodes, r.nodes)
        assert a.nodes["b1_shape0"].tolist() == [1, 3 + a.iteration, 8]


def test_the_later_blocks_and_the_repeated_shapes_run_no_kernel(monkeypatch):
    """Each iteration computes each shape expression once, in the first block (and for the
    first of the three ``Shape`` of a block's input): a decoder of three blocks runs as many
    shape kernels as one of one block, about a third of the steps run through memos."""
    ran = []

    def counted(real):
        def miss(m, fn, *args):
            ran.append(fn)
            return real(m, fn, *args)
        return miss

    monkeypatch.setitem(memo.NAMES, "_S_shape", counted(memo.shape))
    monkeypatch.setitem(memo.NAMES, "_S_same", counted(memo.same))
    counts = {}
    for blocks in (1, 3):
        model, inputs = _gpt(blocks=blocks)
        engine = Engine(model)
        ran.clear()
        events = list(engine.run(inputs))
        counts[blocks] = (len(ran), len(_chosen(engine)["generate"]))
        assert events[-1].outputs["seq"].shape == (1, 8)
    assert counts[3][0] == counts[1][0] and counts[3][0] < 5 * counts[3][1] / 2, counts


def test_a_kept_value_is_read_only_and_an_input_given_back_is_left_alone(monkeypatch):
    from onnx import TensorProto, helper

    i64 = TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["w_same"], name="w_same"),
         helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
         helper.make_node("Concat", ["x_shape", "w_same"], ["both"], name="both", axis=0),
         helper.make_node("Add", ["x", "x"], ["x_out"], name="x_out"),
         helper.make_node("Identity", ["cond"], ["cond_out"], name="cond_out")],
        "body",
        [helper.make_tensor_value_info("i", i64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", i64, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", i64, [2]),
         helper.make_tensor_value_info("both", i64, [3])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x0"], ["x_last", "boths"], body=body)], "g",
        [helper.make_tensor_value_info(v, i64, s) for v, s in
         (("n", []), ("x0", [2]), ("w", [2]))],
        [helper.make_tensor_value_info("x_last", i64, [2]),
         helper.make_tensor_value_info("boths", i64, [None, 3])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    w = np.array([7, 8], np.int64)
    inputs = {"n": np.array(3, np.int64), "x0": np.array([1, 2], np.int64), "w": w}
    engine, events = _compare(from_proto(proto), inputs, monkeypatch)
    assert list(_chosen(engine).values()) == [["w_same", "x_shape", "both"]]
    assert w.flags.writeable
    scans = [e.body_out for e in events if type(e) is IterationDone]
    assert [s[2].tolist() for s in scans] == [[2, 7, 8]] * 3
    assert scans[0][2] is scans[2][2] and not scans[0][2].flags.writeable


def test_a_failing_memo_step_is_named_as_before(monkeypatch):
    """A step run through a memo that fails (here a Gather of a dimension the shape lacks, once
    the sequence is short) fails with its own layer named, at its iteration, memos or not."""
    model, inputs = _gpt(blocks=2)
    inputs = {**inputs, "prompt": np.zeros((1, 70), np.int64)}      # past the 64 positions
    with pytest.raises(LoopdbgError, match="pos_emb"):
        Engine(model).run_to_end(inputs)
    _compare(model, inputs, monkeypatch)


def test_a_memo_keeps_nothing_big():
    """A memo holds what it compares and what it gives: a big value, or a small one computed
    from a big input (a row gathered from an outer table), is given but not kept."""
    small, big = np.arange(3, dtype=np.int64), np.zeros(10_000, np.float32)
    m = [None, object()]
    out = memo.same(m, lambda x: x[:2], (big,), big)
    assert out.tolist() == [0.0, 0.0] and m[0] is None and m[1] is not big
    out = memo.same(m, lambda x: np.concatenate([x, x]), (small,), small)
    assert m[0] is out and m[1] is small and not out.flags.writeable
    assert small.flags.writeable                    # (an input is never made read-only)
    out = memo.same(m, lambda x: np.repeat(x, 1000), (small,), small)    # 24 kB: given only
    assert out.size == 3000 and out.flags.writeable and m[0] is not out
    out = memo.shape(m, lambda x: np.array(x.shape, np.int64), big)
    assert m[0] is out and m[1] == (10_000,)        # a shape is kept, not the array


def test_a_sequence_is_given_but_never_kept():
    """An Identity of an ONNX sequence gives a list: not kept, and its arrays left as they are."""
    items = [np.arange(2), np.arange(3)]
    m = [None, object()]
    out = memo.same(m, lambda s: s, (items,), items)
    assert out is items and m[0] is None and all(a.flags.writeable for a in items)


def test_only_a_plain_kernel_of_its_inputs_alone_is_chosen():
    """memo.steps passes over a step whose kernel needs the run's context (``with_ctx``), a
    nested one and one whose kernel says something of itself (``notice``), whatever their type;
    the same layers with plain kernels share one memo, in the order of their steps."""
    from types import SimpleNamespace

    from loopdbg.engine.plan import Step
    from loopdbg.ir.model import Layer, Port

    def shape_of(x):
        return np.array(x.shape, np.int64)

    def noticed(x):
        return shape_of(x)

    noticed.notice = "says something"
    layers = [Layer(id=k, name=f"s{k}", type="onnx.Shape", version="opset13",
                    inputs=(Port(0, 0, "FP32", (2, 3)),), outputs=(Port(1, 0, "I64", (2,)),))
              for k in range(6)]
    kinds = [(shape_of, False, False), (shape_of, False, True), (shape_of, True, False),
             (noticed, False, False), (shape_of, False, False), (shape_of, False, False)]
    steps = [Step(layer, fn, ("p0",), (f"v{k}_0",), nested, ctx)
             for k, (layer, (fn, nested, ctx)) in enumerate(zip(layers, kinds))]
    chosen, memos = memo.steps(SimpleNamespace(steps=steps, consts={}), {"p0"})
    assert sorted(chosen) == [0, 4, 5]
    assert {m.name for m in chosen.values()} == set(memos) == {"_S_m0"}
    assert all(m.shape_of and m.keys == ("p0",) for m in chosen.values())
