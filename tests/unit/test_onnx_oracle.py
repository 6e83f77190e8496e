"""Differential tests: loopdbg against onnxruntime on ONNX models with loops (needs the dev extra).

The same models as test_onnx_reader.py, plus the corpus's ONNX model and the backend node tests
built from Loop/Scan/If, are run through onnxruntime and loopdbg and must agree: floats within
1e-5, everything else exactly, with the same shapes and dtypes. onnxruntime runs in its child
process (``loopdbg.oracle``), never in the test process; a crash there skips, with the reason.
"""

from __future__ import annotations

from pathlib import Path

import tempfile

import numpy as np
import pytest

pytest.importorskip("onnx")

import _onnx_models as om  # noqa: E402
from _onnx_cases import case, skip_reason  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.engine.inputs import load_npz  # noqa: E402
from loopdbg.ir.load import read_model  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.oracle import onnxruntime_installed  # noqa: E402
from loopdbg.oracle import testing as ovt  # noqa: E402

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not onnxruntime_installed(), reason="no onnxruntime")]
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "onnx_loop_spec_example"


def onnxruntime_outputs(model_bytes: bytes, feeds: dict) -> dict:
    """onnxruntime's outputs by name (in its child process), fed the inputs it declares."""
    ort = ovt.onnxruntime()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(model_bytes)
        compiled = ovt.answer(ort.compile, path, "the model", label=ort.label)
        try:
            wanted = [next(iter(n)) for n in compiled.inputs]
            outs = ovt.answer(ort.infer, compiled, {k: np.asarray(feeds[k]) for k in wanted},
                               "the model", label=ort.label)
        finally:
            ort.release(compiled)
    return dict(zip([next(iter(n)) for n in compiled.outputs], outs))


def for_onnxruntime(model):
    """A copy onnxruntime accepts: IR version <= 10, and an opset it has released (<= 21 here is
    enough for Loop/Scan/If, which have not changed since opset 21)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = min(copy.ir_version, 10)
    for imp in copy.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version > 21:
            imp.version = 21
    return copy.SerializeToString()


def assert_agree(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for k, w in want.items():
        g = np.asarray(got[k])
        w = np.asarray(w)
        assert g.shape == w.shape, (k, g.shape, w.shape)
        assert g.dtype == w.dtype, (k, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=k)
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)


def _models():
    yield "running_sum", *om.loop_running_sum()
    yield "running_sum_M3", *om.loop_running_sum(m_value=3)
    yield "running_sum_M_negative", *om.loop_running_sum(m_value=-2)
    yield "running_sum_M0", *om.loop_running_sum(m_value=0)
    yield "running_sum_cond_false", *om.loop_running_sum(cond_value=False)
    m, feeds, _ = om.scan_with_axes_and_directions()
    yield "scan_axes_directions", m, feeds
    m, feeds, _ = om.nested_with_if_and_outer_values()
    yield "nested_if_outer_values", m, feeds
    m, feeds, _ = om.scan8_batch()
    yield "scan8_batch", m, feeds


MODELS = {name: (m, feeds) for name, m, feeds in _models()}


@pytest.mark.parametrize("name", list(MODELS))
def test_loopdbg_agrees_with_onnxruntime(name):
    m, feeds = MODELS[name]
    want = onnxruntime_outputs(m.SerializeToString(), feeds)
    got = Engine(from_proto(m)).run_to_end(feeds).outputs
    assert_agree(got, want)


def test_the_corpus_onnx_model_agrees_with_onnxruntime():
    feeds = load_npz(CORPUS / "inputs.npz")
    want = onnxruntime_outputs((CORPUS / "model.onnx").read_bytes(), feeds)
    got = Engine(read_model(CORPUS / "model.onnx")).run_to_end(feeds).outputs
    assert_agree(got, want)
    assert_agree(want, load_npz(CORPUS / "onnxruntime_expected.npz"))


CONTROL_FLOW_CASES = ("test_loop11", "test_scan9_sum", "test_scan9_multi_state", "test_scan9_scalar",
                      "test_if", "test_range_float_type_positive_delta_expanded",
                      "test_range_int32_type_negative_delta_expanded",
                      "test_range_float16_type_positive_delta_expanded")


@pytest.mark.parametrize("case_name", CONTROL_FLOW_CASES)
def test_backend_control_flow_cases_agree_with_onnxruntime(case_name):
    found = case(case_name, "Loop", "Scan", "If", "Range")     # those operators' cases alone
    assert skip_reason(found) is None
    names = [vi.name for vi in found.model.graph.input]
    for ins, _ in found.data_sets:
        feeds = dict(zip(names, ins))
        want = onnxruntime_outputs(for_onnxruntime(found.model), feeds)
        got = Engine(from_proto(found.model, found.name)).run_to_end(feeds).outputs
        assert_agree(got, want)
