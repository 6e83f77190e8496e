"""Breakpoints and watches saved per model and restored (loopdbg.debug.saved)."""

from __future__ import annotations

import json
from pathlib import Path

from loopdbg.debug import Session, saved

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "loopdbg" / "demos" / "while_loop"
FILES = [DEMO / "model.xml", DEMO / "model.bin"]


def session() -> Session:
    return Session.open(DEMO / "model.xml", DEMO / "inputs.npz")


def test_saved_breakpoints_and_watches_come_back_for_the_same_model():
    s = session()
    s.breakpoints.add("i == 3", loop="doubling")
    bp = s.breakpoints.add("x_next > 100")
    bp.enabled, bp.ignore = False, 2
    s.breakpoints.add("i == 9", temporary=True)             # not saved
    s.breakpoints.watch("x_next")
    path = saved.save(FILES, s.breakpoints)
    assert path is not None and path.is_file() and DEMO not in path.parents
    again = session()
    note = saved.restore(FILES, again.breakpoints)
    assert note.startswith("restored 2 breakpoints and 1 watch")
    got = [(b.text, b.loop, b.enabled, b.ignore) for b in again.breakpoints.items.values()]
    assert got == [("i == 3", "doubling", True, 0), ("x_next > 100", None, False, 2)]
    assert [w.text for w in again.breakpoints.watches.values()] == ["x_next"]


def test_a_breakpoint_given_again_is_not_doubled():
    s = session()
    s.breakpoints.add("i == 3")
    saved.save(FILES, s.breakpoints)
    again = session()
    again.breakpoints.add("i == 3")                          # --break on the command line
    saved.restore(FILES, again.breakpoints)
    assert len(again.breakpoints.items) == 1


def test_another_model_or_a_changed_one_restores_nothing(tmp_path):
    s = session()
    s.breakpoints.add("i == 3")
    saved.save(FILES, s.breakpoints)
    other = ROOT / "loopdbg" / "demos" / "for_loop"
    assert saved.restore([other / "model.xml", other / "model.bin"], session().breakpoints) is None
    copy = tmp_path / "model.xml"
    copy.write_bytes(FILES[0].read_bytes() + b"\n")
    assert saved.restore([copy], session().breakpoints) is None


def test_nothing_to_save_removes_the_file():
    s = session()
    s.breakpoints.add("i == 3")
    path = saved.save(FILES, s.breakpoints)
    s.breakpoints.delete(1)
    assert saved.save(FILES, s.breakpoints) is None and not path.exists()


def test_a_hostile_or_broken_state_file_is_a_note_not_an_error():
    s = session()
    s.breakpoints.add("i == 3")
    path = saved.save(FILES, s.breakpoints)
    for text in ("{not json", json.dumps([1, 2]), "[" * 100_000,
                 json.dumps({"loopdbg": 1, "breakpoints": [{"text": "nosuchname > 1"}, 5,
                                                          {"text": ["x"]}], "watches": []})):
        path.write_text(text)
        note = saved.restore(FILES, session().breakpoints)
        assert note and ("ignored" in note or "could not be restored" in note), note
