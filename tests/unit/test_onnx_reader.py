"""Reading .onnx into loopdbg's graph model, and ONNX's loop semantics where they differ from
OpenVINO's (loop_semantics.md §7): optional M/cond, negative M, stacked scan outputs, Scan axes
and directions, Scan-8's batch, outer-scope values, If inside loop bodies.
"""

from __future__ import annotations

import builtins
import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine, IterationDone, LoopFinished, LoopStarted  # noqa: E402
from loopdbg.engine import events as ev  # noqa: E402
from loopdbg.engine.inputs import input_specs, load_npz  # noqa: E402
from loopdbg.errors import ModelError, UnsupportedOperation  # noqa: E402
from loopdbg.ir import model as irm  # noqa: E402
from loopdbg.ir.load import read_model  # noqa: E402
from loopdbg.ir.onnx_reader import INSTALL_HINT, from_proto  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "onnx_loop_spec_example"


def run(m, feeds):
    engine = Engine(from_proto(m))
    events = list(engine.run(feeds))
    return events, events[-1].outputs


def assert_outputs(got, want):
    assert list(got) == list(want)
    for k, w in want.items():
        w = np.asarray(w)
        assert got[k].shape == w.shape, (k, got[k].shape, w.shape)
        assert got[k].dtype == w.dtype, (k, got[k].dtype, w.dtype)
        np.testing.assert_allclose(got[k], w, rtol=1e-6, err_msg=k)


# ---- the graph model -------------------------------------------------------------------------


def test_the_spec_example_reads_into_a_loop_with_onnx_names():
    model = read_model(CORPUS / "model.onnx")
    assert model.format == "onnx"
    assert model.opsets == {"ai.onnx": 17}
    g = model.graph
    kinds = {layer.name: (layer.type, layer.version) for layer in g.layers.values()}
    assert kinds["b"] == ("Parameter", "opset1")
    assert kinds["a"] == ("Constant", "opset1")
    assert kinds["loop"] == ("Loop", "opset5")
    assert [g.layers[r].name for r in g.results] == ["b_final", "user_defined_vals"]
    loop = next(layer for layer in g.layers.values() if layer.type == "Loop")
    assert loop.data["onnx_semantics"] == "true"
    body = loop.body.graph
    assert [body.layers[p].name for p in body.parameters] == \
        ["iteration_num", "keepgoing_in", "b_in", "a"]          # `a` is read from the outer scope
    assert [body.layers[r].name for r in body.results] == \
        ["keepgoing_out", "b_out", "user_defined_val"]
    adds = [layer for layer in body.layers.values() if layer.type == "onnx.Add"]
    assert {layer.name for layer in adds} == {"my_local", "user_defined_val"}
    assert all(layer.version == "opset17" and layer.ir_type == "Add" for layer in adds)
    roles = dict((body.layers[m.internal_layer_id].name, role)
                 for role, m in irm.classify_inputs(loop.body))
    assert roles == {"iteration_num": irm.CURRENT_ITERATION, "keepgoing_in": irm.CONDITION,
                     "b_in": irm.MERGED, "a": irm.INVARIANT}


ONNX_CORPUS = sorted(p.parent.name for p in CORPUS.parent.glob("*/model.onnx")
                     if (p.parent / "onnxruntime_expected.npz").exists())


@pytest.mark.parametrize("case", ONNX_CORPUS)
def test_every_corpus_onnx_model_matches_onnxruntimes_outputs(case):
    base = CORPUS.parent / case
    final = Engine(read_model(base / "model.onnx")).run_to_end(load_npz(base / "inputs.npz"))
    assert_outputs(final.outputs, load_npz(base / "onnxruntime_expected.npz"))


def test_the_spec_example_stops_after_two_iterations_on_its_condition():
    engine = Engine(read_model(CORPUS / "model.onnx"))
    final = engine.run_to_end(load_npz(CORPUS / "inputs.npz"))
    assert [(f.path, f.iterations, f.reason) for f in final.loops] == [("loop", 2, "condition")]
    assert "onnx_loop_spec_example" in ONNX_CORPUS


def test_parameters_carry_shape_and_element_type_with_symbolic_dims_as_question_marks():
    m = om.model([helper.make_node("Relu", ["x"], ["y"])], [om.vi("x", om.F, ["batch", 3])],
                 [om.vi("y", om.F, ["batch", 3])])
    model = from_proto(m)
    p = model.graph.layers[model.graph.parameters[0]]
    assert dict(p.data) == {"shape": "?,3", "element_type": "f32"}
    spec = input_specs(model)[0]
    assert spec.shape == (-1, 3) and spec.dtype == np.float32


