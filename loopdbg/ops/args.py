"""A kernel's arguments: its attributes, parsed once at plan time, and its shape-like inputs.

Every family module reads its arguments with these, so that a bad attribute reads the same in every
error message (``keep_dims='maybe' is not a boolean``): the registry turns the ValueError or
KeyError raised here into one sentence naming the layer. OpenVINO attributes are the ``<data>``
strings of the IR; ONNX attributes are the Python values the ONNX reader made of them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import opset_number

# ---- OpenVINO attributes (plan time) ---------------------------------------------------------


def attr(layer: Layer, name: str, default: str | None = None) -> str:
    """The raw attribute string; KeyError naming the attribute when it is missing and required."""
    value = layer.data.get(name, default)
    if value is None:
        raise KeyError(f"attribute '{name}' is missing")
    return value.strip()


def flag(layer: Layer, name: str, default: bool = False) -> bool:
    text = attr(layer, name, "true" if default else "false").lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0", ""):
        return False
    raise ValueError(f"{name}={text!r} is not a boolean")


def int_attr(layer: Layer, name: str, default: int | None = None) -> int:
    text = attr(layer, name, None if default is None else str(default))
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer") from None


def float_attr(layer: Layer, name: str, default: float | None = None) -> float:
    text = attr(layer, name, None if default is None else repr(default))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None


def int_list(layer: Layer, name: str, default: Sequence[int] = ()) -> list[int]:
    """A comma-separated list (``"0, 1"`` or ``"0,1"``); an empty string is an empty list."""
    text = layer.data.get(name)
    if text is None:
        return list(default)
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a list of integers") from None


def choice(layer: Layer, name: str, allowed: Sequence[str], default: str | None = None) -> str:
    """A lowercase keyword attribute that must be one of ``allowed``."""
    text = attr(layer, name, default).lower()
    if text not in allowed:
        raise ValueError(f"{name}={text!r} is not one of {', '.join(allowed)}")
    return text


def dtype_attr(layer: Layer, name: str, default: str | None = None) -> np.dtype:
    """An element-type attribute (``destination_type``, ``output_type`` ...) as a numpy dtype."""
    text = attr(layer, name, default)
    dtype = elements.numpy_dtype(text)
    if dtype is None:
        raise ValueError(f"{name}={text!r} names no concrete element type")
    return dtype


def index_dtype(layer: Layer, name: str, default: str, allowed=("i32", "i64")) -> np.dtype:
    """An integer output type restricted to ``allowed`` (ShapeOf, TopK, NonZero)."""
    text = attr(layer, name, default)
    if elements.canonical(text) not in allowed:
        raise ValueError(f"{name}={text!r} must be one of {', '.join(allowed)}")
    return elements.numpy_dtype(text)


# ---- ONNX attributes (plan time) -------------------------------------------------------------


def a(layer: Layer, name: str, default: Any = None) -> Any:
    """An ONNX attribute as read by the ONNX reader (int, float, str, list, array)."""
    return layer.data.get(name, default)


def opset(layer: Layer) -> int:
    """The ONNX opset version of a layer (``opset13`` -> 13): ``registry.opset_number``'s, which
    keeps its answer per spelling (a decoder's body asks it of ~500 layers, all of one or two
    spellings, and its layers were looked up under it already). A spelling it does not know,
    ``opset`` alone or none, is 1 here; a bad one (``opsetX``) a ValueError."""
    version = layer.version
    try:
        return opset_number(version)
    except ValueError:
        return int(str(version).removeprefix("opset") or 1)


def declared_outputs(layer: Layer) -> int:
    """As many as the layer declares."""
    return max(len(layer.outputs), 1)


# ---- shape-like inputs (run time) ------------------------------------------------------------


def ints(values) -> list[int]:
    """A shape-like input (scalar or 1-D integer array) as a list of Python ints."""
    return np.asarray(values).reshape(-1).tolist()


def ints_of(value) -> list[int]:
    """Any integer-valued input or attribute, flattened, as Python ints (ONNX axes, pads)."""
    if type(value) is np.ndarray and value.dtype == np.int64:     # the usual case, directly
        return value.reshape(-1).tolist()
    return np.asarray(value).reshape(-1).astype(np.int64).tolist()


def scalar(value) -> int:
    """A scalar integer input (an axis, k, depth); a one-element array is accepted too."""
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise ValueError(f"expected a scalar, got shape {np.shape(value)}")
    return int(flat[0])


def axis_of(axis: int, rank: int) -> int:
    """``axis`` normalised to [0, rank); ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def wrap_negative(indices: np.ndarray, dims) -> np.ndarray:
    """``indices`` with negative entries counted from the end of ``dims`` (one per last axis).
    IndexError for one below ``-dim``: wrapped once, numpy would count it from the end again
    and read or write the wrong element (-5 on an axis of 4 at 3). One of ``dim`` or more is
    left to the indexing that follows, which refuses it."""
    if indices.size and indices.min() < 0:
        sizes = np.asarray(dims, dtype=indices.dtype)
        wrapped = np.where(indices < 0, indices + sizes, indices)
        if wrapped.min() < 0:
            bad = np.argwhere(wrapped < 0)[0]
            index = indices[tuple(bad)]
            size = sizes if sizes.ndim == 0 else sizes[bad[-1]]
            raise IndexError(f"index {int(index)} is out of range for an axis of {int(size)}")
        return wrapped
    return indices


