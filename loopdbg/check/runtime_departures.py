"""Where onnxruntime departs from the ONNX text in ways ``check`` can recognise from the model.

docs/semantics.md ("Where the runtimes depart from the ONNX text") lists what onnxruntime does
with ONNX Loop and Scan that the operator texts do not say. When a model output that differs is
the output of a loop in one of these situations, and the values have the departure's signature,
the difference is onnxruntime's, and ``check``'s verdict says that the runtime looks wrong:

* a Scan output that is a body input passed straight through (uninitialised memory);
* a Loop scan output that is ``iteration_num`` passed straight through (every entry the count
  of iterations, the counter after its last increment);
* the final states of a Scan-8 over sequences of length 0, and every output of a Scan-8 over a
  batch of 0 (garbage);
* a Loop that ran no iteration, whose scan output's shape the model leaves open (0 for every
  open dim, ``(0,)`` for an open rank);
* and onnxruntime's process dying (SIGFPE) on a model with a Scan over a zero-length axis.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from loopdbg.check.bookkeeping import LoopRun
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.ir import model as irm

DEPARTS = "a departure of onnxruntime from the ONNX text"


def _fed_by_parameter(spec: LoopSpec, result_pos: int) -> int | None:
    """The body Parameter position a body Result takes its value from directly, if it does."""
    graph = spec.body.graph
    src = graph.producer(spec.body.result_ids[result_pos], 0)
    if src is None or graph.layers[src[0]].type != "Parameter":
        return None
    try:
        return spec.body.param_ids.index(src[0])
    except ValueError:
        return None


def _runs(spec: LoopSpec, runs: Iterable[LoopRun]) -> list[int]:
    return [r.iterations for r in runs if r.path == spec.path and r.iterations is not None]


def onnxruntime_departure(spec: LoopSpec, loops: Mapping[str, LoopSpec], runs: list[LoopRun],
                          port: int, ours, theirs) -> str | None:
    """The departure that explains onnxruntime's ``theirs`` (loopdbg: ``ours``) for output
    ``port`` of ``spec``'s loop, as a phrase, or None."""
    if not spec.onnx or not isinstance(ours, np.ndarray) or not isinstance(theirs, np.ndarray):
        return None
    if spec.layer.data.get("onnx_scan8_batch"):         # the Scan inside loopdbg's batch loop
        inner = [s for p, s in loops.items() if p.startswith(spec.path + "/")
                 and p.count("/") == spec.path.count("/") + 1]
        batches = _runs(spec, runs)
        if batches and all(n == 0 for n in batches):
            return "the outputs of a Scan-8 over a batch of 0, which onnxruntime returns as garbage"
        if len(inner) != 1:
            return None
        return _scan8(inner[0], runs, port)
    if port >= len(spec.outputs):
        return None
    form = spec.outputs[port]
    op = spec.layer.data.get("onnx_op")
    if form.kind == irm.CONCAT and op == "Scan" and \
            _fed_by_parameter(spec, form.result_pos) is not None:
        return ("a Scan output that is a body input passed straight through, which "
                "onnxruntime leaves uninitialised")
    if op != "Loop" or form.kind != irm.CONCAT:
        return None
    counts = _runs(spec, runs)
    param = _fed_by_parameter(spec, form.result_pos)
    if param is not None and param == spec.current_iteration and ours.ndim == 1 and \
            theirs.shape == ours.shape and ours.size and np.all(theirs == ours.shape[0]):
        return ("a Loop scan output that is iteration_num passed straight through, which "
                "onnxruntime fills with the count of iterations")
    if counts and all(n == 0 for n in counts) and ours.size == 0 and theirs.size == 0 and \
            (theirs.shape == (0,) or (theirs.ndim == ours.ndim and all(
                t in (0, o) for t, o in zip(theirs.shape, ours.shape)))):
        return ("the scan output of a Loop that ran no iteration, whose element shape the "
                "model leaves open: onnxruntime gives 0 for each open dim ((0,) for an open "
                "rank), loopdbg the shape this run fixes")
    return None


def _scan8(inner: LoopSpec, runs: list[LoopRun], port: int) -> str | None:
    if port >= len(inner.outputs):
        return None
    form = inner.outputs[port]
    if form.kind == irm.CONCAT and _fed_by_parameter(inner, form.result_pos) is not None:
        return ("a Scan output that is a body input passed straight through, which "
                "onnxruntime leaves uninitialised")
    if form.kind == irm.LAST_VALUE and any(n == 0 for n in _runs(inner, runs)):
        return ("the final states of a Scan-8 over sequences of length 0, which onnxruntime "
                "returns as garbage")
    return None


def onnxruntime_death(loops: Mapping[str, LoopSpec], runs: list[LoopRun]) -> list[tuple[str, str]]:
    """When onnxruntime's process died on the model: the Scans that ran over a zero-length
    axis (in loopdbg's run), each with the departure that explains the death."""
    out = []
    for path, spec in loops.items():
        if spec.onnx and spec.layer.data.get("onnx_op") == "Scan" and \
                not spec.layer.data.get("onnx_scan8_batch") and 0 in _runs(spec, runs):
            out.append((path, "a Scan over a zero-length axis, on which onnxruntime's process "
                              "dies (SIGFPE) for some models"))
    return out
