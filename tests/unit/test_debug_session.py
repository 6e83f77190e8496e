"""Debugging sessions on real models: every stepping command, stepping back, breakpoints, watches,
--on-nan, the stop report and the bounded history.

Models: the OpenVINO corpus (tests/corpus) and three small IRs written by hand in tests/data:
``nested_loop`` (a 3-iteration Loop "outer" whose body runs a 2-iteration Loop "inner"),
``nan_loop`` (values that become Inf, then NaN, in a last-value output) and ``counter_loop``
(a while loop counting to ``limit``, with nothing concatenated).
"""

from __future__ import annotations

import gc
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from loopdbg.debug import Session, format_stop
from loopdbg.debug.report import fmt_value, headline
from loopdbg.debug.session import BREAKPOINT, END, ERROR, HISTORY, NAN, NODE, PAUSED, START, STEP
from loopdbg.engine import Engine, IterationDone
from loopdbg.engine.inputs import load_npz
from loopdbg.engine.recompute import node_values
from loopdbg.ir.load import read_model

TESTS = Path(__file__).resolve().parent.parent
CORPUS = TESTS / "corpus"
DATA = TESTS / "data"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # log(0), overflow on purpose


def corpus(case: str, inputs=None, **options) -> Session:
    return Session.open(CORPUS / case / "model.xml",
                        CORPUS / case / "inputs.npz" if inputs is None else inputs, **options)


def data(case: str, inputs=None, **options) -> Session:
    return Session.open(DATA / case / "model.xml",
                        DATA / case / "inputs.npz" if inputs is None else inputs, **options)


def counter(limit: int, **options) -> Session:
    return data("counter_loop", {"c0": np.array(0, np.int64), "limit": np.array(limit, np.int64)},
                **options)


def at(stop):
    """Where a stop is: (kind, loop path, outer iterations, iteration)."""
    e = stop.event
    return (stop.kind, e.path, e.outer, e.iteration) if e is not None else (stop.kind, None)


def where(stop):
    e = stop.event
    return (e.path, e.outer, e.iteration)


def engine_events(model_xml: Path, inputs) -> list[IterationDone]:
    return [e for e in Engine(read_model(model_xml)).run(inputs) if isinstance(e, IterationDone)]


OUTER, INNER = "outer", "outer/inner"
NESTED_ORDER = [(INNER, (0,), 0), (INNER, (0,), 1), (OUTER, (), 0),
                (INNER, (1,), 0), (INNER, (1,), 1), (OUTER, (), 1),
                (INNER, (2,), 0), (INNER, (2,), 1), (OUTER, (), 2)]


def snapshot(stop) -> dict:
    """Everything the stop report shows of an iteration, as plain values, plus the report."""
    e = stop.event
    return {"where": where(stop), "cond": e.cond, "continues": e.continues,
            "back": {k: np.array(v) for k, v in e.back_edges.items()},
            "partials": {k: np.array(v) for k, v in e.partials.items()},
            "sliced": {k: np.array(v) for k, v in e.sliced_inputs.items()},
            "inputs": {k: np.array(v) for k, v in e.inputs.items()},
            "report": format_stop(stop).split("\n", 1)[1]}


def assert_same_state(a: dict, b: dict) -> None:
    assert a["where"] == b["where"] and a["cond"] == b["cond"] and a["continues"] == b["continues"]
    for key in ("back", "partials", "sliced", "inputs"):
        assert a[key].keys() == b[key].keys()
        for name in a[key]:
            np.testing.assert_array_equal(a[key][name], b[key][name], err_msg=f"{key} {name}")
    assert a["report"] == b["report"]


# -- the start and the end ---------------------------------------------------------------------
def test_a_new_session_stands_before_the_first_iteration():
    s = corpus("loop_while_iter")
    assert s.stop.kind == START and s.current is None and not s.done
    assert headline(s.stop).startswith("ready: not started")
    assert s.back() is s.stop and s.first() is s.stop and s.last() is s.stop


