"""`loopdbg graph --iteration K`: the body drawn with each node's value at iteration K, the values
changed since K-1 marked (IR, ONNX and a trace), and one sentence for what does not exist."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NESTED = ROOT / "loopdbg" / "demos" / "nested_loop" / "model.xml"


@pytest.fixture
def loopdbg(cli_main):
    """``loopdbg graph`` and ``run`` as main() in this process (tests/conftest.py)."""
    return cli_main


def node(dot: str, name: str) -> str:
    line = next(line for line in dot.splitlines() if f"\\n{name}\\n" in line)
    return line


def test_values_and_changes_at_an_iteration(tmp_path, loopdbg):
    out = tmp_path / "body.dot"
    r = loopdbg("graph", NESTED, "--loop", "cols_loop", "--outer", "2", "--iteration", "1",
                "-o", out)
    assert r.returncode == 0, r.stderr
    dot = out.read_text()
    assert "at iteration 1, outer [2]; red: changed since iteration 0" in dot
    product = node(dot, "product")
    assert "= int64 (1,) [6]" in product and "penwidth" in product      # (2+1)*(1+1), was 3
    assert "penwidth" not in node(dot, "row_index")                      # invariant


def test_minus_one_is_the_last_iteration_and_onnx_models_draw_too(tmp_path, loopdbg):
    onnx_model = ROOT / "tests" / "corpus" / "onnx_loop_spec_example" / "model.onnx"
    out = tmp_path / "onnx.dot"
    r = loopdbg("graph", onnx_model, "--iteration", "-1", "-o", out)
    assert r.returncode == 0, r.stderr
    assert re.search(r"at iteration \d+", out.read_text())
    assert "= " in out.read_text()


def test_a_trace_draws_its_recorded_iteration(tmp_path, loopdbg):
    trace = tmp_path / "run.ltrace"
    assert loopdbg("run", NESTED, "--trace", trace, "-q").returncode == 0
    out = tmp_path / "t.dot"
    r = loopdbg("graph", trace, "--loop", "cols_loop", "--outer", "1", "--iteration", "3",
                "-o", out)
    assert r.returncode == 0, r.stderr
    assert "= int64 (1,) [8]" in node(out.read_text(), "product")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_with_values(tmp_path, loopdbg):
    out = tmp_path / "body.svg"
    assert loopdbg("graph", NESTED, "--iteration", "0", "-o", out).returncode == 0
    assert "int64" in out.read_text()


@pytest.mark.parametrize("argv, fragment", [
    (["--loop", "cols_loop", "--iteration", "9"], "did not reach iteration 9"),
    (["--loop", "cols_loop", "--outer", "1,2", "--iteration", "0"], "inside 1 loop"),
    (["--loop", "cols_loop", "--outer", "x", "--iteration", "0"], "give iteration numbers"),
    (["--outer", "1"], "give --iteration K"),
])
def test_what_does_not_exist_is_one_sentence(tmp_path, argv, fragment, loopdbg):
    r = loopdbg("graph", NESTED, *argv, "-o", tmp_path / "x.dot")
    assert r.returncode != 0 and fragment in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.dot").exists()
