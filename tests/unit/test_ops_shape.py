"""Shape kernels (Concat ... Range, Identity) against numpy, with the traps of §6 of the spec."""

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel


def kernel(type_, version="opset1", n_in=2, n_out=1, expect_out=None, **data):
    layer = Layer(id=1, name="x", type=type_, version=version, data=data,
                  inputs=tuple(Port(i, i) for i in range(n_in)),
                  outputs=tuple(Port(n_in + j, j) for j in range(n_out)))
    fn, got = make_kernel(layer)
    assert got == (n_out if expect_out is None else expect_out)
    return fn


def i64(*values):
    return np.array(values, np.int64)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_concat_positive_and_negative_axis():
    fn = kernel("Concat", n_in=3, axis="-1")
    out = fn(X, X[..., :1], X[..., :2])
    np.testing.assert_array_equal(out, np.concatenate([X, X[..., :1], X[..., :2]], axis=-1))
    np.testing.assert_array_equal(kernel("Concat", axis="0")(X, X), np.concatenate([X, X]))
    with pytest.raises(UnsupportedOperation, match="'axis' is missing"):
        kernel("Concat")


# ---- Reshape ---------------------------------------------------------------------------------

@pytest.mark.parametrize("special_zero, target, expected", [
    ("false", [4, -1], (4, 6)),
    ("true", [0, -1], (2, 12)),
    ("true", [0, 0, 2, 2], (2, 3, 2, 2)),
    ("false", [-1], (24,)),
    ("true", [-1, 0], (8, 3)),
])
def test_reshape_special_zero_and_minus_one(special_zero, target, expected):
    out = kernel("Reshape", special_zero=special_zero)(X, i64(*target))
    assert out.shape == expected
    np.testing.assert_array_equal(out.ravel(), X.ravel())


def test_reshape_zero_without_special_zero_is_an_empty_dim():
    out = kernel("Reshape", special_zero="false")(np.zeros((0, 3), np.float32), i64(0, 5))
    assert out.shape == (0, 5)
    out = kernel("Reshape", special_zero="false")(np.zeros((0, 3), np.float32), i64(-1, 3))
    assert out.shape == (0, 3)
    with pytest.raises(ValueError, match="cannot reshape"):
        kernel("Reshape", special_zero="false")(X, i64(0, -1))


def test_reshape_errors():
    fn = kernel("Reshape", special_zero="false")
    with pytest.raises(ValueError, match="more than one -1"):
        fn(X, i64(-1, -1))
    with pytest.raises(ValueError, match="cannot reshape"):
        fn(X, i64(5, -1))
    with pytest.raises(ValueError, match="cannot reshape"):
        fn(X, i64(5, 5))


def test_reshape_to_scalar():
    out = kernel("Reshape", special_zero="false")(np.array([3.0], np.float32), i64())
    assert out.shape == ()


# ---- Squeeze, Unsqueeze ----------------------------------------------------------------------

Y = np.zeros((1, 2, 1, 3), np.float32)


@pytest.mark.parametrize("version", ["opset1", "opset15"])
def test_squeeze(version):
    assert kernel("Squeeze", version, n_in=1)(Y).shape == (2, 3)
    fn = kernel("Squeeze", version)
    assert fn(Y, i64(0)).shape == (2, 1, 3)
    assert fn(Y, i64(-2)).shape == (1, 2, 3)
    assert fn(Y, np.array(2, np.int32)).shape == (1, 2, 3)
    assert fn(Y, i64()).shape == (2, 3)
    assert fn(Y, i64(0, 1)).shape == (2, 1, 3)  # OpenVINO keeps a non-1 axis silently
    with pytest.raises(ValueError, match="out of range"):
        fn(Y, i64(4))


def test_squeeze15_allow_axis_skip_accepted():
    assert kernel("Squeeze", "opset15", allow_axis_skip="true")(Y, i64(0, 1)).shape == (2, 1, 3)


def test_unsqueeze_axes_refer_to_the_output_rank():
    fn = kernel("Unsqueeze")
    x = np.zeros((2, 3), np.float32)
    assert fn(x, i64(0)).shape == (1, 2, 3)
    assert fn(x, i64(-1)).shape == (2, 3, 1)
    assert fn(x, i64(0, 3)).shape == (1, 2, 3, 1)
    assert fn(x, i64(-1, 0)).shape == (1, 2, 3, 1)
    assert fn(np.float32(1), np.array(0, np.int64)).shape == (1,)
    assert fn(x, i64(0, 0)).shape == (1, 2, 3)
    assert fn(x, i64(1, -2)).shape == (2, 1, 1, 3)


