"""Shape rules: the element types and shapes of an op's outputs, from those of its inputs.

The model builder (``loopdbg.builder``) declares every port it writes. OpenVINO ignores declared
port dims and precisions (it re-infers them), but loopdbg does not always: a Loop that runs zero
times takes the shape and dtype of an empty concatenated output from its body Result's declared
port. So built models should declare what they can, and say "unknown" honestly otherwise.

A ``TensorInfo`` is ``(type, shape)``: ``type`` an IR element type name or ``None`` (unknown),
``shape`` a tuple with -1 for a dynamic dim, or ``None`` for a dynamic rank.

A rule is a pure function ``rule(layer, inputs, consts)`` registered with its kernel (``op(...,
shape=rule)``): ``layer`` is the layer as it will be written (type, version and ``<data>`` strings,
read with the same parsers as the kernel's; no ports yet), ``inputs`` one TensorInfo per input,
``consts`` the value of each input that is a Constant, else None. It returns one TensorInfo, a list
of them (one per output), or None for "unknown", and may raise ValueError, KeyError ... for the
same. The rules many ops share are here; an op's own rule is next to its kernel.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import default_version, lookup


class TensorInfo(NamedTuple):
    type: str | None
    shape: tuple[int, ...] | None


UNKNOWN = TensorInfo(None, None)

_UNKNOWN_WHEN = (ValueError, IndexError, TypeError, KeyError, OverflowError, ZeroDivisionError)


def infer(op_type: str, inputs: Sequence[TensorInfo], attrs: dict[str, str],
          consts: Sequence[np.ndarray | None], n_out: int,
          version: str | None = None) -> list[TensorInfo]:
    """The ``n_out`` output infos of an op; never raises (a rule that fails means "unknown").

    ``version`` defaults to the builder's; an op without a kernel or a rule, and the outputs a rule
    leaves out, get ``fallback``.
    """
    version = version or default_version(op_type) or "opset1"
    spec = lookup(op_type, version)
    if spec is not None and spec.shape is not None:
        layer = Layer(id=-1, name=op_type, type=op_type, version=version, data=dict(attrs))
        try:
            out = spec.shape(layer, list(inputs), list(consts))
        except _UNKNOWN_WHEN:
            out = None
        if out is not None:
            out = list(out) if isinstance(out, list) else [out]
            return (out + [fallback(inputs)] * n_out)[:n_out]
    return [fallback(inputs)] * n_out


def fallback(inputs: Sequence[TensorInfo]) -> TensorInfo:
    """What is declared without a rule: the first input's type and rank, every dim dynamic."""
    return same_rank(inputs[0]) if inputs else UNKNOWN


# ---- helpers ---------------------------------------------------------------------------------


def broadcast(*shapes: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """Numpy broadcasting with dynamic dims: -1 against n > 1 gives n, against 1 or -1 gives -1."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        known = {d for d in dims if d not in (1, -1)}
        if len(known) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast")
        out.append(known.pop() if known else (-1 if -1 in dims else 1))
    return tuple(out)


def axes_of(value: np.ndarray | None, rank: int | None) -> list[int] | None:
    """A constant axes input, normalised and sorted; None when the value or the rank is unknown."""
    if value is None or rank is None:
        return None
    return sorted({int(a) + rank if int(a) < 0 else int(a) for a in np.ravel(value)})


def dims(value: np.ndarray | None) -> tuple[int, ...] | None:
    """A constant shape-like input as a tuple of ints, or None."""
    return None if value is None else tuple(int(d) for d in np.ravel(value))


def same_rank(info: TensorInfo) -> TensorInfo:
    """``info``'s type and rank with every dim dynamic (when only the rank is known)."""
    return TensorInfo(info.type, None if info.shape is None else (-1,) * len(info.shape))


# ---- rules many ops share --------------------------------------------------------------------


def same(layer: Layer, ins, consts) -> TensorInfo:
    """The output is like the first input (element-wise unary ops, Scatter*, CumSum ...)."""
    return ins[0]


def by_slicing(layer: Layer, ins, consts) -> TensorInfo:
    """For ops that select from input 0 (StridedSlice, Slice): run the op's own kernel on an array
    of input 0's shape that takes no memory (a zero broadcast to it) and the other inputs'
    constant values. The rank is unknown unless that shape is static and the others constant."""
    shape = ins[0].shape
    if shape is None or -1 in shape or any(c is None for c in consts[1:]):
        return TensorInfo(ins[0].type, None)
    dtype = (elements.numpy_dtype(ins[0].type) if ins[0].type else None) or np.float32
    kernel = lookup(layer.type, layer.version).factory(layer)
    return TensorInfo(ins[0].type, np.shape(kernel(np.broadcast_to(np.zeros((), dtype), shape),
                                                   *consts[1:])))
