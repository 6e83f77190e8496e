"""Differential test: each kernel against OpenVINO running the same single op.

Every case builds one op with ``openvino.opset*`` factories, saves it as IR so that loopdbg's kernel
is built from the attribute strings OpenVINO really serializes (and the type/version it writes,
e.g. ``SoftMax``/``opset8``), runs it on the CPU plugin with f32 inference precision (or on the core
reference through ``Node.evaluate`` where the two disagree) in OpenVINO's child process
(``loopdbg.oracle``: nothing here compiles or evaluates in the test process), and compares: floats at
rtol = atol = 1e-5, integers and booleans exactly, shapes and dtypes identically.

Inputs marked ``P`` become Parameters fed at run time; inputs marked ``C`` become Constants, as the
structural inputs (axes, shapes, k) usually are in real IRs.
"""

from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

import openvino.opset1 as o1  # noqa: E402
import openvino.opset2 as o2  # noqa: E402
import openvino.opset3 as o3  # noqa: E402
import openvino.opset4 as o4  # noqa: E402
import openvino.opset4.ops as o4ops  # noqa: E402  (openvino.opset4.range is Range-1)
import openvino.opset5 as o5  # noqa: E402
import openvino.opset6 as o6  # noqa: E402
import openvino.opset7 as o7  # noqa: E402
import openvino.opset8 as o8  # noqa: E402
import openvino.opset10 as o10  # noqa: E402
import openvino.opset11 as o11  # noqa: E402
import openvino.opset12 as o12  # noqa: E402
import openvino.opset13 as o13  # noqa: E402
import openvino.opset15 as o15  # noqa: E402
import openvino.opset16 as o16  # noqa: E402

from _ov_single_op import C, P, check  # noqa: E402  (the one-op differential helper)

pytestmark = [pytest.mark.oracle, pytest.mark.ov_batch]


RNG = np.random.default_rng(42)


