"""A step's stop has every value of its iteration from the run itself (``debug.kept``): asking
for them runs the body no second time, and they are the values a second run gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loopdbg.debug import Session
from loopdbg.debug import kept
from loopdbg.debug.kept import without_nodes
from loopdbg.engine import recompute
from loopdbg.engine.recompute import node_values

DATA = Path(__file__).resolve().parent.parent / "data"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _session(case: str, **options) -> Session:
    return Session.open(DATA / case / "model.xml", DATA / case / "inputs.npz", **options)


@pytest.fixture
def body_runs(monkeypatch) -> list:
    """Every second run of a body to recompute an iteration's values (``engine.recompute``)."""
    runs: list = []
    drain = recompute.drain

    def counted(result):
        runs.append(result)
        return drain(result)
    monkeypatch.setattr(recompute, "drain", counted)
    return runs


def _same_values(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
        assert np.asarray(got[name]).dtype == np.asarray(value).dtype, name


def test_next_and_step_stop_with_their_values_and_run_no_body_again(body_runs):
    s = _session("nested_loop")
    for move in (s.next, s.next, s.step, s.step, s.next):
        stop = move()
        assert stop.event.nodes is not None, stop.reason
        values = s.values(stop.event)
        assert not body_runs, f"{stop.reason}: the body ran again"
        want = node_values(without_nodes(stop.event)) | stop.event.outputs
        assert body_runs                    # (this one is the second run, for the comparison)
        body_runs.clear()
        _same_values(values, want)


def test_next_keeps_only_the_stop_not_the_nested_iterations_run_on_the_way():
    s = _session("nested_loop")
    s.next()
    s.next()                                # over the inner loop's two iterations
    inner = [s.timeline.at(n) for n in range(len(s.timeline)) if s.timeline.at(n).outer]
    assert len(inner) == 4 and all(e.nodes is None for e in inner)
    assert s.current.nodes is not None


def test_continue_and_run_to_keep_nothing():
    s = _session("counter_loop")
    s.run_to(3)
    s.continue_()
    assert all(s.timeline.at(n).nodes is None for n in range(len(s.timeline)))
    assert s.engine.loops                   # (a loop ran)


def test_only_the_last_stops_hold_their_values_and_older_ones_recompute(monkeypatch):
    monkeypatch.setattr(kept, "HELD", 2)
    s = _session("counter_loop")
    stops = [s.next() for _ in range(4)]
    held = [s.timeline.at(stop.position).nodes is not None for stop in stops]
    assert held == [False, False, True, True]
    first = s.timeline.at(stops[0].position)
    _same_values(s.values(first), node_values(without_nodes(stops[0].event)) | first.outputs)


def test_a_session_recording_a_trace_keeps_its_events_as_they_were(tmp_path):
    from loopdbg.trace.record import recording

    s = _session("counter_loop", record=lambda events: recording(events, tmp_path / "t.ltrace"))
    stop = s.next()
    assert stop.event.nodes is None
    s.close()
