"""String tensors: StringTensorUnpack-15 and StringTensorPack-15.

loopdbg holds a string tensor as a numpy unicode array. OpenVINO's strings are bytes: Unpack
encodes each string as UTF-8 and Pack decodes; bytes that are not UTF-8 survive a round trip
(they decode to lone surrogates, Python's ``surrogateescape``), and a numpy bytes array is taken
as it is.

* StringTensorUnpack: ``begins`` and ``ends`` (i32, the input's shape) index each string's bytes
  in ``symbols`` (u8, 1-D), all strings laid end to end in C order.
* StringTensorPack (mode ``begins_ends``): the inverse, one string per begin/end pair.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _encode(s) -> bytes:
    return s if isinstance(s, bytes) else str(s).encode("utf-8", "surrogateescape")


def _unpack_shape(layer: Layer, ins, consts):
    """begins and ends of the input's shape (i32), symbols 1-D (u8)."""
    return [TensorInfo("i32", ins[0].shape), TensorInfo("i32", ins[0].shape),
            TensorInfo("u8", (-1,))]


@op("StringTensorUnpack", versions=(15,), outputs=3, shape=_unpack_shape)
def _unpack(layer: Layer):
    def string_tensor_unpack(strings):
        strings = np.asarray(strings)
        if strings.dtype.kind not in "US":
            raise ValueError(f"the input is not a string tensor (it holds {strings.dtype})")
        pieces = [_encode(s) for s in strings.reshape(-1).tolist()]
        lengths = np.array([len(p) for p in pieces], np.int64)
        ends = np.cumsum(lengths)
        if ends.size and ends[-1] > np.iinfo(np.int32).max:
            raise ValueError("the strings hold more bytes than i32 offsets can index")
        begins = ends - lengths
        symbols = np.frombuffer(b"".join(pieces), np.uint8).copy()
        return (begins.astype(np.int32).reshape(strings.shape),
                ends.astype(np.int32).reshape(strings.shape), symbols)

    return string_tensor_unpack


def _pack_shape(layer: Layer, ins, consts):
    """The shape of begins, of element type string."""
    return TensorInfo("string", ins[0].shape)


@op("StringTensorPack", versions=(15,), shape=_pack_shape)
def _pack(layer: Layer):
    choice(layer, "mode", ("begins_ends",), "begins_ends")

    def string_tensor_pack(begins, ends, symbols):
        begins, ends = np.asarray(begins), np.asarray(ends)
        data = np.asarray(symbols).astype(np.uint8, copy=False).reshape(-1).tobytes()
        if begins.shape != ends.shape:
            raise ValueError(f"begins {begins.shape} and ends {ends.shape} differ in shape")
        b, e = begins.reshape(-1).tolist(), ends.reshape(-1).tolist()
        if any(not 0 <= lo <= hi <= len(data) for lo, hi in zip(b, e)):
            raise ValueError(f"a begin/end pair lies outside the {len(data)} symbols or is "
                             f"reversed")
        texts = [data[lo:hi].decode("utf-8", "surrogateescape") for lo, hi in zip(b, e)]
        width = max((len(t) for t in texts), default=0)
        return np.array(texts, dtype=f"<U{max(width, 1)}").reshape(begins.shape)

    return string_tensor_pack
