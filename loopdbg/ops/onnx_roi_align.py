"""ONNX RoiAlign on loopdbg's ROIAlign kernel (``loopdbg.ops.roi_align``) for ``mode="avg"``.

onnx.reference samples every bin of every box in Python loops (7 s for 100 boxes of a 64-channel
map, minutes for a detector's 1000 boxes). Each box ``[x1, y1, x2, y2]`` is scaled by
``spatial_scale`` and moved by -0.5 (``coordinate_transformation_mode="half_pixel"``, the default
from opset 16), or kept and made at least 1x1 (``output_half_pixel``, opset 10's only behaviour);
its ``output_height x output_width`` bins are sampled at ``sampling_ratio`` points per axis (0:
``ceil`` of the bin size) and averaged. ``mode="max"``, which onnxruntime and onnx.reference
define as the largest weighted corner of each sample rather than the largest sample, still runs
by onnx.reference.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, opset
from loopdbg.ops.registry import op
from loopdbg.ops.roi_align import roi_align

_TRANSFORMS = {"half_pixel": "half_pixel_for_nn", "output_half_pixel": "asymmetric"}


def _text(layer: Layer, name: str, default: str) -> str:
    value = a(layer, name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


@op("onnx.RoiAlign", versions=(10, 16, 22))
def _roi_align(layer: Layer):
    mode = _text(layer, "mode", "avg")
    if mode not in ("avg", "max"):
        raise ValueError(f"RoiAlign mode '{mode}' is not avg or max")
    if mode == "max":
        from loopdbg.ops.onnx_reference import reference_kernel

        return reference_kernel(layer)
    transform = "output_half_pixel" if opset(layer) < 16 else \
        _text(layer, "coordinate_transformation_mode", "half_pixel")
    if transform not in _TRANSFORMS:
        raise ValueError(f"RoiAlign coordinate_transformation_mode '{transform}' is not "
                         f"half_pixel or output_half_pixel")
    ph, pw = int(a(layer, "output_height", 1)), int(a(layer, "output_width", 1))
    ratio, scale = int(a(layer, "sampling_ratio", 0)), float(a(layer, "spatial_scale", 1.0))
    if ph <= 0 or pw <= 0 or ratio < 0:
        raise ValueError(f"output_height={ph}, output_width={pw} must be positive and "
                         f"sampling_ratio={ratio} not negative")

    def run(x, rois, batch_indices):
        x = np.asarray(x)
        y = roi_align(x, rois, batch_indices, ph=ph, pw=pw, ratio=ratio, scale=scale, avg=True,
                      aligned=_TRANSFORMS[transform])
        return y.astype(x.dtype, copy=False)

    return run
