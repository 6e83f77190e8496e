"""Sequence kernels (loopdbg/ops/sequence.py, loopdbg/ops/ctc.py): ReverseSequence, Reverse, Roll,
GatherTree, CTCGreedyDecoder, CTCGreedyDecoderSeqLen, CTCLoss."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel

RNG = np.random.default_rng(11)


def f32(*shape, lo=-3.0, hi=3.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


# ---- plain unit tests --------------------------------------------------------------------------

def test_reverse_sequence_by_hand():
    x = np.arange(12).reshape(3, 4)
    out = kernel("ReverseSequence", 1, batch_axis=0, seq_axis=1)(x, np.array([4, 0, 2]))
    np.testing.assert_array_equal(out, [[3, 2, 1, 0], [4, 5, 6, 7], [9, 8, 10, 11]])
    with pytest.raises(ValueError, match="outside"):
        kernel("ReverseSequence", 1)(x, np.array([5, 1, 1]))


def test_roll_repeated_axes_add_their_shifts():
    x = np.arange(10).reshape(2, 5)
    out = kernel("Roll", 7)(x, np.array([1, 2]), np.array([1, -1]))
    np.testing.assert_array_equal(out, np.roll(x, 3, axis=1))


def test_roll_scalar_shift_applies_to_every_axis():
    # As specified; OpenVINO's CPU plugin refuses a scalar shift with several axes and its
    # reference has no Roll, so this one is checked against numpy only.
    x = np.arange(24).reshape(2, 3, 4)
    out = kernel("Roll", 7)(x, np.array(1), np.array([0, 1, 2]))
    np.testing.assert_array_equal(out, np.roll(x, (1, 1, 1), axis=(0, 1, 2)))


def _ctc_brute_force(logits, target, blank, merge):
    """-log sum over every path of length T that decodes to ``target``."""
    t_len, c = logits.shape
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        decoded, prev = [], None
        for s in path:
            if s != blank and not (merge and s == prev):
                decoded.append(s)
            prev = s
        if decoded == list(target):
            total += np.prod([p[t, s] for t, s in enumerate(path)])
    return -np.log(total)


@pytest.mark.parametrize("target, merge", [([2, 1], True), ([1, 1], True), ([2, 1], False),
                                           ([1, 1], False), ([2], True), ([], True),
                                           ([1, 2, 1], False), ([2, 2, 2], True)])
def test_ctc_loss_is_the_sum_over_all_alignments(target, merge):
    logits = f32(1, 5, 3)
    k = kernel("CTCLoss", 4, ctc_merge_repeated=str(merge).lower())
    labels = np.zeros((1, 5), np.int32)
    labels[0, :len(target)] = target
    got = k(logits, np.array([5], np.int32), labels, np.array([len(target)], np.int32),
            np.array(0, np.int32))
    want = _ctc_brute_force(logits[0], target, 0, merge)
    np.testing.assert_allclose(got[0], want, rtol=1e-5)


# ---- against OpenVINO --------------------------------------------------------------------------

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


@oracle
@pytest.mark.parametrize("shape, batch, seq, lengths, dtype", [
    ((3, 5, 2), 0, 1, [5, 1, 3], np.int32), ((5, 3, 2), 1, 0, [2, 0, 5], np.int64),
    ((2, 4, 3, 2), 0, 2, [3, 1], np.float32), ((2, 3, 4), -1, -2, [1, 2, 3, 0], np.int32),
    ((4, 2), 1, 0, [4, 3], np.int32),
])
def test_reverse_sequence(tmp_path, ovm, shape, batch, seq, lengths, dtype):
    C, P = ovm["C"], ovm["P"]
    for x in (f32(*shape), RNG.integers(-9, 9, shape).astype(np.int32)):
        ovm["check"](tmp_path, lambda d, s: ovm["o1"].reverse_sequence(d, s, batch, seq),
                     [P(x), C(np.array(lengths, dtype))])


@oracle
@pytest.mark.parametrize("mode, axes", [("index", np.array([0, 2], np.int64)),
                                        ("index", np.array([1], np.int32)),
                                        ("mask", np.array([False, False, False])),
                                        ("mask", np.array([False, True, True])),
                                        ("mask", np.array([True, False, False]))])
def test_reverse(tmp_path, ovm, mode, axes):
    C, P = ovm["C"], ovm["P"]
    for x in (f32(2, 3, 4), RNG.integers(-9, 9, (2, 3, 4)).astype(np.int64)):
        ovm["check_ir"](tmp_path, "Reverse", "opset1", [P(x), C(axes)], mode=mode)


@oracle
@pytest.mark.parametrize("shape, shift, axes", [
    ((3, 5), [2], [1]), ((3, 5), [-7, 1], [1, 0]), ((2, 3, 4), 1, [2]),
    ((2, 3, 4), [3, -4], [-1, -1]), ((6,), 13, [0]), ((2, 2, 3), [0], [2]),
])
def test_roll(tmp_path, ovm, shape, shift, axes):
    C, P = ovm["C"], ovm["P"]
    for x in (f32(*shape), RNG.integers(-9, 9, shape).astype(np.int32)):
        ovm["check"](tmp_path, ovm["o7"].roll,
                     [P(x), C(np.array(shift, np.int64)), C(np.array(axes, np.int32))])


@oracle
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("t, b, w, lengths, end", [(5, 2, 3, [5, 3], 4), (4, 3, 2, [0, 4, 6], 1),
                                                   (3, 1, 4, [2], 0)])
def test_gather_tree(tmp_path, ovm, dtype, t, b, w, lengths, end):
    C, P = ovm["C"], ovm["P"]
    steps = RNG.integers(0, 5, (t, b, w)).astype(dtype)
    parents = RNG.integers(0, w, (t, b, w)).astype(dtype)
    ins = [P(steps), P(parents), C(np.array(lengths, dtype)), C(np.array(end, dtype))]
    if 0 not in lengths:
        ovm["check"](tmp_path, ovm["o1"].gather_tree, ins)
        return
    # The CPU plugin leaves the beams of a batch item with max_seq_len 0 unwritten (garbage; its
    # reference has no GatherTree): those columns are end_token, as specified; the rest as CPU.
    from _ov_single_op import run_openvino
    want, = run_openvino(ovm["o1"].gather_tree, ins, "cpu", tmp_path / "op.xml")
    got = kernel("GatherTree", 1)(*(x.value for x in ins))
    live = np.array(lengths) > 0
    np.testing.assert_array_equal(got[:, live], want[:, live])
    assert (got[:, ~live] == end).all()


@oracle
@pytest.mark.parametrize("merge", [True, False])
def test_ctc_greedy_decoder(tmp_path, ovm, merge):
    C, P = ovm["C"], ovm["P"]
    t, n, c = 8, 3, 4
    data = f32(t, n, c)
    data[2:4, 0, 1] = 9.0                      # a repeated class
    data[5, 1, c - 1] = 9.0                    # a blank
    mask = np.ones((t, n), np.float32)
    mask[6:, 1] = 0
    mask[3, 2] = 0
    ovm["check"](tmp_path, lambda d, m: ovm["o1"].ctc_greedy_decoder(d, m, merge),
                 [P(data), C(mask)])


@oracle
@pytest.mark.parametrize("merge, blank, types", [(True, None, ("i32", "i32")),
                                                 (False, 1, ("i64", "i32")),
                                                 (True, 0, ("i32", "i64"))])
def test_ctc_greedy_decoder_seq_len(tmp_path, ovm, merge, blank, types):
    C, P = ovm["C"], ovm["P"]
    n, t, c = 3, 7, 4
    data = f32(n, t, c)
    data[0, 1:4, 2] = 9.0
    ins = [P(data), C(np.array([7, 3, 0], np.int32))]
    if blank is not None:
        ins.append(C(np.array(blank, np.int32)))
    ovm["check"](tmp_path, lambda *a: ovm["o6"].ctc_greedy_decoder_seq_len(
        *a, merge_repeated=merge, classes_index_type=types[0], sequence_length_type=types[1]),
        ins)


@oracle
@pytest.mark.parametrize("collapse, merge, unique", [
    (False, True, False), (True, True, False), (False, False, False), (False, True, True),
    (True, False, False),
])
@pytest.mark.parametrize("blank", [None, 0])
def test_ctc_loss(tmp_path, ovm, collapse, merge, unique, blank):
    C, P = ovm["C"], ovm["P"]
    n, t, c = 3, 8, 5
    logits = f32(n, t, c)
    labels = np.array([[1, 1, 2, 3, 3, 0, 0, 0], [2, 3, 2, 0, 0, 0, 0, 0],
                       [3, 3, 3, 1, 0, 0, 0, 0]], np.int32)
    if blank == 0:
        labels = np.where(labels == 0, 4, labels).astype(np.int32)
    ins = [P(logits), C(np.array([8, 6, 7], np.int32)), C(labels),
           C(np.array([5, 3, 4], np.int32))]
    if blank is not None:
        ins.append(C(np.array(blank, np.int32)))
    ovm["check"](tmp_path, lambda *a: ovm["o4"].ctc_loss(
        *a, preprocess_collapse_repeated=collapse, ctc_merge_repeated=merge, unique=unique),
        ins, rtol=1e-4, atol=1e-4)