# ---- ShapeOf, Broadcast, Tile, Transpose -----------------------------------------------------

def test_shape_of():
    out = kernel("ShapeOf", n_in=1)(X)
    assert out.dtype == np.int64 and out.tolist() == [2, 3, 4]
    out = kernel("ShapeOf", "opset3", n_in=1, output_type="i32")(X)
    assert out.dtype == np.int32 and out.tolist() == [2, 3, 4]
    assert kernel("ShapeOf", "opset3", n_in=1)(np.float32(1)).shape == (0,)
    with pytest.raises(UnsupportedOperation, match="output_type"):
        kernel("ShapeOf", "opset3", n_in=1, output_type="f32")


@pytest.mark.parametrize("version", ["opset1", "opset3"])
def test_broadcast_numpy(version):
    out = kernel("Broadcast", version, mode="numpy")(np.arange(3, dtype=np.float32), i64(2, 3))
    np.testing.assert_array_equal(out, [[0, 1, 2], [0, 1, 2]])
    assert out.flags.writeable


def test_broadcast_bidirectional():
    fn = kernel("Broadcast", "opset3", mode="bidirectional")
    assert fn(np.zeros((3, 1), np.float32), i64(1, 4)).shape == (3, 4)
    assert fn(np.zeros((2, 3), np.float32), i64(1)).shape == (2, 3)
    with pytest.raises(UnsupportedOperation, match="bidirectional"):
        kernel("Broadcast", "opset1", mode="bidirectional")


@pytest.mark.parametrize("version", ["opset1", "opset3"])
def test_broadcast_explicit(version):
    fn = kernel("Broadcast", version, n_in=3, mode="explicit")
    x = np.array([1, 2, 3], np.int32)
    out = fn(x, i64(2, 3, 4), i64(1))
    assert out.shape == (2, 3, 4) and (out[1, :, 2] == x).all()
    out = fn(np.ones((3, 4), np.int32), i64(2, 3, 4), i64(1, 2))
    assert out.shape == (2, 3, 4)
    with pytest.raises(ValueError, match="axes_mapping"):
        fn(x, i64(2, 3))
    none = kernel("Broadcast", version, n_in=3, mode="none")  # how Broadcast-1 writes explicit
    assert none(x, i64(2, 3, 4), i64(1)).shape == (2, 3, 4)


def test_tile_and_transpose():
    x = np.arange(6).reshape(2, 3)
    fn = kernel("Tile")
    np.testing.assert_array_equal(fn(x, i64(2, 1)), np.tile(x, (2, 1)))
    assert fn(x, i64(2, 1, 1)).shape == (2, 2, 3)
    assert fn(x, i64(3)).shape == (2, 9)
    t = kernel("Transpose")
    np.testing.assert_array_equal(t(X, i64(2, 0, 1)), X.transpose(2, 0, 1))
    assert t(X, i64()).shape == (4, 3, 2)


def test_transpose_by_a_constant_order():
    layer = Layer(id=1, name="t", type="Transpose", version="opset1", data={},
                  inputs=(Port(0, 0), Port(1, 1)), outputs=(Port(2, 0),))
    for order in (i64(2, 0, 1), i64()):
        fn, _ = make_kernel(layer, "", (None, order))
        want = X.transpose(tuple(order.tolist()) or None)
        got = fn(X, order)
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides and np.shares_memory(got, X)    # a view, as numpy's
    fn, _ = make_kernel(layer, "", (None, i64(1, 0)))
    np.testing.assert_array_equal(fn([[1, 2]], None), [[1], [2]])          # not an array
    with pytest.raises(ValueError):
        fn(X, None)                                                         # rank 3, order of 2


# ---- Split, VariadicSplit --------------------------------------------------------------------

def test_split_is_multi_output():
    fn = kernel("Split", n_out=3, num_splits="3")
    parts = fn(np.arange(12).reshape(2, 6), np.array(-1, np.int64))
    assert isinstance(parts, tuple) and len(parts) == 3
    np.testing.assert_array_equal(parts[2], [[4, 5], [10, 11]])
    with pytest.raises(ValueError, match="does not split"):
        fn(np.arange(4), np.array(0, np.int64))


def test_split_one_part_returns_an_array():
    out = kernel("Split", n_out=1, num_splits="1")(X, np.array(0, np.int64))
    assert isinstance(out, np.ndarray) and out.shape == X.shape


def test_split_num_splits_must_match_the_declared_outputs():
    with pytest.raises(UnsupportedOperation, match="declares 2 outputs"):
        kernel("Split", n_out=2, num_splits="3")


