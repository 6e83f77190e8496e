"""No output is ever written through a symbolic link (issue 26, item 2).

A model folder a stranger sent may hold ``body.dot`` or ``out.npz`` as a link to ``~/.bashrc``
(or a dangling link to a file the shell sources). Every output of every command (``run -o``,
``run --trace``, ``graph -o``, ``plot -o``, ``inputs -o``, ``trace export -o``) refuses a link,
whatever it points to, in one sentence; the link and what it names are left as they were, and
nothing is created where a dangling link points. Files are created with O_NOFOLLOW (a temporary
file with O_EXCL too), so a link planted after the checks cannot redirect the write either.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from relhelpers import accumulate_loop
from relhelpers import assert_refused_but_inputs_line as assert_refused

LINK = "it is a symbolic link"
FOLDER_LINK = "on its way is a symbolic link"
OUTPUTS = ["run -o", "run --trace", "graph -o", "plot -o", "inputs -o", "trace export -o"]
LINKS = ["to a file", "to a folder", "dangling"]


@pytest.fixture
def folder(tmp_path):
    xml, given = accumulate_loop(tmp_path / "m")
    return xml, given


def _argv(command: str, xml: Path, given: Path, trace: Path, out: Path) -> tuple:
    return {"run -o": ("run", xml, given, "-o", out),
            "run --trace": ("run", xml, given, "--trace", out),
            "graph -o": ("graph", xml, "-o", out),
            "plot -o": ("plot", xml, given, "mean(acc_new)", "-o", out),
            "inputs -o": ("inputs", xml, "-o", out),
            "trace export -o": ("trace", "export", trace, "-o", out)}[command]


def _ready(cli, folder, tmp_path, command: str) -> tuple[Path, Path, Path]:
    """The model, its inputs and (for trace export) a recorded trace."""
    if command == "plot -o":
        pytest.importorskip("matplotlib")
    xml, given = folder
    trace = tmp_path / "t.ltrace"
    if command == "trace export -o":
        assert cli("run", xml, given, "--trace", trace, "-q").code == 0
    return xml, given, trace


def _name(command: str) -> str:
    return {"graph -o": "body.dot", "plot -o": "plot.png"}.get(command, "out.npz")


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("command", OUTPUTS)
def test_a_link_as_an_output_is_refused(cli, folder, tmp_path, command, link):
    xml, given, trace = _ready(cli, folder, tmp_path, command)
    home = tmp_path / "home"
    home.mkdir()
    victim = home / ".bashrc"
    if link == "to a file":
        victim.write_text("echo hello\n")
        to = victim
    elif link == "to a folder":
        to = home
    else:
        to = home / ".profile"                     # does not exist: a dangling link
    out = tmp_path / _name(command)
    out.symlink_to(to)
    before = sorted(p.name for p in home.iterdir())
    line = assert_refused(cli(*_argv(command, xml, given, trace, out)),
                          f"refusing to write {out}: {LINK}")
    assert "never writes through a link" in line
    assert out.is_symlink() and os.readlink(out) == str(to), "the link itself was changed"
    assert sorted(p.name for p in home.iterdir()) == before, "something was written at the target"
    if link == "to a file":
        assert victim.read_text() == "echo hello\n"
    assert not list(tmp_path.glob(".loopdbg-*")), "a temporary file was left behind"


@pytest.mark.parametrize("command", OUTPUTS)
def test_a_regular_file_is_still_written(cli, folder, tmp_path, command):
    """The refusal is about links only: the same commands write a plain name (new or existing)."""
    xml, given, trace = _ready(cli, folder, tmp_path, command)
    out = tmp_path / _name(command)
    out.write_bytes(b"old")
    r = cli(*_argv(command, xml, given, trace, out))
    assert r.code == 0, r.err
    assert not out.is_symlink() and out.read_bytes() != b"old"


def test_a_link_planted_after_the_check_is_not_followed(folder, tmp_path):
    """Output checks the path when the command starts; a link made before the write (while a
    long run goes on) is refused then, or replaced itself by the rename: never followed."""
    from loopdbg.files import Output, OutputError

    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "out.dot"
    output = Output(out, what="the drawing")
    out.symlink_to(victim)
    with pytest.raises(OutputError, match=LINK):
        output.write_bytes(b"digraph {}")
    assert victim.read_text() == "keep" and out.is_symlink()


def test_a_recording_opens_with_o_nofollow(tmp_path, monkeypatch):
    """Even past the checks (a link made between the check and the open), the trace file is
    opened with O_NOFOLLOW: the link is refused, its target untouched."""
    import loopdbg.files.write as write

    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "t.ltrace"
    link.symlink_to(victim)
    monkeypatch.setattr(write, "check_output", lambda path, reads=(), what="": Path(path))
    with pytest.raises(write.OutputError, match=LINK):
        write.open_recording(link)
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("command", OUTPUTS)
def test_a_linked_folder_in_the_model_folder_is_refused(cli, folder, tmp_path, command):
    """``-o results/out.npz`` where the model folder shipped ``results`` as a link to another
    folder: refused in one sentence, nothing written where the link points."""
    xml, given, trace = _ready(cli, folder, tmp_path, command)
    home = tmp_path / "home"
    home.mkdir()
    shipped = xml.parent / "results"
    shipped.symlink_to(home)
    out = shipped / _name(command)
    line = assert_refused(cli(*_argv(command, xml, given, trace, out)),
                          f"refusing to write {out}", f"the folder {shipped} on its way is a symbolic link")
    assert "real path" in line
    assert list(home.iterdir()) == [], "something was written through the linked folder"


def test_a_linked_folder_under_the_working_directory_is_refused(cli, folder, tmp_path,
                                                                 monkeypatch):
    xml, given = folder
    home = tmp_path / "home"
    (home / "deep").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").symlink_to(home)
    monkeypatch.chdir(work)
    assert_refused(cli("run", xml, given, "-o", "results/deep/out.npz"),
                   "refusing to write results/deep/out.npz", FOLDER_LINK)
    assert list((home / "deep").iterdir()) == []


def test_a_link_above_the_working_and_model_folders_is_followed(cli, folder, tmp_path,
                                                                monkeypatch):
    """Links outside the folders a stranger's files land in are the system's or the user's
    (``/tmp`` on macOS, a home on another disk): written through as before."""
    xml, given = folder
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "elsewhere").symlink_to(real)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    r = cli("run", xml, given, "-o", tmp_path / "elsewhere" / "out.npz", "-q")
    assert r.code == 0, r.err
    assert (real / "out.npz").is_file()


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(folder, tmp_path):
    """The output's folder is opened from the model's folder with O_NOFOLLOW at each step when
    the file is written: a folder replaced by a link during the run is refused, not followed."""
    from loopdbg.files import Output, OutputError

    xml, given = folder
    home = tmp_path / "home"
    home.mkdir()
    sub = xml.parent / "sub"
    sub.mkdir()
    output = Output(sub / "out.dot", [("the model", str(xml))], what="the drawing")
    sub.rename(xml.parent / "sub_was")
    sub.symlink_to(home)
    with pytest.raises(OutputError, match=FOLDER_LINK):
        output.write_bytes(b"digraph {}")
    assert list(home.iterdir()) == []
