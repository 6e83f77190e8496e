"""ONNX sequences and optionals: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence, Optional, OptionalHasElement,
OptionalGetElement.

A sequence value is a Python ``list`` of arrays of one element type, as onnx.reference and
onnxruntime's Python API give them; an optional value is its content, or ``None`` when empty.
These kernels never change a list they are given: each returns a new one, so an event that kept
an iteration's sequence still shows it after the next iteration appended to its successor. This
is what ``torch.onnx.export`` writes for a loop that appends to a Python list (SequenceEmpty,
SequenceInsert in a Loop body, ConcatFromSequence after it).

Positions may be negative (counted from the end), as ONNX says; out of range is an error naming
the length, never a silent clamp.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import SHAPES, a, axis_of, scalar
from loopdbg.ops.concat_split import pieces, slice_keys
from loopdbg.ops.registry import op


def _sequence(s, what: str = "input") -> list:
    if not isinstance(s, list):
        raise ValueError(f"the {what} is a {_kind(s)}, not a sequence")
    return s


def _kind(v) -> str:
    if v is None:
        return "empty optional"
    if isinstance(v, list):
        return f"sequence of {len(v)} tensors"
    return f"tensor of shape {np.shape(v)}"


def _check_type(s: list, t) -> None:
    if s and np.asarray(t).dtype != np.asarray(s[0]).dtype:
        raise ValueError(f"cannot put a {np.asarray(t).dtype} tensor in a sequence of "
                         f"{np.asarray(s[0]).dtype} tensors")


def _position(pos, n: int, *, end_ok: bool) -> int:
    """``pos`` (a scalar input) as an index into a sequence of length ``n``."""
    p = scalar(pos)
    top = n if end_ok else n - 1
    if not -n <= p <= top:
        raise ValueError(f"position {p} is out of range for a sequence of length {n} "
                         f"(allowed: {-n}..{top})")
    return p + n if p < 0 else p


@op("onnx.SequenceEmpty", versions=(11,))
def _sequence_empty(layer: Layer):
    return lambda: []


@op("onnx.SequenceConstruct", versions=(11,))
def _sequence_construct(layer: Layer):
    def construct(*tensors):
        out: list = []
        for t in tensors:
            _check_type(out, t)
            out.append(t)
        return out

    return construct


@op("onnx.SequenceInsert", versions=(11,))
def _sequence_insert(layer: Layer):
    def insert(s, t, pos=None):
        s = _sequence(s)
        _check_type(s, t)
        if pos is None:
            return s + [t]
        k = _position(pos, len(s), end_ok=True)
        return s[:k] + [t] + s[k:]

    return insert


@op("onnx.SequenceAt", versions=(11,))
def _sequence_at(layer: Layer):
    def at(s, pos):
        kind = type(pos)
        if type(s) is list and (kind is np.int64 or kind is np.ndarray and pos.size == 1
                                and pos.dtype.kind in "iu"):    # one position, as exported
            p = pos.item()
            if -len(s) <= p < len(s):
                return s[p]
        s = _sequence(s)
        return s[_position(pos, len(s), end_ok=False)]

    return at


@op("onnx.SequenceErase", versions=(11,))
def _sequence_erase(layer: Layer):
    def erase(s, pos=None):
        s = _sequence(s)
        if not s:
            raise ValueError("cannot erase from an empty sequence")
        k = len(s) - 1 if pos is None else _position(pos, len(s), end_ok=False)
        return s[:k] + s[k + 1:]

    return erase


@op("onnx.SequenceLength", versions=(11,))
def _sequence_length(layer: Layer):
    return lambda s: np.array(len(_sequence(s)), dtype=np.int64)


@op("onnx.ConcatFromSequence", versions=(11,))
def _concat_from_sequence(layer: Layer):
    if a(layer, "axis") is None:
        raise KeyError("attribute 'axis' is missing")
    axis, new_axis = int(a(layer, "axis")), bool(a(layer, "new_axis", 0))

    def concat(s):
        s = _sequence(s)
        if not s:
            raise ValueError("cannot concatenate an empty sequence")
        rank = np.ndim(s[0])
        if new_axis:
            return np.stack(s, axis=axis_of(axis, rank + 1))
        return np.concatenate(s, axis=axis_of(axis, rank))

    return concat


@op("onnx.SplitToSequence", versions=(11, 24))
def _split_to_sequence(layer: Layer):
    axis, keepdims = int(a(layer, "axis", 0)), bool(a(layer, "keepdims", 1))
    memo: dict = {}                     # (X's shape, split) -> the slices of its pieces
    through, params = SHAPES.through, ("onnx.SplitToSequence", axis)

    def even_keys(key: tuple) -> tuple:
        shape, step = key
        ax = axis_of(axis, len(shape))
        if step <= 0:
            raise ValueError(f"split {step} is not positive")
        return slice_keys(ax, _even(shape[ax], step))

    def split(x, sizes=None):
        kind = type(sizes)
        if type(x) is np.ndarray and (kind is np.int64 or kind is np.ndarray and not sizes.ndim
                                      and sizes.dtype.kind in "iu"):
            # one piece length, as exporters write it (a head's size, computed in the graph):
            # the slices once per shape and length, for every split of the same axis
            key = (x.shape, int(sizes))
            keys = memo.get(key)
            if keys is None:
                keys = through(memo, params, key, even_keys)
            return [x[k] for k in keys]
        x = np.asarray(x)
        ax = axis_of(axis, x.ndim)
        length = x.shape[ax]
        if sizes is None:
            parts = np.split(x, length, axis=ax) if length else []
            return parts if keepdims else [np.squeeze(p, ax) for p in parts]
        sizes = np.asarray(sizes)
        if sizes.ndim == 0:
            step = int(sizes)
            if step <= 0:
                raise ValueError(f"split {step} is not positive")
            lengths = _even(length, step)
        else:
            lengths = [int(v) for v in sizes.reshape(-1).tolist()]
            if any(v < 0 for v in lengths) or sum(lengths) != length:
                raise ValueError(f"split {lengths} does not add up to the axis length {length}")
        return pieces(x, ax, lengths)

    return split


_EVEN: dict[tuple[int, int], list[int]] = {}


def _even(length: int, step: int) -> list[int]:
    """The lengths of the pieces ``step`` long (the last one shorter) cutting ``length``: a few
    are kept per (length, step), read-only to callers (a decoder cuts the same shapes at every
    iteration)."""
    found = _EVEN.get((length, step))
    if found is None:
        found = [min(step, length - start) for start in range(0, length, step)] or [0]
        if len(found) <= 64:                # (a few pieces: a list per shape is small)
            if len(_EVEN) >= 1024:
                _EVEN.clear()
            _EVEN[(length, step)] = found
    return found


# ---- optionals ---------------------------------------------------------------------------------


@op("onnx.Optional", versions=(15,))
def _optional(layer: Layer):
    """The value itself, or None (an empty optional) when the node has no input."""
    return lambda x=None: x


@op("onnx.OptionalHasElement", versions=(15, 18))
def _optional_has_element(layer: Layer):
    return lambda x=None: np.array(x is not None)


@op("onnx.OptionalGetElement", versions=(15, 18))
def _optional_get_element(layer: Layer):
    def get(x=None):
        if x is None:
            raise ValueError("the optional is empty")
        return x

    return get
