"""ONNX ScatterND on loopdbg's ScatterNDUpdate kernel (``loopdbg.ops.scatter``), not onnx.reference.

A decoder's greedy loop writes each new token into its sequence with a ScatterND every iteration;
through onnx.reference that also imported the reference runtime (a third of a second) for the
one node. ``reduction`` none, add, mul (opset 16) and max, min (opset 18) are ufunc updates in
index order (``ufunc.at``); with ``none`` a repeated index keeps the last update, as the
reference's loop does. Negative indices count from the end.
"""

from __future__ import annotations

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a
from loopdbg.ops.registry import op
from loopdbg.ops.scatter import scatter_nd_kernel

_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "max": "max", "min": "min"}


@op("onnx.ScatterND", versions=(11, 13, 16, 18))
def _scatter_nd(layer: Layer):
    reduction = a(layer, "reduction", "none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction={reduction!r} is not one of {', '.join(_REDUCTIONS)}")
    return scatter_nd_kernel(_REDUCTIONS[reduction])
