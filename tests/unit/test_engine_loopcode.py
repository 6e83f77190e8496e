"""Each loop's compiled iteration code (engine/loopcode.py) does what the general code does.

Every model of the corpus and of tests/data, and the benchmark's converter-style body, is run
twice: once as the engine runs it (``FAST``: bodies inlined, invariant steps hoisted, temporaries
reused, steady copies) and once with every loop's body called as its own function each iteration
(``CALLED``, or ``RECORDED`` when every node is recorded). The two event streams must agree event by event: kinds, loop paths, iteration
numbers, conditions, stop reasons, every body input and output, the loops' and the model's
outputs, notices, and errors (the same sentence).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine
from loopdbg.engine import iteration_checks, loopcode, runner
from loopdbg.engine.inputs import load_npz
from loopdbg.errors import LoopdbgError
from loopdbg.ir.load import read_model

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted(p.parent for p in (ROOT / "tests" / "corpus").glob("*/model.xml")) + \
    sorted(p.parent for p in (ROOT / "tests" / "data").glob("*/model.xml"))


def _general(spec):
    called = loopcode.compile_loop(spec, loopcode.CALLED)
    recorded = loopcode.compile_loop(spec, loopcode.RECORDED)
    return lambda ctx, *args: (recorded if ctx.record_nodes else called)(ctx, args)


def _events(model, inputs, general: bool, monkeypatch, **options):
    with monkeypatch.context() as m:
        if general:
            m.setattr(runner, "runner", _general)
        engine = Engine(model)
    events, error = [], None
    try:
        for e in engine.run(inputs, **options):
            events.append(e)
    except LoopdbgError as exc:
        error = str(exc)
    return events, error


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (np.ndarray, np.generic)):
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def compare(model, inputs, monkeypatch, **options):
    fast, fast_error = _events(model, inputs, False, monkeypatch, **options)
    slow, slow_error = _events(model, inputs, True, monkeypatch, **options)
    return _agree(fast, fast_error, slow, slow_error)


def _agree(fast, fast_error, slow, slow_error):
    """The two runs' events agree, event by event (``nodes`` aside); returns the first's."""
    assert fast_error == slow_error
    assert [type(e).__name__ for e in fast] == [type(e).__name__ for e in slow]
    for a, b in zip(fast, slow):
        name = type(a).__name__
        if name == "IterationDone":
            assert (a.path, a.iteration, a.trip_count, bool(a.cond), a.continues, a.outer,
                    a.stop_reason, a.spec is not None) == \
                (b.path, b.iteration, b.trip_count, bool(b.cond), b.continues, b.outer,
                 b.stop_reason, b.spec is not None)
            _same(a.body_in, b.body_in)
            _same(a.body_out, b.body_out)
            _same(a.partials, b.partials)
        elif name in ("LoopFinished", "RunFinished"):
            _same(a.outputs, b.outputs)
            if name == "LoopFinished":
                assert (a.path, a.iterations, a.reason, a.outer, a.error) == \
                    (b.path, b.iterations, b.reason, b.outer, b.error)
        elif name == "LoopStarted":
            assert (a.path, a.trip_count, a.execution_condition, a.outer) == \
                (b.path, b.trip_count, b.execution_condition, b.outer)
        else:
            assert a == b
    return fast, fast_error


@pytest.mark.parametrize("case", MODELS, ids=lambda p: p.name)
def test_compiled_loops_match_the_general_code(case, monkeypatch):
    options = {"max_iterations": 500} if case.name == "endless_loop" else {}
    events, _ = compare(read_model(case / "model.xml"), load_npz(case / "inputs.npz"),
                        monkeypatch, **options)
    assert events


@pytest.mark.parametrize("case", MODELS, ids=lambda p: p.name)
def test_recording_every_node_changes_no_event(case, monkeypatch):
    """A run that records every node (``loopcode.RECORDED``: the body's run_all, called by the
    same iteration code) tells the events of the usual run, each iteration with every node."""
    model, inputs = read_model(case / "model.xml"), load_npz(case / "inputs.npz")
    options = {"max_iterations": 500} if case.name == "endless_loop" else {}
    fast, fast_error = _events(model, inputs, False, monkeypatch, **options)
    recorded, recorded_error = _events(model, inputs, False, monkeypatch, record_nodes=True,
                                       **options)
    _agree(recorded, recorded_error, fast, fast_error)
    for a, b in zip(recorded, fast):
        if type(a).__name__ == "IterationDone":
            body = a.spec.body
            assert b.nodes is None and list(a.nodes) == body.all_value_names
            _same(list(a.nodes.values())[:len(a.body_in)], a.body_in)


@pytest.mark.parametrize("options", [{"max_iterations": 3}, {"max_memory": 64}])
def test_caps_and_budgets_stop_both_alike(options, monkeypatch):
    case = ROOT / "tests" / "corpus" / "loop_for_accum_scan"
    compare(read_model(case / "model.xml"), load_npz(case / "inputs.npz"), monkeypatch, **options)


def test_a_failing_kernel_is_named_alike(monkeypatch):
    case = ROOT / "tests" / "data" / "failing_loop"
    _, error = compare(read_model(case / "model.xml"), load_npz(case / "inputs.npz"), monkeypatch)
    assert error and "iteration" in error


def test_back_edges_swap_at_once(monkeypatch):
    """Rule 5: a Result that is a Parameter feeds the other back edge with the old value."""
    from loopdbg.builder import GraphBuilder

    b = GraphBuilder("swap")
    a0, b0 = b.parameter("a0", "f32", [2]), b.parameter("b0", "f32", [2])
    loop = b.loop("swap", trip=5, cond=True)
    a, bb = loop.merged_input(a0, "a"), loop.merged_input(b0, "b")
    body = loop.body
    a2 = body.op("Add", [bb, np.zeros(2, np.float32)], name="a_next")
    loop.back_edge(a2, a)
    loop.back_edge(a, bb)                       # b takes a's value as it was
    loop.condition(body.const("true", np.array(True)))
    b.result(loop.output_last(a2, name="a_final"))
    b.result(loop.output_concat(a2, axis=0, name="a_all"))
    inputs = {"a0": np.array([1, 2], np.float32), "b0": np.array([3, 4], np.float32)}
    events, _ = compare(b.build(), inputs, monkeypatch)
    assert events[-1].outputs["a_all"].tolist() == [3, 4, 1, 2, 3, 4, 1, 2, 3, 4]


def test_the_converter_style_body(monkeypatch):
    sys.path.insert(0, str(ROOT / "tests"))
    import benchmark_converter

    model, inputs, _ = benchmark_converter.build(steps=25)
    compare(model, inputs, monkeypatch)


@pytest.mark.parametrize("case", MODELS[:8] + MODELS[-5:], ids=lambda p: p.name)
def test_interpreted_plans_match_compiled_ones(case, monkeypatch):
    """Graphs over interp.COMPILE_LIMIT steps are interpreted: the same events, the same errors
    (a failing kernel still named)."""
    from loopdbg.engine import plan

    model, inputs = read_model(case / "model.xml"), load_npz(case / "inputs.npz")
    options = {"max_iterations": 500} if case.name == "endless_loop" else {}
    want, want_error = _events(model, inputs, False, monkeypatch, **options)
    with monkeypatch.context() as m:
        m.setattr(plan, "COMPILE_LIMIT", 0)
        m.setattr(loopcode, "COMPILE_LIMIT", 0)
        got, got_error = _events(model, inputs, False, monkeypatch, **options)
    assert got_error == want_error
    assert [type(e).__name__ for e in got] == [type(e).__name__ for e in want]
    for a, b in zip(got, want):
        if type(a).__name__ == "IterationDone":
            _same(a.body_in, b.body_in)
            _same(a.body_out, b.body_out)
        elif type(a).__name__ in ("LoopFinished", "RunFinished"):
            _same(a.outputs, b.outputs)


def _ufunc_loop(x0, c, trip=6, scan=True):
    """x = x + c, a body of ufuncs only (loopcode.steady_kind), with a scan of x."""
    from loopdbg.builder import GraphBuilder

    b = GraphBuilder("steady")
    x = b.parameter("x0", str(x0.dtype).replace("float", "f").replace("int", "i"), list(x0.shape))
    loop = b.loop("acc", trip=trip, cond=True)
    xb = loop.merged_input(x, "x")
    nxt = loop.body.op("Add", [xb, c], name="x_next")
    loop.back_edge(nxt, xb)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(nxt, name="x_last"))
    if scan:
        b.result(loop.output_concat(nxt, axis=0, name="x_all"))
    return b.build()


def _steady_calls(monkeypatch):
    said = []
    real = iteration_checks.steady

    def spy(*args):
        said.append(real(*args))
        return said[-1]

    monkeypatch.setattr(iteration_checks, "steady", spy)
    return said, loopcode


def test_a_body_of_ufuncs_stops_checking_once_steady(monkeypatch):
    """The back edge grows from [1] to [3] in iteration 0 (broadcasting), is steady from
    iteration 1 on: the compiled code asks twice, then runs unchecked; events as the general
    code's."""
    said, loopcode = _steady_calls(monkeypatch)
    model = _ufunc_loop(np.zeros(1, np.float32), np.array([1, 2, 3], np.float32), trip=50)
    assert loopcode.steady_kind(Engine(model).loops["acc"])
    events, error = compare(model, {"x0": np.zeros(1, np.float32)}, monkeypatch)
    assert error is None and said[:2] == [False, True] and said.count(True) == 1
    assert events[-1].outputs["x_all"].shape == (150,)