def test_step_walks_every_iteration_then_reports_the_end_with_the_outputs():
    s = corpus("loop_while_iter")
    final = Engine(read_model(CORPUS / "loop_while_iter" / "model.xml")).run_to_end(
        load_npz(CORPUS / "loop_while_iter" / "inputs.npz"))
    stops = [s.step() for _ in range(7)]
    assert [at(st) for st in stops] == [(STEP, "loop", (), k) for k in range(7)]
    assert [st.event.cond for st in stops] == [True] * 6 + [False]
    assert stops[-1].loop_end is not None and stops[-1].loop_end.iterations == 7
    end = s.step()
    assert at(end) == (END, "loop", (), 6) and s.done
    assert end.finished.outputs.keys() == final.outputs.keys()
    for name, value in final.outputs.items():
        np.testing.assert_array_equal(end.finished.outputs[name], value)
    assert at(s.step()) == (END, "loop", (), 6)            # the end stays the end
    assert at(s.continue_()) == (END, "loop", (), 6)


def test_a_loop_that_never_runs_ends_without_an_iteration():
    s = corpus("loop_zero_iter_cond_false")
    s.breakpoints.add("True")
    stop = s.continue_()
    assert stop.kind == END and stop.event is None and s.current is None
    assert headline(stop) == "finished: the run finished"
    assert s.back().kind == END
    st = s.reverse_continue()
    assert st.kind == HISTORY and st.event is None


# -- next / step / finish on a nested loop ----------------------------------------------------------
def test_step_goes_into_the_nested_loop_in_execution_order():
    s = data("nested_loop")
    assert [where(s.step()) for _ in range(9)] == NESTED_ORDER
    assert s.step().kind == END


def test_next_runs_nested_loops_to_their_end():
    s = data("nested_loop")
    assert where(s.next()) == (OUTER, (), 0)            # before the start: the outermost loop's
    assert where(s.next()) == (OUTER, (), 1)            # over the inner loop's 2 iterations
    assert where(s.next()) == (OUTER, (), 2)
    assert s.next().kind == END


def test_next_inside_the_nested_loop_goes_on_in_it_then_out():
    s = data("nested_loop")
    assert where(s.step()) == (INNER, (0,), 0)          # step: into the first loop to run
    assert where(s.next()) == (INNER, (0,), 1)          # the next iteration of the inner loop
    assert where(s.next()) == (OUTER, (), 0)            # the inner loop ended: out to the outer one


def test_step_enters_the_nested_loop_where_next_would_not():
    s = data("nested_loop")
    s.run_to(0, loop="outer")
    assert where(s.step()) == (INNER, (1,), 0)
    assert where(s.step()) == (INNER, (1,), 1)
    assert where(s.step()) == (OUTER, (), 1)


def test_finish_goes_to_the_last_iteration_of_the_current_loop():
    s = data("nested_loop")
    s.step()
    st = s.finish()
    assert where(st) == (INNER, (0,), 1) and st.reason == "finish"
    assert not st.event.continues and st.loop_end.iterations == 2
    assert where(s.finish()) == (OUTER, (), 0)          # already at the end: out, as next does
    st = s.finish()
    assert where(st) == (OUTER, (), 2) and st.loop_end.iterations == 3
    assert s.finish().kind == END


def test_finish_on_a_tensor_iterator_and_a_while_loop():
    s = corpus("ti_lstm_forward")
    s.step()
    st = s.finish()
    assert at(st) == (STEP, "lstm_ti", (), 4) and st.loop_end.reason == "slices_exhausted"
    s = corpus("loop_trip_and_cond_early_stop")
    s.step()
    st = s.finish()
    assert at(st) == (STEP, "loop", (), 4) and not st.event.cond
    assert st.loop_end.reason == "condition"


def test_finish_stops_at_a_breakpoint_on_the_way():
    s = corpus("ti_gru")
    s.breakpoints.add("i == 2")
    s.step()
    assert at(s.finish()) == (BREAKPOINT, "gru_ti", (), 2)
    assert at(s.finish()) == (STEP, "gru_ti", (), 4)


