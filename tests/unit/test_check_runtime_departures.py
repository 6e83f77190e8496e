"""``loopdbg check`` on ONNX models where onnxruntime departs from the ONNX text in a known way
(docs/semantics.md): the verdict says that the runtime looks wrong, naming the departure.

The tests marked ``oracle`` run onnxruntime (in its child process); the predicate itself
(``runtime_departures.onnxruntime_departure``) is tested on loopdbg's own run without it."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from _onnx_models import B, F, I64, model, vi  # noqa: E402
from loopdbg.check.bookkeeping import LoopRun  # noqa: E402
from loopdbg.check.runtime_departures import onnxruntime_departure  # noqa: E402
from loopdbg.cli import main  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.oracle import onnxruntime_installed  # noqa: E402


def scan_passing_its_element_through():
    body = helper.make_graph([], "b", [vi("e", F, [2])], [vi("e", F, [2])])
    m = model([helper.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1)],
              [vi("x", F, [2, 2])], [vi("y", F, None)], opset=11)
    return m, {"x": np.array([[1, 2], [3, 4]], np.float32)}


def loop_scanning_iteration_num():
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"])], "b",
                             [vi("i", I64, []), vi("c", B, [])], [vi("c_out", B, []),
                                                                  vi("i", I64, [])])
    m = model([helper.make_node("Loop", ["M", ""], ["y"], body=body)], [vi("M", I64, [])],
              [vi("y", I64, None)], opset=13)
    return m, {"M": np.array(3, np.int64)}


def scan8_over_empty_sequences(batch: int = 3):
    body = helper.make_graph([helper.make_node("Add", ["s", "e"], ["s_out"]),
                              helper.make_node("Mul", ["e", "e"], ["y"])], "b",
                             [vi("s", F, [2]), vi("e", F, [2])],
                             [vi("s_out", F, [2]), vi("y", F, [2])])
    m = model([helper.make_node("Scan", ["", "s0", "x"], ["s_fin", "ys"], body=body,
                                num_scan_inputs=1)],
              [vi("s0", F, [batch, 2]), vi("x", F, [batch, 0, 2])],
              [vi("s_fin", F, None), vi("ys", F, None)], opset=8)
    return m, {"s0": np.arange(2 * batch, dtype=np.float32).reshape(batch, 2) + 7,
               "x": np.zeros((batch, 0, 2), np.float32)}


def zero_trip_loop_of_open_shape():
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]),
                              helper.make_node("Identity", ["v"], ["v_out"]),
                              helper.make_node("Add", ["v", "v"], ["twice"])], "b",
                             [vi("i", I64, []), vi("c", B, []), vi("v", F, None)],
                             [vi("c_out", B, []), vi("v_out", F, None), vi("twice", F, None)])
    m = model([helper.make_node("Loop", ["M", "", "v0"], ["v_fin", "all"], body=body)],
              [vi("M", I64, []), vi("v0", F, None)], [vi("v_fin", F, None), vi("all", F, None)])
    return m, {"M": np.array(0, np.int64), "v0": np.ones((2, 2), np.float32)}


def scan_over_an_empty_axis_1():
    """Scan over axis 1 of x (2, 0): onnxruntime 1.32's process dies by SIGFPE."""
    body = helper.make_graph([helper.make_node("Identity", ["e"], ["y"])], "b",
                             [vi("e", F, [2])], [vi("y", F, [2])])
    m = model([helper.make_node("Scan", ["x"], ["ys"], body=body, num_scan_inputs=1,
                                scan_input_axes=[1])], [vi("x", F, [2, 0])], [vi("ys", F, None)],
              opset=11)
    return m, {"x": np.zeros((2, 0), np.float32)}


def _departure(m, feeds, output: str, theirs):
    """What the predicate says of onnxruntime giving ``theirs`` for ``output``."""
    engine = Engine(from_proto(m))
    runs, final = [], None
    for e in engine.run(feeds):
        if type(e).__name__ == "LoopFinished":
            runs.append(LoopRun(e.path, e.iterations, e.reason))
        final = e
    top = [p for p in engine.loops if "/" not in p][0]
    port = [o.name for o in engine.loops[top].outputs].index(output)
    return onnxruntime_departure(engine.loops[top], engine.loops, runs, port,
                                 final.outputs[output], theirs)