def test_initializers_become_constants_and_empty_optional_inputs_stay_unconnected():
    lo = helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0])
    m = om.model([helper.make_node("Clip", ["x", "", "hi"], ["y"])],
                 [om.vi("x", om.F, [3])], [om.vi("y", om.F, [3])], opset=13,
                 inits=[lo, helper.make_tensor("hi", TensorProto.FLOAT, [], [1.0])])
    model = from_proto(m)
    g = model.graph
    clip = next(layer for layer in g.layers.values() if layer.type == "onnx.Clip")
    assert g.producer(clip.id, 1) is None
    assert g.layers[g.producer(clip.id, 2)[0]].type == "Constant"
    out = Engine(model).run_to_end({"x": np.array([-2, 0.5, 2], np.float32)}).outputs
    np.testing.assert_array_equal(out["y"], [-2, 0.5, 1])


@pytest.mark.parametrize("opset, to", [(13, TensorProto.INT32), (1, "INT32")])
def test_cast_targets_are_read_as_element_type_names(opset, to):
    """The reader turns ONNX's enum (and Cast-1's spelled name) into ``i32``: no onnx in ops."""
    m = om.model([helper.make_node("Cast", ["x"], ["y"], to=to)], [om.vi("x", om.F, [3])],
                 [om.vi("y", TensorProto.INT32, [3])], opset=opset)
    model = from_proto(m)
    cast = next(layer for layer in model.graph.layers.values() if layer.type == "onnx.Cast")
    assert cast.data["to"] == "i32"
    out = Engine(model).run_to_end({"x": np.array([-2.7, 0.5, 3.9], np.float32)}).outputs["y"]
    assert out.dtype == np.int32 and out.tolist() == [-2, 0, 3]


@pytest.mark.parametrize("to, name", [(TensorProto.COMPLEX64, "complex64"), ("TEXT", "TEXT")])
def test_a_cast_to_a_type_loopdbg_lacks_is_one_sentence_naming_it(to, name):
    m = om.model([helper.make_node("Cast", ["x"], ["y"], to=to)], [om.vi("x", om.F, [3])],
                 [om.vi("y", om.F, [3])], opset=1 if isinstance(to, str) else 13)
    with pytest.raises(UnsupportedOperation, match=f"Cast to element type {name} is not supported"):
        Engine(from_proto(m)).run_to_end({"x": np.zeros(3, np.float32)})


def test_a_name_nothing_defines_is_a_model_error():
    m = om.model([helper.make_node("Relu", ["nowhere"], ["y"])], [om.vi("x", om.F, [3])],
                 [om.vi("y", om.F, [3])])
    with pytest.raises(ModelError, match="'nowhere' is read, but no node"):
        from_proto(m)