# -- continue / run_to / restart ---------------------------------------------------------------------
def test_continue_goes_from_breakpoint_to_breakpoint_then_to_the_end():
    s = corpus("loop_for_accum_scan")
    s.breakpoints.add("i == 1 or i == 3")
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 1)
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 3)
    assert at(s.continue_()) == (END, "loop", (), 4)


def test_run_to_an_iteration():
    s = corpus("loop_while_iter")
    st = s.run_to(4)
    assert at(st) == (STEP, "loop", (), 4) and st.reason == "run to iteration 4"
    assert at(s.run_to(5, loop="loop")) == (STEP, "loop", (), 5)
    assert s.run_to(2).kind == END                      # passed already: runs to the end


def test_run_to_in_a_nested_loop_by_name_or_path():
    s = data("nested_loop")
    assert where(s.run_to(1, loop="inner")) == (INNER, (0,), 1)
    assert where(s.run_to(1, loop=INNER)) == (INNER, (1,), 1)
    assert where(s.run_to(2, loop="outer")) == (OUTER, (), 2)
    s.restart()
    assert where(s.run_to(2)) == (OUTER, (), 2)          # no current loop: any loop
    s.restart()
    s.step()
    assert s.run_to(2).kind == END                      # the inner loop never has an iteration 2


def test_run_to_stops_at_a_breakpoint_first():
    s = corpus("loop_while_iter")
    s.breakpoints.add("i == 2")
    assert at(s.run_to(5)) == (BREAKPOINT, "loop", (), 2)
    assert at(s.run_to(5)) == (STEP, "loop", (), 5)


def test_restart_runs_again_from_the_beginning_keeping_breakpoints_and_watches():
    s = data("nested_loop")
    s.breakpoints.add("i == 1", loop="outer")
    s.breakpoints.watch("ox")
    first = snapshot(s.continue_())
    s.continue_()
    assert s.done
    st = s.restart()
    assert st.kind == START and s.current is None and not s.done and s.finished is None
    again = s.continue_()
    assert_same_state(first, snapshot(again))
    assert again.watches[0][0].text == "ox"
    assert s.breakpoints.get(1).hits == 2               # hit counts go on across restarts
    assert s.continue_().kind == END


def test_restart_after_an_error_runs_again():
    s = corpus("loop_while_iter", max_memory=200)   # past it in a few iterations
    st = s.continue_()
    assert st.kind == ERROR and "memory budget" in st.reason and s.done
    assert headline(st).startswith("error: ")
    s.restart()
    assert s.step().kind == STEP


# -- stepping one body node at a time ----------------------------------------------------------------
def test_step_node_executes_the_body_one_node_at_a_time():
    s = corpus("loop_while_iter")
    events = engine_events(CORPUS / "loop_while_iter" / "model.xml",
                           load_npz(CORPUS / "loop_while_iter" / "inputs.npz"))
    spec = s.engine.loops["loop"]
    total = len(spec.body.steps)
    for k in range(2):                                   # iterations 0 and 1
        expected = node_values(events[k])
        names = []
        for j in range(total):
            st = s.step_node()
            assert st.kind == NODE and st.node.index == j and st.node.total == total
            assert st.node.event.iteration == k
            assert st.reason.startswith(f"node {j + 1} of {total}: ")
            assert headline(st).endswith(f"in loop loop, iteration {k}")
            name = st.node.layer.name
            names.append(name)
            np.testing.assert_array_equal(st.node.values[name], expected[name])
            assert format_stop(st).splitlines()[1].startswith("  node:")
        assert names == [step.layer.name for step in spec.body.steps]
        assert set(st.node.values) >= set(spec.param_names) | set(names)
        st = s.step_node()                               # past the last node: the iteration is done
        assert at(st) == (STEP, "loop", (), k)


def test_step_node_on_a_tensor_iterator():
    s = corpus("ti_gru")
    s.step()
    kinds = [s.step_node() for _ in range(4)]
    assert [st.kind for st in kinds] == [NODE, NODE, NODE, STEP]
    assert [st.node.layer.type for st in kinds[:3]] == ["Squeeze", "GRUCell", "Unsqueeze"]
    assert at(kinds[-1]) == (STEP, "gru_ti", (), 1)