def test_the_departures_are_recognised_by_their_signature_only():
    m, feeds = loop_scanning_iteration_num()
    assert "iteration_num" in _departure(m, feeds, "y", np.array([3, 3, 3]))
    assert _departure(m, feeds, "y", np.array([0, 1, 5])) is None     # another difference
    m, feeds = zero_trip_loop_of_open_shape()
    assert "ran no iteration" in _departure(m, feeds, "all", np.zeros((0,), np.float32))
    assert "ran no iteration" in _departure(m, feeds, "all", np.zeros((0, 0, 2), np.float32))
    assert _departure(m, feeds, "all", np.zeros((0, 3, 2), np.float32)) is None
    m, feeds = scan8_over_empty_sequences()
    assert "Scan-8" in _departure(m, feeds, "s_fin", np.zeros((3, 2), np.float32))
    assert _departure(m, feeds, "ys", np.zeros((3, 0, 1), np.float32)) is None
    m, feeds = scan8_over_empty_sequences(batch=0)
    assert "batch of 0" in _departure(m, feeds, "ys", np.zeros((4, 2), np.float32))
    m, feeds = scan_passing_its_element_through()
    assert "passed straight through" in _departure(m, feeds, "y", np.zeros((2, 2), np.float32))


def _check(tmp_path, capsys, m, feeds, *extra):
    path = tmp_path / "model.onnx"
    onnx.save(m, str(path))
    np.savez(tmp_path / "inputs.npz", **feeds)
    code = main(["check", str(path), str(tmp_path / "inputs.npz"), *extra])
    return code, capsys.readouterr().out


@pytest.mark.oracle
@pytest.mark.skipif(not onnxruntime_installed(), reason="onnxruntime is missing")
@pytest.mark.parametrize("build, phrase", [
    (scan_passing_its_element_through, "body input passed straight through"),
    (loop_scanning_iteration_num, "iteration_num passed straight through"),
    (scan8_over_empty_sequences, "Scan-8 over sequences of length 0"),
    (zero_trip_loop_of_open_shape, "Loop that ran no iteration"),
])
def test_check_says_onnxruntime_looks_wrong_on_its_known_departures(tmp_path, capsys, build,
                                                                    phrase):
    m, feeds = build()
    code, out = _check(tmp_path, capsys, m, feeds, "--per-iteration")
    verdict = out.strip().splitlines()[-1]
    if "agree" in verdict or "could not compare" in verdict:
        pytest.skip(f"onnxruntime gave the right values, or died, this time: {verdict}")
    assert code == 1
    assert verdict.startswith("verdict: onnxruntime looks wrong:") and phrase in verdict, out


@pytest.mark.oracle
@pytest.mark.skipif(not onnxruntime_installed(), reason="onnxruntime is missing")
def test_the_json_report_says_the_runtime_looks_wrong(tmp_path, capsys):
    m, feeds = loop_scanning_iteration_num()
    _, out = _check(tmp_path, capsys, m, feeds, "--format", "json")
    report = json.loads(out)
    assert report["runtime_looks_wrong"] is True
    assert any("iteration_num" in f["text"] for f in report["findings"])


@pytest.mark.oracle
@pytest.mark.skipif(not onnxruntime_installed(), reason="onnxruntime is missing")
def test_check_says_onnxruntime_looks_wrong_when_it_dies_on_a_zero_length_scan(tmp_path, capsys):
    m, feeds = scan_over_an_empty_axis_1()
    code, out = _check(tmp_path, capsys, m, feeds)
    verdict = out.strip().splitlines()[-1]
    if "crashed" not in out:
        pytest.skip(f"onnxruntime did not die on it here: {verdict}")
    assert code == 2
    assert verdict.startswith("verdict: onnxruntime looks wrong: onnxruntime crashed"), out
    assert "zero-length axis" in verdict and "loopdbg's own run finished" in verdict
    assert "(0, 2)" in out                         # loopdbg's own output is shown


@pytest.mark.oracle
@pytest.mark.skipif(not onnxruntime_installed(), reason="onnxruntime is missing")
def test_check_against_with_runtimes_judges_onnxruntime_by_its_known_departures(tmp_path,
                                                                                capsys):
    """Both runtimes differ from loopdbg alike (the same model twice): the plain rule (the other
    runtime agrees with loopdbg) cannot judge, the known departure can."""
    m, feeds = loop_scanning_iteration_num()
    onnx.save(m, str(tmp_path / "reference.onnx"))
    _check(tmp_path, capsys, m, feeds)                  # writes model.onnx and inputs.npz
    main(["check", str(tmp_path / "model.onnx"), str(tmp_path / "inputs.npz"), "--against",
          str(tmp_path / "reference.onnx"), "--runtimes"])
    out = capsys.readouterr().out
    assert "onnxruntime looks wrong on model.onnx" in out
    assert "onnxruntime looks wrong on reference.onnx" in out
    assert "iteration_num passed straight through" in out.strip().splitlines()[-1]
