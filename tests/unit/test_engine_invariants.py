"""Loop-invariant steps run once per loop execution (engine/hoist.invariant_steps) and change no
value anyone sees.

Every model of the corpus, tests/data (IR and ONNX) and tests/converted, and loops built here to
have invariant work (an outer weight decompressed and transposed, an inner loop whose invariant
input changes with the outer iteration, a big invariant temporary a later step could write into,
a failing invariant step), is run by the compiled loop code twice, with the invariant steps moved
and not: the event streams must agree event by event (every body input and output, the loops'
and the model's outputs, notices, errors).
"""

from pathlib import Path

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine import Engine, hoist
from loopdbg.ir.load import read_model
from test_engine_hoist import MODELS, _compare as compare, _inputs

ROOT = Path(__file__).resolve().parents[2]
CONVERTED = sorted((ROOT / "tests" / "data" / "converted").glob("*/model.onnx"))


def _compare(model, inputs, monkeypatch, **options):
    """Compiled runs with the invariant steps moved and not agree event by event."""
    return compare(model, inputs, monkeypatch, flag="INVARIANTS", record=False, **options)


def _moved(engine) -> dict[str, set[str]]:
    """Loop path -> the names of its body layers run once per execution."""
    return {path: {spec.body.steps[k].layer.name for k in hoist.invariant_steps(
        spec.body.steps, spec.body.consts, {f"p{p}" for p, _ in spec.invariant})}
        for path, spec in engine.loops.items()}


@pytest.mark.parametrize("case", MODELS + CONVERTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_moved_runs_match_unmoved_ones_event_by_event(case, monkeypatch):
    options = {"max_iterations": 200} if case.parent.name == "endless_loop" else {}
    _, events, _ = _compare(read_model(case), _inputs(case), monkeypatch, **options)
    assert events


def test_the_converted_decoders_move_their_invariant_work():
    """The reason for it: ONNX bodies read outer values (weights, the encoder's output)."""
    case = ROOT / "tests" / "data" / "converted" / "attention_decoder" / "model.onnx"
    moved = _moved(Engine(read_model(case)))
    assert any(moved.values()), moved


def _outer_weight_loop(trip=3, size=2):
    """A loop reading an outer f16 weight: decompressed and transposed (invariant), multiplied
    with the carried x (not); an inner loop reads the outer x as its invariant input."""
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", [1, size])
    w0 = b.parameter("w0", "f16", [size, size])
    loop = b.loop("outer", trip=trip, cond=True)
    x = loop.merged_input(x0, "x")
    w = loop.invariant_input(w0, "w")
    xx = loop.body.op("Add", [x, np.ones((1, size), np.float32)], name="x_plus")   # checked
    wf = loop.body.op("Convert", [w], name="decompress", destination_type="f32")
    w2 = loop.body.op("Add", [wf, np.ones((size, size), np.float32)], name="w_plus")
    wt = loop.body.op("Transpose", [w2, np.array([1, 0], np.int64)], name="w_t")
    y = loop.body.op("MatMul", [xx, wt], name="mm")
    inner = loop.body.loop("inner", trip=2, cond=True)
    acc = inner.merged_input(y, "acc")
    xo = inner.invariant_input(x, "x_outer")
    twice = inner.body.op("Multiply", [xo, np.float32(2)], name="twice")   # invariant per run
    acc2 = inner.body.op("Add", [acc, twice], name="acc2")
    inner.back_edge(acc2, acc)
    inner.condition(inner.body.const("true", np.array(True)))
    out = inner.output_last(acc2, name="acc_last")
    loop.back_edge(out, x)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(out, name="x_last"))
    b.result(loop.output_concat(wt, axis=0, name="w_t_all"))
    return b.build()


def test_an_outer_weight_is_decompressed_once_per_execution(monkeypatch):
    model = _outer_weight_loop()
    inputs = {"x0": np.array([[1, 2]], np.float32),
              "w0": np.array([[1, 0.5], [0.25, 2]], np.float16)}
    engine, events, error = _compare(model, inputs, monkeypatch)
    assert error is None
    moved = _moved(engine)
    assert moved["outer"] == {"decompress", "w_plus", "w_t"}
    assert moved["outer/inner"] == {"twice"}         # recomputed at each inner execution
    source = "".join(s for _, f, s in engine.generated_code() if s and "loop code" in f)
    assert "if _L_i == 0: v1_0 = k1(p1)  # Convert 'decompress'" in source, source
    assert "    if _L_i == 0 and (v1_0.shape[-c1.ndim:] != c1.shape) and v1_0.size * c1.size > " \
        "_S_CHECKED: _S_broadcast_check(v1_0, c1)" in source, source
    w_t = events[-1].outputs["w_t_all"]
    assert w_t.shape == (6, 2)
    np.testing.assert_array_equal(w_t, np.tile(inputs["w0"].astype(np.float32).T + 1, (3, 1)))


def test_a_moved_temporary_is_never_written_into(monkeypatch):
    """A big invariant product read by one elementwise step would be that step's temporary
    (engine.elide): moved, it must stay as it was for the next iterations."""
    n = 1 << 17                                      # 512 KiB of f32: past elide.MIN_BYTES
    b = GraphBuilder("net")
    h0 = b.parameter("h0", "f32", [n])
    c0 = b.parameter("c0", "f32", [n])
    loop = b.loop("loop", trip=4, cond=True)
    h = loop.merged_input(h0, "h")
    c = loop.invariant_input(c0, "c")
    half = loop.body.op("Multiply", [c, np.float32(0.5)], name="half_c")
    h2 = loop.body.op("Add", [half, h], name="h_next")
    loop.back_edge(h2, h)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(h2, name="h_last"))
    engine, events, _ = _compare(b.build(), {"h0": np.zeros(n, np.float32),
                                             "c0": np.ones(n, np.float32)}, monkeypatch)
    assert _moved(engine)["loop"] == {"half_c"}
    np.testing.assert_array_equal(events[-1].outputs["h_last"], np.full(n, 2, np.float32))


@pytest.mark.parametrize("trip", [0, 2])
def test_a_failing_invariant_step_fails_where_it_failed(trip, monkeypatch):
    """At iteration 0, after the steps before it, with the same sentence; not at all when the
    loop runs no iteration."""
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", [2])
    s0 = b.parameter("s0", "i64", [1])
    loop = b.loop("loop", trip=trip, cond=True)
    x = loop.merged_input(x0, "x")
    s = loop.invariant_input(s0, "s")
    y = loop.body.op("Add", [x, np.ones(2, np.float32)], name="y")
    bad = loop.body.op("Reshape", [y, s], name="bad_reshape", special_zero="false")
    loop.back_edge(bad, x)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(bad, name="out"))
    engine, events, error = _compare(b.build(), {"x0": np.zeros(2, np.float32),
                                                 "s0": np.array([3], np.int64)}, monkeypatch)
    if trip:
        assert error is not None and "bad_reshape" in error and "iteration 0" in error, error
    else:
        assert error is None and events
