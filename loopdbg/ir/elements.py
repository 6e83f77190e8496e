"""OpenVINO element types: their names, numpy dtypes, bit widths, and decoding of Const bytes.

OpenVINO spells an element type two ways: lowercase in ``<data element_type>`` /
``destination_type`` (``f32``, ``boolean``, ``u1``) and uppercase in ``<port precision>`` (``FP32``,
``BOOL``, ``BIN``). Both spellings are accepted everywhere here, as OpenVINO's own
``type_from_string`` does, and every lookup returns the lowercase IR name.

Decoded values use plain numpy dtypes, because the engine computes with numpy:

* ``bf16`` has no numpy dtype; its values are widened exactly to ``float32``.
* ``u1`` is unpacked to one ``uint8`` (0 or 1) per element, not ``bool``: OpenVINO treats u1 as a
  number (it is the "binary" precision of BinaryConvolution), so keeping it numeric avoids surprises
  in arithmetic kernels.
* ``u4`` / ``i4`` are unpacked to ``uint8`` / ``int8`` (i4 sign-extended).
* ``dynamic`` / ``undefined`` have no dtype: ``numpy_dtype`` returns ``None`` ("take the dtype of the
  value you are given") and ``decode`` refuses them.

ONNX models also hold element types numpy has no dtype for (bfloat16 kept as bfloat16, the float8
and float4 formats, int4/uint4, int2/uint2): their values are ``ml_dtypes`` arrays, the numpy
extension that JAX, TensorFlow and onnx use, and their element type names are the dtypes' names
(``bfloat16``, ``float8_e4m3fn``, ``int4``); ml_dtypes is imported when one of them is first
needed (``_ml_types``: ~6 ms, which a model without them never pays). ONNX strings are numpy unicode arrays (``string``,
any ``<Un``), never Python objects. These types come only from ONNX files: an IR ``bf16`` stays
widened to float32, and IR ``u4``/``i4`` stay unpacked to uint8/int8 (see ``ml_type``).
"""

from __future__ import annotations

import functools
from math import prod
from typing import Iterable

import numpy as np

from loopdbg.files.write import npy_descr  # noqa: F401 - the .npy header of any element type
from loopdbg.ir.record import Record, set_field as _set


class ElementType(Record):
    """One element type: its IR name, bits per element and the numpy dtype values are decoded to.

    ``storage`` is the little-endian dtype of the raw bytes for the types numpy reads directly; it is
    ``None`` for the packed (u1, u4, i4), converted (bf16) and dynamic types.
    """

    __slots__ = ("name", "bits", "dtype", "storage", "precision")
    name: str
    bits: int
    dtype: np.dtype | None
    storage: str | None
    precision: str

    def __init__(self, name: str, bits: int, dtype: np.dtype | None, storage: str | None,
                 precision: str):
        _set(self, "name", name)
        _set(self, "bits", bits)
        _set(self, "dtype", dtype)
        _set(self, "storage", storage)
        _set(self, "precision", precision)


def _et(name: str, bits: int, dtype: str | None, storage: str | None, precision: str) -> ElementType:
    return ElementType(name, bits, np.dtype(dtype) if dtype else None, storage, precision)


_TYPES: tuple[ElementType, ...] = (
    _et("f64", 64, "float64", "<f8", "FP64"),
    _et("f32", 32, "float32", "<f4", "FP32"),
    _et("f16", 16, "float16", "<f2", "FP16"),
    _et("bf16", 16, "float32", None, "BF16"),
    _et("i64", 64, "int64", "<i8", "I64"),
    _et("i32", 32, "int32", "<i4", "I32"),
    _et("i16", 16, "int16", "<i2", "I16"),
    _et("i8", 8, "int8", "int8", "I8"),
    _et("u64", 64, "uint64", "<u8", "U64"),
    _et("u32", 32, "uint32", "<u4", "U32"),
    _et("u16", 16, "uint16", "<u2", "U16"),
    _et("u8", 8, "uint8", "uint8", "U8"),
    _et("boolean", 8, "bool", "uint8", "BOOL"),
    _et("u1", 1, "uint8", None, "BIN"),
    _et("u4", 4, "uint8", None, "U4"),
    _et("i4", 4, "int8", None, "I4"),
    _et("dynamic", 0, None, None, "UNSPECIFIED"),
    _et("undefined", 0, None, None, "UNSPECIFIED"),
)

