"""Element types: both spellings, dtypes, bit widths, and decoding of every Const layout."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir import elements


@pytest.mark.parametrize("ir_name, precision, dtype, bits", [
    ("f64", "FP64", np.float64, 64),
    ("f32", "FP32", np.float32, 32),
    ("f16", "FP16", np.float16, 16),
    ("bf16", "BF16", np.float32, 16),
    ("i64", "I64", np.int64, 64),
    ("i32", "I32", np.int32, 32),
    ("i16", "I16", np.int16, 16),
    ("i8", "I8", np.int8, 8),
    ("u64", "U64", np.uint64, 64),
    ("u32", "U32", np.uint32, 32),
    ("u16", "U16", np.uint16, 16),
    ("u8", "U8", np.uint8, 8),
    ("boolean", "BOOL", np.bool_, 8),
    ("u1", "BIN", np.uint8, 1),
    ("u4", "U4", np.uint8, 4),
    ("i4", "I4", np.int8, 4),
])
def test_both_spellings_give_the_same_type(ir_name, precision, dtype, bits):
    for spelling in (ir_name, precision, ir_name.upper(), precision.lower()):
        assert elements.canonical(spelling) == ir_name
        assert elements.numpy_dtype(spelling) == np.dtype(dtype)
        assert elements.bit_width(spelling) == bits


def test_u1_is_also_spelled_U1_and_bool_is_an_alias():
    assert elements.canonical("U1") == "u1"
    assert elements.canonical("bool") == "boolean"


@pytest.mark.parametrize("spelling", ["dynamic", "undefined", "UNSPECIFIED"])
def test_dynamic_types_have_no_dtype(spelling):
    assert elements.numpy_dtype(spelling) is None
    assert elements.bit_width(spelling) == 0
    with pytest.raises(ValueError, match="cannot decode"):
        elements.decode(b"\0" * 4, spelling, (1,))


@pytest.mark.parametrize("spelling", ["f31", "float", "", "complex64"])
def test_unknown_type_is_a_clear_value_error(spelling):
    with pytest.raises(ValueError, match="unknown element type"):
        elements.lookup(spelling)
    assert not elements.is_known(spelling)


@pytest.mark.parametrize("spelling", ["f8e5m2", "nf4", "f8e4m3"])
def test_known_but_unsupported_types_say_so(spelling):
    with pytest.raises(ValueError, match="not supported"):
        elements.numpy_dtype(spelling)


@pytest.mark.parametrize("ir_name, values", [
    ("f64", [1.5, -2.25, 1e300]),
    ("f32", [1.5, -2.25, 3.0e38]),
    ("f16", [1.5, -2.25, 65504.0]),
    ("i64", [-(2 ** 63), 2 ** 63 - 1, 0]),
    ("i32", [-(2 ** 31), 2 ** 31 - 1, 7]),
    ("i16", [-32768, 32767, 1]),
    ("i8", [-128, 127, 0]),
    ("u64", [2 ** 64 - 1, 0, 5]),
    ("u32", [2 ** 32 - 1, 0, 5]),
    ("u16", [65535, 0, 5]),
    ("u8", [255, 0, 5]),
])
def test_plain_types_decode_little_endian(ir_name, values):
    dtype = elements.numpy_dtype(ir_name)
    raw = np.array(values, dtype=dtype).astype(dtype.newbyteorder("<")).tobytes()
    out = elements.decode(raw, ir_name, (3,))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.array(values, dtype=dtype))


def test_decode_reshapes_and_scalar_shape_is_zero_d():
    raw = np.arange(6, dtype="<f4").tobytes()
    assert elements.decode(raw, "f32", (2, 3)).shape == (2, 3)
    scalar = elements.decode(raw[:4], "f32", ())
    assert scalar.shape == () and scalar == 0.0


def test_decode_empty_shape_gives_empty_array():
    out = elements.decode(b"", "i64", (0, 3))
    assert out.shape == (0, 3) and out.dtype == np.int64


def test_decoded_array_owns_its_memory():
    buf = bytearray(np.arange(4, dtype="<i4").tobytes())
    out = elements.decode(memoryview(buf), "i32", (4,))
    buf[:] = b"\xff" * len(buf)          # the caller may release or reuse the buffer
    np.testing.assert_array_equal(out, [0, 1, 2, 3])
    out.flags.writeable = False           # and freeze the array
    assert out.flags.writeable is False


def test_boolean_is_one_byte_per_element():
    out = elements.decode(b"\x00\x01\x01\x00", "boolean", (2, 2))
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [[False, True], [True, False]])


def test_bf16_converts_exactly_to_float32():
    # bf16 is the upper 16 bits of a float32.
    values = np.array([1.0, -2.5, 3.140625, 0.0, -0.0, np.inf], dtype=np.float32)
    upper = (values.view(np.uint32) >> 16).astype("<u2")
    out = elements.decode(upper.tobytes(), "bf16", (6,))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.view(np.uint32), values.view(np.uint32))


def test_bf16_nan_stays_nan():
    out = elements.decode(np.array([0x7FC0], dtype="<u2").tobytes(), "BF16", (1,))
    assert np.isnan(out[0])


def test_u1_packs_element_zero_in_the_most_significant_bit():
    # 9 elements: 1,0,1,1,0,0,0,0 | 1 -> 0b10110000, 0b10000000
    out = elements.decode(bytes([0xB0, 0x80]), "u1", (9,))
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [1, 0, 1, 1, 0, 0, 0, 0, 1])


def test_u1_reshapes_unpacked_elements():
    out = elements.decode(bytes([0x80 | 0x01]), "BIN", (2, 4))
    np.testing.assert_array_equal(out, [[1, 0, 0, 0], [0, 0, 0, 1]])


def test_u4_packs_element_zero_in_the_low_nibble():
    out = elements.decode(bytes([0x21, 0xF3]), "u4", (3,))
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [1, 2, 3])


def test_i4_is_low_nibble_first_and_sign_extended():
    # nibbles: F(-1), 7, 8(-8), 1
    out = elements.decode(bytes([0x7F, 0x18]), "i4", (2, 2))
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [[-1, 7], [-8, 1]])


@pytest.mark.parametrize("ir_name, shape, size", [
    ("f32", (2, 3), 24), ("u1", (9,), 2), ("u4", (3,), 2), ("i4", (4,), 2),
    ("boolean", (5,), 5), ("bf16", (3,), 6), ("u1", (), 1),
])
def test_byte_size(ir_name, shape, size):
    assert elements.byte_size(ir_name, shape) == size


def test_too_few_bytes_is_a_value_error():
    with pytest.raises(ValueError, match="too few"):
        elements.decode(b"\0" * 7, "f32", (2,))


def test_from_numpy_round_trips_the_plain_types():
    for name in ("f64", "f32", "f16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8",
                 "boolean"):
        assert elements.from_numpy(elements.numpy_dtype(name)) == name
    with pytest.raises(ValueError):
        elements.from_numpy(np.complex64)


@pytest.mark.parametrize("name, bits", [("bfloat16", 16), ("float8_e4m3fn", 8),
                                        ("float8_e4m3fnuz", 8), ("float8_e5m2", 8),
                                        ("float8_e5m2fnuz", 8), ("int4", 4), ("uint4", 4),
                                        ("float4_e2m1fn", 4)])
def test_onnx_types_numpy_lacks_are_ml_dtypes_named_as_their_dtype(name, bits):
    import ml_dtypes

    dtype = np.dtype(getattr(ml_dtypes, name))
    assert elements.numpy_dtype(name) == dtype and elements.bit_width(name) == bits
    assert elements.from_numpy(dtype) == name and elements.dtype_name(dtype) == name
    assert elements.is_ml_dtype(dtype) and elements.is_numeric(dtype)
    assert elements.lookup(name).precision == name      # a port's precision names it the same


def test_ir_bf16_stays_widened_and_strings_are_unicode_of_any_width():
    assert elements.numpy_dtype("bf16") == np.float32 and elements.canonical("BF16") == "bf16"
    assert elements.from_numpy(np.dtype("<U7")) == "string" == elements.dtype_name("<U1")
    assert not elements.is_numeric(np.dtype("<U3")) and not elements.is_ml_dtype(np.float32)
    with pytest.raises(ValueError, match="cannot decode"):
        elements.decode(b"abc", "string", (1,))
