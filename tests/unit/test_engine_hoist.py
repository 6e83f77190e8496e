"""Constant folding of loop bodies at plan time (engine/hoist.py) changes no value anyone sees.

Every model of the corpus, tests/data (IR and ONNX) and tests/converted is run twice, recording
every node, with folding on and off: the event streams must agree event by event, every node's
value at every iteration included. Then what is folded, and what must not be.
"""

from pathlib import Path

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine import Engine, hoist
from loopdbg.engine.inputs import load_npz
from loopdbg.errors import LoopdbgError
from loopdbg.ir.load import read_model
from test_engine_loopcode import _same

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted(p for d in ("tests/corpus", "tests/data", "tests/converted")
                for p in (ROOT / d).glob("**/model.xml")) + \
    sorted((ROOT / "tests" / "data" / "onnx_torch").glob("*.onnx")) + \
    [ROOT / "tests" / "corpus" / "onnx_loop_spec_example" / "model.onnx"]


def _inputs(path: Path):
    if path.suffix == ".onnx" and path.parent.name == "onnx_torch":
        return load_npz(path.with_name(path.stem + ".inputs.npz"))
    return load_npz(path.parent / "inputs.npz")


def _events(model, inputs, on: bool, monkeypatch, flag="ENABLED", record=True, **options):
    """The events of a run with ``hoist.<flag>`` set to ``on``, every node recorded when
    ``record`` (the general loop code) or not (the compiled one); (engine, events, error)."""
    with monkeypatch.context() as m:
        m.setattr(hoist, flag, on)
        engine = Engine(model)
    events, error = [], None
    try:
        for e in engine.run(inputs, record_nodes=record, **options):
            events.append(e)
    except LoopdbgError as exc:
        error = str(exc)
    return engine, events, error


def _compare(model, inputs, monkeypatch, **options):
    """Runs with ``hoist.<flag>`` on and off agree event by event; (engine, events, error)."""
    engine, folded, folded_error = _events(model, inputs, True, monkeypatch, **options)
    _, plain, plain_error = _events(model, inputs, False, monkeypatch, **options)
    assert folded_error == plain_error
    _agree(folded, plain)
    return engine, folded, folded_error


def _agree(events, others) -> None:
    """Two event streams are the same, event by event, value by value."""
    assert [type(e).__name__ for e in events] == [type(e).__name__ for e in others]
    for a, b in zip(events, others):
        name = type(a).__name__
        if name == "IterationDone":
            assert (a.path, a.iteration, bool(a.cond), a.continues, a.stop_reason) == \
                (b.path, b.iteration, bool(b.cond), b.continues, b.stop_reason)
            _same(a.body_in, b.body_in)
            _same(a.body_out, b.body_out)
            _same(a.nodes, b.nodes)
        elif name in ("LoopFinished", "RunFinished"):
            _same(a.outputs, b.outputs)
        elif name not in ("LoopStarted", "LoopRun"):
            assert a == b


