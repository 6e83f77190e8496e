"""The direct paths of the ONNX kernels a decoder runs give what the general code gives: the
same values, types and errors. Its shape arithmetic (Unsqueeze on a constant axis, Gather of one
index, Div of two int64 scalars, integer Cast, Reshape, Concat, Transpose, SequenceAt,
SplitToSequence) and its linear layers (MatMul of a stack of one matrix, bit for bit). The
backend node tests feed every input at run time, so the constant-axis kernel is checked here
against the general one."""

from __future__ import annotations

import re

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.onnx_elementwise import cast
from loopdbg.ops.registry import make_kernel


def _kernel(op: str, consts=None, **data):
    layer = Layer(id=1, name="n", type=f"onnx.{op}", version="opset13", data=data)
    return make_kernel(layer, "", consts)[0]


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except ValueError as exc:
        return "error", str(exc)
    return type(r), np.asarray(r).dtype, np.shape(r), np.asarray(r).tolist()


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 2, 3)])
@pytest.mark.parametrize("axis", [0, 1, 2, 3, 4, -1, -2])
def test_unsqueeze_on_a_constant_axis_is_the_general_unsqueeze(shape, axis):
    axes = np.array([axis], np.int64)
    general = _kernel("Unsqueeze")
    direct = _kernel("Unsqueeze", (None, axes))
    assert direct.__name__ == ("unsqueeze_at" if axis >= 0 else "<lambda>")
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    for value in (x, np.int64(5)) if not shape else (x,):
        assert _outcome(direct, value, axes) == _outcome(general, value, axes)


@pytest.mark.parametrize("axis", [62, 63, 64, 10**12])
def test_unsqueeze_on_a_constant_axis_past_any_rank_is_refused_as_the_general_one(axis):
    """A file's axis of 10**12 is a plan, not 8 TB of slices made at plan time, and at run
    time the general kernel's error; 63 (the last of a 64-dimensional array) gives the view."""
    axes = np.array([axis], np.int64)
    direct = _kernel("Unsqueeze", (None, axes))
    general = _kernel("Unsqueeze")
    assert direct.__name__ == ("unsqueeze_at" if axis < 64 else "<lambda>")
    x = np.zeros((1,) * min(axis, 63), np.float32)
    got = _outcome(direct, x, axes)
    assert got == _outcome(general, x, axes)
    assert got[0] == ("error" if axis >= 64 else np.ndarray)


@pytest.mark.parametrize("index", [0, 1, 2, -1, -3, 3, -4])
@pytest.mark.parametrize("constant", [False, True])
def test_gather_of_one_index_is_take(index, constant):
    gather = _kernel("Gather", (None, np.array(index, np.int64)) if constant else None, axis=0)
    assert gather.__name__ == ("gather_at" if constant else "gather")
    for x in (np.array([1, 5, 48], np.int64), np.arange(6, dtype=np.float32).reshape(3, 2)):
        for idx in (np.array(index, np.int64), np.int64(index)):
            got = _outcome(gather, x, idx)
            if -3 <= index < 3:
                want = np.take(x, np.asarray(index), axis=0)
                assert got == (type(want), want.dtype, np.shape(want), np.asarray(want).tolist())
                if x.ndim > 1:
                    assert not np.shares_memory(gather(x, idx), x)      # a copy, as take's
            else:
                assert got[0] == "error" and "out of range" in got[1]


@pytest.mark.parametrize("a", [7, -7, 0, 6, -6, 1 << 62, -(1 << 63)])
@pytest.mark.parametrize("b", [2, -2, 3, -3, 1, -1, 0])
def test_div_of_two_int64_scalars_truncates_as_the_array_path(a, b):
    div = _kernel("Div")
    with np.errstate(over="ignore"):
        want = _outcome(div, np.array([a], np.int64), np.array([b], np.int64))
    for x, y in ((np.array(a), np.array(b)), (np.int64(a), np.int64(b))):
        with np.errstate(over="ignore"):
            got = _outcome(div, x, y)
        if want[0] == "error":
            assert got == want
        else:
            assert got[0] is np.int64 and got[3] == want[3][0]