def test_step_node_steps_into_a_nested_loop_then_runs_it_as_one_node():
    s = data("nested_loop")
    s.run_to(0, loop="outer")
    st = s.step_node()                                   # the inner loop comes first: step into it
    assert at(st) == (STEP, INNER, (1,), 0)
    s.step()                                             # inner (1,) iteration 1, its last
    first = s.step_node()                                # outer iteration 1, node by node
    assert first.kind == NODE and first.node.layer.name == "inner" and first.node.event.iteration == 1
    np.testing.assert_array_equal(first.node.values["inner"], [8.0, 10.0])    # [6, 8] + 2
    second = s.step_node()
    assert second.node.layer.name == "outer_mul"
    np.testing.assert_array_equal(second.node.values["outer_mul"], [16.0, 20.0])
    assert where(s.step_node()) == (OUTER, (), 1)


def test_any_other_command_leaves_node_stepping():
    s = corpus("loop_while_iter")
    s.step()
    s.step_node()
    s.step_node()
    st = s.back()                                        # undoes the nodes, not iteration 0
    assert at(st) == (STEP, "loop", (), 0) and st.node is None
    assert at(s.back()) == (HISTORY, "loop", (), 0)      # nothing before iteration 0
    st = s.step_node()
    assert st.kind == NODE and st.node.index == 0 and st.node.event.iteration == 1
    assert at(s.next()) == (STEP, "loop", (), 1)
    assert s.step_node().node.event.iteration == 2


def test_back_in_the_middle_of_an_iteration_returns_to_its_start_not_further():
    s = corpus("loop_for_accum_scan")
    s.run_to(2)
    s.step_node()
    s.step_node()
    assert at(s.back()) == (STEP, "loop", (), 2)
    assert at(s.back()) == (STEP, "loop", (), 1)
    assert s.step_node().node.event.iteration == 2       # history: the nodes of iteration 2 again


def test_step_node_with_a_history_of_one_keeps_the_current_iteration():
    s = corpus("loop_while_iter", history=1)
    s.step()
    st = s.step_node()
    assert s.current.iteration == 0 and st.event.iteration == 0
    assert st.node.event.iteration == 1
    assert s.back().kind == STEP and s.current.iteration == 0       # the nodes undone
    assert s.back().kind == HISTORY and s.current.iteration == 0
    assert at(s.step()) == (STEP, "loop", (), 1)


# -- stepping back ----------------------------------------------------------------------------------
def test_back_steps_to_the_previous_iteration_until_the_first():
    s = corpus("loop_for_accum_scan")
    s.run_to(4)
    assert [s.back().event.iteration for _ in range(4)] == [3, 2, 1, 0]
    st = s.back()
    assert st.kind == HISTORY and st.event.iteration == 0
    assert st.reason == "at the first iteration: nothing to step back to"
    assert at(s.last()) == (HISTORY, "loop", (), 4)
    assert at(s.first()) == (HISTORY, "loop", (), 0)


def test_back_in_a_nested_loop_is_the_reverse_of_next():
    s = data("nested_loop")
    s.run_to(2, loop="outer")
    assert where(s.back()) == (OUTER, (), 1)
    assert where(s.back()) == (OUTER, (), 0)
    s.step()                                             # into inner (1,) 0, replayed from history
    assert where(s.stop) == (INNER, (1,), 0)
    assert where(s.back()) == (OUTER, (), 0)             # no earlier inner iteration of this run
    s.run_to(1, loop="inner")
    assert where(s.back()) == (INNER, (1,), 0)


@pytest.mark.parametrize("model", ["corpus/loop_while_iter", "corpus/loop_trip_and_cond_early_stop",
                                   "corpus/loop_sliced_input", "corpus/ti_lstm_forward",
                                   "corpus/ti_invariant_reverse_out", "data/nested_loop"])
