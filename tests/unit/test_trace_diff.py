"""trace diff: identical runs are identical; a perturbed input diverges where it first matters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model
from loopdbg.trace import record
from loopdbg.trace.diff import compare_arrays, diff

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"


def rec(tmp_path, name, file, change=None, trace_all=False):
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")
    if change:
        change(inputs)
    path = tmp_path / file
    record(Engine(model).run(inputs, record_nodes=trace_all), path, model=model, inputs=inputs,
           options={"trace_all": trace_all})
    return str(path)


@pytest.mark.parametrize("name", ["loop_while_iter", "ti_lstm_forward", "loop_scan_axis1"])
def test_two_runs_of_the_same_inputs_are_identical(tmp_path, name):
    a = rec(tmp_path, name, "a.ldt", trace_all=True)
    b = rec(tmp_path, name, "b.ldt", trace_all=True)
    result = diff(a, b)
    assert result.identical and result.notes == [] and result.compared > 3


@pytest.mark.parametrize("k", [0, 2, 4])
def test_a_perturbed_slice_diverges_at_its_iteration(tmp_path, k):
    def bump(inputs):
        inputs["seq"] = inputs["seq"].copy()
        inputs["seq"][k, 1] += np.float32(0.5)
    a = rec(tmp_path, "loop_sliced_input", "a.ldt")
    b = rec(tmp_path, "loop_sliced_input", "b.ldt", bump)
    d = diff(a, b).divergence
    assert d is not None
    assert (d.loop, d.iteration, d.outer) == ("loop", k, ())
    assert d.tensor == "sliced_inputs/body_xt"
    assert d.max_abs == pytest.approx(0.5)
    assert d.max_rel == pytest.approx(0.5 / abs(load_npz(CORPUS / "loop_sliced_input" /
                                                         "inputs.npz")["seq"][k, 1] + 0.5),
                                      rel=1e-5)
    assert "iteration" in d.text() and "max abs error 0.5" in d.text()
    assert "the traces were recorded with different inputs" in diff(a, b).notes


def test_trace_all_names_the_first_node_that_differs(tmp_path):
    def bump(inputs):
        inputs["seq"] = inputs["seq"].copy()
        inputs["seq"][3] += np.float32(1.0)
    a = rec(tmp_path, "loop_sliced_input", "a.ldt", trace_all=True)
    b = rec(tmp_path, "loop_sliced_input", "b.ldt", bump, trace_all=True)
    d = diff(a, b).divergence
    assert d.iteration == 3 and d.tensor == "sliced_inputs/body_xt"
    assert any(o.startswith("nodes/") for o in d.others)
    assert "back_edges/body_h" in d.others


def test_tolerances(tmp_path):
    def nudge(inputs):
        inputs["x0"] = inputs["x0"] + np.float32(1e-4)
    a = rec(tmp_path, "loop_while_iter", "a.ldt")
    b = rec(tmp_path, "loop_while_iter", "b.ldt", nudge)
    assert not diff(a, b).identical
    assert diff(a, b, atol=1e-2).identical
    assert diff(a, b, rtol=1e-3).identical
    d = diff(a, b, rtol=1e-9).divergence
    assert d.iteration == 0


def test_a_different_invariant_shows_in_the_inputs_of_iteration_0(tmp_path):
    def lower(inputs):
        inputs["limit"] = inputs["limit"] - np.float32(20)
    a = rec(tmp_path, "loop_while_iter", "a.ldt")
    b = rec(tmp_path, "loop_while_iter", "b.ldt", lower)
    d = diff(a, b).divergence
    assert (d.loop, d.iteration, d.tensor) == ("loop", 0, "inputs/body_limit")
    assert d.max_abs == 20


def test_a_loop_stopping_earlier_diverges_at_its_last_iteration(tmp_path):
    name = "loop_while_iter"
    model = read_model(CORPUS / name / "model.xml")
    inputs = load_npz(CORPUS / name / "inputs.npz")
    a, b = tmp_path / "a.ldt", tmp_path / "b.ldt"
    record(Engine(model).run(inputs), a, model=model, inputs=inputs)
    record(Engine(model).run(inputs, max_iterations=3), b, model=model, inputs=inputs)
    d = diff(str(a), str(b)).divergence
    assert (d.loop, d.iteration) == ("loop", 2)
    assert "continues is True in A, False in B" in d.what


def test_a_truncated_trace_diverges_where_it_ends(tmp_path):
    a = rec(tmp_path, "ti_gru", "a.ldt")
    data = Path(a).read_bytes()
    cut = tmp_path / "cut.ldt"
    cut.write_bytes(data[: len(data) * 2 // 3])
    result = diff(a, str(cut))
    assert not result.identical
    assert "the end of the trace" in result.divergence.what
    assert any("truncated" in n for n in result.notes)


def test_compare_arrays():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    assert compare_arrays(a, a.copy())[0] is None                 # NaN equals NaN
    why, (mx, rel) = compare_arrays(a, np.array([1.0, np.nan, 4.0], np.float32))
    assert mx == 1.0 and rel == pytest.approx(0.25) and "index [2]" in why
    why, (mx, _) = compare_arrays(a, np.array([1.0, 2.0, 3.0], np.float32))
    assert mx == np.inf
    assert "shape" in compare_arrays(a, a[:2])[0]
    assert "dtype" in compare_arrays(a, a.astype(np.float64))[0]
    assert compare_arrays(np.array([1, 2]), np.array([1, 3]))[1][0] == 1.0
    assert compare_arrays(np.array([True]), np.array([False]))[1][0] == 1.0
