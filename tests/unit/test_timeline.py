"""Timelines: the history of a run by ordinal and by (loop, outer iterations, iteration).

A live timeline (bounded, in memory) and a trace's timeline must answer ``at``, ``find``,
``iterations`` and ``previous`` the same way for what they hold; the session stands on either, and
``Stop`` is the frozen value it hands out.
"""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import numpy as np
import pytest

from loopdbg.debug import Session
from loopdbg.debug.stop import Stop
from loopdbg.engine import Engine, IterationDone
from loopdbg.engine.inputs import load_npz
from loopdbg.engine.recompute import node_values
from loopdbg.engine.timeline import LiveTimeline
from loopdbg.errors import LoopdbgError
from loopdbg.ir.load import read_model
from loopdbg.trace import TraceError, record_model
from loopdbg.trace.record import recording
from loopdbg.trace.replay import open_trace

TESTS = Path(__file__).resolve().parent.parent
NESTED = TESTS / "data" / "nested_loop"
WHILE = TESTS / "corpus" / "loop_while_iter"
COUNTER = TESTS / "data" / "counter_loop"


def run(case: Path) -> list[IterationDone]:
    events = Engine(read_model(case / "model.xml")).run(load_npz(case / "inputs.npz"))
    return [e for e in events if type(e) is IterationDone]


def where(e) -> tuple:
    return (e.path, e.outer, e.iteration)


def brute_find(events, held_from, path, iteration, outer):
    for n in range(held_from, len(events)):
        if where(events[n]) == (path, outer, iteration):
            return n
    return None


@pytest.mark.parametrize("capacity", [1, 2, 3, 5, 100])
def test_a_live_timeline_finds_what_it_holds_and_nothing_else(capacity):
    events = run(NESTED)                 # outer 3 iterations, each running inner twice
    t = LiveTimeline(capacity)
    for n, e in enumerate(events):
        assert t.append(e) == n
        held = max(0, n + 1 - capacity)
        assert (len(t), t.oldest, t.newest) == (n + 1, held, n)
        for m in range(n + 1):           # ask about every iteration run so far, after each one
            path, outer, it = where(events[m])
            assert t.find(path, it, outer) == brute_find(events[:n + 1], held, path, it, outer)
        with pytest.raises(IndexError):
            t.at(held - 1) if held else t.at(n + 1)
    assert [t.at(n) for n in range(t.oldest, len(t))] == events[t.oldest:]


def test_iterations_of_a_loop_execution_in_order():
    events = run(NESTED)
    t = LiveTimeline(100)
    for e in events:
        t.append(e)
    for k in range(3):
        ordinals = t.iterations("outer/inner", (k,))
        assert [where(t.at(n)) for n in ordinals] == [("outer/inner", (k,), 0),
                                                       ("outer/inner", (k,), 1)]
    assert [t.at(n).iteration for n in t.iterations("outer")] == [0, 1, 2]
    assert t.iterations("outer/inner", (7,)) == [] and t.find("nope", 0) is None


def test_previous_is_the_iteration_before_in_the_same_loop_execution():
    events = run(NESTED)
    t = LiveTimeline(100)
    for e in events:
        t.append(e)
    for e in events:
        prev = t.previous(e)
        if e.iteration == 0:
            assert prev is None
        else:
            assert where(prev) == (e.path, e.outer, e.iteration - 1)


def test_a_long_run_keeps_the_index_bounded():
    t = LiveTimeline(4)
    events = run(COUNTER)
    for k in range(2000):
        t.append(events[k % len(events)])
        t.find("count", 0)                # the index catches up at every question
        assert t._entries <= 2 * 4 + 1    # rebuilt from the window whenever it doubled
    assert len(t) == 2000 and t.oldest == 1996


