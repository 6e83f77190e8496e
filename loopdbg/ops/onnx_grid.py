"""ONNX GridSample on loopdbg's own 2-D sampler (``loopdbg.ops.grid``), 4-D data at every opset.

onnx.reference samples with a Python loop over every output point (a [1, 8, 64, 64] image took a
minute and a half), and it does not know GridSample-16's mode names (``bilinear``, ``bicubic``:
opset 20 renamed them ``linear``, ``cubic``), which torch.onnx writes. Grid values map to pixels as
``align_corners`` says; ``padding_mode`` decides what an index outside the image reads (0, the
border pixel, or the pixel reflected back in). Data of other ranks (GridSample-20's volumes) runs
by onnx.reference.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, opset
from loopdbg.ops.grid import grid_sample
from loopdbg.ops.registry import op

# GridSample-16's names, and opset 20's for the same interpolations.
_MODES = {16: {"bilinear": "bilinear", "bicubic": "bicubic", "nearest": "nearest"},
          20: {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}}
_PADDINGS = ("zeros", "border", "reflection")


def _text(layer: Layer, name: str, default: str) -> str:
    value = a(layer, name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


@op("onnx.GridSample", versions=(16, 20, 22))
def _grid_sample(layer: Layer):
    names = _MODES[16 if opset(layer) < 20 else 20]
    mode = _text(layer, "mode", next(iter(names)))
    if mode not in names:
        raise ValueError(f"GridSample mode '{mode}' is not one of {', '.join(names)}")
    padding = _text(layer, "padding_mode", "zeros")
    if padding not in _PADDINGS:
        raise ValueError(f"GridSample padding_mode '{padding}' is not one of "
                         f"{', '.join(_PADDINGS)}")
    align = bool(int(a(layer, "align_corners", 0)))
    other: list = []

    def sample(x, grid):
        x, grid = np.asarray(x), np.asarray(grid)
        if x.ndim == 4:
            return grid_sample(x, grid, align=align, mode=names[mode], padding=padding)
        if not other:              # a volume (GridSample-20 on): onnx.reference's N-D sampler
            from loopdbg.ops.onnx_reference import reference_kernel

            other.append(reference_kernel(layer))
        return other[0](x, grid)

    return sample
