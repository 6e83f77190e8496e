"""The direct paths of the ONNX kernels a decoder's shape arithmetic runs (Unsqueeze on a constant
axis, Gather of one index, Div of two int64 scalars, integer Cast) give what the general code
gives: the same values, types and errors. The backend node tests feed every input at run time, so
the constant-axis kernel is checked here against the general one."""

from __future__ import annotations

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


@pytest.mark.parametrize("index", [0, 1, 2, -1, -3, 3, -4])
def test_gather_of_one_index_is_take(index):
    gather = _kernel("Gather", axis=0)
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
