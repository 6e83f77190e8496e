"""The layers of the package hold: the import contracts in pyproject.toml ([tool.importlinter]).

They say, lowest first: errors, ir, ops, engine, then debug | trace | teach | layout
(independent of each other), view | check (check reads traces), tui, cli; that the UI imports no engine, kernel or reader; that only
loopdbg.ir reads model files; and that the core never imports textual or rich. ``lint-imports``
runs the same contracts from the command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

importlinter = pytest.importorskip("importlinter")

import loopdbg  # noqa: E402

PACKAGE = Path(loopdbg.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"

LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))")


def lint(root: Path, config: Path) -> subprocess.CompletedProcess:
    """Run every contract on the loopdbg found in ``root``, in a fresh interpreter (so that it is
    the package analysed, whatever this process imported)."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", LINT, str(config)], capture_output=True,
                          text=True, timeout=300, cwd=root, env=env)


def contracts() -> dict[str, dict]:
    from importlinter.api import read_configuration
    return {c["id"]: c for c in read_configuration(str(PYPROJECT))["contracts_options"]}


def test_the_package_keeps_every_import_contract():
    if not PYPROJECT.exists():
        pytest.skip("not a source checkout: no pyproject.toml next to the package")
    proc = lint(PACKAGE.parent, PYPROJECT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_the_layers_are_the_documented_ones():
    if not PYPROJECT.exists():
        pytest.skip("not a source checkout: no pyproject.toml next to the package")
    layers = contracts()["layers"]["layers"]
    assert layers == ["cli", "tui | notebook", "view | check", "debug | trace | teach | layout",
                      "engine | builder", "ops", "ir | oracle", "files | text | programs | machine",
                      "errors"]
    # the layers are what the code does: no import is let through
    assert not contracts()["layers"].get("ignore_imports")


def test_no_contract_lets_an_import_through():
    """A contract with ``ignore_imports`` says one thing and allows another: where a module needs
    what its layer may not import, the code moves (check's ONNX copies of bodies are written by
    loopdbg.ir.onnx_bodies), or the contract names the layer that may."""
    if not PYPROJECT.exists():
        pytest.skip("not a source checkout: no pyproject.toml next to the package")
    ignoring = {name: c["ignore_imports"] for name, c in contracts().items()
                if c.get("ignore_imports")}
    assert not ignoring


@pytest.mark.parametrize("module, line, culprit", [
    # trace and debug are independent: a replay is a Session on a TraceTimeline, not a subclass
    ("trace/timeline.py", "from loopdbg.debug.session import Session", "loopdbg.debug.session"),
    # the engine reads shapes from loopdbg.ir.shapes, not from the XML reader
    ("engine/inputs.py", "from loopdbg.ir.xml_reader import read_ir", "loopdbg.ir.xml_reader"),
    # the UI asks the session for values instead of running the engine's replay itself
    ("tui/widgets/graph.py", "from loopdbg.engine.recompute import node_values",
     "loopdbg.engine.recompute"),
    # lower layers never import upper ones, not even inside a function
    ("ir/model.py", "def _late():\n    from loopdbg.debug import report", "loopdbg.debug.report"),
])
def test_a_broken_layer_is_caught(tmp_path, module, line, culprit):
    if not PYPROJECT.exists():
        pytest.skip("not a source checkout: no pyproject.toml next to the package")
    shutil.copytree(PACKAGE, tmp_path / "loopdbg", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    target = tmp_path / "loopdbg" / module
    target.write_text(target.read_text() + "\n\n" + line + "\n")
    proc = lint(tmp_path, tmp_path / "pyproject.toml")
    assert proc.returncode != 0, proc.stdout
    assert "1 broken" in proc.stdout and culprit in proc.stdout, proc.stdout


def test_the_view_layer_stands_between_the_core_and_the_faces(tmp_path):
    """loopdbg.view may not reach up into the terminal UI (a browser face would carry it)."""
    if not PYPROJECT.exists():
        pytest.skip("not a source checkout: no pyproject.toml next to the package")
    shutil.copytree(PACKAGE, tmp_path / "loopdbg", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    target = tmp_path / "loopdbg" / "view" / "body.py"
    target.write_text(target.read_text() + "\n\nfrom loopdbg.tui.panel import Panel\n")
    proc = lint(tmp_path, tmp_path / "pyproject.toml")
    assert proc.returncode != 0 and "loopdbg.tui.panel" in proc.stdout, proc.stdout
