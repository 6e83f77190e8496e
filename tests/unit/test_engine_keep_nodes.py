"""A run whose consumer asks, between two iterations, for the next one's every value
(``RunContext.keep_nodes``, set through ``Engine.start``): the loop code runs that iteration by
the body's ``run_all`` and the others as before. Every model of tests/ is run so, asking for some
iterations and not others (the first among them: the invariant steps the later iterations skip
must still have their values), and compared event by event with a plain run, and the kept values
with a run that records every node.
"""

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine import Engine, IterationDone
from loopdbg.errors import LoopdbgError
from loopdbg.ir.load import read_model
from test_engine_hoist import MODELS, _inputs
from test_engine_invariants import _outer_weight_loop
from test_engine_loopcode import _same

EVERY = 1 << 30


def _pulled(engine, inputs, wish=None, **options):
    """(events, error) of a run; before each event is pulled, ``keep_nodes`` is
    ``wish(events so far)`` (None: a plain run, never asked)."""
    ctx, gen = engine.start(inputs, **options)
    events, error = [], None
    try:
        while True:
            if wish is not None:
                ctx.keep_nodes = wish(events)
            try:
                events.append(next(gen))
            except StopIteration:
                break
    except LoopdbgError as exc:
        error = str(exc)
    return events, error


def _check(model, inputs, wish, **options) -> list:
    """The asked-for run agrees with a plain one event by event, and its kept values with a
    recorded run's; returns the iterations that kept their values."""
    engine = Engine(model)
    plain, plain_error = _pulled(engine, inputs, **options)
    asked, asked_error = _pulled(engine, inputs, wish, **options)
    recorded, _ = _pulled(engine, inputs, record_nodes=True, **options)
    assert asked_error == plain_error
    assert [type(e) for e in asked] == [type(e) for e in plain]
    kept = []
    for a, b, r in zip(asked, plain, recorded):
        if type(a) is not IterationDone:
            continue
        assert (a.path, a.iteration, a.continues, a.stop_reason) == \
            (b.path, b.iteration, b.continues, b.stop_reason)
        _same(a.body_in, b.body_in)
        _same(a.body_out, b.body_out)
        assert b.nodes is None
        if a.nodes is not None:
            assert list(a.nodes) == list(r.nodes)
            _same(a.nodes, r.nodes)
            kept.append(a)
    if plain and type(plain[-1]).__name__ == "RunFinished":
        _same(asked[-1].outputs, plain[-1].outputs)
    return kept


@pytest.mark.parametrize("case", MODELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_iterations_asked_for_keep_every_value_and_change_nothing(case):
    options = {"max_iterations": 200} if case.parent.name == "endless_loop" else {}
    _check(read_model(case), _inputs(case), lambda events: (EVERY, 0, 0, 1, 0)[len(events) % 5],
           **options)


def test_the_invariant_values_stay_when_the_first_iteration_kept_its_values():
    """The outer loop's decompressed, transposed weight is computed in its first iteration only
    (``hoist.invariant_steps``): kept from a first iteration run by ``run_all``, the later
    iterations read it; a kept later iteration shows it too."""
    inputs = {"x0": np.array([[1, 2]], np.float32),
              "w0": np.array([[1, 2], [3, 4]], np.float16)}
    def wish(events):       # (an outer iteration starts at the pull after the one before)
        done = sum(type(e) is IterationDone and e.path == "outer" for e in events)
        return 1 if done in (0, 3) else 0
    kept = _check(_outer_weight_loop(trip=4), inputs, wish)
    outer = [e for e in kept if e.path == "outer"]
    assert [e.iteration for e in outer] == [0, 3]
    for e in outer:
        np.testing.assert_array_equal(e.nodes["w_t"], np.array([[2, 4], [3, 5]], np.float32))
    assert not [e for e in kept if e.path != "outer"]       # keep_nodes 1: the outermost only


def _invariant_weight_loop(trip=4):
    """A loop whose weight is decompressed and transposed once per execution (invariant: it
    reads the loop's invariant input), read by a step of every iteration, and no Result."""
    b = GraphBuilder("net")
    x0 = b.parameter("x0", "f32", [1, 2])
    w0 = b.parameter("w0", "f16", [2, 2])
    loop = b.loop("loop", trip=trip, cond=True)
    x = loop.merged_input(x0, "x")
    w = loop.invariant_input(w0, "w")
    wf = loop.body.op("Convert", [w], name="decompress", destination_type="f32")
    wt = loop.body.op("Transpose", [wf, np.array([1, 0], np.int64)], name="w_t")
    y = loop.body.op("MatMul", [x, wt], name="mm")
    loop.back_edge(y, x)
    b.result(loop.output_last(y, name="x_last"))
    return b.build()


def test_an_invariant_value_no_result_holds_is_kept_for_the_later_iterations():
    inputs = {"x0": np.array([[1, 2]], np.float32),
              "w0": np.array([[1, 2], [3, 4]], np.float16)}
    kept = _check(_invariant_weight_loop(), inputs, lambda events: int(len(events) == 1))
    assert [e.iteration for e in kept] == [0]
    np.testing.assert_array_equal(kept[0].nodes["w_t"], np.array([[1, 3], [2, 4]], np.float32))


def test_nothing_is_kept_unless_asked():
    inputs = {"x0": np.array([[1, 2]], np.float32),
              "w0": np.array([[1, 2], [3, 4]], np.float16)}
    events, _ = _pulled(Engine(_outer_weight_loop()), inputs, lambda _: 0)
    assert all(e.nodes is None for e in events if type(e) is IterationDone)