def test_forward_then_back_then_forward_gives_identical_states(model):
    folder, case = model.split("/")
    s = corpus(case) if folder == "corpus" else data(case)
    s.breakpoints.watch("i * 2")
    while s.step().event.outer:                          # back and next move in the outermost loop
        pass
    forward = [snapshot(s.stop)]
    while True:
        st = s.next()
        if st.kind == END:
            break
        forward.append(snapshot(st))
    backward = [snapshot(s.back()) for _ in range(len(forward) - 1)]
    assert s.back().kind == HISTORY
    for a, b in zip(backward, reversed(forward[:-1])):
        assert_same_state(a, b)
    again = [snapshot(st) for st in (s.next() for _ in range(len(forward) - 1))]
    for a, b in zip(again, forward[1:]):
        assert_same_state(a, b)
    assert s.next().kind == END


def test_reverse_continue_goes_back_through_the_breakpoint_hits():
    s = corpus("loop_while_iter")
    s.breakpoints.add("i % 2 == 0")
    assert [s.continue_().event.iteration for _ in range(4)] == [0, 2, 4, 6]
    assert s.breakpoints.get(1).hits == 4
    st = s.reverse_continue()
    assert at(st) == (BREAKPOINT, "loop", (), 4) and st.reason == "breakpoint 1 (i % 2 == 0) (reverse)"
    assert st.hit.breakpoint.number == 1
    assert [s.reverse_continue().event.iteration for _ in range(2)] == [2, 0]
    st = s.reverse_continue()
    assert at(st) == (HISTORY, "loop", (), 0)
    assert st.reason == "no earlier breakpoint hit; at the first iteration"
    assert s.breakpoints.get(1).hits == 4                # reverse does not count hits
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 2)   # forward again, from history


def test_reverse_continue_in_a_nested_loop_respects_the_scope():
    s = data("nested_loop")
    s.breakpoints.add("i == 0", loop="inner")
    for _ in range(3):
        s.continue_()
    assert where(s.stop) == (INNER, (2,), 0)
    s.continue_()
    assert s.stop.kind == END
    assert where(s.reverse_continue()) == (INNER, (2,), 0)
    assert where(s.reverse_continue()) == (INNER, (1,), 0)


def test_changed_breakpoints_agree_forward_back_reverse_and_after_restart():
    s = counter(10)
    s.breakpoints.add("changed(c_out > 5)")
    assert at(s.continue_()) == (BREAKPOINT, "count", (), 5)
    assert s.continue_().kind == END
    assert at(s.reverse_continue()) == (BREAKPOINT, "count", (), 5)
    s.back()
    assert at(s.continue_()) == (BREAKPOINT, "count", (), 5)   # replayed from history
    s.restart()
    assert at(s.continue_()) == (BREAKPOINT, "count", (), 5)


def test_changed_compares_within_one_execution_of_a_nested_loop():
    s = data("nested_loop")
    s.breakpoints.add("changed(i)", loop="inner")
    stops = []
    while s.continue_().kind != END:
        stops.append(where(s.stop))
    # iteration 0 of each inner execution has no previous iteration: never a change there
    assert stops == [(INNER, (0,), 1), (INNER, (1,), 1), (INNER, (2,), 1)]


# -- the bounded history ---------------------------------------------------------------------------
def test_the_history_keeps_only_the_last_iterations_of_a_100000_iteration_run():
    s = counter(100_000, history=16)
    st = s.continue_()
    assert at(st) == (END, "count", (), 99_999)
    assert int(st.finished.outputs["c_final"]) == 100_000
    assert len(s.timeline) == 100_000 and (s.oldest, s.newest) == (99_984, 99_999)
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if type(o) is IterationDone)
    assert alive <= 2 * 16 + 2                           # the history (and changed()'s links) only
    assert [s.back().event.iteration for _ in range(15)] == list(range(99_998, 99_983, -1))
    st = s.back()
    assert st.kind == HISTORY and st.event.iteration == 99_984
    assert st.reason == ("the history holds only the last 16 iterations; record a trace to step "
                         "back further")
    assert at(s.first()) == (HISTORY, "count", (), 99_984)
    assert at(s.reverse_continue()) == (HISTORY, "count", (), 99_984)


