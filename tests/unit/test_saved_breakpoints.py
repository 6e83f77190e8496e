"""Breakpoints and watches saved per model and restored (loopdbg.debug.saved)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

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


# -- the state folder is trusted only when it is safe (issue 26, item 8) ---------------------------

def _one_breakpoint():
    s = session()
    s.breakpoints.add("i == 3")
    return s.breakpoints


def test_a_relative_xdg_state_home_is_ignored(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    for relative in ("state", "./state", "state/../x"):
        monkeypatch.setenv("XDG_STATE_HOME", relative)
        assert saved.state_dir() == home / ".local" / "state" / "loopdbg" / "breakpoints"
    path = saved.save(FILES, _one_breakpoint())
    assert path is not None and home in path.parents
    assert not (tmp_path / "state").exists()


def test_loopdbg_makes_its_state_folders_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    path = saved.save(FILES, _one_breakpoint())
    assert path is not None
    for folder in (path.parent, path.parent.parent):
        assert folder.stat().st_mode & 0o777 == 0o700


def _unsafe(kind: str, base: Path) -> None:
    folder = base / "loopdbg"
    if kind == "link":
        (base / "elsewhere").mkdir(parents=True)
        base.joinpath("loopdbg").symlink_to(base / "elsewhere")
        return
    folder.mkdir(parents=True, mode=0o700)
    if kind == "group-writable":
        folder.chmod(0o770)
    elif kind == "world-writable":
        folder.chmod(0o777)
    elif kind == "another user's":
        if os.getuid() != 0:
            pytest.skip("only root can give a folder to another user")
        os.chown(folder, 4242, -1)


@pytest.mark.parametrize("kind", ["group-writable", "world-writable", "another user's", "link"])
def test_an_unsafe_state_folder_is_not_used(tmp_path, monkeypatch, kind):
    base = tmp_path / "xdg"
    monkeypatch.setenv("XDG_STATE_HOME", str(base))
    _unsafe(kind, base)
    note = saved.unusable()
    assert note is not None and "\n" not in note
    assert note.startswith(f"the state folder {base / 'loopdbg'} ")
    assert note.endswith("so breakpoints and watches are neither restored nor saved.")
    assert saved.save(FILES, _one_breakpoint()) is None
    assert not any(p.suffix == ".json" for p in tmp_path.rglob("*"))
    assert saved.restore(FILES, session().breakpoints) == note


def test_a_safe_state_folder_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert saved.unusable() is None
    assert saved.save(FILES, _one_breakpoint()) is not None
    assert saved.unusable() is None


def test_the_debugger_says_why_it_starts_without_saved_state(tmp_path, monkeypatch):
    """`loopdbg MODEL` with an unsafe state folder: the one sentence is among the notes the
    debugger shows in its Log, nothing is restored, and leaving saves nothing."""
    import sys

    import loopdbg.tui.app as app
    from loopdbg.cli import main

    base = tmp_path / "xdg"
    monkeypatch.setenv("XDG_STATE_HOME", str(base))
    s = session()
    s.breakpoints.add("i == 3")
    assert saved.save(FILES, s.breakpoints) is not None         # saved while it was safe
    (base / "loopdbg").chmod(0o777)
    shown = {}

    class FakeApp:
        def __init__(self, session, title, notes, on_leave):
            shown.update(notes=notes, breakpoints=len(session.breakpoints.items))
            self.on_leave = on_leave

        def run(self):
            self.on_leave()

    monkeypatch.setattr(app, "LoopdbgApp", FakeApp)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    before = sorted(p.name for p in base.rglob("*"))
    assert main([str(FILES[0])]) == 0
    assert any("neither restored nor saved" in n for n in shown["notes"]), shown
    assert shown["breakpoints"] == 0
    assert sorted(p.name for p in base.rglob("*")) == before