def test_variadic_split_with_minus_one():
    fn = kernel("VariadicSplit", n_in=3, n_out=3)
    a, b, c = fn(np.arange(10), np.array(0, np.int32), i64(2, -1, 3))
    assert a.tolist() == [0, 1] and b.tolist() == [2, 3, 4, 5, 6] and c.tolist() == [7, 8, 9]
    a, b = kernel("VariadicSplit", n_in=3, n_out=2)(X, i64(1), i64(0, 3))
    assert a.shape == (2, 0, 4) and b.shape == (2, 3, 4)
    with pytest.raises(ValueError, match="do not add up"):
        fn(np.arange(10), np.array(0, np.int32), i64(2, 3, 3))


def test_variadic_split_by_a_constant_axis_and_computed_lengths():
    layer = Layer(id=1, name="v", type="VariadicSplit", version="opset1", data={},
                  inputs=tuple(Port(i, i) for i in range(3)),
                  outputs=tuple(Port(3 + j, j) for j in range(3)))
    fn, _ = make_kernel(layer, "", (None, np.array(-1, np.int64), None))
    general, _ = make_kernel(layer)
    x = np.arange(2 * 12).reshape(2, 12)
    for lengths in (i64(4, 4, 4), i64(2, -1, 3), i64(4, 4, 4), i64(2, -1, 3)):  # computed again
        got, want = fn(x, np.array(-1, np.int64), lengths), general(x, np.array(-1), lengths)
        assert len(got) == 3
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
            assert np.shares_memory(a, x)                       # views, as numpy's split
    got = fn(np.arange(9).reshape(3, 3), np.array(-1), i64(1, 1, 1))      # another shape
    assert [a.tolist() for a in got] == [[[0], [3], [6]], [[1], [4], [7]], [[2], [5], [8]]]
    for _ in range(2):                                          # an error every time
        with pytest.raises(ValueError, match="do not add up"):
            fn(x, np.array(-1), i64(4, 4, 5))


@pytest.mark.parametrize("shape, reps", [
    ((3,), (3,)), ((), (4,)), ((), ()), ((2, 3), (2, 1)), ((2, 3), (3,)), ((2, 3), (2, 1, 1)),
    ((1, 4, 2), (2, 0, 3)), ((0, 3), (2, 2)), ((2, 1, 3), (1, 1, 1)), ((2, 3, 4), ()),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16])
def test_tile_is_np_tile_for_every_rank_and_type(shape, reps, dtype):
    """Tile's one broadcast copy gives np.tile's values, shape and type, a new C-ordered array
    (never a view of its input, even when every repeat is 1), from a non-contiguous input too."""
    x = (np.arange(int(np.prod(shape)) * 2) % 7).astype(dtype)[::2].reshape(shape)
    out = kernel("Tile")(x, i64(*reps))
    want = np.tile(x, reps)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)
    assert out.flags.c_contiguous and out.flags.writeable and not np.shares_memory(out, x)
    wide = np.arange(12, dtype=np.float32).reshape(3, 4).T        # a transposed view
    np.testing.assert_array_equal(kernel("Tile")(wide, i64(2, 2)), np.tile(wide, (2, 2)))


def test_tile_refuses_a_negative_repeat_and_tiles_a_python_number():
    with pytest.raises(ValueError, match="negative"):
        kernel("Tile")(np.arange(3), i64(-1))
    np.testing.assert_array_equal(kernel("Tile")([1, 2], i64(2)), [1, 2, 1, 2])


