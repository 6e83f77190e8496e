"""ONNX ScatterND and ScatterElements on loopdbg's ScatterNDUpdate / ScatterElementsUpdate kernels
(``loopdbg.ops.scatter``), not onnx.reference.

A decoder's greedy loop writes each new token into its sequence with a ScatterND every iteration;
through onnx.reference that also imported the reference runtime (a third of a second) for the
one node. ``reduction`` none, add, mul (opset 16) and max, min (opset 18) are ufunc updates in
index order (``ufunc.at``); with ``none`` a repeated index keeps the last update, as the
reference's loop does. Negative indices count from the end.

ScatterElements (and Scatter, its name before opset 11) writes ``updates[i][j]...`` at the same
position of ``data`` but for ``axis``, where its index is ``indices[i][j]...``; onnx.reference's
reductions loop in Python (120 ms for 32,768 updates), here they are one ``ufunc.at``.
"""

from __future__ import annotations

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a
from loopdbg.ops.registry import op
from loopdbg.ops.scatter import scatter_elements_kernel, scatter_nd_kernel

_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "max": "max", "min": "min"}


def _reduction(layer: Layer) -> str:
    reduction = a(layer, "reduction", "none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction={reduction!r} is not one of {', '.join(_REDUCTIONS)}")
    return _REDUCTIONS[reduction]


@op("onnx.ScatterND", versions=(11, 13, 16, 18))
def _scatter_nd(layer: Layer):
    return scatter_nd_kernel(_reduction(layer))


@op("onnx.ScatterElements", versions=(11, 13, 16, 18))
@op("onnx.Scatter", versions=(9, 11))
def _scatter_elements(layer: Layer):
    kernel = scatter_elements_kernel(_reduction(layer), True)
    axis = int(a(layer, "axis", 0))
    return lambda data, indices, updates: kernel(data, indices, updates, axis)
