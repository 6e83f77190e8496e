"""A model folder never runs code (issue 26, item 1).

A stranger's model folder may hold a ``json.py``, a ``numpy/`` package, an ``openvino/`` package,
even a ``loopdbg/`` package, or (for a user whose PATH holds ``.``) a ``dot`` program. loopdbg is
run there as a user would: the installed ``loopdbg`` script, a real process, its working directory
the planted folder, the model named by a relative path. Every planted module and program records
that it ran in a marker file outside the folder (and then hands over to the real module, so a
run that picked it up would still look right): the marker must never appear, and the verdict
must be what it is without the planted files.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from relhelpers import ROOT, accumulate_loop

# The planted module: note that it ran, then put the real module in its place.
MODULE = """\
import importlib, os, sys
with open({marker!r}, "a") as f:
    f.write(__name__ + " ran in " + os.getcwd() + "\\n")
_here = os.path.dirname(os.path.abspath(__file__))
_here = os.path.dirname(_here) if __file__.endswith("__init__.py") else _here
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
for _name in [m for m in sys.modules if m == __name__ or m.startswith(__name__ + ".")]:
    del sys.modules[_name]
sys.modules[__name__] = importlib.import_module(__name__)
"""
MODULES = ["json", "numpy", "openvino", "onnxruntime", "loopdbg", "runpy", "typing", "enum"]
PROGRAM = "#!/bin/sh\necho \"dot ran in $PWD\" >> {marker}\nexec {real} \"$@\"\n"


def loopdbg_script() -> str:
    script = Path(sys.executable).parent / "loopdbg"
    if not script.exists():
        pytest.skip("the loopdbg script is not installed beside this Python")
    return str(script)


@pytest.fixture
def planted(tmp_path):
    """A model folder holding the model, its inputs and code that must never run; the marker."""
    folder = tmp_path / "model folder"
    accumulate_loop(folder)
    marker = tmp_path / "marker.txt"
    for name in MODULES:
        if name in ("json", "runpy", "typing", "enum"):
            (folder / f"{name}.py").write_text(MODULE.format(marker=str(marker)))
        else:
            (folder / name).mkdir()
            (folder / name / "__init__.py").write_text(MODULE.format(marker=str(marker)))
    real_dot = shutil.which("dot")
    if real_dot:
        dot = folder / "dot"
        dot.write_text(PROGRAM.format(marker=marker, real=real_dot))
        dot.chmod(dot.stat().st_mode | stat.S_IXUSR)
    return folder, marker


def run_in(folder: Path, *argv: str) -> subprocess.CompletedProcess:
    """``loopdbg ARGV`` run in ``folder``, with ``.`` first on PATH (as some users have it)."""
    env = dict(os.environ, PATH=os.pathsep.join([".", os.environ.get("PATH", "")]))
    env.pop("PYTHONPATH", None)
    return subprocess.run([loopdbg_script(), *argv], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_check_runs_no_module_from_the_folder(planted):
    pytest.importorskip("openvino")
    folder, marker = planted
    r = run_in(folder, "check", "model.xml", "in.npz")
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0, r.stderr
    assert "verdict: loopdbg and OpenVINO agree" in r.stdout


def test_check_per_iteration_runs_no_module_from_the_folder(planted):
    pytest.importorskip("openvino")
    folder, marker = planted
    r = run_in(folder, "check", "model.xml", "in.npz", "--per-iteration")
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0, r.stderr
    assert "agree" in r.stdout


def test_check_with_onnxruntime_runs_no_module_from_the_folder(planted):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from _onnx_models import loop_running_sum

    folder, marker = planted
    m, feeds = loop_running_sum(m_value=3)
    onnx.save(m, str(folder / "sum.onnx"))
    np.savez(folder / "sum.npz", **feeds)
    r = run_in(folder, "check", "sum.onnx", "sum.npz")
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0, r.stderr
    assert "verdict: loopdbg and onnxruntime agree" in r.stdout


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_graph_runs_no_dot_and_no_module_from_the_folder(planted, fmt):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    folder, marker = planted
    r = run_in(folder, "graph", "model.xml", "-o", f"body.{fmt}")
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0, r.stderr
    data = (folder / f"body.{fmt}").read_bytes()
    assert data.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in data


def test_a_child_starts_isolated_in_a_neutral_folder():
    """What every child is started with: ``python -I`` (no working directory, user site or
    PYTHON* variable on its path), the root folder as working directory."""
    from loopdbg import programs

    argv = programs.python_argv("loopdbg.oracle.child", "openvino", 3, 4)
    assert argv[:2] == [sys.executable, "-I"] and argv[-4:] == ["loopdbg.oracle.child",
                                                                  "openvino", "3", "4"]
    probe = subprocess.run(programs.python_argv("json.tool", "--help"), cwd=programs.NEUTRAL,
                           capture_output=True, text=True, check=False)
    assert probe.returncode == 0 and "json.tool" in probe.stdout
    assert programs.NEUTRAL == os.path.abspath(os.sep)


def test_a_child_has_the_parents_path_less_the_working_directory(tmp_path, monkeypatch):
    from loopdbg import programs

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", ".", str(tmp_path), "relative/dir", *sys.path,
                                      str(tmp_path / ".")])
    path = programs.child_path()
    assert path[0] == programs.loopdbg_root()
    assert all(os.path.isabs(p) and os.path.realpath(p) != str(tmp_path.resolve()) for p in path)
    probe = subprocess.run(programs.python_argv("loopdbg.oracle.child", "nothing", 0, 1),
                           cwd=programs.NEUTRAL, capture_output=True, text=True, check=False,
                           timeout=120)
    assert probe.returncode == 2, probe.stderr     # (an unknown runtime: the child says no)


def test_programs_are_found_on_absolute_path_folders_only(tmp_path, monkeypatch):
    from loopdbg import programs

    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for path in (".", "", "./", "relative/../."):
        monkeypatch.setenv("PATH", path)
        assert programs.find("dot") is None, path
    monkeypatch.setenv("PATH", os.pathsep.join([".", str(tmp_path)]))
    assert programs.find("dot") == str(fake)


def test_plot_reads_no_matplotlibrc_and_runs_no_program_from_the_folder(planted):
    """matplotlib reads ``./matplotlibrc`` first and may start ``fc-list`` from PATH."""
    pytest.importorskip("matplotlib")
    folder, marker = planted
    fc = folder / "fc-list"
    fc.write_text(f"#!/bin/sh\necho fc-list ran >> {marker}\nexit 1\n")
    fc.chmod(0o755)
    (folder / "matplotlibrc").write_text("figure.facecolor: 123456\n"
                                         "savefig.facecolor: 123456\n")
    cache = folder.parent / "mplcache"             # an empty cache: the font list is rebuilt
    env = dict(os.environ, PATH=os.pathsep.join([".", os.environ.get("PATH", "")]),
               MPLCONFIGDIR=str(cache))
    env.pop("PYTHONPATH", None)
    r = subprocess.run([loopdbg_script(), "plot", "model.xml", "in.npz", "mean(acc_new)", "-o",
                        "p.png"], cwd=folder, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0, r.stderr
    import matplotlib.image

    pixel = matplotlib.image.imread(str(folder / "p.png"))[0, 0]
    assert tuple(round(float(c) * 255) for c in pixel[:3]) == (255, 255, 255)   # not #123456


def test_python_dash_m_loopdbg_imports_nothing_from_the_folder(planted):
    """``python -m loopdbg`` in the folder (the package itself installed elsewhere): ``-m`` puts
    the working directory on sys.path, and loopdbg takes it off before importing anything."""
    folder, marker = planted
    shutil.rmtree(folder / "loopdbg")      # (a loopdbg/ there would be what `-m loopdbg` runs)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "loopdbg", "run", "model.xml", "in.npz", "-o",
                        "out.npz"], cwd=folder, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0, r.stderr
    assert (folder / "out.npz").read_bytes()[:2] == b"PK"
