"""Const values to ``.bin`` bytes: the inverse of ``elements.decode``, plus the blob layout.

The encoders mirror the decoders in ``elements.py`` exactly (boolean one byte per element, u1 with
element 0 in the most significant bit, u4/i4 with element 0 in the low nibble, bf16 as the upper
half of a float32), so that ``decode(encode(v, t), t, shape)`` is what ``read_ir`` would hand back.

``BlobTable`` lays the blobs out in first-use order and stores identical blobs once, as OpenVINO's
serializer does; because the order is the order of the calls, the same model always gives the
same ``.bin``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir import elements


def encode(value, element_type: str) -> bytes:
    """The little-endian bytes of ``value`` stored as ``element_type`` (any accepted spelling)."""
    et = elements.lookup(element_type)
    arr = np.asarray(value)
    if et.dtype is None:
        raise ValueError(f"element type '{et.name}' has no values to store")
    if et.name == "boolean":
        return (arr != 0).astype("u1").tobytes()
    if et.storage is not None:
        return np.ascontiguousarray(arr.astype(et.storage)).tobytes()
    return _ENCODERS[et.name](arr.reshape(-1))


def _encode_bf16(flat: np.ndarray) -> bytes:
    """Round float32 to the nearest bf16 (ties to even), keeping NaN a NaN."""
    bits = np.ascontiguousarray(flat.astype(np.float32)).view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    nan = np.isnan(flat.astype(np.float32))
    rounded = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded)
    return rounded.astype("<u2").tobytes()


def _encode_u1(flat: np.ndarray) -> bytes:
    return np.packbits((flat != 0).astype(np.uint8), bitorder="big").tobytes()


def _encode_nibbles(flat: np.ndarray) -> bytes:
    """Two 4-bit values per byte, element 0 in the low nibble; i4 is stored two's complement."""
    nib = (flat.astype(np.int64) & 0x0F).astype(np.uint8)
    if nib.size % 2:
        nib = np.append(nib, np.uint8(0))
    return (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8).tobytes()


_ENCODERS = {"bf16": _encode_bf16, "u1": _encode_u1, "u4": _encode_nibbles, "i4": _encode_nibbles}


def normalise(value, element_type: str) -> np.ndarray:
    """``value`` as ``read_ir`` would decode it after a write: encoded, decoded, read-only."""
    arr = np.asarray(value)
    out = elements.decode(encode(arr, element_type), element_type, arr.shape)
    out.flags.writeable = False
    return out


class BlobTable:
    """The ``.bin`` under construction: ``add`` returns ``(offset, size)``, sharing equal blobs."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._offsets: dict[bytes, int] = {}
        self._size = 0

    def add(self, blob: bytes) -> tuple[int, int]:
        if not blob:
            return 0, 0
        offset = self._offsets.get(blob)
        if offset is None:
            offset = self._offsets[blob] = self._size
            self._chunks.append(blob)
            self._size += len(blob)
        return offset, len(blob)

    def getvalue(self) -> bytes:
        return b"".join(self._chunks)
