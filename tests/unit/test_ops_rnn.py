"""The recurrent-cell kernels against the formulas of loop_semantics.md §6, written out plainly
here, and against OpenVINO's CPU plugin (forced to f32) as an oracle."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer, Port
from loopdbg.ops import make_kernel

# ---- the formulas, written independently of the kernels ---------------------------------------


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0.0)


ACT = {"sigmoid": sigmoid, "tanh": np.tanh, "relu": relu}


def clipped(x, clip):
    return np.clip(x, -clip, clip) if clip > 0 else x


def ref_lstm(X, H, C, W, R, B, clip=0.0, acts=("sigmoid", "tanh", "tanh"), input_forget=False,
             P=None):
    f_, g_, h_ = (ACT[a] for a in acts)
    n = H.shape[1]
    Wf, Wi, Wc, Wo = W[:n], W[n:2 * n], W[2 * n:3 * n], W[3 * n:]
    Rf, Ri, Rc, Ro = R[:n], R[n:2 * n], R[2 * n:3 * n], R[3 * n:]
    bf, bi, bc, bo = B[:n], B[n:2 * n], B[2 * n:3 * n], B[3 * n:]
    if P is None:
        P = np.zeros(3 * n)
    Pf, Pi, Po = P[:n], P[n:2 * n], P[2 * n:]
    f = f_(clipped(X @ Wf.T + H @ Rf.T + bf + Pf * C, clip))
    if input_forget:
        i = 1 - f
    else:
        i = f_(clipped(X @ Wi.T + H @ Ri.T + bi + Pi * C, clip))
    c = g_(clipped(X @ Wc.T + H @ Rc.T + bc, clip))
    C2 = f * C + i * c
    o = f_(clipped(X @ Wo.T + H @ Ro.T + bo + Po * C2, clip))
    return o * h_(C2), C2


def ref_gru(X, H, W, R, B, clip=0.0, acts=("sigmoid", "tanh"), lbr=False):
    f_, g_ = (ACT[a] for a in acts)
    n = H.shape[1]
    Wz, Wr, Wh = W[:n], W[n:2 * n], W[2 * n:]
    Rz, Rr, Rh = R[:n], R[n:2 * n], R[2 * n:]
    z = f_(clipped(X @ Wz.T + H @ Rz.T + B[:n], clip))
    r = f_(clipped(X @ Wr.T + H @ Rr.T + B[n:2 * n], clip))
    if lbr:
        Wbh, Rbh = B[2 * n:3 * n], B[3 * n:]
        h = g_(clipped(X @ Wh.T + r * (H @ Rh.T + Rbh) + Wbh, clip))
    else:
        h = g_(clipped(X @ Wh.T + (r * H) @ Rh.T + B[2 * n:], clip))
    return (1 - z) * h + z * H


def ref_rnn(X, H, W, R, B, clip=0.0, acts=("tanh",)):
    return ACT[acts[0]](clipped(X @ W.T + H @ R.T + B, clip))


def ref_sequence(cell, X, states, lengths, W, R, B, direction):
    """Per batch row and direction, walk the row's first ``len`` steps one at a time."""
    N, T = X.shape[:2]
    dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    hs = states[0].shape[2]
    Y = np.zeros((N, len(dirs), T, hs))
    finals = [np.zeros_like(s) for s in states]
    for b in range(N):
        for d, reverse in enumerate(dirs):
            st = [s[b:b + 1, d] for s in states]
            order = range(lengths[b] - 1, -1, -1) if reverse else range(lengths[b])
            for t in order:
                out = cell(X[b:b + 1, t], *st, W[d], R[d], B[d])
                st = list(out) if isinstance(out, tuple) else [out]
                Y[b, d, t] = st[0][0]
            if lengths[b] > 0:
                for fin, s in zip(finals, st):
                    fin[b, d] = s[0]
    return (Y, *finals)


# ---- building layers and inputs ---------------------------------------------------------------


