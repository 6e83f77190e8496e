"""The kernels a decoder's loop runs once per iteration on new shapes (its causal mask's Range
and Expand, the next token's ArgMax, the embedding's Gather) take their own short paths: each
gives what numpy's general function gives (np.broadcast_to copied, np.expand_dims,
s + arange(n) * d, np.take), byte for byte, with the same type and shape, and the same errors;
Trilu (the mask's triangle) is np.triu/np.tril's, bit for bit, NaN, -0 and huge k included."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel


def _kernel(op: str, **data):
    layer = Layer(id=1, name="n", type=f"onnx.{op}", version="opset14", data=data)
    return make_kernel(layer, "", None)[0]


def _same(got, want) -> None:
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def _error(fn, *args) -> str:
    with pytest.raises(ValueError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (2, 3, 4), (1, 0), (0, 3)])
def test_trilu_is_numpys_triangle(upper, shape):
    trilu = _kernel("Trilu", upper=upper)
    cut = np.triu if upper else np.tril
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16, np.int64, np.bool_):
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        if dtype == np.float32 and x.size:
            x.flat[0], x.flat[-1] = -0.0, np.nan          # kept as they are, bit for bit
        for k in (None, 0, 1, -1, 2, -3, 7, -9, 1 << 60, -(1 << 62)):
            want = cut(x, 0 if k is None else k)
            _same(trilu(x, None if k is None else np.array(k, np.int64)), want)


def test_trilu_of_a_causal_mask_keeps_its_infinities():
    mask = np.full((4, 4), -np.inf, np.float32)
    _same(_kernel("Trilu")(mask, np.array(1, np.int64)), np.triu(mask, 1))
    assert "rank 2 or more" in _error(_kernel("Trilu"), np.zeros(3, np.float32))


@pytest.mark.parametrize("have, dims", [((3,), [2, 3]), ((1,), [4]), ((1024,), [1]),
                                        ((2, 1), [2, 5]), ((1, 3), [4, 1, 1]), ((), [2, 2]),
                                        ((3,), []), ((0,), [1]), ((1,), [0]), ((2, 0), [3, 1, 1])])
def test_expand_is_broadcast_to_copied(have, dims):
    x = np.arange(int(np.prod(have)), dtype=np.float32).reshape(have)
    got = _kernel("Expand")(x, np.array(dims, np.int64))
    want = np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(dims))))
    _same(got, want)
    assert got.flags.c_contiguous and got.flags.writeable and not np.shares_memory(got, x)


def test_expand_of_shapes_that_do_not_broadcast_says_numpys_words():
    for have, dims in (((3,), [4]), ((2, 3), [3, 2]), ((3,), [-1])):
        x = np.zeros(have, np.float32)
        with pytest.raises(ValueError) as want:
            np.broadcast_shapes(have, tuple(dims))
        assert _error(_kernel("Expand"), x, np.array(dims, np.int64)) == str(want.value)


@pytest.mark.parametrize("start, limit, delta", [(0, 5, 1), (0, 24, 1), (3, -4, -2), (5, 5, 1),
                                                 (5, 0, 1), (-7, 10, 3), (0, 1 << 53, 1 << 51),
                                                 ((1 << 62), (1 << 62) + 4, 2)])
def test_range_of_int64_is_start_plus_steps(start, limit, delta):
    args = [np.array(v, np.int64) for v in (start, limit, delta)]
    n = max(int(np.ceil((limit - start) / delta)), 0)
    _same(_kernel("Range")(*args), (start + np.arange(n, dtype=np.int64) * delta).astype(np.int64))


def test_range_of_other_types_and_zero_delta():
    rng_ = _kernel("Range")
    _same(rng_(np.int32(2), np.int32(9), np.int32(3)), np.array([2, 5, 8], np.int32))
    _same(rng_(np.float32(0.5), np.float32(2), np.float32(0.5)),
          np.array([0.5, 1.0, 1.5], np.float32))
    assert "cannot be 0" in _error(rng_, np.int64(1), np.int64(3), np.int64(0))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_keeps_the_axis_as_expand_dims(axis, keepdims, op):
    x = np.random.default_rng(2).integers(0, 5, (3, 1024)).astype(np.float32)   # ties
    fn = np.argmax if op == "ArgMax" else np.argmin
    want = fn(x, axis=axis).astype(np.int64)
    want = np.expand_dims(want, axis) if keepdims else want
    _same(_kernel(op, axis=axis, keepdims=keepdims)(x), want)
    last = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis).astype(np.int64)
    last = np.expand_dims(last, axis) if keepdims else last
    _same(_kernel(op, axis=axis, keepdims=keepdims, select_last_index=1)(x), last)
    one = np.float32([3, 7, 7, 1])                 # a vector: its index as a (1,) array
    want = np.expand_dims(np.asarray(fn(one), np.int64), 0) if keepdims else \
        np.asarray(fn(one), np.int64)
    _same(_kernel(op, axis=0, keepdims=keepdims)(one), want)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_of_indices_is_take_and_out_of_range_is_said(axis):
    gather = _kernel("Gather", axis=axis)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    n = x.shape[axis]
    for idx in (np.array([[0, 3], [-1, -n]], np.int64), np.array([2], np.int32),
                np.zeros((0,), np.int64), np.array([n - 1, -n])):
        got = gather(x, idx)
        _same(got, np.take(x, idx.astype(np.int64), axis=axis))
        assert not np.shares_memory(got, idx)
    for bad in ([0, n], [-n - 1], [[1], [n + 5]]):
        assert _error(gather, x, np.array(bad, np.int64)) == \
            f"indices {bad} are out of range for an axis of length {n}"
