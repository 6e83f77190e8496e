"""`:` go to an iteration (loopdbg.debug.jump and Session.jump): reading the target, going there
through the history or by running, and one sentence for what does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopdbg.debug import Session
from loopdbg.debug.jump import Target, parse_target
from loopdbg.debug.session import HISTORY, STEP
from loopdbg.errors import LoopdbgError

ROOT = Path(__file__).resolve().parents[2]
LOOPS = ["rows_loop/cols_loop", "rows_loop"]


def nested() -> Session:
    base = ROOT / "loopdbg" / "demos" / "nested_loop"
    return Session.open(base / "model.xml", base / "inputs.npz")


def where(stop):
    e = stop.event
    return e.path, e.outer, e.iteration


@pytest.mark.parametrize("text, want", [
    ("3", Target("rows_loop/cols_loop", 3, (0,))),
    ("-1", Target("rows_loop/cols_loop", -1, (0,))),
    ("cols_loop 2 1", Target("rows_loop/cols_loop", 1, (2,))),
    ("rows_loop/cols_loop 2, 1", Target("rows_loop/cols_loop", 1, (2,))),
    ("cols_loop 1", Target("rows_loop/cols_loop", 1, (0,))),
    ("rows_loop 2", Target("rows_loop", 2, ())),
])
def test_targets_are_read_against_the_loops(text, want):
    assert parse_target(text, LOOPS, None) == want


@pytest.mark.parametrize("text, fragment", [
    ("", "type an iteration"),
    ("x", "no loop is named 'x'"),
    ("cols_loop", "which iteration"),
    ("cols_loop 1 2 3", "inside 1 loop"),
    ("3.5", "is not an iteration number"),
    ("cols_loop -1 2", "counted from 0"),
    ("9" * 40, "out of range"),
])
def test_a_target_that_names_nothing_is_one_sentence(text, fragment):
    with pytest.raises(LoopdbgError, match=fragment):
        parse_target(text, LOOPS, None)


def test_jump_runs_forward_then_uses_the_history():
    s = nested()
    assert where(s.jump("cols_loop 1 2")) == ("rows_loop/cols_loop", (1,), 2)
    assert s.stop.kind == STEP
    back = s.jump("cols_loop 0 3")                  # behind: from the history, at once
    assert back.kind == HISTORY and where(back) == ("rows_loop/cols_loop", (0,), 3)
    assert where(s.jump("1")) == ("rows_loop/cols_loop", (0,), 1)   # the current outer: 0


def test_minus_one_is_the_last_iteration_of_the_execution():
    s = nested()
    s.step()                                       # into the inner loop
    last = s.jump("-1")
    assert where(last) == ("rows_loop/cols_loop", (0,), 3) and not last.event.continues
    assert where(s.jump("-2")) == ("rows_loop/cols_loop", (0,), 2)
    assert where(s.jump("rows_loop -1"))[::2] == ("rows_loop", 2)


def test_an_iteration_past_the_loop_s_end_is_one_sentence():
    s = nested()
    s.jump("-1")
    with pytest.raises(LoopdbgError, match="stopped after 4 iterations"):
        s.jump("9")


def test_an_iteration_behind_the_history_says_so():
    base = ROOT / "loopdbg" / "demos" / "nested_loop"
    s = Session.open(base / "model.xml", base / "inputs.npz", history=2)
    s.jump("cols_loop 2 1")
    with pytest.raises(LoopdbgError, match="--trace"):
        s.jump("cols_loop 0 0")


def test_an_iteration_past_the_end_of_the_loop_says_there_is_none():
    """Issue 30: `:99` on a loop that ends after 7 stops at its last iteration and says so,
    instead of running to the end of the model ("finished")."""
    from loopdbg.debug.session import Session

    base = Path(__file__).resolve().parents[2] / "loopdbg" / "demos" / "while_loop"
    s = Session.open(base / "model.xml", base / "inputs.npz")
    s.step()
    stop = s.jump("99")
    e = stop.event
    assert e is not None and not e.continues
    assert stop.reason == (f"there is no iteration 99: loop '{e.path}' ran {e.iteration + 1} "
                           f"iterations (this is its last)")
