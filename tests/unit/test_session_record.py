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


def test_stepping_back_past_the_history_reads_the_trace_being_recorded(tmp_path):
    trace = tmp_path / "s.ltrace"
    inputs = load_npz(CASE / "inputs.npz")
    s = Session.open(CASE / "model.xml", inputs, history=2,
                     record=lambda events: recording(events, trace, inputs=inputs))
    live = Session.open(CASE / "model.xml", inputs)
    s.run_to(5)
    live.run_to(5)
    from loopdbg.debug import format_stop
    for k in (4, 3, 2, 1, 0):
        a, b = s.back(), live.back()
        assert a.event.iteration == k
        assert format_stop(a, s) == format_stop(b, live)
    assert s.first().event.iteration == 0
    assert s.next().event.iteration == 1         # forward again through the trace, then live
    assert s.run_to(6).event.iteration == 6
    s.close()


def test_without_a_trace_the_history_edge_says_how_to_go_further(tmp_path):
    inputs = load_npz(CASE / "inputs.npz")
    s = Session.open(CASE / "model.xml", inputs, history=2)
    s.run_to(5)
    s.back()
    stop = s.back()
    assert "record a trace" in stop.reason
