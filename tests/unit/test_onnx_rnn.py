"""ONNX's LSTM, GRU and RNN (loopdbg/ops/onnx_rnn.py): what onnx.reference ignores and loopdbg
does not (sequence_lens, clip, activations with alpha/beta, input_forget, peepholes, layout),
checked against onnxruntime (oracle) and against their own definitions.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.errors import RunError, UnsupportedOperation  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402

F = TensorProto.FLOAT
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
SEQ, BATCH, IN, H = 5, 3, 4, 6


def _model(op: str, *, dirs=1, lens=False, layout=0, peep=False, init=True, **attrs):
    g = GATES[op]
    rng = np.random.default_rng(len(op) + dirs + 2 * layout + 4 * lens)
    w = rng.standard_normal((dirs, g * H, IN)).astype(np.float32) * 0.5
    r = rng.standard_normal((dirs, g * H, H)).astype(np.float32) * 0.5
    b = rng.standard_normal((dirs, 2 * g * H)).astype(np.float32) * 0.2
    inits = [numpy_helper.from_array(v, n) for v, n in ((w, "W"), (r, "R"), (b, "B"))]
    ins = ["X", "W", "R", "B", "lens" if lens else "", "h0" if init else ""]
    x_shape = [BATCH, SEQ, IN] if layout else [SEQ, BATCH, IN]
    s_shape = [BATCH, dirs, H] if layout else [dirs, BATCH, H]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    graph_in = [om.vi("X", F, x_shape)]
    if lens:
        graph_in.append(om.vi("lens", TensorProto.INT32, [BATCH]))
        feeds["lens"] = np.array([5, 2, 0][:BATCH], np.int32)
    if init:
        graph_in.append(om.vi("h0", F, s_shape))
        feeds["h0"] = rng.standard_normal(s_shape).astype(np.float32)
    outs = ["Y", "Y_h"]
    if op == "LSTM":
        ins.append("c0" if init else "")
        if init:
            graph_in.append(om.vi("c0", F, s_shape))
            feeds["c0"] = rng.standard_normal(s_shape).astype(np.float32)
        if peep:
            ins.append("P")
            inits.append(numpy_helper.from_array(
                rng.standard_normal((dirs, 3 * H)).astype(np.float32) * 0.3, "P"))
        outs.append("Y_c")
    direction = {1: "forward", 2: "bidirectional"}[dirs] if attrs.get("direction") is None \
        else attrs.pop("direction")
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(op, ins, outs, hidden_size=H, direction=direction, **attrs)
    m = om.model([node], graph_in, [om.vi(o, F, None) for o in outs], opset=14, inits=inits)
    return m, feeds


CASES = [
    ("LSTM", {}), ("LSTM", {"dirs": 2}), ("LSTM", {"direction": "reverse"}),
    ("LSTM", {"lens": True}), ("LSTM", {"dirs": 2, "lens": True}),
    ("LSTM", {"peep": True}), ("LSTM", {"clip": 0.7}), ("LSTM", {"input_forget": 1}),
    ("LSTM", {"init": False}),
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "Tanh"], "activation_alpha": [0.3, 0.1],
              "activation_beta": [0.4]}),
    ("GRU", {}), ("GRU", {"dirs": 2, "lens": True}), ("GRU", {"linear_before_reset": 1}),
    ("GRU", {"clip": 0.5}),
    ("GRU", {"activations": ["Sigmoid", "Relu"]}),
    ("RNN", {}), ("RNN", {"direction": "reverse", "lens": True}),
    ("RNN", {"activations": ["Relu"]}), ("RNN", {"dirs": 2, "clip": 0.3}),
]


def _ids():
    return [f"{op}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for op, kw in CASES]


@pytest.mark.oracle
@pytest.mark.parametrize("op, kw", CASES, ids=_ids())    # (onnxruntime has no layout=1)
def test_recurrent_layers_agree_with_onnxruntime(op, kw):
    ort = pytest.importorskip("onnxruntime")
    m, feeds = _model(op, **dict(kw))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = Engine(from_proto(m)).run_to_end(feeds).outputs
    for name, w in zip([o.name for o in sess.get_outputs()], want):
        assert got[name].shape == w.shape, name
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-5, err_msg=name)


def test_layout_1_is_layout_0_with_batch_and_sequence_swapped():
    m0, f0 = _model("LSTM", dirs=2)
    m1, _ = _model("LSTM", dirs=2, layout=1)
    f1 = {"X": f0["X"].swapaxes(0, 1), "h0": f0["h0"].swapaxes(0, 1), "c0": f0["c0"].swapaxes(0, 1)}
    for node in m1.graph.initializer:                      # the same weights
        node.CopyFrom(next(t for t in m0.graph.initializer if t.name == node.name))
    a = Engine(from_proto(m0)).run_to_end(f0).outputs
    b = Engine(from_proto(m1)).run_to_end(f1).outputs
    np.testing.assert_allclose(b["Y"], a["Y"].transpose(2, 0, 1, 3), rtol=1e-6)
    np.testing.assert_allclose(b["Y_h"], a["Y_h"].swapaxes(0, 1), rtol=1e-6)


def test_sequence_lens_zero_the_steps_past_each_length_and_keep_the_last_state():
    m, feeds = _model("GRU", lens=True)
    out = Engine(from_proto(m)).run_to_end(feeds).outputs
    y, yh = out["Y"], out["Y_h"]
    assert np.all(y[2:, 0, 1] == 0) and np.all(y[:, 0, 2] == 0)
    np.testing.assert_array_equal(yh[0, 1], y[1, 0, 1])           # length 2: its step 1
    assert np.all(yh[0, 2] == 0)                  # length 0: zeros, as onnxruntime gives


@pytest.mark.parametrize("attrs, cls, message", [
    ({"activations": ["Sigmoid", "Swish", "Tanh"]}, UnsupportedOperation,
     "activation 'Swish' is not one of ONNX's"),
    ({"hidden_size": 0}, UnsupportedOperation, "hidden_size"),
])
def test_bad_attributes_are_one_sentence(attrs, cls, message):
    m, feeds = _model("LSTM")
    node = m.graph.node[0]
    for k, v in attrs.items():
        for a in list(node.attribute):
            if a.name == k:
                node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(k, v))
    with pytest.raises(cls, match=message):
        Engine(from_proto(m)).run_to_end(feeds)


def test_a_sequence_length_past_the_steps_is_refused():
    m, feeds = _model("RNN", lens=True)
    feeds["lens"] = np.array([5, 9, 1], np.int32)
    with pytest.raises(RunError, match="sequence_lens \\[5, 9, 1\\] must give one length in 0..5"):
        Engine(from_proto(m)).run_to_end(feeds)
