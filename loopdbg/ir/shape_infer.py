"""Output element types and shapes of common ops, so the builder can declare ports.

OpenVINO ignores declared port dims and precisions (it re-infers them), but loopdbg does not
always: a Loop that runs zero times takes the shape and dtype of an empty concatenated output from
its body Result's declared port. So built models should declare what they can, and say "unknown"
honestly otherwise.

A ``TensorInfo`` is ``(type, shape)``: ``type`` an IR element type name or ``None`` (unknown),
``shape`` a tuple with -1 for a dynamic dim, or ``None`` for a dynamic rank. The rules cover the ops
loop bodies are made of; any other op gets the element type and rank of its first input with every
dim dynamic. Constant inputs (axes, target shapes) are passed in as arrays where known.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np


class TensorInfo(NamedTuple):
    type: str | None
    shape: tuple[int, ...] | None


UNKNOWN = TensorInfo(None, None)

_BINARY = ("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "Power", "FloorMod",
           "Mod", "SquaredDifference", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
_COMPARE = ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
            "LogicalOr", "LogicalXor")
_SAME = ("Relu", "Tanh", "Sigmoid", "Exp", "Log", "Sqrt", "Abs", "Negative", "Floor", "Ceiling",
         "Sin", "Cos", "Tan", "Sinh", "Cosh", "Asin", "Acos", "Atan", "Erf", "Gelu", "Swish",
         "HSwish", "HSigmoid", "Mish", "SoftPlus", "SoftSign", "Clamp", "Elu", "Selu", "Sign",
         "Softmax", "LogSoftmax", "Round", "PRelu", "HardSigmoid", "CumSum", "ReverseSequence",
         "Roll", "NormalizeL2", "MVN", "BitwiseNot", "Identity", "Result")
_PREDICATES = ("LogicalNot", "IsNaN", "IsInf", "IsFinite")
_REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
           "ReduceL2", "ReduceLogicalAnd", "ReduceLogicalOr")


def infer(op_type: str, inputs: Sequence[TensorInfo], attrs: dict[str, str],
          consts: Sequence[np.ndarray | None], n_out: int) -> list[TensorInfo]:
    """The ``n_out`` output infos of an op; never raises (a rule that fails means "unknown")."""
    rule = _RULES.get(op_type)
    if rule is not None:
        try:
            out = rule(list(inputs), attrs, list(consts))
        except (ValueError, IndexError, TypeError, KeyError, OverflowError):
            out = None
        if out is not None:
            out = list(out) if isinstance(out, list) else [out]
            return (out + [_fallback(inputs)] * n_out)[:n_out]
    return [_fallback(inputs)] * n_out


def _fallback(inputs: Sequence[TensorInfo]) -> TensorInfo:
    if not inputs:
        return UNKNOWN
    first = inputs[0]
    return TensorInfo(first.type, None if first.shape is None else (-1,) * len(first.shape))


# ----------------------------------------------------------------------------------------------
# Shape helpers


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


def _axes(value: np.ndarray | None, rank: int | None) -> list[int] | None:
    if value is None or rank is None:
        return None
    return sorted({int(a) + rank if int(a) < 0 else int(a) for a in np.ravel(value)})


def _attr_bool(attrs: dict[str, str], key: str, default: bool = False) -> bool:
    return attrs.get(key, str(default)).strip().lower() == "true"


def _attr_ints(attrs: dict[str, str], key: str) -> list[int]:
    return [int(p) for p in attrs.get(key, "").split(",") if p.strip()]


# ----------------------------------------------------------------------------------------------
# Rules: each takes (inputs, attrs, consts) and returns one TensorInfo or a list of them.


def _binary(ins, attrs, consts):
    return TensorInfo(ins[0].type or ins[1].type, _broadcast_attr(ins[:2], attrs))


def _compare(ins, attrs, consts):
    return TensorInfo("boolean", _broadcast_attr(ins[:2], attrs))


def _broadcast_attr(ins, attrs):
    if attrs.get("auto_broadcast", "numpy").lower() == "none":
        return next((i.shape for i in ins if i.shape is not None), None)
    return broadcast(*(i.shape for i in ins))


def _same(ins, attrs, consts):
    return ins[0]


def _predicate(ins, attrs, consts):
    return TensorInfo("boolean", ins[0].shape)


def _select(ins, attrs, consts):
    return TensorInfo(ins[1].type or ins[2].type, broadcast(*(i.shape for i in ins[:3])))


def _convert(ins, attrs, consts):
    return TensorInfo(attrs["destination_type"], ins[0].shape)


def _convert_like(ins, attrs, consts):
    return TensorInfo(ins[1].type, ins[0].shape)


def _shape_of(ins, attrs, consts):
    rank = None if ins[0].shape is None else len(ins[0].shape)
    return TensorInfo(attrs.get("output_type", "i64"), (-1 if rank is None else rank,))


def _squeeze(ins, attrs, consts):
    shape = ins[0].shape
    if shape is None:
        return TensorInfo(ins[0].type, None)
    if len(ins) < 2:
        if -1 in shape:
            return TensorInfo(ins[0].type, None)
        return TensorInfo(ins[0].type, tuple(d for d in shape if d != 1))
    axes = _axes(consts[1], len(shape))
    if axes is None:
        return TensorInfo(ins[0].type, None)
    return TensorInfo(ins[0].type, tuple(d for k, d in enumerate(shape) if k not in axes))


def _unsqueeze(ins, attrs, consts):
    shape = ins[0].shape
    if shape is None or consts[1] is None:
        return TensorInfo(ins[0].type, None)
    axes = _axes(consts[1], len(shape) + np.size(consts[1]))
    out, rest = [], iter(shape)
    for k in range(len(shape) + len(axes)):
        out.append(1 if k in axes else next(rest))
    return TensorInfo(ins[0].type, tuple(out))


def _reshape(ins, attrs, consts):
    target = consts[1]
    if target is None:
        n = ins[1].shape[0] if ins[1].shape and ins[1].shape[0] >= 0 else None
        return TensorInfo(ins[0].type, None if n is None else (-1,) * n)
    shape = ins[0].shape
    out = [int(d) for d in np.ravel(target)]
    if _attr_bool(attrs, "special_zero"):
        out = [(shape[k] if shape is not None else -1) if d == 0 else d
               for k, d in enumerate(out)]
    if out.count(-1) == 1 and shape is not None and -1 not in shape:
        known = int(np.prod([d for d in out if d != -1]))
        if known:
            out[out.index(-1)] = int(np.prod(shape)) // known
    return TensorInfo(ins[0].type, tuple(out))


def _concat(ins, attrs, consts):
    shapes = [i.shape for i in ins]
    known = [s for s in shapes if s is not None]
    if not known:
        return TensorInfo(ins[0].type, None)
    rank = len(known[0])
    axis = int(attrs.get("axis", "0"))
    axis = axis + rank if axis < 0 else axis
    out = list(known[0])
    for k in range(rank):
        if k != axis:
            out[k] = next((s[k] for s in known if s[k] >= 0), -1)
    out[axis] = -1 if len(known) < len(shapes) or any(s[axis] < 0 for s in known) \
        else sum(s[axis] for s in known)
    return TensorInfo(ins[0].type, tuple(out))


def _matmul(ins, attrs, consts):
    a, b = ins[0].shape, ins[1].shape
    if a is None or b is None:
        return TensorInfo(ins[0].type, None)
    a, b = list(a), list(b)
    if len(a) >= 2 and _attr_bool(attrs, "transpose_a"):
        a[-1], a[-2] = a[-2], a[-1]
    if len(b) >= 2 and _attr_bool(attrs, "transpose_b"):
        b[-1], b[-2] = b[-2], b[-1]
    a_vec, b_vec = len(a) == 1, len(b) == 1
    a2 = [1] + a if a_vec else a
    b2 = b + [1] if b_vec else b
    batch = broadcast(tuple(a2[:-2]), tuple(b2[:-2]))
    out = list(batch) + [a2[-2], b2[-1]]
    if b_vec:
        out.pop(-1)
    if a_vec:
        out.pop(-2 if not b_vec else -1)
    return TensorInfo(ins[0].type, tuple(out))


def _reduce(ins, attrs, consts):
    shape = ins[0].shape
    axes = _axes(consts[1], None if shape is None else len(shape))
    if axes is None:
        return TensorInfo(ins[0].type, None)
    keep = _attr_bool(attrs, "keep_dims")
    out = [1 if k in axes else d for k, d in enumerate(shape)] if keep else \
        [d for k, d in enumerate(shape) if k not in axes]
    return TensorInfo(ins[0].type, tuple(out))


def _gather(ins, attrs, consts):
    data, idx = ins[0].shape, ins[1].shape
    if data is None or idx is None or consts[2] is None:
        return TensorInfo(ins[0].type, None)
    axis = int(np.ravel(consts[2])[0])
    axis = axis + len(data) if axis < 0 else axis
    batch = int(attrs.get("batch_dims", "0"))
    batch = batch + len(idx) if batch < 0 else batch
    return TensorInfo(ins[0].type, tuple(data[:axis]) + tuple(idx[batch:]) + tuple(data[axis + 1:]))


def _transpose(ins, attrs, consts):
    shape = ins[0].shape
    if shape is None or consts[1] is None:
        return TensorInfo(ins[0].type, None if shape is None else (-1,) * len(shape))
    order = [int(a) for a in np.ravel(consts[1])] or list(range(len(shape)))[::-1]
    return TensorInfo(ins[0].type, tuple(shape[a] for a in order))


def _broadcast_op(ins, attrs, consts):
    target = consts[1]
    mode = attrs.get("mode", "numpy").lower()
    if target is None:
        n = ins[1].shape[0] if ins[1].shape and ins[1].shape[0] >= 0 else None
        return TensorInfo(ins[0].type, None if n is None or mode == "bidirectional"
                          else (-1,) * n)
    target = tuple(int(d) for d in np.ravel(target))
    if mode == "bidirectional":
        return TensorInfo(ins[0].type, broadcast(ins[0].shape, target))
    return TensorInfo(ins[0].type, target)


def _range(ins, attrs, consts):
    out_type = attrs.get("output_type") or ins[0].type
    if all(c is not None for c in consts[:3]):
        start, stop, step = (np.ravel(c)[0].item() for c in consts[:3])
        return TensorInfo(out_type, (len(np.arange(start, stop, step)),))
    return TensorInfo(out_type, (-1,))


def _split(ins, attrs, consts):
    n = int(attrs["num_splits"])
    shape = ins[0].shape
    axes = _axes(consts[1], None if shape is None else len(shape))
    if axes is None:
        return [TensorInfo(ins[0].type, None if shape is None else (-1,) * len(shape))] * n
    out = list(shape)
    out[axes[0]] = shape[axes[0]] // n if shape[axes[0]] >= 0 else -1
    return [TensorInfo(ins[0].type, tuple(out))] * n


def _variadic_split(ins, attrs, consts):
    shape = ins[0].shape
    axes = _axes(consts[1], None if shape is None else len(shape))
    if axes is None or consts[2] is None:
        return None
    lengths = [int(d) for d in np.ravel(consts[2])]
    if -1 in lengths and shape[axes[0]] >= 0:
        lengths[lengths.index(-1)] = shape[axes[0]] - (sum(lengths) + 1)
    outs = []
    for n in lengths:
        dims = list(shape)
        dims[axes[0]] = n
        outs.append(TensorInfo(ins[0].type, tuple(dims)))
    return outs


def _cell(ins, attrs, consts):
    """LSTMCell / GRUCell / RNNCell: every output is [batch, hidden_size]."""
    batch = ins[0].shape[0] if ins[0].shape else -1
    hidden = int(attrs["hidden_size"])
    return [TensorInfo(ins[0].type, (batch, hidden))] * 2


def _topk(ins, attrs, consts):
    shape = ins[0].shape
    index_type = attrs.get("index_element_type", "i32")
    if shape is None:
        return [TensorInfo(ins[0].type, None), TensorInfo(index_type, None)]
    axis = int(attrs["axis"])
    axis = axis + len(shape) if axis < 0 else axis
    out = list(shape)
    out[axis] = int(np.ravel(consts[1])[0]) if consts[1] is not None else -1
    return [TensorInfo(ins[0].type, tuple(out)), TensorInfo(index_type, tuple(out))]


def _tile(ins, attrs, consts):
    shape, reps = ins[0].shape, consts[1]
    if shape is None or reps is None:
        return TensorInfo(ins[0].type, None)
    reps = [int(r) for r in np.ravel(reps)]
    rank = max(len(shape), len(reps))
    shape = (1,) * (rank - len(shape)) + tuple(shape)
    reps = [1] * (rank - len(reps)) + reps
    return TensorInfo(ins[0].type, tuple(-1 if d < 0 else d * r for d, r in zip(shape, reps)))


_RULES: dict[str, Callable] = {
    **{t: _binary for t in _BINARY},
    **{t: _compare for t in _COMPARE},
    **{t: _same for t in _SAME},
    **{t: _predicate for t in _PREDICATES},
    **{t: _reduce for t in _REDUCE},
    "Select": _select, "Convert": _convert, "ConvertLike": _convert_like, "ShapeOf": _shape_of,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Reshape": _reshape, "Concat": _concat,
    "MatMul": _matmul, "Gather": _gather, "Transpose": _transpose, "Broadcast": _broadcast_op,
    "Range": _range, "Split": _split, "VariadicSplit": _variadic_split, "LSTMCell": _cell,
    "GRUCell": _cell, "RNNCell": _cell, "TopK": _topk, "Tile": _tile,
}