def test_memory_does_not_grow_with_the_iterations_run():
    s = counter(100_000, history=8)
    s.breakpoints.add("changed(c_out > 4000)")           # checked at every iteration; c_out = i + 1
    s.run_to(500)
    tracemalloc.start()
    try:
        s.run_to(1500)
        early, _ = tracemalloc.get_traced_memory()
        st = s.continue_()
        late, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert at(st) == (BREAKPOINT, "count", (), 4000)
    assert late - early < 64 * 1024 and peak < 512 * 1024


# -- breakpoints ----------------------------------------------------------------------------------
def test_hit_count_and_ignore_count():
    s = corpus("loop_while_iter")
    bp = s.breakpoints.add("i >= 1", ignore=2)
    st = s.continue_()
    assert at(st) == (BREAKPOINT, "loop", (), 3) and bp.hits == 3 and bp.ignore == 0
    s.continue_()
    assert bp.hits == 4
    assert "hit 4 times" in bp.describe()


def test_disabled_breakpoints_do_not_stop():
    s = corpus("loop_while_iter")
    bp = s.breakpoints.add("i == 1", enabled=False)
    s.breakpoints.add("i == 3")
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 3) and bp.hits == 0
    assert "disabled" in bp.describe()
    bp.enabled = True
    s.restart()
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 1)


def test_a_temporary_breakpoint_is_deleted_when_it_stops():
    s = corpus("loop_while_iter")
    s.breakpoints.add("i >= 2", temporary=True)
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 2)
    assert s.breakpoints.items == {}
    assert s.continue_().kind == END


def test_the_first_breakpoint_that_holds_is_reported():
    s = corpus("loop_while_iter")
    s.breakpoints.add("i == 4")
    s.breakpoints.add("i >= 2")
    st = s.continue_()
    assert at(st) == (BREAKPOINT, "loop", (), 2) and st.reason == "breakpoint 2 (i >= 2)"
    st = s.continue_()
    assert at(st) == (BREAKPOINT, "loop", (), 3)
    s.breakpoints.delete(2)
    assert s.continue_().reason == "breakpoint 1 (i == 4)"


def test_edit_replaces_the_condition():
    s = corpus("loop_while_iter")
    s.breakpoints.add("i == 1")
    s.breakpoints.edit(1, "body_count == 4")
    assert at(s.continue_()) == (BREAKPOINT, "loop", (), 4)


@pytest.mark.parametrize("loop, expected", [
    (None, (INNER, (0,), 1)), ("inner", (INNER, (0,), 1)), (INNER, (INNER, (0,), 1)),
    ("outer", (OUTER, (), 1)),
])
def test_breakpoints_scoped_to_one_loop(loop, expected):
    s = data("nested_loop")
    s.breakpoints.add("i == 1", loop=loop)
    assert where(s.continue_()) == expected


def test_an_unscoped_breakpoint_applies_to_the_loops_that_have_its_names():
    s = data("nested_loop")
    s.breakpoints.add("inner_add[0] > 4")                # a value of the inner loop only
    s.breakpoints.add("ox[0] > 10")                      # a value of the outer loop only
    stops = []
    while s.continue_().kind != END:
        assert s.stop.hit.error is None
        stops.append((where(s.stop), s.stop.hit.breakpoint.number))
    assert stops == [((INNER, (1,), 0), 1), ((INNER, (1,), 1), 1), ((INNER, (2,), 0), 1),
                     ((INNER, (2,), 1), 1), ((OUTER, (), 2), 2)]


@pytest.mark.parametrize("condition, error", [
    ("body_v > 0", "ValueError: the truth of an array of shape (4,) is ambiguous; use any(...) or "
                   "all(...)"),
    ("body_v[7] > 0", "IndexError: index 7 is out of bounds for axis 0 with size 4"),
    ("sum(body_v[::0]) > 0", "ValueError: slice step cannot be zero"),
    ("body_v @ body_threshold > 0", "ValueError: matmul"),
])
def test_a_condition_that_raises_stops_and_says_why(condition, error):
    s = corpus("loop_trip_and_cond_early_stop")
    s.breakpoints.add(condition)
    st = s.continue_()
    assert at(st) == (BREAKPOINT, "loop", (), 0)
    assert st.hit.error.startswith(error)
    assert st.reason.startswith(f"error in breakpoint 1 ({condition}): {error}")
    assert headline(st).startswith(f"stopped: error in breakpoint 1 ({condition}): {error}")
    assert headline(st).endswith(" in loop loop at iteration 0")