# The ONNX-only types (name: bits), named as their dtypes are (the name is also the precision);
# those the installed ml_dtypes has are ``_ml_types()``.
_ML_DTYPES = {"bfloat16": 16, "float8_e4m3fn": 8, "float8_e4m3fnuz": 8, "float8_e5m2": 8,
              "float8_e5m2fnuz": 8, "float8_e8m0fnu": 8, "float4_e2m1fn": 4, "int4": 4,
              "uint4": 4, "int2": 2, "uint2": 2}
_TYPES += (ElementType("string", 0, np.dtype(np.str_), None, "string"),)


@functools.cache
def _ml_types() -> dict[str, ElementType]:
    """The ONNX-only types the installed ml_dtypes has, by name. Imported here, at the first
    need of one, not with this module: a run of a model without them never pays for it (a
    value of one exists only once ml_dtypes is imported)."""
    import ml_dtypes

    return {n: ElementType(n, bits, np.dtype(getattr(ml_dtypes, n)), None, n)
            for n, bits in _ML_DTYPES.items() if hasattr(ml_dtypes, n)}


def _is_ml_name(name) -> bool:
    return name in _ML_DTYPES and name in _ml_types()


def _dtype(dtype) -> np.dtype:
    """``np.dtype(dtype)``; the name of an ml_dtypes type too (numpy knows it once imported)."""
    if isinstance(dtype, str) and dtype in _ML_DTYPES:
        _ml_types()
    return np.dtype(dtype)

# Every accepted spelling, lowercased, to its IR name. Port precisions are the uppercase legacy names.
_ALIASES: dict[str, str] = {t.name: t.name for t in _TYPES}
_ALIASES.update({
    "fp64": "f64", "fp32": "f32", "fp16": "f16",
    "bool": "boolean", "bin": "u1",
    "unspecified": "dynamic", "?": "dynamic",
})
_BY_NAME: dict[str, ElementType] = {t.name: t for t in _TYPES}

# Types OpenVINO knows but loopdbg cannot decode: named in the error so the user knows why.
_KNOWN_UNSUPPORTED = ("nf4", "f8e4m3", "f8e5m2", "f4e2m1", "f8e8m0", "u2", "u3", "u6")

# numpy dtype -> IR name, for the engine's reverse lookups (e.g. naming a value's type in messages).
# (the ml_dtypes types: ``_ml_types``)
_FROM_NUMPY: dict[np.dtype, str] = {
    t.dtype: t.name for t in _TYPES
    if t.dtype is not None and t.name not in ("bf16", "u1", "u4", "i4", "string")
}


def lookup(element_type: str) -> ElementType:
    """The ElementType for any accepted spelling (``f32``, ``FP32``, ``BOOL``, ``BIN`` ...).

    Raises ``ValueError`` naming the type for an unknown or undecodable spelling.
    """
    key = element_type.strip().lower() if isinstance(element_type, str) else None
    name = _ALIASES.get(key) if key is not None else None
    if name is None:
        if _is_ml_name(key):
            return _ml_types()[key]
        if key in _KNOWN_UNSUPPORTED:
            raise ValueError(f"element type '{element_type}' is not supported by loopdbg")
        raise ValueError(f"unknown element type '{element_type}'")
    return _BY_NAME[name]


def canonical(element_type: str) -> str:
    """The lowercase IR name of an element type (``FP32`` → ``f32``, ``BIN`` → ``u1``)."""
    return lookup(element_type).name


def is_known(element_type: str) -> bool:
    """Whether ``element_type`` is a spelling loopdbg understands (no exception)."""
    try:
        lookup(element_type)
    except ValueError:
        return False
    return True


def bit_width(element_type: str) -> int:
    """Bits per element as stored in a .bin (1 for u1, 4 for u4/i4, 8 for boolean, 0 for dynamic)."""
    return lookup(element_type).bits


def numpy_dtype(element_type: str) -> np.dtype | None:
    """The numpy dtype loopdbg uses for values of this type (Parameters, Convert, decoded Consts).

    bf16 → float32, u1 → uint8 (0/1), u4 → uint8, i4 → int8; ``None`` for dynamic/undefined.
    """
    return lookup(element_type).dtype


def from_numpy(dtype: np.dtype | type | str) -> str:
    """The IR name of a numpy dtype (``float32`` → ``f32``, ``bool`` → ``boolean``,
    ``bfloat16`` → ``bfloat16``, any ``<Un`` → ``string``)."""
    dt = _dtype(dtype)
    if dt.kind == "U":
        return "string"
    name = _FROM_NUMPY.get(dt)
    if name is None and _is_ml_name(dt.name) and _ml_types()[dt.name].dtype == dt:
        name = dt.name
    if name is None:
        raise ValueError(f"numpy dtype {dt} has no OpenVINO element type")
    return name