@pytest.mark.parametrize("case", MODELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_folded_runs_match_unfolded_ones_node_by_node(case, monkeypatch):
    options = {"max_iterations": 200} if case.parent.name == "endless_loop" else {}
    _, events, _ = _compare(read_model(case), _inputs(case), monkeypatch, **options)
    assert events


def _decompressing_loop(n_iter=3):
    """A loop whose body multiplies by an f16 weight decompressed by a Convert and transposed."""
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", [1, 4])
    loop = b.loop("loop", trip=n_iter, cond=True)
    x = loop.merged_input(x0, "x")
    w16 = np.arange(12, dtype=np.float16).reshape(3, 4) / 8
    w = loop.body.op("Convert", [w16], name="decompress", destination_type="f32")
    wt = loop.body.op("Transpose", [w, np.array([1, 0], np.int64)], name="w_t")
    y = loop.body.op("MatMul", [x, wt], name="mm")
    back = loop.body.op("MatMul", [y, w], name="back")
    loop.back_edge(back, x)
    b.result(loop.output_last(back, name="out"))
    return b.build(), w16


def test_a_decompressed_weight_is_folded_and_shown_at_every_iteration(monkeypatch):
    model, w16 = _decompressing_loop()
    engine, events, _ = _compare(model, {"x0": np.ones((1, 4), np.float32)}, monkeypatch)
    body = next(p for p in engine.plans if p.path)
    kinds = {s.layer.name: type(s.fn).__name__ for s in body.steps}
    assert kinds["decompress"] == "Folded" and kinds["w_t"] == "Folded"
    assert kinds["mm"] != "Folded"
    iterations = [e for e in events if type(e).__name__ == "IterationDone"]
    assert len(iterations) == 3
    for e in iterations:
        np.testing.assert_array_equal(e.nodes["decompress"], w16.astype(np.float32))
        np.testing.assert_array_equal(e.nodes["w_t"], w16.astype(np.float32).T)
        assert not e.nodes["decompress"].flags.writeable


def test_the_fast_loop_code_leaves_folded_steps_out_and_records_them_still(monkeypatch):
    """A folded step's line would only call Folded for a value nobody reads: the loop's FAST
    code has none (its readers read the constant); a run recording every node still shows it."""
    model, w16 = _decompressing_loop()
    engine = Engine(model)
    fast = [e for e in engine.run({"x0": np.ones((1, 4), np.float32)})]
    body = next(p for p in engine.plans if p.path)
    code = "".join(src for name, src in body.generated.items() if "loop code" in name)
    assert "'mm'" in code and "'decompress'" not in code and "'w_t'" not in code
    _, recorded, _ = _events(model, {"x0": np.ones((1, 4), np.float32)}, True, monkeypatch)
    _same(fast[-1].outputs, recorded[-1].outputs)
    for e in (e for e in recorded if type(e).__name__ == "IterationDone"):
        np.testing.assert_array_equal(e.nodes["w_t"], w16.astype(np.float32).T)


def test_nothing_is_folded_past_the_bound(monkeypatch):
    monkeypatch.setattr(hoist, "FOLD_BYTES", 16)      # the decompressed weight is 48 bytes
    model, _ = _decompressing_loop()
    body = next(p for p in Engine(model).plans if p.path)
    assert not any(type(s.fn) is hoist.Folded for s in body.steps)
    assert body.folded_bytes == 0


def _weights_loop(sizes):
    """A loop whose body multiplies its state by f16 weights of ``sizes`` (n x n each), each
    decompressed by a Convert (as ov.save_model's compress_to_fp16 writes them)."""
    b = GraphBuilder("net")
    n0 = sizes[0]
    x0 = b.parameter("x0", "f32", [1, n0])
    loop = b.loop("loop", trip=2, cond=True)
    x = y = loop.merged_input(x0, "x")
    rng = np.random.default_rng(5)
    weights = []
    for k, n in enumerate(sizes):
        w16 = (rng.standard_normal((n0, n)) / n0).astype(np.float16)
        w16[0, :2] = [-0.0, 6e-8]                       # (a negative zero, a subnormal)
        weights.append(w16)
        w = loop.body.op("Convert", [w16], name=f"w{k}", destination_type="f32")
        y = loop.body.op("MatMul", [y, w], name=f"mm{k}")
        n0 = n
    loop.back_edge(y, x)
    b.result(loop.output_last(y, name="out"))
    return b.build(), weights


def test_a_body_s_decompressed_weights_share_one_buffer(monkeypatch):
    """The decompressions of a body's f16 weights are folded into one float32 buffer (made
    once, ``hoist.weight_buffer``): each value is a read-only C-order view of it, bit for bit
    what astype gives (a big weight by the table, small ones by numpy's cast); the runs agree
    with unfolded ones event by event. (Weights under ``POOLED_FROM`` values are left to the
    allocator: here every one is pooled.)"""
    monkeypatch.setattr(hoist, "POOLED_FROM", 1)
    model, weights = _weights_loop([96, 96, 96])        # 9,216 values each: the table's path
    x0 = {"x0": np.full((1, 96), 0.5, np.float32)}
    engine, events, _ = _compare(model, x0, monkeypatch)
    body = next(p for p in engine.plans if p.path)
    folded = {s.layer.name: s.fn.value for s in body.steps if type(s.fn) is hoist.Folded}
    values = [folded[f"w{k}"] for k in range(3)]
    base = values[0].base
    assert base is not None and all(v.base is base for v in values)
    assert base.nbytes == body.folded_bytes == 3 * 96 * 96 * 4
    for v, w16 in zip(values, weights):
        assert v.flags.c_contiguous and not v.flags.writeable and v.shape == w16.shape
        assert np.array_equal(v.view(np.uint32), w16.astype(np.float32).view(np.uint32))
    small, small_weights = _weights_loop([4, 4, 4])     # numpy's own cast, into the buffer
    body = next(p for p in Engine(small).plans if p.path)
    for k, w16 in enumerate(small_weights):
        value = next(s.fn.value for s in body.steps if s.layer.name == f"w{k}")
        assert np.array_equal(value.view(np.uint32), w16.astype(np.float32).view(np.uint32))
    monkeypatch.setattr(hoist, "POOLED_FROM", 96 * 96 + 1)     # each on its own, as before
    body = next(p for p in Engine(model).plans if p.path)
    values = [s.fn.value for s in body.steps if type(s.fn) is hoist.Folded]
    assert len(values) == 3 and all(v.base is None for v in values)


def test_the_weight_buffer_holds_to_the_bound(monkeypatch):
    """Past the plan's bound a weight is neither in the buffer nor folded: the buffer's bytes
    count as folded from the start (two 4x4 weights of three fit in 140 bytes)."""
    monkeypatch.setattr(hoist, "FOLD_BYTES", 140)
    monkeypatch.setattr(hoist, "POOLED_FROM", 1)
    model, _ = _weights_loop([4, 4, 4])
    body = next(p for p in Engine(model).plans if p.path)
    kinds = {s.layer.name: type(s.fn) is hoist.Folded for s in body.steps}
    assert (kinds["w0"], kinds["w1"], kinds["w2"]) == (True, True, False)
    assert body.folded_bytes == 128


def test_a_body_step_without_inputs_is_planned_and_run():
    """A body step with no input at all (ReadValue-6 of a variable) reaches the folding of steps
    on constants alone with no value to look at: it is left as it is and runs."""
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", [2])
    loop = b.loop("loop", trip=2, cond=True)
    x = loop.merged_input(x0, "x")
    read = loop.body.op("ReadValue", [], name="rv", version="opset6", variable_id="v",
                        variable_type="f32", variable_shape="2")
    y = loop.body.op("Add", [x, read], name="add")
    loop.back_edge(y, x)
    b.result(loop.output_last(y, name="out"))
    engine = Engine(b.build())
    last = list(engine.run({"x0": np.ones(2, np.float32)}))[-1]
    np.testing.assert_array_equal(last.outputs["out"], np.ones(2, np.float32))
    body = next(p for p in engine.plans if p.path)
    assert not any(type(s.fn) is hoist.Folded for s in body.steps)


def test_a_step_that_fails_fails_at_its_iteration_as_before(monkeypatch):
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", [2])
    loop = b.loop("loop", trip=2, cond=True)
    x = loop.merged_input(x0, "x")
    bad = loop.body.op("Reshape", [np.zeros(6, np.float32), np.array([4], np.int64)],
                       name="bad_reshape", special_zero="false")
    y = loop.body.op("Add", [x, np.ones(2, np.float32)], name="y")
    loop.back_edge(y, x)
    b.result(loop.output_last(y, name="out"))
    b.result(loop.output_last(bad, name="bad"))
    try:
        model = b.build()
    except Exception:  # noqa: BLE001 - the builder's shape rules may refuse it first
        pytest.skip("the builder refuses the bad reshape")
    _, _, folded_error = _events(model, {"x0": np.zeros(2, np.float32)}, True, monkeypatch)
    _, _, plain_error = _events(model, {"x0": np.zeros(2, np.float32)}, False, monkeypatch)
    assert folded_error is not None and folded_error == plain_error
    assert "bad_reshape" in folded_error


def test_run_state_and_random_kernels_are_not_folded():
    def counter():
        return 1
    counter.needs_context = True
    assert hoist.fold(counter, (np.ones(1),), 1, 1 << 20) is None

    def noisy(x):
        return x
    noisy.notice = "seeded with 0"
    assert hoist.fold(noisy, (np.ones(1),), 1, 1 << 20) is None
    assert hoist.fold(lambda x: [x], (np.ones(1),), 1, 1 << 20) is None     # a sequence
    assert hoist.fold(lambda: np.ones(1), (), 1, 1 << 20) is None           # no input
    out = hoist.fold(lambda x: (x + 1, x * 2), (np.ones(2),), 2, 1 << 20)
    assert [v.tolist() for v in out] == [[2, 2], [2, 2]] and not out[0].flags.writeable


def test_stepping_node_by_node_shows_the_folded_values(monkeypatch):
    from loopdbg.engine.context import RunContext

    model, w16 = _decompressing_loop()
    x = np.ones((1, 4), np.float32)
    seen = {}
    for folding in (True, False):
        monkeypatch.setattr(hoist, "ENABLED", folding)
        body = next(p for p in Engine(model).plans if p.path)
        params = [x if name == "x" else np.array(0, np.int64) for name in body.param_names]
        seen[folding] = [(layer.name, outs) for layer, outs in
                         body.interpret(RunContext(), params)]
    assert [n for n, _ in seen[True]] == [n for n, _ in seen[False]]
    for (name, a), (_, b) in zip(seen[True], seen[False]):
        _same(a, b)
    assert dict(seen[True])["decompress"][0].tolist() == w16.astype(np.float32).tolist()