@pytest.mark.parametrize("shape, target", [
    ((3,), (2, 3)), ((), (2, 2)), ((), ()), ((1,), (4,)), ((2, 1), (3, 2, 5)), ((1, 1), (0, 4)),
    ((2, 3), (2, 3)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_broadcast_numpy_is_broadcast_to_copied(shape, target, dtype):
    x = (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)
    out = kernel("Broadcast", "opset3", mode="numpy")(x, i64(*target))
    want = np.broadcast_to(x, target)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)
    assert out.flags.c_contiguous and out.flags.writeable and not np.shares_memory(out, x)


@pytest.mark.parametrize("shape, target", [((3,), (2, 4)), ((2, 3), (3,)), ((2,), (-1, 2)),
                                           ((3, 1), (2, 3))])
def test_broadcast_numpy_refuses_what_does_not_broadcast_one_way(shape, target):
    """What numpy's broadcast_to refuses is refused as it does: a mismatched or negative
    dimension, a target of lower rank, a dimension of the target smaller than the input's."""
    fn = kernel("Broadcast", "opset1", mode="numpy")
    with pytest.raises(ValueError):
        fn(np.zeros(shape, np.float32), i64(*target))


# ---- Range, Identity -------------------------------------------------------------------------

def s(v, dtype):
    return np.array(v, dtype)


@pytest.mark.parametrize("start, stop, step, out_type, expected", [
    (0.5, 5.2, 1.3, "i32", [0, 1, 2, 3, 4]),
    (-2.5, 2.5, 1.5, "i32", [-2, -1, 0, 1]),
    (0.9, 5.2, 0.6, "i64", []),
    (7, 1, -2, "i32", [7, 5, 3]),
    (1, 8, 3, "f32", [1, 4, 7]),
    (0.0, 1.0, 0.25, "f32", [0, 0.25, 0.5, 0.75]),
    (5, 1, 1, "i64", []),
])
def test_range4(start, stop, step, out_type, expected):
    dtype = np.float32 if isinstance(start, float) else np.int32
    out = kernel("Range", "opset4", n_in=3, output_type=out_type)(
        s(start, dtype), s(stop, dtype), s(step, dtype))
    assert out.dtype == {"i32": np.int32, "i64": np.int64, "f32": np.float32}[out_type]
    assert out.tolist() == expected


@pytest.mark.parametrize("out_type", ["i32", "i64", "u8", "i8", "u16"])
def test_range4_integers_are_int64_values_cast_down(out_type):
    # an integer Range is a + i*s computed in int64 and cast to its type (wrapping where the
    # values do not fit), whether it fits and runs as one arange or not
    fn = kernel("Range", "opset4", n_in=3, output_type=out_type)
    dtype = {"i32": np.int32, "i64": np.int64, "u8": np.uint8, "i8": np.int8,
             "u16": np.uint16}[out_type]
    rng = np.random.default_rng(4)
    cases = [(0, 20480, 20), (0, 15, 1), (7, -9, -3), (250, 260, 3), (-130, 130, 7),
             (2 ** 31 - 5, 2 ** 31 + 5, 2), (-2 ** 31 - 2, -2 ** 31 + 9, 4), (5, 5, 1),
             (126, 128, 1), (0, 2 ** 40, 2 ** 38), (2 ** 62, 2 ** 63 - 1, 2 ** 60)]
    cases += [tuple(int(v) for v in rng.integers(-400, 400, 2)) + (int(rng.choice([-7, -1, 1, 3])),)
              for _ in range(40)]
    for a, b, st in cases:
        n = max(-((a - b) // st), 0)
        want = (a + np.arange(n, dtype=np.int64) * st).astype(dtype)
        out = fn(s(a, np.int64), s(b, np.int64), s(st, np.int64))
        assert out.dtype == dtype and out.tolist() == want.tolist(), (a, b, st)


@pytest.mark.parametrize("start, stop, step, expected", [
    (s(1, np.int64), s(6.5, np.float32), s(2, np.int64), [1, 3, 5]),        # one float: trunc
    (s(1, np.uint8), s(5, np.uint8), s(1, np.uint8), [1, 2, 3, 4]),
    (s(2, np.int64), s(8, np.int32), s(0, np.int64), []),                    # a step of 0
    (s(True, np.bool_), s(4, np.int64), s(1, np.int64), [1, 2, 3]),
    (s(-1, np.int8), s(3, np.int16), s(1, np.int32), [-1, 0, 1, 2]),
])
def test_range4_integer_output_of_mixed_or_other_input_types(start, stop, step, expected):
    """Integer inputs of any width take Range's direct path (plain ints), the others (a float, a
    bool, an unsigned) the general one; both give the same values."""
    out = kernel("Range", "opset4", n_in=3, output_type="i64")(start, stop, step)
    assert out.dtype == np.int64 and out.tolist() == expected


def test_range4_float_count_matches_ceil():
    out = kernel("Range", "opset4", n_in=3, output_type="f32")(
        s(0, np.float32), s(1, np.float32), s(0.1, np.float32))
    assert out.shape == (10,)
    np.testing.assert_allclose(out, np.arange(10) * 0.1, atol=1e-6)


def test_range1_keeps_the_input_type():
    out = kernel("Range", n_in=3)(s(2, np.int64), s(-3, np.int64), s(-2, np.int64))
    assert out.dtype == np.int64 and out.tolist() == [2, 0, -2]
    out = kernel("Range", n_in=3)(s(0.5, np.float32), s(2, np.float32), s(0.5, np.float32))
    assert out.dtype == np.float32 and out.tolist() == [0.5, 1.0, 1.5]


def test_identity_returns_its_input():
    assert kernel("Identity", "opset16", n_in=1)(X) is X