def test_breakpoint_names_are_refused_before_the_run_starts():
    from loopdbg.debug import ExprError
    s = corpus("loop_while_iter")
    with pytest.raises(ExprError, match="'h' is not a name in any loop of the model"):
        s.breakpoints.add("h > 0")
    with pytest.raises(ExprError, match="the model has no loop 'lstm'"):
        s.breakpoints.add("i == 1", loop="lstm")
    assert s.current is None and len(s.timeline) == 0   # nothing ran


def test_extra_outputs_of_a_node_are_names_too():
    s = corpus("ti_lstm_forward")
    s.breakpoints.add('mean(t["LSTMCell_49589:1"]) != mean(LSTMCell_49589) and i == 2')
    assert at(s.continue_()) == (BREAKPOINT, "lstm_ti", (), 2)


# -- --on-nan ------------------------------------------------------------------------------------
def test_on_nan_stops_where_a_back_edge_overflows():
    inputs = {"x0": np.array([1e30], np.float32), "limit": np.array([np.inf], np.float32)}
    events = engine_events(CORPUS / "loop_while_iter" / "model.xml", inputs)
    first_bad = next(e.iteration for e in events if not np.isfinite(e.back_edges["body_x"]).all())
    s = corpus("loop_while_iter", inputs, on_nan=True)
    st = s.continue_()
    assert at(st) == (NAN, "loop", (), first_bad)
    assert st.reason == "Inf in back edge 'body_x'"
    assert headline(st) == f"stopped: Inf in back edge 'body_x' in loop loop at iteration {first_bad}"
    assert "Inf" in format_stop(st)


def test_on_nan_names_a_last_value_output_that_goes_bad():
    s = data("nan_loop", on_nan=True)
    st = s.continue_()
    assert at(st) == (NAN, "shrink", (), 1) and st.reason == "Inf in output 'y_last'"
    st = s.continue_()
    assert at(st) == (NAN, "shrink", (), 2) and st.reason == "NaN in output 'y_last'"
    s.back()
    s.back()
    assert at(s.continue_()) == (NAN, "shrink", (), 1)


def test_on_nan_on_a_tensor_iterator_with_a_nan_in_its_input():
    inputs = load_npz(CORPUS / "ti_gru" / "inputs.npz")
    inputs["X"] = inputs["X"].copy()
    inputs["X"][2, 1, 3] = np.nan                        # time step 2, batch row 1
    s = corpus("ti_gru", inputs, on_nan=True)
    st = s.continue_()
    assert at(st) == (NAN, "gru_ti", (), 2) and st.reason == "NaN in back edge 'body_H'"


def test_on_nan_is_off_by_default_and_a_breakpoint_can_ask_for_it():
    s = data("nan_loop")
    assert s.continue_().kind == END
    s = data("nan_loop")
    s.breakpoints.add("any(isnan(y_out))")
    assert at(s.continue_()) == (BREAKPOINT, "shrink", (), 2)


# -- watches -----------------------------------------------------------------------------------
def test_watches_are_evaluated_at_every_stop():
    s = corpus("loop_while_iter")
    s.breakpoints.watch("body_count * 10")
    s.breakpoints.watch("body_x[5]")                     # fails: shown next to the watch
    s.breakpoints.watch("changed(Less_5527)")
    s.breakpoints.add("i == 2")
    for st in (s.step(), s.continue_(), s.back(), s.run_to(6), s.continue_()):
        values = {w.text: (value, err) for w, value, err in st.watches}
        i = st.event.iteration
        assert values["body_count * 10"] == (i * 10, None)
        assert values["body_x[5]"][1].startswith("IndexError: index 5 is out of bounds")
        assert values["changed(Less_5527)"] == (i == 6, None)
    assert st.kind == END
    text = format_stop(st)
    assert "  watches:\n    1: body_count * 10" in text and "IndexError" in text


