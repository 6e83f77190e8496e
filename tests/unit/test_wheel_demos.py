"""The demos ship in the wheel, and ``loopdbg demo`` finds them wherever loopdbg is installed.

* ``loopdbg demo`` lists every demo with its lesson's one line, in the lessons' order; an unknown
  name is one sentence listing the names; ``--copy DIR`` writes a demo's files and never overwrites.
* The built wheel holds every demo's model, inputs and lesson.
* A fresh virtual environment with only that wheel installed (its dependencies from the package
  index) opens ``loopdbg demo while_loop`` in a terminal (tmux): the debugger draws the demo's
  loop. Skipped, saying why, where the package index cannot be reached.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "loopdbg" / "demos"
NAMES = sorted(p.name for p in DEMOS.iterdir() if (p / "model.xml").is_file())


@pytest.fixture
def loopdbg(cli_main):
    """``loopdbg demo`` and ``run`` as main() in this process (tests/conftest.py); the installed
    wheel's own process is tested below."""
    return cli_main


def test_demo_lists_every_demo_with_its_line_in_the_lessons_order(loopdbg):
    proc = loopdbg("demo")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()[1:]
    assert sorted(line.split()[0] for line in lines) == NAMES
    assert lines[0].split()[0] == "for_loop"            # the first lesson comes first
    assert "test first, then run" in next(x for x in lines if x.split()[0] == "while_loop")


def test_unknown_demo_is_one_sentence_naming_the_demos(loopdbg):
    proc = loopdbg("demo", "whle_loop")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "there is no demo 'whle_loop'" in proc.stderr
    assert "while_loop" in proc.stderr


def test_demo_path_names_the_model(loopdbg):
    proc = loopdbg("demo", "ti_lstm", "--path")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).samefile(DEMOS / "ti_lstm" / "model.xml")


def test_copy_writes_the_files_then_refuses_to_overwrite(tmp_path, loopdbg, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc = loopdbg("demo", "for_loop", "--copy", "mine")
    assert proc.returncode == 0, proc.stderr
    for name in ("model.xml", "model.bin", "inputs.npz", "README.md"):
        assert (tmp_path / "mine" / name).read_bytes() == (DEMOS / "for_loop" / name).read_bytes()
    assert "loopdbg mine/model.xml" in proc.stdout
    (tmp_path / "mine" / "model.xml").write_text("mine")
    again = loopdbg("demo", "for_loop", "--copy", "mine")
    assert again.returncode != 0 and "never overwrites" in again.stderr
    assert (tmp_path / "mine" / "model.xml").read_text() == "mine"


def test_copied_demo_runs(tmp_path, loopdbg, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert loopdbg("demo", "while_loop", "--copy", "w").returncode == 0
    proc = loopdbg("run", "w/model.xml")
    assert proc.returncode == 0, proc.stderr
    assert "x_final" in proc.stdout and "128" in proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # from a copy of the sources: a build writes build/ and *.egg-info beside them, which other
    # test workers' imports and builds must not meet half-written
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                           str(src)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"the wheel could not be built here (no package index?): "
                    f"{proc.stderr.strip().splitlines()[-6:]}")
    return next(out.glob("loopdbg-*.whl"))


# the wheel is built once for both tests (a module fixture is per worker: one xdist group)
@pytest.mark.xdist_group("wheel")
def test_the_wheel_carries_every_demo(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "loopdbg/demos/README.md" in names
    for demo in NAMES:
        for f in ("model.xml", "model.bin", "inputs.npz", "README.md"):
            assert f"loopdbg/demos/{demo}/{f}" in names, (demo, f)


@pytest.mark.xdist_group("wheel")
def test_a_fresh_venv_with_only_the_wheel_opens_a_demo(wheel, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    venv = tmp_path / "venv"
    # no pip of its own: this test's pip installs into it (--python), without compiling every
    # module of every dependency beforehand (what runs is compiled when it is imported)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                          "install", "-q", "--no-compile", str(wheel)],
                         capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        pytest.skip(f"the wheel's dependencies could not be installed here: "
                    f"{pip.stderr.strip().splitlines()[-1:]}")
    exe = venv / "bin" / "loopdbg"
    listing = subprocess.run([str(exe), "demo"], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path)
    assert listing.returncode == 0 and "while_loop" in listing.stdout, listing.stderr
    sock = f"loopdbg-wheel-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "100", "-y", "30",
                    f"cd {tmp_path} && {exe} demo while_loop; sleep 30"], check=True, env=env)
    try:
        screen = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "doubling" not in screen:
            time.sleep(0.5)
            screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "0"],
                                    capture_output=True, text=True, env=env).stdout
        assert "doubling" in screen, screen        # the demo's loop, drawn by the debugger
        assert "demo while_loop" in screen, screen
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, env=env)