def make_layer(type_, version, n_in, n_out, **data):
    data = {k: str(v) for k, v in data.items()}
    return Layer(id=1, name="cell", type=type_, version=version, data=data,
                 inputs=tuple(Port(i, i) for i in range(n_in)),
                 outputs=tuple(Port(n_in + i, i) for i in range(n_out)))


def kernel(type_, version, n_in, n_out, **data):
    """The run function the registry builds for a ``type_``/``version`` layer with ``data``."""
    run, outputs = make_kernel(make_layer(type_, version, n_in, n_out, **data))
    assert outputs == n_out
    return run


def attrs(hidden, acts, clip=0.0, **extra):
    return dict(hidden_size=hidden, activations=", ".join(acts), activations_alpha="",
                activations_beta="", clip=clip, **extra)


def randn(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def lstm_inputs(rng, batch, inp, hid, dtype=np.float64):
    return [randn(rng, batch, inp, dtype=dtype), randn(rng, batch, hid, dtype=dtype),
            randn(rng, batch, hid, dtype=dtype), randn(rng, 4 * hid, inp, dtype=dtype),
            randn(rng, 4 * hid, hid, dtype=dtype), randn(rng, 4 * hid, dtype=dtype)]


def gru_inputs(rng, batch, inp, hid, lbr, dtype=np.float64):
    return [randn(rng, batch, inp, dtype=dtype), randn(rng, batch, hid, dtype=dtype),
            randn(rng, 3 * hid, inp, dtype=dtype), randn(rng, 3 * hid, hid, dtype=dtype),
            randn(rng, (4 if lbr else 3) * hid, dtype=dtype)]


def rnn_inputs(rng, batch, inp, hid, dtype=np.float64):
    return [randn(rng, batch, inp, dtype=dtype), randn(rng, batch, hid, dtype=dtype),
            randn(rng, hid, inp, dtype=dtype), randn(rng, hid, hid, dtype=dtype),
            randn(rng, hid, dtype=dtype)]


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---- cells against the formulas ----------------------------------------------------------------

# sigmoid/tanh-only f and g take the kernel's fused path; relu in f or g takes the general one
LSTM_ACTS = [("sigmoid", "tanh", "tanh"), ("tanh", "sigmoid", "relu"),
             ("relu", "tanh", "sigmoid"), ("tanh", "relu", "relu")]


@pytest.mark.parametrize("acts", LSTM_ACTS)
@pytest.mark.parametrize("clip", [0.0, 0.5])
@pytest.mark.parametrize("version", ["opset4", "opset1"])
def test_lstm_cell_matches_formula(version, clip, acts):
    rng = np.random.default_rng(1)
    ins = lstm_inputs(rng, 3, 5, 4)
    run = kernel("LSTMCell", version, 6, 2, **attrs(4, acts, clip))
    H2, C2 = run(*ins)
    eH, eC = ref_lstm(*ins, clip=clip, acts=acts)
    close(H2, eH)
    close(C2, eC)


def test_lstm_clip_leaves_the_cell_state_unclipped_before_h():
    """A large C' must go through h() unclipped: with clip 0.1 tanh(C') would be at most ~0.1."""
    rng = np.random.default_rng(2)
    X, H, C, W, R, B = lstm_inputs(rng, 2, 3, 4)
    C = np.full_like(C, 5.0)
    run = kernel("LSTMCell", "opset4", 6, 2, **attrs(4, LSTM_ACTS[0], 0.1))
    H2, C2 = run(X, H, C, W, R, B)
    assert np.all(np.abs(C2) > 2.0)
    close(H2, ref_lstm(X, H, C, W, R, B, clip=0.1)[0])


@pytest.mark.parametrize("clip", [0.0, 0.3])
def test_lstm_cell_v1_input_forget(clip):
    rng = np.random.default_rng(3)
    ins = lstm_inputs(rng, 2, 3, 5)
    run = kernel("LSTMCell", "opset1", 6, 2, **attrs(
        5, LSTM_ACTS[0], clip, input_forget="true", weights_format="fico"))
    H2, C2 = run(*ins)
    eH, eC = ref_lstm(*ins, clip=clip, input_forget=True)
    close(H2, eH)
    close(C2, eC)
    # and it is not the ordinary cell
    assert not np.allclose(C2, ref_lstm(*ins, clip=clip)[1])


@pytest.mark.parametrize("clip", [0.0, 0.4])
@pytest.mark.parametrize("input_forget", [False, True])
def test_lstm_cell_v1_peepholes(clip, input_forget):
    rng = np.random.default_rng(4)
    ins = lstm_inputs(rng, 2, 3, 4)
    P = randn(rng, 12)
    run = kernel("LSTMCell", "opset1", 7, 2, **attrs(
        4, LSTM_ACTS[0], clip, input_forget=str(input_forget).lower(), weights_format="fico"))
    H2, C2 = run(*ins, P)
    eH, eC = ref_lstm(*ins, clip=clip, input_forget=input_forget, P=P)
    close(H2, eH)
    close(C2, eC)


def test_lstm_cell_v1_rejects_other_weight_formats():
    with pytest.raises(UnsupportedOperation, match="ifco"):
        kernel("LSTMCell", "opset1", 6, 2, **attrs(4, LSTM_ACTS[0], weights_format="ifco"))


@pytest.mark.parametrize("lbr", [False, True])
@pytest.mark.parametrize("clip", [0.0, 0.6])
@pytest.mark.parametrize("acts", [("sigmoid", "tanh"), ("relu", "sigmoid"), ("tanh", "relu")])
def test_gru_cell_matches_formula(lbr, clip, acts):
    rng = np.random.default_rng(5)
    ins = gru_inputs(rng, 3, 4, 6, lbr)
    run = kernel("GRUCell", "opset3", 5, 1, **attrs(
        6, acts, clip, linear_before_reset=str(lbr).lower()))
    close(run(*ins), ref_gru(*ins, clip=clip, acts=acts, lbr=lbr))


def test_gru_linear_before_reset_changes_the_result():
    rng = np.random.default_rng(6)
    X, H, W, R, B = gru_inputs(rng, 2, 3, 4, lbr=True)
    B[12:] = 0.0   # Rbh = 0: lbr then differs from the default only by where r is applied
    make = lambda lbr: kernel("GRUCell", "opset3", 5, 1, **attrs(
        4, ("sigmoid", "tanh"), linear_before_reset=lbr))
    with_lbr = make("true")(X, H, W, R, B)
    without = make("false")(X, H, W, R, B[:12])
    close(with_lbr, ref_gru(X, H, W, R, B, lbr=True))
    close(without, ref_gru(X, H, W, R, B[:12], lbr=False))
    assert not np.allclose(with_lbr, without)


def test_gru_bias_length_must_match_linear_before_reset():
    rng = np.random.default_rng(7)
    X, H, W, R, B = gru_inputs(rng, 1, 2, 3, lbr=False)
    run = kernel("GRUCell", "opset3", 5, 1, **attrs(
        3, ("sigmoid", "tanh"), linear_before_reset="true"))
    with pytest.raises(ValueError, match="B has 9 rows, expected 4"):
        run(X, H, W, R, B)


@pytest.mark.parametrize("act", ["tanh", "relu", "sigmoid"])
@pytest.mark.parametrize("clip", [0.0, 0.2])
def test_rnn_cell_matches_formula(act, clip):
    rng = np.random.default_rng(8)
    ins = rnn_inputs(rng, 4, 3, 5)
    run = kernel("RNNCell", "opset1", 5, 1, **attrs(5, (act,), clip))
    close(run(*ins), ref_rnn(*ins, clip=clip, acts=(act,)))


@pytest.mark.parametrize("type_,version,default", [
    ("LSTMCell", "opset4", "sigmoid, tanh, tanh"),
    ("LSTMCell", "opset1", "sigmoid, tanh, tanh"),
    ("GRUCell", "opset3", "sigmoid, tanh"),
    ("RNNCell", "opset1", "tanh"),
    ("LSTMSequence", "opset5", "sigmoid, tanh, tanh"),
])
def test_unsupported_activation_is_named(type_, version, default):
    bad = ", ".join(default.split(", ")[:-1] + ["hardsigmoid"])
    with pytest.raises(UnsupportedOperation, match="hardsigmoid"):
        kernel(type_, version, 6, 2, hidden_size="4", activations=bad, clip="0")


def test_too_few_activations_is_an_error():
    with pytest.raises(UnsupportedOperation, match="needs 2 activations"):
        kernel("GRUCell", "opset3", 5, 1, hidden_size="4", activations="sigmoid")


def test_missing_attributes_take_the_defaults():
    rng = np.random.default_rng(9)
    ins = lstm_inputs(rng, 2, 3, 4)
    run = kernel("LSTMCell", "opset4", 6, 2, hidden_size="4")
    close(run(*ins)[0], ref_lstm(*ins)[0])


def test_activation_names_ignore_case_and_spaces():
    rng = np.random.default_rng(10)
    ins = rnn_inputs(rng, 2, 3, 4)
    run = kernel("RNNCell", "opset1", 5, 1, hidden_size="4", activations=" ReLU ")
    close(run(*ins), ref_rnn(*ins, acts=("relu",)))


def test_wrong_hidden_size_is_an_error():
    rng = np.random.default_rng(11)
    ins = lstm_inputs(rng, 2, 3, 4)
    run = kernel("LSTMCell", "opset4", 6, 2, **attrs(5, LSTM_ACTS[0]))
    with pytest.raises(ValueError, match="W has 16 rows, expected 4\\*hidden_size = 20"):
        run(*ins)


@pytest.mark.parametrize("type_,version,n_in,n_out", [
    ("GRUCell", "opset3", 5, 1), ("GRUCell", "experimental", 5, 1), ("GRUCell", "opset13", 5, 1),
    ("RNNCell", "opset1", 5, 1), ("RNNCell", "opset6", 5, 1),
    ("LSTMCell", "opset1", 6, 2), ("LSTMCell", "opset4", 6, 2), ("LSTMCell", "opset13", 6, 2),
    ("LSTMSequence", "opset5", 7, 3), ("GRUSequence", "opset13", 6, 2),
    ("RNNSequence", "opset5", 6, 2),
])
def test_registry_serves_every_version_the_serializer_writes(type_, version, n_in, n_out):
    kernel(type_, version, n_in, n_out, hidden_size="4")


def test_lstm_opset1_is_the_v1_kernel_and_later_opsets_the_v4_one():
    rng = np.random.default_rng(14)
    ins = lstm_inputs(rng, 2, 3, 4)
    data = attrs(4, LSTM_ACTS[0], input_forget="true")
    close(kernel("LSTMCell", "opset1", 6, 2, **data)(*ins)[1], ref_lstm(*ins, input_forget=True)[1])
    close(kernel("LSTMCell", "opset8", 6, 2, **data)(*ins)[1], ref_lstm(*ins)[1])


def test_no_sequence_kernel_before_opset5():
    with pytest.raises(UnsupportedOperation, match="opset5"):
        kernel("GRUSequence", "opset4", 6, 2, hidden_size="4")


def test_cells_leave_inputs_alone_and_keep_float32():
    rng = np.random.default_rng(12)
    cases = [
        (kernel("LSTMCell", "opset4", 6, 2, **attrs(4, LSTM_ACTS[0], 0.5)),
         lstm_inputs(rng, 2, 3, 4, np.float32)),
        (kernel("GRUCell", "opset3", 5, 1, **attrs(
            4, ("sigmoid", "tanh"), 0.5, linear_before_reset="true")),
         gru_inputs(rng, 2, 3, 4, True, np.float32)),
        (kernel("RNNCell", "opset1", 5, 1, **attrs(4, ("tanh",), 0.5)),
         rnn_inputs(rng, 2, 3, 4, np.float32)),
    ]
    for run, ins in cases:
        before = [a.copy() for a in ins]
        outs = run(*ins)
        for out in outs if isinstance(outs, tuple) else (outs,):
            assert out.dtype == np.float32
        for a, b in zip(ins, before):
            np.testing.assert_array_equal(a, b)


def test_no_overflow_warning_for_large_pre_activations():
    rng = np.random.default_rng(13)
    X, H, C, W, R, B = lstm_inputs(rng, 2, 3, 4, np.float32)
    W *= 1e4
    run = kernel("LSTMCell", "opset4", 6, 2, **attrs(4, LSTM_ACTS[0]))
    with np.errstate(all="raise"):
        H2, _ = run(X, H, C, W, R, B)
    assert np.all(np.isfinite(H2))


# ---- sequences against the formulas ------------------------------------------------------------

SEQ_CASES = [("forward", [4, 4, 4]), ("reverse", [4, 4, 4]), ("bidirectional", [4, 4, 4]),
             ("forward", [4, 2, 1]), ("reverse", [3, 1, 4]), ("bidirectional", [2, 4, 0])]


def seq_weights(rng, dirs, gates, hid, inp, bias_gates=None):
    return (randn(rng, dirs, gates * hid, inp), randn(rng, dirs, gates * hid, hid),
            randn(rng, dirs, (bias_gates or gates) * hid))


@pytest.mark.parametrize("direction,lengths", SEQ_CASES)
def test_lstm_sequence_matches_cell_by_cell(direction, lengths):
    rng = np.random.default_rng(20)
    N, T, I, Hd = 3, 4, 3, 5
    D = 2 if direction == "bidirectional" else 1
    X, H0, C0 = randn(rng, N, T, I), randn(rng, N, D, Hd), randn(rng, N, D, Hd)
    W, R, B = seq_weights(rng, D, 4, Hd, I)
    L = np.array(lengths, np.int32)
    run = kernel("LSTMSequence", "opset5", 7, 3, direction=direction,
                 **attrs(Hd, LSTM_ACTS[0], 0.7))
    got = run(X, H0, C0, L, W, R, B)
    cell = lambda x, h, c, w, r, b: ref_lstm(x, h, c, w, r, b, clip=0.7)
    want = ref_sequence(cell, X, (H0, C0), lengths, W, R, B, direction)
    assert len(got) == 3
    for g, w in zip(got, want):
        close(g, w)


@pytest.mark.parametrize("lbr", [False, True])
@pytest.mark.parametrize("direction,lengths", SEQ_CASES)
def test_gru_sequence_matches_cell_by_cell(direction, lengths, lbr):
    rng = np.random.default_rng(21)
    N, T, I, Hd = 3, 4, 2, 3
    D = 2 if direction == "bidirectional" else 1
    X, H0 = randn(rng, N, T, I), randn(rng, N, D, Hd)
    W, R, B = seq_weights(rng, D, 3, Hd, I, 4 if lbr else 3)
    run = kernel("GRUSequence", "opset5", 6, 2, direction=direction,
                 **attrs(Hd, ("sigmoid", "tanh"), linear_before_reset=str(lbr).lower()))
    got = run(X, H0, np.array(lengths, np.int64), W, R, B)
    cell = lambda x, h, w, r, b: ref_gru(x, h, w, r, b, lbr=lbr)
    want = ref_sequence(cell, X, (H0,), lengths, W, R, B, direction)
    assert len(got) == 2
    for g, w in zip(got, want):
        close(g, w)


@pytest.mark.parametrize("direction,lengths", SEQ_CASES)
def test_rnn_sequence_matches_cell_by_cell(direction, lengths):
    rng = np.random.default_rng(22)
    N, T, I, Hd = 3, 4, 2, 3
    D = 2 if direction == "bidirectional" else 1
    X, H0 = randn(rng, N, T, I), randn(rng, N, D, Hd)
    W, R, B = seq_weights(rng, D, 1, Hd, I)
    run = kernel("RNNSequence", "opset5", 6, 2, direction=direction, **attrs(Hd, ("relu",)))
    got = run(X, H0, np.array(lengths), W, R, B)
    cell = lambda x, h, w, r, b: ref_rnn(x, h, w, r, b, acts=("relu",))
    for g, w in zip(got, ref_sequence(cell, X, (H0,), lengths, W, R, B, direction)):
        close(g, w)


@pytest.mark.parametrize("dirs,lengths,message", [
    (1, [3, 4], "sequence_lengths \\[3, 4\\] must lie between 0 and the 3 steps"),
    (2, [3, 3], "W has 2 directions, the direction attribute implies 1"),
])
def test_sequence_rejects_inconsistent_inputs(dirs, lengths, message):
    rng = np.random.default_rng(23)
    X, H0 = randn(rng, 2, 3, 2), randn(rng, 2, dirs, 3)
    W, R, B = seq_weights(rng, dirs, 1, 3, 2)
    run = kernel("RNNSequence", "opset5", 6, 2, direction="forward", **attrs(3, ("tanh",)))
    with pytest.raises(ValueError, match=message):
        run(X, H0, np.array(lengths), W, R, B)


# ---- OpenVINO CPU as the oracle ----------------------------------------------------------------


def ov_run(node_fn, inputs):
    """Build a one-op model whose inputs are all Parameters (OpenVINO as a model generator), save
    it, and run it on the CPU plugin in f32 in OpenVINO's child process (a crash skips)."""
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as ops

    from loopdbg.oracle import testing as ovt

    params = [ops.parameter(list(a.shape), a.dtype) for a in inputs]
    node = node_fn(*params)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "op.xml"
        ov.save_model(ov.Model(node.outputs(), params), str(path), compress_to_fp16=False)
        return ovt.run(path, list(inputs))


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def oracle_close(ours, theirs):
    assert len(as_tuple(ours)) == len(theirs)
    for a, b in zip(as_tuple(ours), theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


SHAPES = [(1, 3, 4), (2, 5, 8), (4, 16, 16)]
pytestmark = pytest.mark.ov_batch


@pytest.mark.oracle
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("acts", LSTM_ACTS)
@pytest.mark.parametrize("clip", [0.0, 0.8])
@pytest.mark.parametrize("version", ["opset4", "opset1"])
def test_lstm_cell_against_openvino(version, clip, acts, shape):
    ov_ops = pytest.importorskip(f"openvino.{version}")
    B, I, Hd = shape
    ins = lstm_inputs(np.random.default_rng(sum(shape)), B, I, Hd, np.float32)
    theirs = ov_run(lambda *p: ov_ops.lstm_cell(*p, Hd, activations=list(acts), clip=clip), ins)
    ours = kernel("LSTMCell", version, 6, 2, **attrs(Hd, acts, clip))(*ins)
    oracle_close(ours, theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("acts", [("sigmoid", "tanh"), ("relu", "tanh"), ("tanh", "relu")])
@pytest.mark.parametrize("clip", [0.0, 0.8])
@pytest.mark.parametrize("lbr", [False, True])
def test_gru_cell_against_openvino(lbr, clip, acts, shape):
    ov_ops = pytest.importorskip("openvino.opset3")
    B, I, Hd = shape
    ins = gru_inputs(np.random.default_rng(sum(shape)), B, I, Hd, lbr, np.float32)
    theirs = ov_run(lambda *p: ov_ops.gru_cell(*p, Hd, activations=list(acts), clip=clip,
                                               linear_before_reset=lbr), ins)
    ours = kernel("GRUCell", "opset3", 5, 1, **attrs(
        Hd, acts, clip, linear_before_reset=str(lbr).lower()))(*ins)
    oracle_close(ours, theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("act", ["tanh", "relu", "sigmoid"])
@pytest.mark.parametrize("clip", [0.0, 0.8])
def test_rnn_cell_against_openvino(clip, act, shape):
    ov_ops = pytest.importorskip("openvino.opset13")
    B, I, Hd = shape
    ins = rnn_inputs(np.random.default_rng(sum(shape)), B, I, Hd, np.float32)
    theirs = ov_run(lambda *p: ov_ops.rnn_cell(*p, Hd, [act], [], [], clip=clip), ins)
    ours = kernel("RNNCell", "opset1", 5, 1, **attrs(Hd, (act,), clip))(*ins)
    oracle_close(ours, theirs)


ORACLE_SEQ = [("forward", [5, 5]), ("reverse", [5, 5]), ("bidirectional", [5, 5]),
              ("forward", [5, 2]), ("reverse", [3, 5]), ("bidirectional", [1, 4]),
              ("bidirectional", [0, 5])]


def seq_inputs(rng, kind, direction, lengths, N=2, T=5, I=3, Hd=4, lbr=False):
    D = 2 if direction == "bidirectional" else 1
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    bias_gates = 4 if (kind == "gru" and lbr) else gates
    f32 = np.float32
    state = [randn(rng, N, D, Hd, dtype=f32) for _ in range(2 if kind == "lstm" else 1)]
    return [randn(rng, N, T, I, dtype=f32), *state, np.array(lengths, np.int32),
            randn(rng, D, gates * Hd, I, dtype=f32), randn(rng, D, gates * Hd, Hd, dtype=f32),
            randn(rng, D, bias_gates * Hd, dtype=f32)]


@pytest.mark.oracle
@pytest.mark.parametrize("direction,lengths", ORACLE_SEQ)
@pytest.mark.parametrize("clip", [0.0, 0.9])
def test_lstm_sequence_against_openvino(direction, lengths, clip):
    ov_ops = pytest.importorskip("openvino.opset5")
    ins = seq_inputs(np.random.default_rng(30), "lstm", direction, lengths)
    theirs = ov_run(lambda *p: ov_ops.lstm_sequence(*p, 4, direction, clip=clip), ins)
    ours = kernel("LSTMSequence", "opset5", 7, 3, direction=direction,
                  **attrs(4, LSTM_ACTS[0], clip))(*ins)
    oracle_close(ours, theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("direction,lengths", ORACLE_SEQ)
@pytest.mark.parametrize("lbr", [False, True])
def test_gru_sequence_against_openvino(direction, lengths, lbr):
    ov_ops = pytest.importorskip("openvino.opset5")
    ins = seq_inputs(np.random.default_rng(31), "gru", direction, lengths, lbr=lbr)
    theirs = ov_run(lambda *p: ov_ops.gru_sequence(*p, 4, direction, linear_before_reset=lbr), ins)
    ours = kernel("GRUSequence", "opset5", 6, 2, direction=direction,
                  **attrs(4, ("sigmoid", "tanh"), linear_before_reset=str(lbr).lower()))(*ins)
    oracle_close(ours, theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("direction,lengths", ORACLE_SEQ)
def test_rnn_sequence_against_openvino(direction, lengths):
    ov_ops = pytest.importorskip("openvino.opset5")
    ins = seq_inputs(np.random.default_rng(32), "rnn", direction, lengths)
    theirs = ov_run(lambda *p: ov_ops.rnn_sequence(*p, 4, direction), ins)
    ours = kernel("RNNSequence", "opset5", 6, 2, direction=direction, **attrs(4, ("tanh",)))(*ins)
    oracle_close(ours, theirs)
