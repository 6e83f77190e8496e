"""Model state: ReadValue and Assign (opsets 3 and 6).

A variable lives for one run: each run starts with no variable set, as a fresh OpenVINO infer
request does. The run's ``RunContext`` holds the values (``ctx.variables``, by variable id), so a
plan that runs twice, or two runs at once, never share them; the kernels here are the ones the
engine calls with the context first (``needs_context``).

* ReadValue gives the variable's value: the one its last Assign in this run gave (in a loop body,
  the previous iteration's, as OpenVINO's CPU plugin does), else its initial value: input 0
  (ReadValue-3, and -6 when connected), or zeros of ``variable_shape`` and ``variable_type``
  (ReadValue-6 without an input; the shape must then be static).
* Assign sets the variable and passes its input on. Assign layers are run although no Result
  reads them (the engine treats them as sinks); they run after the layers the Results need.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, same


def _variable_id(layer: Layer) -> str:
    name = attr(layer, "variable_id")
    if not name:
        raise ValueError("variable_id is empty")
    return name


def _static_shape(text: str) -> tuple[int, ...] | None:
    """``variable_shape`` ("1,2", "[1,2]", "?,2", "" for a scalar) as ints, or None if dynamic."""
    dims = [d.strip() for d in text.strip().strip("[]").split(",") if d.strip()]
    out = []
    for d in dims:
        if d in ("?", "-1") or ".." in d:
            return None
        out.append(int(d))
    return tuple(out)


def _read_value_shape(layer: Layer, ins, consts):
    """Like the initial value; without one, variable_type and variable_shape."""
    if ins:
        return ins[0]
    shape = _static_shape(layer.data.get("variable_shape", ""))
    type_text = layer.data.get("variable_type")
    known = type_text not in (None, "dynamic", "undefined")
    return TensorInfo(elements.canonical(type_text) if known else None, shape)


def _read_value_kernel(layer: Layer, allow_no_input: bool):
    name = _variable_id(layer)
    zeros = None
    if allow_no_input:
        type_text = layer.data.get("variable_type", "dynamic")
        dtype = elements.numpy_dtype(type_text) if type_text not in ("dynamic", "undefined") \
            else None
        shape = _static_shape(layer.data.get("variable_shape", "?"))
        if dtype is not None and shape is not None:
            zeros = (shape, dtype)

    def read_value(ctx, init=None):
        if name in ctx.variables:
            return ctx.variables[name]
        if init is not None:
            return init
        if zeros is None:
            raise ValueError(f"variable '{name}' has no initial value and its variable_type / "
                             f"variable_shape are not static")
        return np.zeros(*zeros)

    read_value.needs_context = True
    return read_value


@op("ReadValue", versions=(3,), shape=_read_value_shape)
def _read_value3(layer: Layer):
    kernel = _read_value_kernel(layer, False)

    def read_value3(ctx, init):
        return kernel(ctx, init)

    read_value3.needs_context = True
    return read_value3


@op("ReadValue", versions=(6,), shape=_read_value_shape)
def _read_value6(layer: Layer):
    return _read_value_kernel(layer, True)


def _assign_kernel(layer: Layer):
    name = _variable_id(layer)

    def assign(ctx, value):
        ctx.variables[name] = value
        return value

    assign.needs_context = True
    return assign


@op("Assign", versions=(3,), shape=same)
def _assign3(layer: Layer):
    return _assign_kernel(layer)


@op("Assign", versions=(6,), shape=same)
def _assign6(layer: Layer):
    return _assign_kernel(layer)