def f32(*shape, lo=-3.0, hi=3.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def i32(*shape, lo=-9, hi=10):
    return RNG.integers(lo, hi, size=shape).astype(np.int32)


def i64(*values):
    return np.array(values, np.int64)


A, B = f32(2, 3, 4), f32(3, 1)
IA, IB = i32(2, 3, 4), i32(3, 1, lo=1, hi=5)
BOOL_A, BOOL_B = RNG.random((2, 3)) > 0.5, RNG.random((3,)) > 0.5

# ---- element-wise ----------------------------------------------------------------------------

BINARY = [
    ("add", o1.add, A, B), ("subtract", o1.subtract, A, B), ("multiply", o1.multiply, IA, IB),
    ("maximum", o1.maximum, A, B), ("minimum", o1.minimum, IA, IB),
    ("power", o1.power, np.abs(A) + 0.1, B), ("power_int", o1.power, IA, IB),
    ("squared_difference", o1.squared_difference, A, B),
    ("divide_float", o1.divide, A, B + 5), ("divide_int_positive", o1.divide, np.abs(IA), IB),
    ("floor_mod_int", o1.floor_mod, IA, IB * np.int32(-1)), ("floor_mod_float", o1.floor_mod, A, B),
    ("mod_int", o1.mod, IA, IB), ("mod_float", o1.mod, A, B),
    ("less", o1.less, A, B), ("greater", o1.greater, IA, IB), ("equal", o1.equal, IA, IB),
    ("not_equal", o1.not_equal, IA, IB), ("less_equal", o1.less_equal, A, B),
    ("greater_equal", o1.greater_equal, IA, IB),
    ("logical_and", o1.logical_and, BOOL_A, BOOL_B), ("logical_or", o1.logical_or, BOOL_A, BOOL_B),
    ("logical_xor", o1.logical_xor, BOOL_A, BOOL_B),
]


@pytest.mark.parametrize("name, factory, a, b", BINARY, ids=[c[0] for c in BINARY])
def test_binary(tmp_path, name, factory, a, b):
    check(tmp_path, factory, [P(a), P(b)])


def test_binary_auto_broadcast_none(tmp_path):
    check(tmp_path, lambda x, y: o1.add(x, y, auto_broadcast="none"), [P(A), P(A * 2)])


def test_divide_integers_floor_like_the_reference(tmp_path):
    # The CPU plugin truncates (7 / -2 = -3); REF and loopdbg floor (-4) when m_pythondiv is true.
    a, b = np.array([7, -7, 7, -7, 6], np.int32), np.array([-2, 2, 2, -2, 3], np.int32)
    check(tmp_path, o1.divide, [P(a), P(b)], backend="ref")


def test_select(tmp_path):
    check(tmp_path, o1.select, [P(RNG.random((2, 1, 4)) > 0.5), P(A), P(f32(4))])


UNARY = [
    ("tanh", o1.tanh), ("sigmoid", o1.sigmoid), ("relu", o1.relu), ("exp", o1.exp),
    ("abs", o1.abs), ("negative", o1.negative), ("sign", o1.sign), ("floor", o1.floor),
    ("ceiling", o1.ceiling), ("sin", o1.sin), ("cos", o1.cos), ("erf", o1.erf),
    ("gelu_erf", lambda x: o7.gelu(x, "erf")), ("gelu_tanh", lambda x: o7.gelu(x, "tanh")),
    ("elu", lambda x: o1.elu(x, 0.7)), ("softplus", o5.softplus if hasattr(o5, "softplus")
                                        else o11.softplus),
    ("hsigmoid", o5.hsigmoid), ("hswish", o11.hswish), ("mish", o11.mish),
    ("swish", lambda x: o11.swish(x)), ("clamp", lambda x: o1.clamp(x, -1.25, 2.0)),
    ("softmax1", lambda x: o1.softmax(x, 1)), ("softmax8", lambda x: o8.softmax(x, -1)),
    ("log_softmax", lambda x: o5.log_softmax(x, -2)),
    ("round_even", lambda x: o5.round(x, "half_to_even")),
    ("round_away", lambda x: o5.round(x, "half_away_from_zero")),
]


@pytest.mark.parametrize("name, factory", UNARY, ids=[c[0] for c in UNARY])
def test_unary(tmp_path, name, factory):
    x = np.concatenate([f32(20) * 2, np.array([-0.5, 0.5, 1.5, 2.5, 0, -2.5], np.float32)])
    check(tmp_path, factory, [P(x.reshape(2, 13))])


@pytest.mark.parametrize("factory, lo, hi", [
    (o1.tan, -1.4, 1.4), (o1.asin, -1, 1), (o1.acos, -1, 1), (o1.atan, -9, 9), (o1.sinh, -3, 3),
    (o1.cosh, -3, 3), (o4.asinh, -9, 9), (o4.acosh, 1, 9), (o4.atanh, -0.9, 0.9), (o2.gelu, -3, 3),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_more_unary(tmp_path, factory, lo, hi):
    check(tmp_path, factory, [P(f32(3, 4, lo=lo, hi=hi))])


def test_is_inf_nan_finite(tmp_path):
    x = np.array([1.0, np.inf, -np.inf, np.nan, -2.0], np.float32)
    check(tmp_path, o10.is_inf, [P(x)])
    check(tmp_path, lambda d: o10.is_inf(d, {"detect_negative": False}), [P(x)])
    check(tmp_path, lambda d: o10.is_inf(d, {"detect_positive": False}), [P(x)])
    check(tmp_path, o10.is_nan, [P(x)])
    check(tmp_path, o10.is_finite, [P(x)])


def test_bitwise(tmp_path):
    for factory in (o13.bitwise_and, o13.bitwise_or, o13.bitwise_xor):
        check(tmp_path, factory, [P(IA), P(IB)])
        check(tmp_path, factory, [P(BOOL_A), P(BOOL_B)])
    check(tmp_path, o13.bitwise_not, [P(IA)])
    check(tmp_path, o13.bitwise_not, [P(BOOL_A)])


def test_log_sqrt(tmp_path):
    x = f32(3, 4, lo=0.01, hi=9)
    check(tmp_path, o1.log, [P(x)])
    check(tmp_path, o1.sqrt, [P(x)])


def test_clamp_integers(tmp_path):
    check(tmp_path, lambda x: o1.clamp(x, -1.5, 2.5), [P(np.array([-3, -1, 0, 2, 3], np.int32))])


def test_swish_with_beta(tmp_path):
    check(tmp_path, o11.swish, [P(A), C(np.array(1.5, np.float32))])


@pytest.mark.parametrize("ta, tb, sa, sb", [
    (False, False, (2, 3, 4), (4, 5)), (True, False, (2, 4, 3), (2, 4, 5)),
    (False, True, (3, 4), (2, 5, 4)), (True, True, (4, 3), (5, 4)),
    (True, False, (3,), (3, 2)), (False, True, (2, 3), (3,)), (True, True, (3,), (3,)),
])
def test_matmul(tmp_path, ta, tb, sa, sb):
    check(tmp_path, lambda a, b: o1.matmul(a, b, ta, tb), [P(f32(*sa)), P(f32(*sb))])


@pytest.mark.parametrize("shape, slope", [((2, 3, 4), (3,)), ((2, 3, 4), (4,)), ((2, 3, 3), (3,)),
                                          ((4,), (4,)), ((2, 3), (1,))])
def test_prelu(tmp_path, shape, slope):
    check(tmp_path, o1.prelu, [P(f32(*shape)), P(f32(*slope, lo=0, hi=1))])


# ---- Convert ---------------------------------------------------------------------------------

CONVERT_IN = np.array([300.0, -2.7, 2.5, -0.5, 0.0, 255.9, -129.0, 1e10, np.inf, -np.inf,
                       np.nan], np.float32)


@pytest.mark.parametrize("dest", ["u8", "i8", "i32", "u16", "f16"])
def test_convert_float(tmp_path, dest):
    check(tmp_path, lambda x: o1.convert(x, dest), [P(CONVERT_IN)])


def test_convert_to_boolean_and_narrowing_ints(tmp_path):
    # NaN is left out: REF (and loopdbg) say NaN != 0 is true, the CPU plugin says false.
    check(tmp_path, lambda x: o1.convert(x, "boolean"), [P(CONVERT_IN[:-1])])
    check(tmp_path, lambda x: o1.convert(x, "i8"), [P(np.array([127, 128, 255, -129], np.int32))])
    check(tmp_path, lambda x: o1.convert(x, "f32"), [P(np.array([True, False]))])


def test_convert_like(tmp_path):
    check(tmp_path, o1.convert_like, [P(CONVERT_IN[:7]), P(np.zeros(2, np.uint8))])


# ---- shape -----------------------------------------------------------------------------------


def test_concat(tmp_path):
    check(tmp_path, lambda a, b, c: o1.concat([a, b, c], -2), [P(A), P(A[:, :1]), P(A[:, :2])])


@pytest.mark.parametrize("special_zero, target", [(True, [0, -1]), (False, [4, -1]),
                                                  (True, [-1, 0]), (True, [0, 0, 2, 2])])
def test_reshape(tmp_path, special_zero, target):
    check(tmp_path, lambda x, s: o1.reshape(x, s, special_zero), [P(A), C(i64(*target))])


@pytest.mark.parametrize("axes", [None, [0], [-2], [0, 1], [0, 2, -4]])
def test_squeeze(tmp_path, axes):
    x = f32(1, 2, 1, 3)
    if axes is None:
        check(tmp_path, o15.squeeze, [P(x)], version="opset15")
        return
    check(tmp_path, o1.squeeze, [P(x), C(i64(*axes))])
    check(tmp_path, lambda d, a: o15.squeeze(d, a, True), [P(x), C(i64(*axes))], version="opset15")


@pytest.mark.parametrize("axes", [[0], [-1], [0, 3], [-1, 0], [0, 0], [1, -2]])
def test_unsqueeze(tmp_path, axes):
    check(tmp_path, o1.unsqueeze, [P(f32(2, 3)), C(i64(*axes))])


def test_shape_of(tmp_path):
    check(tmp_path, o1.shape_of, [P(A)])
    check(tmp_path, lambda x: o3.shape_of(x, "i32"), [P(A)])


@pytest.mark.parametrize("mode, x, target, mapping", [
    ("numpy", f32(3), [2, 3], None), ("numpy", f32(3, 1), [2, 3, 4], None),
    ("bidirectional", f32(3, 1), [1, 4], None), ("bidirectional", f32(2, 3), [1], None),
    ("explicit", f32(3), [2, 3, 4], [1]), ("explicit", f32(3, 4), [2, 3, 4], [1, 2]),
])
def test_broadcast(tmp_path, mode, x, target, mapping):
    inputs = [P(x), C(i64(*target))] + ([C(i64(*mapping))] if mapping else [])
    check(tmp_path, lambda *n: o3.broadcast(*n, broadcast_spec=mode), inputs)


def test_broadcast_opset1(tmp_path):
    check(tmp_path, lambda x, t: o1.broadcast(x, t), [P(f32(3, 1)), C(i64(2, 3, 4))])
    check(tmp_path, lambda x, t, m: o1.broadcast(x, t, m, "explicit"),
          [P(f32(3)), C(i64(2, 3, 4)), C(i64(1))], version="opset1")


def test_tile_transpose(tmp_path):
    check(tmp_path, o1.tile, [P(f32(2, 3)), C(i64(2, 1, 2))])
    check(tmp_path, o1.tile, [P(f32(2, 3)), C(i64(3))])
    check(tmp_path, o1.transpose, [P(A), C(i64(2, 0, 1))])


def test_split(tmp_path):
    check(tmp_path, lambda x, a: o1.split(x, a, 2), [P(A), C(np.array(-1, np.int64))])
    check(tmp_path, lambda x, a: o1.split(x, a, 3), [P(A), C(np.array(1, np.int32))])


def test_variadic_split(tmp_path):
    check(tmp_path, o1.variadic_split, [P(A), C(np.array(2, np.int64)), C(i64(1, -1, 2))])


@pytest.mark.parametrize("start, stop, step, out_type", [
    (0.0, 1.0, 0.1, "f32"), (7, 1, -2, "i32"), (1, 8, 3, "f32"), (-3, 9, 4, "i64"),
])
def test_range4(tmp_path, start, stop, step, out_type):
    t = np.float32 if isinstance(start, float) else np.int32
    args = [P(np.array(v, t)) for v in (start, stop, step)]
    check(tmp_path, lambda a, b, c: o4ops.range(a, b, c, out_type), args, version="opset4")


@pytest.mark.parametrize("start, stop, step, out_type", [
    (0.5, 5.2, 1.3, "i32"), (-2.5, 2.5, 1.5, "i64"),
])
def test_range4_float_bounds_integer_output_truncate_first(tmp_path, start, stop, step, out_type):
    # Spec and REF cast start/stop/step to the output type first (0.5..5.2 step 1.3 -> 0..4). The
    # CPU plugin does that only when it constant-folds; with run-time inputs it steps in float and
    # casts each value (-> 0,1,3,4). loopdbg follows the spec, so compare with REF.
    args = [C(np.array(v, np.float32)) for v in (start, stop, step)]
    check(tmp_path, lambda a, b, c: o4ops.range(a, b, c, out_type), args, backend="ref",
          version="opset4")


def test_range1(tmp_path):
    check(tmp_path, o1.range, [P(np.array(v, np.float32)) for v in (0.5, 3.0, 0.5)])
    check(tmp_path, o1.range, [P(np.array(v, np.int32)) for v in (2, -3, -2)])


def test_identity(tmp_path):
    check(tmp_path, o16.identity, [P(A)], version="opset16")


# ---- reductions, TopK, NonZero, CumSum -------------------------------------------------------

REDUCTIONS = [o1.reduce_sum, o1.reduce_mean, o1.reduce_max, o1.reduce_min, o1.reduce_prod,
              o4.reduce_l1, o4.reduce_l2]


@pytest.mark.parametrize("factory", REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("axes, keep", [([1], False), ([-1, 0], True), ([0, 1, 2], False)])
def test_reductions(tmp_path, factory, axes, keep):
    check(tmp_path, lambda x, a: factory(x, a, keep), [P(A), C(i64(*axes))])


def test_reductions_on_integers_and_booleans(tmp_path):
    x = np.array([[1, 2], [-3, -4], [7, 0]], np.int32)
    check(tmp_path, lambda d, a: o1.reduce_mean(d, a, False), [P(x), C(i64(1))])
    check(tmp_path, lambda d, a: o1.reduce_sum(d, a, True), [P(x), C(i64(0))])
    check(tmp_path, lambda d, a: o1.reduce_logical_and(d, a, False), [P(BOOL_A), C(i64(1))])
    check(tmp_path, lambda d, a: o1.reduce_logical_or(d, a, True), [P(BOOL_A), C(i64(0))])


TOPK_IN = np.array([[3, 1, 3, 2, 1, 3], [0, 5, 5, -1, 2, 0]], np.float32)


@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("sort", ["value", "index", "none"])
def test_topk(tmp_path, mode, sort):
    k = C(np.array(3, np.int64))
    check(tmp_path, lambda x, kk: o1.topk(x, kk, 1, mode, sort), [P(TOPK_IN), k])
    check(tmp_path, lambda x, kk: o3.topk(x, kk, -1, mode, sort, "i64"), [P(TOPK_IN), k])
    if sort != "none":
        check(tmp_path, lambda x, kk: o11.topk(x, kk, 0, mode, sort, "i32", True),
              [P(TOPK_IN.T.copy()), k], version="opset11")


def test_non_zero(tmp_path):
    x = np.array([[0, 1.5, 0], [2, 0, -3]], np.float32)
    check(tmp_path, lambda d: o3.non_zero(d, "i64"), [P(x)])
    check(tmp_path, lambda d: o3.non_zero(d, "i32"), [P(x)])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cum_sum(tmp_path, exclusive, reverse):
    check(tmp_path, lambda x, a: o3.cum_sum(x, a, exclusive, reverse),
          [P(A), C(np.array(-1, np.int64))])
    check(tmp_path, lambda x, a: o3.cum_sum(x, a, exclusive, reverse),
          [P(IA), C(np.array(1, np.int32))])


# ---- indexing --------------------------------------------------------------------------------

G = f32(2, 3, 5)


@pytest.mark.parametrize("factory", [o1.gather, o7.gather, o8.gather],
                         ids=["gather1", "gather7", "gather8"])
def test_gather_negative_and_out_of_range(tmp_path, factory):
    idx = np.array([[0, -1], [4, 5], [-5, -6]], np.int64)
    check(tmp_path, factory, [P(G), P(idx), C(np.array(2, np.int64))])
    check(tmp_path, factory, [P(G), P(np.array([1, 0, 1], np.int32)), C(np.array(-3, np.int64))])


@pytest.mark.parametrize("factory", [o7.gather, o8.gather], ids=["gather7", "gather8"])
@pytest.mark.parametrize("axis, bd, idx", [
    (2, 1, np.array([[0, 4, 2], [1, 1, 3]], np.int32)),
    (2, 2, np.array([[[0], [4], [2]], [[1], [1], [3]]], np.int32)),
    (1, 1, np.array([[2, 0], [1, 1]], np.int32)),
    (-1, -1, np.array([[0, 4, 2], [1, 1, 3]], np.int32)),
])
def test_gather_batch_dims(tmp_path, factory, axis, bd, idx):
    check(tmp_path, lambda d, i, a: factory(d, i, a, bd), [P(G), P(idx), C(np.array(axis))])


@pytest.mark.parametrize("factory, bd, idx", [
    (o5.gather_nd, 0, np.array([[1, 2], [0, -1]], np.int32)),
    (o5.gather_nd, 0, np.array([[1], [0]], np.int32)),
    (o5.gather_nd, 1, np.array([[[1], [0]], [[2], [2]]], np.int32)),
    (o8.gather_nd, 1, np.array([[[1], [0]], [[2], [2]]], np.int32)),
    (o5.gather_nd, 2, np.array([[[1], [0], [4]], [[2], [2], [3]]], np.int32)),
    (o8.gather_nd, 2, np.array([[[1], [0], [4]], [[2], [2], [3]]], np.int32)),
], ids=["nd5_pairs", "nd5_rows", "nd5_bd1", "nd8_bd1", "nd5_bd2", "nd8_bd2"])
def test_gather_nd(tmp_path, factory, bd, idx):
    check(tmp_path, lambda d, i: factory(d, i, bd), [P(G), P(idx)])


def test_gather_elements(tmp_path):
    idx = RNG.integers(0, 3, size=(2, 3, 5)).astype(np.int32)
    check(tmp_path, lambda d, i: o6.gather_elements(d, i, 1), [P(G), P(idx)])
    check(tmp_path, lambda d, i: o6.gather_elements(d, i, -1), [P(G), P(idx[:, :, :2])])


SS_CASES = [  # begin, end, strides, then the masks: begin, end, new_axis, shrink_axis, ellipsis
    ([1, 1, 1], [2, 2, 3], [1, 1, 1], [1, 0, 0], [0, 0, 1], [], [], []),
    ([-1], [0], [-1], [0], [1], [], [], []),
    ([-1], [0], [-1], [0], [0], [], [], []),
    ([-1, 0, -1], [0, 0, 0], [-1, 1, -2], [0, 1, 0], [1, 1, 1], [], [], []),
    ([0, 1], [0, 2], [1, 1], [], [], [1, 0], [], []),
    ([1, 0, 2], [2, 3, 3], [1, 1, 1], [], [], [], [1, 0, 1], []),
    ([0, 1], [0, 3], [1, 1], [], [], [], [], [1, 0]),
    ([0, 0], [0, 0], [1, 1], [0, 0], [0, 0], [], [], []),
    ([-2, 0], [100, -1], [1, 2], [], [], [], [], []),
]


@pytest.mark.parametrize("begin, end, strides, bm, em, nm, sm, elm", SS_CASES)
def test_strided_slice(tmp_path, begin, end, strides, bm, em, nm, sm, elm):
    n = len(begin)
    bm, em, nm, sm, elm = (m + [0] * (n - len(m)) for m in (bm, em, nm, sm, elm))
    check(tmp_path, lambda d, b, e, s: o1.strided_slice(d, b, e, s, bm, em, nm, sm, elm),
          [P(G), C(i64(*begin)), C(i64(*end)), C(i64(*strides))])


@pytest.mark.parametrize("start, stop, step, axes", [
    ([1, -1], [2 ** 63 - 1, -2 ** 63], [1, -2], [1, 2]), ([-100], [1], [1], [-1]),
    ([0, 4], [1, 0], [1, -1], None), ([5], [-100], [-2], [2]),
])
def test_slice(tmp_path, start, stop, step, axes):
    inputs = [P(G), C(i64(*start)), C(i64(*stop)), C(i64(*step))]
    if axes is not None:
        inputs.append(C(i64(*axes)))
    check(tmp_path, o8.slice, inputs)


def test_scatter_update(tmp_path):
    check(tmp_path, o3.scatter_update,
          [P(f32(3, 4)), C(i64(2, 0)), P(f32(3, 2)), C(np.array(1, np.int64))])
    check(tmp_path, o3.scatter_update,
          [P(f32(3, 4)), C(np.array([[1]])), P(f32(1, 1, 4)), C(np.array(0, np.int64))])


def test_scatter_nd_update(tmp_path):
    check(tmp_path, o4.scatter_nd_update,
          [P(f32(8)), C(np.array([[4], [3], [1], [7]])), P(f32(4))])
    check(tmp_path, o4.scatter_nd_update,
          [P(f32(2, 3)), C(np.array([[1, 2], [0, 0]])), P(f32(2))])


@pytest.mark.parametrize("reduction", ["none", "sum", "sub", "prod", "min", "max"])
def test_scatter_nd_update15(tmp_path, reduction):
    check(tmp_path, lambda d, i, u: o15.scatter_nd_update(d, i, u, reduction),
          [P(i32(4, 2)), C(np.array([[1], [-3], [2]])), P(i32(3, 2))], version="opset15")


def test_scatter_elements_update(tmp_path):
    idx = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    check(tmp_path, o3.scatter_elements_update,
          [P(f32(3, 3)), C(idx), P(f32(2, 3)), C(np.array(0, np.int64))])
    check(tmp_path, o3.scatter_elements_update,
          [P(f32(3, 4)), C(idx), P(f32(2, 3)), C(np.array(-1, np.int64))])


@pytest.mark.parametrize("reduction", ["sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("use_init", [True, False])
@pytest.mark.parametrize("make", [f32, i32], ids=["f32", "i32"])
def test_scatter_elements_update12(tmp_path, reduction, use_init, make):
    idx = np.array([[1, 0, 1], [1, 1, 0]], np.int64)
    check(tmp_path, lambda d, i, u, a: o12.scatter_elements_update(d, i, u, a, reduction, use_init),
          [P(make(3, 3)), C(idx), P(make(2, 3)), C(np.array(0, np.int64))])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad(tmp_path, mode):
    x = f32(3, 4)
    value = [C(np.array(-1.5, np.float32))] if mode == "constant" else []
    check(tmp_path, lambda *n: o1.pad(n[0], n[1], n[2], mode, *n[3:]),
          [P(x), C(i64(1, 2)), C(i64(2, 0))] + value)
    check(tmp_path, lambda *n: o12.pad(n[0], n[1], n[2], mode, *n[3:]),
          [P(x), C(i64(-1, 1)), C(i64(1, -2))] + value, version="opset12")


def test_one_hot(tmp_path):
    for axis in (-1, 0, 1):
        check(tmp_path, lambda i, d, on, off: o1.one_hot(i, d, on, off, axis),
              [P(np.array([[0, 2], [-1, 3]], np.int64)), C(np.array(3, np.int64)),
               C(np.array(5.0, np.float32)), C(np.array(-1.0, np.float32))])