def test_a_dtype_change_is_caught_before_any_steady_state(monkeypatch):
    model = _ufunc_loop(np.zeros(2, np.int32), np.ones(2, np.float32))
    _, error = compare(model, {"x0": np.zeros(2, np.int32)}, monkeypatch)
    assert error and "changed dtype" in error


def test_0d_scan_pieces_never_make_a_loop_steady(monkeypatch):
    """A scan of 0-d pieces (numpy scalars from the ufuncs) keeps its checks: asked once."""
    said, _ = _steady_calls(monkeypatch)
    model = _ufunc_loop(np.zeros((), np.float32), np.float32(1), trip=5)
    events, error = compare(model, {"x0": np.zeros((), np.float32)}, monkeypatch)
    assert error is None and said == [None]
    assert events[-1].outputs["x_all"].tolist() == [1, 2, 3, 4, 5]


def test_without_a_scan_a_loop_is_steady_after_its_first_iteration(monkeypatch):
    said, _ = _steady_calls(monkeypatch)
    model = _ufunc_loop(np.zeros(4, np.float32), np.float32(1), trip=5, scan=False)
    _, error = compare(model, {"x0": np.zeros(4, np.float32)}, monkeypatch)
    assert error is None and said == [True]


def test_a_body_of_three_thousand_layers_is_compiled_as_a_small_one():
    """Real decoder bodies have 1,000-3,000 layers: their steps are inlined into the loop's code
    (registered with linecache, shown by explain --code), not interpreted, and a failing layer
    is still named."""
    import linecache

    from loopdbg.builder import GraphBuilder

    def build(bad: bool):
        b = GraphBuilder("deep")
        x = b.parameter("x0", "f32", [2])
        loop = b.loop("deep", trip=3, cond=True)
        h = xb = loop.merged_input(x, "x")
        for k in range(3000):
            h = loop.body.op("Add", [h, np.float32(1)], name=f"add{k}")
        if bad:                             # a Reshape that cannot be: fails at iteration 0
            h = loop.body.op("Reshape", [h, np.array([3], np.int64)], name="bad_reshape",
                             special_zero="false")
        loop.back_edge(h, xb)
        loop.condition(loop.body.const("true", np.array(True)))
        b.result(loop.output_last(h, name="x_last"))
        return b.build()

    engine = Engine(build(False))
    spec = next(iter(engine.loops.values()))
    assert len(spec.body.steps) >= 3000 and loopcode.inlined(spec.body)
    out = engine.run_to_end({"x0": np.zeros(2, np.float32)}).outputs
    assert out["x_last"].tolist() == [9000, 9000]
    (what, filename, source), = [c for c in engine.generated_code() if c[0] == "loop 'deep'"]
    assert "interpreted" not in source and "= k2999(" in source and "# Add 'add2999'" in source
    assert "".join(linecache.getlines(filename)) == source
    with pytest.raises(LoopdbgError, match="'bad_reshape'"):
        Engine(build(True)).run_to_end({"x0": np.zeros(2, np.float32)})