def byte_size(element_type: str, shape: Iterable[int]) -> int:
    """Bytes a Const of this type and shape occupies in a .bin: ceil(prod(shape) * bits / 8)."""
    bits = lookup(element_type).bits
    return (prod(shape) * bits + 7) // 8


def decode(raw: bytes | bytearray | memoryview, element_type: str, shape: Iterable[int]) -> np.ndarray:
    """Decode the raw little-endian bytes of a Const into a new numpy array of ``shape``.

    The result owns its memory (never a view of ``raw``), so the .bin buffer can be released and the
    array can be made read-only by the caller. Extra trailing bytes are ignored; too few raise
    ``ValueError``.
    """
    et = lookup(element_type)
    shape = tuple(int(d) for d in shape)
    count = prod(shape)
    if et.dtype is None or (et.storage is None and et.name not in _DECODERS):
        raise ValueError(f"cannot decode values of element type '{element_type}'")
    needed = (count * et.bits + 7) // 8
    buf = memoryview(raw).cast("B")
    if len(buf) < needed:
        raise ValueError(f"{len(buf)} bytes are too few for {count} elements of {et.name} "
                         f"(need {needed})")
    buf = buf[:needed]
    if et.storage is not None:
        flat = np.frombuffer(buf, dtype=et.storage, count=count).astype(et.dtype, copy=True)
    else:
        flat = _DECODERS[et.name](buf, count)
    return flat.reshape(shape)


def _decode_bf16(buf: memoryview, count: int) -> np.ndarray:
    """bf16 is the upper half of a float32: shifting the bits up 16 converts exactly."""
    halves = np.frombuffer(buf, dtype="<u2", count=count).astype(np.uint32)
    return (halves << np.uint32(16)).view(np.float32)


def _decode_u1(buf: memoryview, count: int) -> np.ndarray:
    """u1 packs 8 elements per byte, element 0 in the most significant bit (OpenVINO's layout)."""
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="big")
    return bits[:count].astype(np.uint8, copy=True)


def _nibbles(buf: memoryview, count: int) -> np.ndarray:
    """Unpack 4-bit values, element 0 in the low nibble of byte 0 (OpenVINO's u4/i4 layout)."""
    packed = np.frombuffer(buf, dtype=np.uint8)
    out = np.empty(packed.size * 2, dtype=np.uint8)
    out[0::2] = packed & 0x0F
    out[1::2] = packed >> 4
    return out[:count]


def _decode_u4(buf: memoryview, count: int) -> np.ndarray:
    return _nibbles(buf, count).copy()


def _decode_i4(buf: memoryview, count: int) -> np.ndarray:
    """Sign-extend each nibble: values 8..15 are -8..-1."""
    n = _nibbles(buf, count).astype(np.int8)
    return np.where(n >= 8, n - 16, n).astype(np.int8)


_DECODERS = {"bf16": _decode_bf16, "u1": _decode_u1, "u4": _decode_u4, "i4": _decode_i4}


# ---- values of the types numpy lacks -----------------------------------------------------------


def onnx_only(element_type: str) -> bool:
    """Whether ``element_type`` is one of the types only ONNX models give loopdbg (the ml_dtypes
    names and ``string``): an IR file naming one is refused as not supported."""
    key = element_type.strip().lower() if isinstance(element_type, str) else None
    return _is_ml_name(key) or key == "string"


def is_ml_dtype(dtype) -> bool:
    """Whether ``dtype`` is one of the ``ml_dtypes`` types (bfloat16, float8, int4, ...)."""
    return _is_ml_name(_dtype(dtype).name)


def is_numeric(dtype) -> bool:
    """Whether values of ``dtype`` are numbers or booleans loopdbg computes with: numpy's own
    (``b``, ``i``, ``u``, ``f``) or an ``ml_dtypes`` type."""
    dt = _dtype(dtype)
    return dt.kind in "biuf" or _is_ml_name(dt.name)


def ml_type(dtype) -> np.dtype | None:
    """The ``ml_dtypes`` dtype named ``dtype`` (a dtype or its name), or None for the others."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return _ml_types()[name].dtype if _is_ml_name(name) else None


def dtype_name(dtype) -> str:
    """How messages name a dtype: numpy's name (``float32``, ``bfloat16``, ``float8_e4m3fn``),
    ``string`` for any unicode width."""
    dt = _dtype(dtype)
    return "string" if dt.kind == "U" else dt.name
