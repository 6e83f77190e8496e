"""Temporary elision in compiled loop bodies (engine/elide.py): a big elementwise temporary is
written in place only where nothing can ever see it, and the run is the same event by event."""

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine import Engine
from loopdbg.engine import elide
from test_engine_loopcode import compare

ROWS, COLS = 128, 1024                     # 512 KiB of float32: past elide.MIN_BYTES


def _model(trip: int = 4):
    """h = (h * 0.5 + c) twice over: the product is a temporary the sum may reuse; ``twice`` is
    read by two steps and ``shown`` is a Result, so neither may be written into."""
    b = GraphBuilder("elide")
    h0 = b.parameter("h0", "f32", [ROWS, COLS])
    c0 = b.parameter("c", "f32", [ROWS, COLS])
    loop = b.loop("big", trip=trip, cond=True)
    h, c = loop.merged_input(h0, "h"), loop.invariant_input(c0, "c_in")
    body = loop.body
    half = body.op("Multiply", [h, np.array(0.5, np.float32)], name="half")
    h2 = body.op("Add", [half, c], name="h_next")                  # may write into half
    twice = body.op("Multiply", [h2, np.array(2.0, np.float32)], name="twice")
    a = body.op("Add", [twice, c], name="a")                       # twice read twice: no
    d = body.op("Subtract", [a, twice], name="d")                  # a read once: may
    shown = body.op("Multiply", [d, np.array(1.0, np.float32)], name="shown")   # into d: may
    e = body.op("Add", [shown, c], name="e")                       # shown is a Result: no
    loop.back_edge(h2, h)
    loop.condition(body.const("true", np.array(True)))
    b.result(loop.output_last(h2, name="h_final"))
    b.result(loop.output_last(shown, name="shown_last"))
    b.result(loop.output_last(e, name="e_last"))
    return b.build()


def _inputs():
    rng = np.random.default_rng(0)
    return {"h0": rng.standard_normal((ROWS, COLS)).astype(np.float32),
            "c": rng.standard_normal((ROWS, COLS)).astype(np.float32)}


def test_only_unseen_temporaries_are_candidates():
    engine = Engine(_model())
    plan = next(iter(engine.loops.values())).body
    names = {k: s.layer.name for k, s in enumerate(plan.steps)}
    found = {names[k]: plan.steps[k].ins[j]
             for k, j in elide.candidates(plan.steps, plan.result_locals).items()}
    by_name = {s.layer.name: s.outs[0] for s in plan.steps}
    assert found == {"h_next": by_name["half"], "d": by_name["a"], "shown": by_name["d"]}


def test_the_elided_run_is_the_general_run_event_by_event(monkeypatch):
    events, error = compare(_model(), _inputs(), monkeypatch)
    assert error is None
    # every event still holds its own iteration's values after the run moved on
    inputs = _inputs()
    h = inputs["h0"]
    iterations = [e for e in events if type(e).__name__ == "IterationDone"]
    assert len(iterations) == 4
    for e in iterations:
        np.testing.assert_array_equal(e.inputs["h"], h)
        h = h * np.float32(0.5) + inputs["c"]
        np.testing.assert_array_equal(e.back_edges["h"], h)


def test_the_compiled_body_writes_in_place(monkeypatch):
    """The sum lands in the product's array (the allocation is saved), nothing else does."""
    calls = []
    real = elide.fits

    def spy(ufunc, x, *others):
        ok = real(ufunc, x, *others)
        calls.append((ufunc.__name__, ok))
        return ok

    monkeypatch.setattr(elide, "fits", spy)
    import loopdbg.engine.loopcode as loopcode
    monkeypatch.setattr(loopcode, "fits", spy)
    for _ in Engine(_model(trip=2)).run(_inputs()):
        pass
    assert calls == [("add", True), ("subtract", True), ("multiply", True)] * 2


def _big(dtype=np.float32, shape=(ROWS, COLS)):
    return np.ones(shape, dtype)


@pytest.mark.parametrize("x, others, ok", [
    (_big(), (_big(),), True),
    (_big(), (np.ones(COLS, np.float32),), True),                # broadcasts to x's shape
    (_big(), (np.float32(2),), True),                            # a numpy scalar of the dtype
    (_big(shape=(1, COLS)), (_big(),), False),                   # the result is bigger than x
    (_big(), (_big(np.float64),), False),                        # the result would be float64
    (_big()[::2], (_big()[::2],), False),                        # a view: not a fresh array
    (np.float32(1), (np.float32(1),), False),                    # not an array
])
def test_fits(x, others, ok):
    assert elide.fits(np.add, x, *others) is ok


def test_fits_knows_the_dtype_loops():
    ints = np.ones((ROWS, COLS), np.int32)
    assert elide.fits(np.add, ints, ints)
    assert not elide.fits(np.true_divide, ints, ints)            # int / int gives float64
    frozen = _big()
    frozen.flags.writeable = False
    assert not elide.fits(np.add, frozen, _big())
