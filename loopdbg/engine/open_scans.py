"""ONNX scan outputs of a loop that ran no iteration, when the file leaves their shape open.

An empty scan output is a stack of no values of the body output's shape. When the file fixes
that shape (a declared shape, shape inference at load, an initializer) ``LoopSpec.empty_concat``
uses it. When it leaves it open, the shape may still follow from this execution's inputs: the
reader kept the body (``onnx_names.BODY_PROTO``), and onnx's shape inference runs on it with the
shapes of the values fed to it (``loopdbg.ir.onnx_infer``). Where even that leaves it open, the
loop's notice says so.
"""

from __future__ import annotations

import numpy as np

from loopdbg.engine.loopspec import LoopSpec, OutputForm
from loopdbg.ir.elements import numpy_dtype
from loopdbg.ir.onnx_names import BODY_PROTO, OPEN_OUTPUTS, OPSETS, SCAN8_STATES


def open_outputs(spec: LoopSpec) -> tuple[int, ...]:
    """The body Result positions of the scan outputs whose shape the file leaves open."""
    return tuple(spec.layer.data.get(OPEN_OUTPUTS, ())) if spec.onnx else ()


def _feeds(spec: LoopSpec, args: tuple, params: list) -> dict[str, tuple]:
    """(shape, dtype) of each body input (and each value read from an enclosing graph) that is
    a tensor in this execution, by its ONNX name."""
    feeds: dict[str, tuple] = {}
    for pos, value in enumerate(params):
        if isinstance(value, np.ndarray) or np.isscalar(value):
            v = np.asarray(value)
            feeds[spec.param_names[pos]] = (v.shape, v.dtype)
    for f in spec.sliced:                    # a slice of a scanned input: without its axis
        x = args[f.ext] if 0 <= f.ext < len(args) else None
        if isinstance(x, np.ndarray) and x.ndim:
            axis = f.axis + x.ndim if f.axis < 0 else f.axis
            if 0 <= axis < x.ndim:
                feeds[spec.param_names[f.pos]] = (x.shape[:axis] + x.shape[axis + 1:], x.dtype)
    if spec.current_iteration is not None:
        feeds[spec.param_names[spec.current_iteration]] = (spec.cur_shape, spec.cur_dtype)
    return feeds


def _scan8_feeds(spec: LoopSpec, args: tuple, body_inputs: list[str]) -> dict[str, tuple]:
    """The feeds of a Scan-8's body, from the inputs of loopdbg's loop over its batch: each
    state without the batch axis, each scanned element without the batch and sequence axes, the
    values read by name as they are."""
    n_in = len(body_inputs)
    n_state = int(spec.layer.data.get(SCAN8_STATES, 0))
    feeds: dict[str, tuple] = {}
    for k, value in enumerate(args):
        if not isinstance(value, np.ndarray):
            continue
        if k < n_in:
            drop = 1 if k < n_state else 2
            if value.ndim >= drop:
                feeds[body_inputs[k]] = (value.shape[drop:], value.dtype)
        elif k < len(spec.param_names):
            feeds[spec.param_names[k]] = (value.shape, value.dtype)
    return feeds


def _types(spec: LoopSpec, body: bytes, feeds: dict) -> list:
    key = tuple(sorted((n, s, str(d)) for n, (s, d) in feeds.items()))
    cache = spec.__dict__.setdefault("_open_scan_types", {})
    types = cache.get(key)
    if types is None:
        from loopdbg.ir.onnx_infer import output_types

        types = output_types(body, spec.layer.data.get(OPSETS, {}), feeds)
        if len(cache) < 64:
            cache[key] = types
    return types


def zero_trip_scans(spec: LoopSpec, args: tuple, params: list
                    ) -> dict[int, tuple[np.ndarray, bool]]:
    """The empty scan outputs (by body Result position) whose element shape this execution's
    inputs fix, wholly or in part, though the file leaves it open, each with whether it is
    wholly fixed (a dim left open is 0); the others are left out."""
    wanted = open_outputs(spec)
    body = spec.layer.data.get(BODY_PROTO)
    if not wanted or not body:
        return {}
    out = {}
    if SCAN8_STATES in spec.layer.data:       # the batch loop of a Scan-8 over a batch of 0
        from loopdbg.ir.onnx_infer import input_names

        names = input_names(body)
        n_state = int(spec.layer.data[SCAN8_STATES])
        types = _types(spec, body, _scan8_feeds(spec, args, names))
        seqs = [a for a in args[n_state:len(names)] if isinstance(a, np.ndarray) and a.ndim > 1]
        length = seqs[0].shape[1] if seqs else None
        for form in spec.concats:
            r = form.result_pos
            state = args[r] if r < n_state else None
            if r not in wanted:
                continue
            if isinstance(state, np.ndarray):          # the states are the initial ones
                out[r] = (state.copy(), True)
            elif r < len(types) and types[r] is not None and length is not None:
                dims, et = types[r]
                out[r] = (np.zeros((0, length) + tuple(max(d, 0) for d in dims),
                                   np.dtype(numpy_dtype(et))), -1 not in dims)
        return out
    types = _types(spec, body, _feeds(spec, args, params))
    for form in spec.concats:
        r = form.result_pos
        if r in wanted and r < len(types) and types[r] is not None:
            dims, et = types[r]
            out[r] = (stacked_empty(form, tuple(max(d, 0) for d in dims),
                                    np.dtype(numpy_dtype(et))), -1 not in dims)
    return out


def stacked_empty(form: OutputForm, dims: tuple[int, ...], dtype) -> np.ndarray:
    """No values of shape ``dims`` stacked on ``form``'s axis."""
    axis = form.axis + len(dims) + 1 if form.axis < 0 else form.axis
    axis = min(max(axis, 0), len(dims))
    return np.zeros(dims[:axis] + (0,) + dims[axis:], dtype)
