"""Convert / ConvertLike and the shared attribute parsers, against hand-computed values.

The expected numbers for float → integer are the ones OpenVINO's reference produces (see the
docstring of loopdbg/ops/convert.py); the oracle test re-checks a subset against the wheel.
"""

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer, Port
from loopdbg.ops import args
from loopdbg.ops.registry import make_kernel


def kernel(type_, version="opset1", n_in=1, **data):
    layer = Layer(id=1, name="x", type=type_, version=version, data=data,
                  inputs=tuple(Port(i, i) for i in range(n_in)), outputs=(Port(n_in, 0),))
    fn, n_out = make_kernel(layer)
    assert n_out == 1
    return fn


F = np.array([300.0, -2.7, 2.5, -0.5, 0.0, 255.9, -129.0], np.float32)


@pytest.mark.parametrize("dest, expected", [
    ("u8", [44, 254, 2, 0, 0, 255, 127]),
    ("i8", [44, -2, 2, 0, 0, -1, 127]),
    ("i32", [300, -2, 2, 0, 0, 255, -129]),
    ("i64", [300, -2, 2, 0, 0, 255, -129]),
    ("u16", [300, 65534, 2, 0, 0, 255, 65407]),
    ("u32", [300, 2 ** 32 - 2, 2, 0, 0, 255, 2 ** 32 - 129]),
])
def test_float_to_int_truncates_then_wraps(dest, expected):
    out = kernel("Convert", destination_type=dest)(F)
    assert out.dtype == np.dtype({"u8": "uint8", "i8": "int8", "i32": "int32", "i64": "int64",
                                  "u16": "uint16", "u32": "uint32"}[dest])
    assert out.tolist() == expected


def test_float_to_int_out_of_range_and_nan_take_the_intermediate_minimum():
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9], np.float32)
    assert kernel("Convert", destination_type="i32")(x).tolist() == [-2 ** 31] * 5
    assert kernel("Convert", destination_type="u8")(x).tolist() == [0] * 5
    i64 = kernel("Convert", destination_type="i64")(x).tolist()
    assert i64 == [-2 ** 63, -2 ** 63, -2 ** 63, 3_000_000_000, -3_000_000_000]


def test_float_to_u64_handles_values_above_int64():
    x = np.array([1e19, -1.0, 5.5], np.float64)
    assert kernel("Convert", destination_type="u64")(x).tolist() == [10 ** 19, 2 ** 64 - 1, 5]


def test_to_boolean_is_not_equal_zero_nan_included():
    x = np.array([0.0, -0.0, 0.1, np.nan, -3], np.float32)
    out = kernel("Convert", destination_type="boolean")(x)
    assert out.dtype == np.bool_ and out.tolist() == [False, False, True, True, True]
    ints = kernel("Convert", destination_type="BOOL")(np.array([0, 2, -1], np.int32))
    assert ints.tolist() == [False, True, True]


def test_int_narrowing_wraps_and_bool_widens():
    assert kernel("Convert", destination_type="i8")(
        np.array([127, 128, 255, -129], np.int32)).tolist() == [127, -128, -1, 127]
    assert kernel("Convert", destination_type="f32")(np.array([True, False])).tolist() == [1, 0]
    assert kernel("Convert", destination_type="u8")(
        np.array([-1], np.int64)).tolist() == [255]


def test_float_narrowing_rounds_and_overflows_to_inf():
    out = kernel("Convert", destination_type="f16")(np.array([1e6, 0.1], np.float32))
    assert out.dtype == np.float16 and np.isinf(out[0]) and out[1] == np.float16(0.1)
    f16 = np.array([1.5, -2.25], np.float16)
    out = kernel("Convert", destination_type="f32")(f16)
    assert out.dtype == np.float32 and out.tolist() == [1.5, -2.25]


def test_bf16_rounds_to_bfloat_precision_kept_in_float32():
    out = kernel("Convert", destination_type="bf16")(np.array([1.0 + 2 ** -9, 3.0], np.float32))
    assert out.dtype == np.float32 and out.tolist() == [1.0, 3.0]
    assert kernel("Convert", destination_type="bf16")(
        np.array([1.0 + 3 * 2 ** -9], np.float32)).tolist() == [1.0 + 2 ** -7]