# ---- kernels specialised on constant inputs (see registry's docstring) -----------------------


def const_input(consts, k: int) -> np.ndarray | None:
    """The constant value of input ``k`` from a factory's ``consts``, or None."""
    if consts is None or k >= len(consts):
        return None
    return consts[k]


class SharedMemo:
    """What kernels compute from their constant parameters and an input's shape, kept for every
    kernel of the same parameters: a generation loop without a KV cache shows each layer a new
    shape at each iteration, so a kernel's own memo never hits (each of a 24-layer decoder's
    Reshapes sees each shape once), while the 24 layers that share the parameters see it 24
    times. The kernels of the same ``params`` share one table, ``table(params)``, taken at plan
    time: a kernel looks an input's shape up there, and on a miss ``remember``s what it works
    out, so the first of a decoder's layers to see a new shape works it out and the others find
    it with one look-up (no memo of their own to miss first, no ``(params, key)`` to hash). A
    table starts afresh at ``limit`` entries; the set of tables at ``most`` (a kernel keeps the
    table it has). ``through`` serves a kernel that keeps its own memo as well, looked at first."""

    __slots__ = ("found", "limit", "most")

    def __init__(self, limit: int = 256, most: int = 1024):
        self.found: dict = {}       # params -> its table, key -> value
        self.limit = limit
        self.most = most

    def table(self, params) -> dict:
        """The table of every kernel of ``params`` (hashable)."""
        table = self.found.get(params)
        if table is None:
            if len(self.found) >= self.most:
                self.found.clear()
            table = self.found[params] = {}
        return table

    def remember(self, table: dict, key, make: Callable):
        """A miss of ``key`` in ``table``: ``make(key)`` (which may raise, keeping nothing), kept
        there."""
        value = make(key)
        if len(table) >= self.limit:
            table.clear()
        table[key] = value
        return value

    def through(self, own: dict, params, key, make: Callable, limit: int = 64):
        """A kernel's miss in its memo ``own``: the value of ``key`` in the table of ``params``,
        else ``make(key)`` kept there; kept in ``own`` too (while it has fewer than ``limit``
        entries)."""
        table = self.table(params)
        value = table.get(key)
        if value is None:
            value = self.remember(table, key, make)
        if len(own) < limit:
            own[key] = value
        return value


SHAPES = SharedMemo()   # params -> shape -> what follows from them: reshaper, splits, MVN's axes


def reshaper(out_shape: Callable[[tuple], tuple], limit: int = 64, params=None) -> Callable:
    """A kernel ``x, *constants -> x.reshape(out_shape(x.shape))``, with ``out_shape`` (a pure
    function that raises ValueError as the general kernel would) computed once per input shape.
    ``params``, when given, is a hashable description of everything ``out_shape`` reads besides
    the shape (the op and its constants): the shapes are then kept in the table of ``params``
    in ``SHAPES``, with those of every kernel of the same ``params`` (and ``SHAPES``' limit),
    else in the kernel's own memo, up to ``limit``."""
    memo: dict = {} if params is None else SHAPES.table(params)
    remember = SHAPES.remember

    def make(shape: tuple) -> tuple:
        return tuple(out_shape(shape))

    def kernel(x, *_):
        try:
            shape = x.shape
        except AttributeError:
            x = np.asarray(x)
            shape = x.shape
        out = memo.get(shape)
        if out is None:
            if params is None:
                out = make(shape)
                if len(memo) < limit:
                    memo[shape] = out
            else:
                out = remember(memo, shape, make)
        return x.reshape(out)

    return kernel
