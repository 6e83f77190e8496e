"""Replay: a session whose timeline is a trace gives the same stops as the live run, in O(1)."""

from pathlib import Path

import numpy as np
import pytest

from loopdbg.debug import Session, format_stop
from loopdbg.trace import TraceError, record_model
from loopdbg.trace.replay import open_trace

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
DATA = Path(__file__).resolve().parents[1] / "data"


def open_replay(trace, **options) -> Session:
    """A session whose timeline is the trace: a replay."""
    timeline = open_trace(trace)
    return Session(timeline.engine, timeline.inputs, timeline=timeline, source=timeline.source,
                   **options)


def recorded(tmp_path, model: Path, inputs=None):
    from loopdbg.engine.inputs import load_npz
    inputs = load_npz(model.parent / "inputs.npz") if inputs is None else inputs
    trace = tmp_path / "run.ltrace"
    record_model(str(model), inputs, trace)
    return trace, inputs


@pytest.mark.parametrize("case", ["loop_while_iter", "ti_lstm_forward", "loop_sliced_input",
                                  "ti_invariant_reverse_out"])
def test_replayed_stops_equal_the_live_ones(tmp_path, case):
    model = CORPUS / case / "model.xml"
    trace, inputs = recorded(tmp_path, model)
    replay, live = open_replay(trace), Session.open(model, inputs)
    for _ in range(12):
        a, b = replay.step(), live.step()
        assert format_stop(a, replay) == format_stop(b, live)
        if a.kind == "end":
            break
    for _ in range(3):
        assert format_stop(replay.back(), replay) == format_stop(live.back(), live)


def test_nested_loops_replay_with_their_outer_iterations(tmp_path):
    trace, inputs = recorded(tmp_path, DATA / "nested_loop" / "model.xml")
    replay = open_replay(trace)
    live = Session.open(DATA / "nested_loop" / "model.xml", inputs)
    while True:
        a, b = replay.step(), live.step()
        assert format_stop(a, replay) == format_stop(b, live)
        if a.kind == "end":
            break
    paths = {e.path for e in (replay.timeline.at(n) for n in range(len(replay.timeline)))}
    assert len(paths) == 2


def test_goto_any_iteration_and_step_back_past_any_history(tmp_path):
    model = CORPUS / "loop_while_iter" / "model.xml"
    trace, inputs = recorded(tmp_path, model)
    replay = open_replay(trace, history=1)     # a replay holds every iteration anyway
    stop = replay.goto("loop", 5)
    assert stop.event.iteration == 5
    live = Session.open(model, inputs)
    live.run_to(5)
    np.testing.assert_array_equal(stop.event.partial("x_trace"), live.current.partial("x_trace"))
    for k in (4, 3, 2, 1, 0):
        assert replay.back().event.iteration == k
    assert replay.first().event.iteration == 0
    assert replay.last().event.iteration == 6


def test_breakpoints_and_reverse_continue_on_a_replay(tmp_path):
    trace, _ = recorded(tmp_path, CORPUS / "loop_while_iter" / "model.xml")
    replay = open_replay(trace)
    replay.breakpoints.add("i == 2")
    assert replay.continue_().event.iteration == 2
    replay.last()
    assert replay.reverse_continue().event.iteration == 2
    with pytest.raises(TraceError):
        replay.goto("loop", 99)


def test_a_changed_model_is_refused(tmp_path):
    from loopdbg.engine.inputs import load_npz

    src = CORPUS / "loop_while_iter"
    model = tmp_path / "model.xml"
    model.write_bytes((src / "model.xml").read_bytes())
    (tmp_path / "model.bin").write_bytes((src / "model.bin").read_bytes())
    trace, _ = recorded(tmp_path, model, inputs=load_npz(src / "inputs.npz"))
    model.write_bytes(model.read_bytes().replace(b'name="loop"', b'name="loop2"'))
    with pytest.raises(TraceError, match="changed since the trace was recorded"):
        open_replay(trace)