def test_a_file_that_is_not_onnx_is_a_model_error(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01 not a protobuf at all \xff\xff")
    with pytest.raises(ModelError, match="not a readable ONNX model"):
        read_model(bad)


def test_without_the_onnx_package_the_error_says_how_to_install_it(monkeypatch):
    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    real_find = importlib.util.find_spec

    def not_found(name, *args, **kwargs):      # (how a model read before is found kept)
        return None if name == "onnx" else real_find(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    monkeypatch.setattr(importlib.util, "find_spec", not_found)
    with pytest.raises(ModelError) as info:
        read_model(CORPUS / "model.onnx")
    assert str(info.value) == INSTALL_HINT
    assert "\n" not in str(info.value)


# ---- Loop ------------------------------------------------------------------------------------


def test_loop_without_m_and_cond_runs_until_the_body_condition_is_false():
    m, feeds = om.loop_running_sum()
    events, out = run(m, feeds)
    assert_outputs(out, om.expected_running_sum(feeds))
    started = next(e for e in events if isinstance(e, LoopStarted))
    assert started.trip_count is None and started.execution_condition is True
    finished = [e for e in events if isinstance(e, LoopFinished)]
    assert finished[0].iterations == 7 and finished[0].reason == ev.STOP_CONDITION


@pytest.mark.parametrize("m_value", [-1, -5, 0])
def test_a_negative_or_zero_m_runs_zero_iterations(m_value):
    m, feeds = om.loop_running_sum(m_value=m_value)
    events, out = run(m, feeds)
    assert_outputs(out, om.expected_running_sum(feeds))
    assert out["acc_all"].shape == (0, 2, 3)           # ORT: a (0, ...) scan output
    assert not any(isinstance(e, IterationDone) for e in events)
    finished = next(e for e in events if isinstance(e, LoopFinished))
    assert finished.iterations == 0 and finished.reason == ev.STOP_ZERO_TRIP


def test_a_false_cond_input_runs_zero_iterations():
    m, feeds = om.loop_running_sum(cond_value=False)
    _, out = run(m, feeds)
    assert_outputs(out, om.expected_running_sum(feeds))


def test_scan_outputs_are_stacked_on_a_new_axis_not_concatenated():
    m, feeds = om.loop_running_sum(m_value=3)
    events, out = run(m, feeds)
    assert out["acc_all"].shape == (3, 2, 3)           # onnx.reference's vstack would give (6, 3)
    assert_outputs(out, om.expected_running_sum(feeds))
    last = [e for e in events if isinstance(e, IterationDone)][-1]
    assert last.partial("acc_all").shape == (3, 2, 3)
    assert set(last.inputs) == {"iteration_num", "cond_in", "acc_in", "x", "limit"}
    assert last.inputs["iteration_num"] == 2 and last.inputs["iteration_num"].dtype == np.int64
    assert set(last.outputs) == {"cond_out", "acc_out", "acc_scan"}
    assert list(last.back_edges) == ["acc_in"]


def test_cond_in_receives_the_previous_iterations_condition():
    m, feeds = om.loop_running_sum(cond_value=True)
    events, _ = run(m, feeds)
    iters = [e for e in events if isinstance(e, IterationDone)]
    assert all(bool(e.inputs["cond_in"]) for e in iters)
    assert [bool(e.cond) for e in iters] == [True] * 6 + [False]


def test_nested_loops_and_an_if_read_values_from_two_scopes_out():
    m, feeds, want = om.nested_with_if_and_outer_values()
    events, out = run(m, feeds)
    assert_outputs(out, want)
    paths = {e.path for e in events if isinstance(e, IterationDone)}
    assert paths == {"loop", "loop/loop_1"}
    inner = next(e for e in events if isinstance(e, IterationDone) and e.path == "loop/loop_1")
    assert set(inner.inputs) == {"j", "c_in", "t_in", "step"}


# ---- Scan ------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [9, 11, 16])
def test_scan_with_axes_and_directions(opset):
    m, feeds, want = om.scan_with_axes_and_directions()
    m.opset_import[0].version = opset
    if opset == 9:     # Scan-9 has no negative axes
        for attr in m.graph.node[1].attribute:
            if attr.name == "scan_output_axes":
                attr.ints[:] = [1, 1]
    events, out = run(m, feeds)
    assert_outputs(out, want)
    first = next(e for e in events if isinstance(e, IterationDone))
    assert first.inputs["col"].shape == (2,)                # the scanned axis is gone
    np.testing.assert_array_equal(first.inputs["col"], feeds["x"][:, 3])


def test_scan8_runs_each_batch_entry_as_its_own_scan():
    m, feeds, want = om.scan8_batch()
    events, out = run(m, feeds)
    assert_outputs(out, want)
    paths = [e.path for e in events if isinstance(e, LoopFinished)]
    assert paths == ["scan_batch/scan", "scan_batch/scan", "scan_batch"]


def test_scan8_with_sequence_lens_is_refused_clearly():
    m, _, _ = om.scan8_batch()
    node = m.graph.node[0]
    node.input[0] = "lens"
    m.graph.input.append(om.vi("lens", TensorProto.INT32, [2]))
    with pytest.raises(ModelError, match="sequence_lens"):
        from_proto(m)


def test_a_loop_body_with_the_wrong_number_of_inputs_is_a_model_error():
    m, _ = om.loop_running_sum()
    body = m.graph.node[-1].attribute[0].g
    del body.input[0]
    with pytest.raises(ModelError, match="iteration_num, cond_in"):
        from_proto(m)


def test_onnx_models_round_trip_through_onnx_save(tmp_path):
    m, feeds, want = om.scan_with_axes_and_directions()
    path = tmp_path / "scan.onnx"
    onnx.save(m, str(path))
    out = Engine(read_model(path)).run_to_end(feeds).outputs
    assert_outputs(out, want)


@pytest.mark.parametrize("node, message", [
    (helper.make_node("Relu", ["x", "x"], ["y"]), "node 'y' (Relu) has 2 inputs; its operator takes 1."),
    (helper.make_node("Clip", ["x", "", "", "x"], ["y"]), "has 4 inputs; its operator takes 1 to 3."),
    (helper.make_node("Split", ["x"], ["y", "z"], name="cut", axis=0),
     None),                                                  # outputs 1 or more: accepted
    (helper.make_node("Concat", [], ["y"], axis=0), "has 0 inputs; its operator takes at least 1."),
])
def test_a_node_s_input_and_output_counts_are_checked_against_its_schema(node, message):
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output]
    m = om.model([node], [om.vi("x", TensorProto.FLOAT, [2])], outs)
    if message is None:
        from_proto(m)
        return
    with pytest.raises(ModelError) as info:
        from_proto(m)
    assert str(info.value).endswith(message)
