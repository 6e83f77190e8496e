"""The mode of a loop (for, for-with-condition, while, do-while, infinite, tensor-iterator).

Decided from the model: whether the trip count is given (a constant >= 0), and whether the
execution condition and the body condition are constant true or computed. When the trip count or
the execution condition comes from a model input, the mode depends on the inputs: with a
``LoopStarted`` event (the values of an actual run) it is decided from those.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.trip import UNBOUNDED

FOR, FOR_COND, WHILE, DO_WHILE, INFINITE, TI = (
    "for", "for-with-condition", "while", "do-while", "infinite", "tensor-iterator")


@dataclass(frozen=True)
class Mode:
    """How a loop runs (its mode), told from its trip count and conditions."""

    mode: str
    trip_count: int | None | str       # int, None (no limit) or "input" (not known without inputs)
    execution_condition: bool | str    # True/False, "computed" or "input"
    body_condition: bool | str         # True/False or "computed"
    depends_on_inputs: bool = False

    def __str__(self) -> str:
        return self.mode


def _constant(graph, layer_id: int, port: int, depth: int = 0):
    """The constant value feeding (layer_id, port), through Convert/Identity-like layers; else None."""
    if graph is None or depth > 8:
        return None
    src = graph.producer(layer_id, port)
    if src is None:
        return None
    layer = graph.layers.get(src[0])
    if layer is None:
        return None
    if layer.type == "Constant":
        return np.asarray(layer.value)
    if layer.type in ("Convert", "Identity", "Squeeze", "Unsqueeze", "Reshape", "onnx.Identity"):
        inner = _constant(graph, layer.id, 0, depth + 1)
        if inner is None:
            return None
        if layer.type == "Convert":
            return inner.astype(bool) if layer.data.get("destination_type") == "boolean" else inner
        return inner
    return None


def input_kind(spec: LoopSpec, port: int):
    """For Loop input ``port``: its constant value, "input" (a model input) or "computed"."""
    graph = getattr(spec, "parent_graph", None)
    if graph is None:
        return "computed"
    if graph.producer(spec.layer.id, port) is None:
        return None                      # unconnected (draft Loop-5): no limit / runs
    value = _constant(graph, spec.layer.id, port)
    if value is not None and value.size == 1:
        return value.reshape(()).item()
    src = graph.producer(spec.layer.id, port)
    if graph.layers[src[0]].type == "Parameter":
        return "input"
    return "computed"


def body_condition(spec: LoopSpec):
    """True/False when the body condition Result is fed by a constant, else "computed"."""
    if spec.cond_result is None:
        return True
    body = spec.body.graph
    rid = spec.body.result_ids[spec.cond_result]
    value = _constant(body, rid, 0)
    if value is not None and value.size == 1:
        return bool(value.reshape(()))
    src = body.producer(rid, 0)
    while src is not None and body.layers[src[0]].type == "onnx.Identity":
        src = body.producer(src[0], 0)
    if src is not None and body.layers[src[0]].type == "Parameter":
        if getattr(spec, "onnx", False) and spec.condition_param is not None and \
                spec.body.param_ids.index(src[0]) == spec.condition_param:
            return True                 # ONNX's cond_out = cond_in: true whenever the body runs
        pos = spec.body.param_ids.index(src[0])
        for p, ext in spec.invariant:              # a body Parameter fed by a constant true
            if p == pos:
                outer = input_kind(spec, ext)
                if isinstance(outer, (bool, np.bool_)):
                    return bool(outer)
    return "computed"


def loop_mode(spec: LoopSpec, started=None) -> Mode:
    """The mode of ``spec``; ``started`` (a LoopStarted event) resolves input-dependent parts."""
    if spec.kind != "Loop":
        return Mode(TI, None, True, True)
    trip = input_kind(spec, 0)
    if getattr(spec, "onnx", False) and isinstance(trip, (int, np.integer)) and \
            not isinstance(trip, bool) and trip < 0:
        trip = 0                        # ONNX: a negative M runs no iteration
    cond_in = input_kind(spec, 1)
    depends = False
    if trip in ("input", "computed"):
        if started is not None:
            trip = -1 if started.trip_count is None else started.trip_count
        else:
            depends = True
    if cond_in is None:
        cond_in = True
    body_cond = body_condition(spec)
    # INT64_MAX (TorchScript's while) and INT32_MAX bound nothing a run reaches: no limit
    no_limit = trip is None or (isinstance(trip, (int, np.integer)) and not isinstance(trip, bool)
                                and (trip < 0 or int(trip) in UNBOUNDED))
    if depends:
        mode = FOR if body_cond is True else FOR_COND
    elif not no_limit:
        mode = FOR if body_cond is True else FOR_COND
    elif cond_in is True or cond_in is np.True_:
        mode = INFINITE if body_cond is True else DO_WHILE
    else:
        mode = WHILE
    trip_out = None if no_limit else (trip if isinstance(trip, str) else int(trip))
    exec_out = cond_in if isinstance(cond_in, str) else bool(cond_in)
    return Mode(mode, trip_out, exec_out, body_cond, depends)