def test_f16_to_f32_gives_astype_s_bits_for_every_pattern_and_layout():
    """A weight's decompression takes a table of the 65,536 float16 patterns (big arrays in C
    order): every value, NaN payloads, subnormals and infinities included, is astype's, bit
    for bit; small arrays and other layouts are astype's own (its layout kept)."""
    to_f32 = kernel("Convert", destination_type="f32")
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    for x in (every, every.reshape(256, 256), every[::-1].copy(), every[:100]):
        out = to_f32(x)
        assert out.dtype == np.float32 and out.shape == x.shape and out.flags.writeable
        assert np.array_equal(out.view(np.uint32), x.astype(np.float32).view(np.uint32))
    column = every.reshape(256, 256).T          # F order: astype keeps it
    out = to_f32(column)
    assert out.flags.f_contiguous and np.array_equal(out.view(np.uint32),
                                                     column.astype(np.float32).view(np.uint32))
    read_only = every.copy()
    read_only.setflags(write=False)             # (a constant of the plan)
    assert np.array_equal(to_f32(read_only), every.astype(np.float32), equal_nan=True)


def test_convert_keeps_shape_of_scalars():
    out = kernel("Convert", destination_type="i64")(np.array(2.9, np.float32))
    assert out.shape == () and out == 2


def test_convert_like_takes_the_second_inputs_type():
    fn = kernel("ConvertLike", n_in=2)
    out = fn(np.array([-2.7, 300.0], np.float32), np.zeros(3, np.uint8))
    assert out.dtype == np.uint8 and out.tolist() == [254, 44]


@pytest.mark.parametrize("data", [{}, {"destination_type": "nonsense"},
                                  {"destination_type": "dynamic"}])
def test_bad_destination_type_is_a_user_error(data):
    with pytest.raises(UnsupportedOperation, match="layer 1 'x'"):
        kernel("Convert", **data)


def test_each_convert_reads_its_own_destination_type_whatever_came_before():
    """A destination type is parsed once per spelling and kept: every later Convert of that
    spelling converts as the first did, another spelling (bf16's rounding among them) as its
    own, and a bad one is refused each time, naming its own layer."""
    x = np.array([1.00390625, -2.5, 300.0], np.float32)       # 1 + 2**-8: bf16 rounds it
    for _ in range(2):
        for dest, expected in (("f16", x.astype(np.float16)), (" FP16 ", x.astype(np.float16)),
                               ("bf16", np.array([1.0, -2.5, 300.0], np.float32)),
                               ("i32", np.array([1, -2, 300], np.int32)), ("f32", x)):
            out = kernel("Convert", destination_type=dest)(x)
            assert out.dtype == expected.dtype, dest
            np.testing.assert_array_equal(out, expected)
        for name in ("first", "second"):
            layer = Layer(id=7, name=name, type="Convert", version="opset1",
                          data={"destination_type": "nonsense"}, inputs=(Port(0, 0),),
                          outputs=(Port(1, 0),))
            with pytest.raises(UnsupportedOperation, match=f"layer 7 '{name}'.*nonsense"):
                make_kernel(layer)


def test_attribute_parsers():
    layer = Layer(id=1, name="x", type="T", version="opset1",
                  data={"b": "true", "i": " 3", "l": "0, 1,2", "e": "", "c": "NumPy", "f": "1e-3"})
    assert args.flag(layer, "b") and not args.flag(layer, "missing")
    assert args.int_attr(layer, "i") == 3 and args.int_attr(layer, "missing", 7) == 7
    assert args.int_list(layer, "l") == [0, 1, 2] and args.int_list(layer, "e") == []
    assert args.choice(layer, "c", ("numpy", "none")) == "numpy"
    assert args.float_attr(layer, "f") == 1e-3
    with pytest.raises(KeyError, match="'i2'"):
        args.int_attr(layer, "i2")
    with pytest.raises(ValueError, match="not one of"):
        args.choice(layer, "b", ("numpy",))
    with pytest.raises(ValueError, match="boolean"):
        args.flag(layer, "i")