@pytest.mark.parametrize("src", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("dst", [np.int64, np.int32, np.int8, np.uint16])
def test_integer_casts_wrap_as_numpy_does(src, dst):
    x = np.array([0, 1, 127, 300, 70000], np.int64).astype(src)
    out = cast(x, np.dtype(dst))
    assert out.dtype == dst and out.tolist() == x.astype(dst).tolist()
    assert not np.shares_memory(out, x)


@pytest.mark.parametrize("target", [[2, 3], [-1], [3, -1], [0, -1], [-1, -1], [4, 2], [6, 0],
                                    [1, 2, 1, 3], [2, 0, 3]])
@pytest.mark.parametrize("shape", [(2, 3), (0, 3), (6,)])
def test_reshape_takes_numpy_s_reshape_only_where_it_is_onnx_s(shape, target):
    from loopdbg.ops.onnx_shape import reshape_to

    reshape = _kernel("Reshape")
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = _outcome(reshape, x, np.array(target, np.int64))
    assert got == _outcome(lambda v: reshape_to(v, list(target), False), x)
    if got[0] != "error":
        assert np.shares_memory(reshape(x, np.array(target, np.int64)), x) or x.size == 0


@pytest.mark.parametrize("axis", [0, 1, -1, -2, 2, -3])
def test_concat_with_an_unconnected_input_and_any_axis(axis):
    concat = _kernel("Concat", axis=axis)
    a, b = np.arange(6).reshape(2, 3), np.arange(6, 12).reshape(2, 3)
    got = _outcome(concat, a, None, b)
    if -2 <= axis < 2:
        want = np.concatenate([a, b], axis=axis)
        assert got == (np.ndarray, want.dtype, want.shape, want.tolist())
    else:
        assert got == ("error", f"axis {axis} is out of range for rank 2")


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1]])
def test_transpose_is_numpy_s_with_or_without_perm(perm):
    transpose = _kernel("Transpose", **({"perm": perm} if perm else {}))
    x = np.arange(24).reshape(2, 3, 4)
    assert transpose(x).tolist() == np.transpose(x, perm).tolist()
    if perm is None:
        assert transpose(np.int64(3)).tolist() == 3        # a numpy scalar: np.transpose


def test_sequence_at_takes_a_one_element_position_of_any_rank():
    at = _kernel("SequenceAt")
    s = [np.array([k]) for k in range(3)]
    for pos, want in ((np.array([1]), 1), (np.array(-1), 2), (np.int64(-3), 0),
                      (np.array([[2]], np.int32), 2)):
        assert at(s, pos) is s[want]
    for pos in (np.array([3]), np.int64(-4)):
        with pytest.raises(ValueError, match="out of range for a sequence of length 3"):
            at(s, pos)
    with pytest.raises(ValueError, match="expected a scalar"):
        at(s, np.array([0, 1]))
    with pytest.raises(ValueError, match="not a sequence"):
        at(np.array([1]), np.array(0))


@pytest.mark.parametrize("length", [0, 1, 5, 6, 200])
@pytest.mark.parametrize("step", [1, 2, 6])
def test_split_to_sequence_cuts_the_same_way_when_the_lengths_are_kept(length, step):
    split = _kernel("SplitToSequence", axis=1)
    x = np.arange(2 * length).reshape(2, length)
    for _ in range(2):                              # the second time from the kept lengths
        parts = split(x, np.int64(step))
        want = [min(step, length - s) for s in range(0, length, step)] or [0]
        assert [p.shape[1] for p in parts] == want
        assert np.concatenate(parts, axis=1).tolist() == x.tolist()


@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (2, 5), (1, 7, 3)])
@pytest.mark.parametrize("axis", [0, 1, -1, 2])
@pytest.mark.parametrize("step", [np.int64(2), np.array(3, np.int32), np.array(0), np.int64(-1)])
def test_split_to_sequence_by_one_length_is_the_general_split(shape, axis, step):
    # the direct path (a numpy int64 or 0-d integer array; slices kept per shape and length, for
    # every split of the axis) against the general one (the length as a Python int): the same
    # pieces, views of x, or the same error, the first time, from what was kept, and in a
    # second kernel of the axis
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    general = _kernel("SplitToSequence", axis=axis)
    for direct in (_kernel("SplitToSequence", axis=axis), _kernel("SplitToSequence", axis=axis)):
        for _ in range(2):
            try:
                got = direct(x, step)
            except ValueError as exc:
                with pytest.raises(ValueError, match=re.escape(str(exc))):
                    general(np.asarray(x), int(step))
                continue
            ref = general(np.asarray(x), int(step))
            assert type(got) is list and len(got) == len(ref)
            for g, r in zip(got, ref):
                assert g.shape == r.shape and np.shares_memory(g, x) == np.shares_memory(r, x)
                assert g.tolist() == r.tolist()


def test_a_cast_of_a_numpy_scalar_to_its_own_type_is_that_scalar():
    to_i64 = _kernel("Cast", to="i64")
    x = np.int64(7)
    assert to_i64(x) is x                          # immutable: no 0-d copy made of it
    out = to_i64(np.int32(7))
    assert type(out) is np.ndarray and out.dtype == np.int64 and out.tolist() == 7
    arr = np.array([1, 2], np.int64)
    assert to_i64(arr) is not arr and not np.shares_memory(to_i64(arr), arr)


@pytest.mark.parametrize("shape", [(1, 15, 48), (1, 1, 7, 48), (2, 15, 48), (15, 48), (1, 48)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
@pytest.mark.parametrize("strided", [False, True])
def test_matmul_of_a_stack_of_one_is_gemm_s_product_bit_for_bit(shape, dtype, strided):
    from loopdbg.ops import gemm

    matmul = _kernel("MatMul")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape[:-1] + (96,)) * 4).astype(dtype)
    x = x[..., ::2] if strided else x[..., :48]                  # a strided or a contiguous x
    x = np.ascontiguousarray(x) if not strided else x
    for n in (48, 700):                                          # under / past WEIGHT_FIRST_SIZE
        w = (rng.standard_normal((48, n)) * 4).astype(dtype)
        got, want = matmul(x, w), gemm.matmul(x, w).astype(dtype)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
