"""A live session can record its run to a trace as it goes (the UI's --trace)."""

from pathlib import Path

from loopdbg.debug import Session
from loopdbg.engine.inputs import load_npz
from loopdbg.trace import TraceReader
from loopdbg.trace.record import recording

CASE = Path(__file__).resolve().parents[1] / "corpus" / "loop_while_iter"


def test_a_session_records_what_it_ran_and_closes_the_trace(tmp_path):
    trace = tmp_path / "s.ltrace"
    inputs = load_npz(CASE / "inputs.npz")
    s = Session.open(CASE / "model.xml", inputs,
                     record=lambda events: recording(events, trace, inputs=inputs))
    s.breakpoints.add("i == 3")
    assert s.continue_().event.iteration == 3
    s.close()
    with TraceReader(trace) as t:
        assert [f.iteration for f in t.frames("loop")] == [0, 1, 2, 3]


def test_a_session_run_to_the_end_leaves_a_complete_trace(tmp_path):
    trace = tmp_path / "s.ltrace"
    inputs = load_npz(CASE / "inputs.npz")
    s = Session.open(CASE / "model.xml", inputs,
                     record=lambda events: recording(events, trace, inputs=inputs))
    assert s.continue_().kind == "end"
    s.close()
    with TraceReader(trace) as t:
        assert not t.truncated and len(list(t.frames("loop"))) == 7