def test_watches_scoped_to_a_loop_say_so_elsewhere():
    s = data("nested_loop")
    s.breakpoints.watch("ox", loop="outer")
    s.breakpoints.watch("iy", loop="inner")
    st = s.step()
    (w1, v1, e1), (w2, v2, e2) = st.watches
    assert e1 == "not in loop outer" and e2 is None
    np.testing.assert_array_equal(v2, [1.0, 2.0])


# -- the stop report --------------------------------------------------------------------------------
def test_the_stop_report_of_a_loop_with_sliced_input_and_concatenated_output():
    s = corpus("loop_sliced_input")
    s.breakpoints.add("i == 2")
    s.breakpoints.watch("norm(body_h)")
    st = s.continue_()
    e = st.event
    lines = format_stop(st, s).splitlines()
    assert lines[0] == "stopped: breakpoint 1 (i == 2) in loop loop at iteration 2"
    assert lines[1] == "  loop:          loop (Loop, trip count 5)"
    assert lines[2] == "  condition:     true -> iteration 3 runs next"
    text = "\n".join(lines)
    assert "  back edges:\n    body_h <- Result_38578  " + fmt_value(e.back_edges["body_h"]) in text
    assert "h_seq so far      float32 (3, 3)" in text
    assert "h_seq last slice  float32 (1, 3)" in text
    np.testing.assert_array_equal(e.partial("h_seq")[-1:], e.scan_slices["h_seq"])
    seq = load_npz(CORPUS / "loop_sliced_input" / "inputs.npz")["seq"]
    np.testing.assert_array_equal(e.sliced_inputs["body_xt"], seq[2:3])
    assert "  sliced inputs:\n    body_xt  " + fmt_value(seq[2:3]) in text
    assert "  watches:\n    1: norm(body_h)  " in text


def test_the_stop_report_at_the_last_iteration_and_at_the_end():
    s = corpus("loop_trip_and_cond_early_stop")
    st = s.finish()
    text = format_stop(st)
    assert "  condition:     true -> iteration 1 runs next" in text
    st = s.finish()
    text = format_stop(st)
    assert "  loop:          loop (Loop, trip count 10)" in text
    assert "  condition:     false -> the loop ends" in text
    assert "  loop ended:    5 iterations; the body condition became false" in text
    end = format_stop(s.continue_())
    assert end.splitlines()[0] == "finished: the run finished (last iteration: loop loop, iteration 4)"
    assert "  outputs:\n    v_final" in end


def test_the_stop_report_of_a_tensor_iterator_and_of_a_nested_loop():
    s = corpus("ti_lstm_forward")
    st = s.run_to(4)
    text = format_stop(st)
    assert "  loop:          lstm_ti (TensorIterator, trip count 5)" in text
    assert "condition" not in text and "  next:          the loop ends (every slice used)" in text
    s = data("nested_loop")
    st = s.run_to(1, loop="inner")
    st = s.run_to(1, loop="inner")
    text = format_stop(st)
    assert text.splitlines()[0] == "stopped: run to iteration 1 in loop outer/inner at iteration 1"
    assert "  loop:          outer/inner (Loop, trip count 2, outer iterations [1])" in text
    assert "y_trace so far      float32 (4,)" in text
    assert "  loop ended:    2 iterations; the trip count was reached" in text


def test_notices_appear_in_the_report():
    s = corpus("loop_while_iter", max_iterations=3)
    st = s.continue_()
    assert at(st) == (END, "loop", (), 2) and st.loop_end.reason == "iteration_cap"
    assert "stopped after 3 iterations at the iteration cap" in format_stop(st, s)


# -- pausing ---------------------------------------------------------------------------------------
def test_request_pause_stops_a_running_continue():
    s = counter(10**9)
    done = threading.Event()

    def keep_asking():
        while not done.is_set():
            s.request_pause()
            done.wait(0.001)
    t = threading.Thread(target=keep_asking)
    t.start()
    try:
        st = s.continue_()
    finally:
        done.set()
        t.join()
    assert st.kind == PAUSED and st.reason == "paused" and st.event.iteration < 10**9 - 1