def test_index_says_in_one_sentence_what_is_missing():
    t = LiveTimeline(2)
    for e in run(WHILE):
        t.append(e)
    with pytest.raises(LoopdbgError, match=r"^iteration 0 of loop 'loop' is not in the history\.$"):
        t.index("loop", 0)
    assert t.index("loop", 6) == 6


def test_a_trace_timeline_answers_like_the_live_one(tmp_path):
    trace = tmp_path / "run.ltrace"
    record_model(str(NESTED / "model.xml"), load_npz(NESTED / "inputs.npz"), trace)
    events = run(NESTED)
    live = LiveTimeline(100)
    for e in events:
        live.append(e)
    t = open_trace(trace)
    assert t.complete and len(t) == len(live) == len(events)
    for n, e in enumerate(events):
        assert where(t.at(n)) == where(e)
        assert t.find(e.path, e.iteration, e.outer) == live.find(e.path, e.iteration, e.outer) == n
        np.testing.assert_array_equal(t.at(n).body_out[0], e.body_out[0])
    for k in range(3):
        assert t.iterations("outer/inner", (k,)) == live.iterations("outer/inner", (k,))
    assert t.loop_end("outer").iterations == 3 and t.finished is not None
    with pytest.raises(TraceError, match="no recorded iteration 9 of loop 'outer'"):
        t.index("outer", 9)


def test_goto_on_a_live_session_within_its_history():
    s = Session.open(NESTED / "model.xml", NESTED / "inputs.npz", history=4)
    s.continue_()
    stop = s.goto("outer/inner", 1, (2,))
    assert where(stop.event) == ("outer/inner", (2,), 1) and stop.kind == "history"
    assert stop.position == s.timeline.find("outer/inner", 1, (2,))
    with pytest.raises(LoopdbgError, match="is not in the history"):
        s.goto("outer", 0)


def test_goto_past_the_history_reads_the_trace_being_recorded(tmp_path):
    inputs = load_npz(NESTED / "inputs.npz")
    s = Session.open(NESTED / "model.xml", inputs, history=2,
                     record=lambda events: recording(events, tmp_path / "s.ltrace", inputs=inputs))
    s.continue_()
    assert s.timeline.oldest == 0 and s.timeline.held == len(s.timeline) - 2
    stop = s.goto("outer/inner", 0, (0,))
    assert where(stop.event) == ("outer/inner", (0,), 0) and stop.position == 0
    assert [s.timeline.at(n).iteration for n in s.timeline.iterations("outer")] == [0, 1, 2]
    s.close()


def test_the_session_serves_every_value_of_an_iteration():
    s = Session.open(WHILE / "model.xml", WHILE / "inputs.npz")
    e = s.step().event
    values = s.values(e)
    assert values.keys() >= node_values(e).keys() | e.outputs.keys()
    for name, v in e.outputs.items():
        np.testing.assert_array_equal(values[name], v)


def test_a_restart_clears_the_live_timeline():
    s = Session.open(WHILE / "model.xml", WHILE / "inputs.npz", history=3)
    s.continue_()
    assert len(s.timeline) == 7
    s.restart()
    assert len(s.timeline) == 0 and s.timeline.find("loop", 0) is None
    assert s.step().position == 0
    gc.collect()


def test_a_stop_is_frozen_and_built_with_keywords():
    stop = Session.open(WHILE / "model.xml", WHILE / "inputs.npz").step()
    with pytest.raises(dataclasses.FrozenInstanceError):
        stop.watches = ()
    with pytest.raises(TypeError):
        Stop("step", "positional")
    assert dataclasses.replace(stop, reason="again").event is stop.event


def test_a_complete_timeline_records_nothing(tmp_path):
    trace = tmp_path / "run.ltrace"
    record_model(str(WHILE / "model.xml"), load_npz(WHILE / "inputs.npz"), trace)
    t = open_trace(trace)
    with pytest.raises(ValueError, match="nothing to record"):
        Session(t.engine, t.inputs, timeline=t, record=lambda events: events)
