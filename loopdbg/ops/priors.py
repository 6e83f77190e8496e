"""PriorBox-1/8 and PriorBoxClustered-1: the anchor boxes of SSD-style detectors.

Both take ``output_size = [H, W]`` (the feature map's grid) and ``image_size = [IH, IW]`` and give
``[2, 4 * H * W * priors]`` float32: row 0 the boxes ``[xmin, ymin, xmax, ymax]`` normalised by the
image size, in (h, w, prior) order; row 1 the variances (one value repeated, or four per box;
0.1 when none is given). The boxes and their order follow OpenVINO's reference implementation (the
specification leaves them to it): per grid cell, the fixed-size/density boxes, then for each
``min_size`` the square box, the ``sqrt(min * max)`` box and the aspect-ratio boxes, in the order
``min_max_aspect_ratios_order`` says (PriorBox-1: always min, max, ratios). Arithmetic is float32
in the reference's order, so the boxes agree to the last bit. Where ``fixed_ratio`` makes more
boxes per cell than OpenVINO's count of priors (which sizes the output), the boxes are written in
sequence and those past the end dropped, as OpenVINO does.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag, float_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


def floats(layer: Layer, name: str) -> list[float]:
    """A comma-separated list of numbers; missing or empty is an empty list."""
    text = layer.data.get(name, "")
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a list of numbers") from None


def _sizes(output_size, image_size) -> tuple[int, int, int, int]:
    o, i = np.asarray(output_size).reshape(-1), np.asarray(image_size).reshape(-1)
    if o.size != 2 or i.size != 2:
        raise ValueError(f"output_size and image_size must hold 2 values each, got {o.size} and "
                         f"{i.size}")
    h, w, ih, iw = int(o[0]), int(o[1]), int(i[0]), int(i[1])
    if min(h, w) < 0 or min(ih, iw) <= 0:
        raise ValueError(f"output_size {[h, w]} and image_size {[ih, iw]} must be positive")
    return h, w, ih, iw


def _variances(values: list[float], count: int) -> np.ndarray:
    if len(values) not in (0, 1, 4):
        raise ValueError(f"variance must hold 0, 1 or 4 values, got {len(values)}")
    v = values or [0.1]
    return np.tile(np.array(v * (4 // len(v)), F32), count)


class PriorBox:
    """The attributes of one PriorBox layer, parsed once."""

    def __init__(self, layer: Layer, version: int):
        self.aspect = floats(layer, "aspect_ratio")
        self.min_size, self.max_size = floats(layer, "min_size"), floats(layer, "max_size")
        self.density, self.fixed_size = floats(layer, "density"), floats(layer, "fixed_size")
        self.fixed_ratio = floats(layer, "fixed_ratio")
        self.flip, self.clip = flag(layer, "flip"), flag(layer, "clip")
        self.step, self.offset = float_attr(layer, "step", 0.0), float_attr(layer, "offset")
        self.variance = floats(layer, "variance")
        _variances(self.variance, 0)
        self.scale_all = flag(layer, "scale_all_sizes", True)
        self.min_max_order = version < 8 or flag(layer, "min_max_aspect_ratios_order", True)
        if self.fixed_size and len(self.density) < len(self.fixed_size) and (
                self.fixed_ratio or self.density or self.ratios() != [1.0]):
            raise ValueError("density must give a value for every fixed_size")
        self.count = self.number_of_priors()

    def ratios(self) -> list[float]:
        """1, then each new aspect ratio (and its inverse with ``flip``), in order."""
        out = [1.0]
        for r in self.aspect:
            r = float(F32(r))
            if not any(abs(r - e) < 1e-6 for e in out):
                out.append(r)
                if self.flip:
                    out.append(float(F32(1) / F32(r)))
        return out

    def number_of_priors(self) -> int:
        unique = {round(r * 1e6) / 1e6 for r in self.aspect}
        if self.flip:
            unique |= {round(1 / r * 1e6) / 1e6 for r in self.aspect}
        n_ratios = len(unique | {1.0})
        n = (n_ratios * len(self.min_size) + len(self.max_size) if self.scale_all
             else n_ratios + len(self.min_size) - 1)
        if self.fixed_size:
            n = n_ratios * len(self.fixed_size)
        for d in self.density:
            d2 = int(d) * int(d) - 1
            n += (len(self.fixed_ratio) if self.fixed_ratio else n_ratios) * d2
        return n

    def boxes(self, h: int, w: int, ih: int, iw: int):
        """The step, and every box of a cell as (the terms added to the cell centre, in order,
        half width, half height, clipped)."""
        step, mins = F32(self.step), [F32(m) for m in self.min_size]
        if not self.scale_all:
            step = F32(ih) / F32(h) if self.step == -1 else step * F32(ih)
            mins = [m * F32(ih) for m in mins]
        priors: list[tuple] = []
        ratios = self.ratios()

        def dense(size: float, density: int, half_w, half_h):
            fs_int = int(size)
            shift = int(F32(size) / F32(density))
            for r in range(density):
                for c in range(density):
                    terms = (-F32(fs_int // 2), F32(shift) / F32(2))
                    priors.append((terms + (F32(c * shift),), terms + (F32(r * shift),),
                                   half_w, half_h, True))

        for s, size in enumerate(self.fixed_size):
            half = F32(int(size)) * F32(0.5)
            if self.fixed_ratio:
                for ar in self.fixed_ratio:
                    ar = np.sqrt(F32(ar))
                    dense(size, int(self.density[s]), F32(size) * F32(0.5) * ar,
                          F32(size) * F32(0.5) / ar)
                continue
            if self.density:
                dense(size, int(self.density[s]), half, half)
            for ar in ratios:
                if abs(ar - 1.0) < 1e-6:
                    continue
                ar = np.sqrt(F32(ar))
                dense(size, int(self.density[s]), F32(size) * F32(0.5) * ar,
                      F32(size) * F32(0.5) / ar)
        for k, m in enumerate(mins):
            square = [((), (), m * F32(0.5), m * F32(0.5), False)]
            big = ([((), (), np.sqrt(m * F32(self.max_size[k])) * F32(0.5),
                     np.sqrt(m * F32(self.max_size[k])) * F32(0.5), False)]
                   if len(self.max_size) > k else [])
            shaped = []
            if self.scale_all or k == len(mins) - 1:
                base = m if self.scale_all else mins[0]
                for ar in ratios:
                    if abs(ar - 1.0) < 1e-6:
                        continue
                    ar = np.sqrt(F32(ar))
                    shaped.append(((), (), base * F32(0.5) * ar, base * F32(0.5) / ar, False))
            priors += square + (big + shaped if self.min_max_order else shaped + big)
        return step, priors

    def __call__(self, output_size, image_size) -> np.ndarray:
        h, w, ih, iw = _sizes(output_size, image_size)
        step, priors = self.boxes(h, w, ih, iw)
        if step == 0:
            cx = (np.arange(w, dtype=F32) + F32(0.5)) * (F32(iw) / F32(w))
            cy = (np.arange(h, dtype=F32) + F32(0.5)) * (F32(ih) / F32(h))
        else:
            cx = (F32(self.offset) + np.arange(w, dtype=F32)) * step
            cy = (F32(self.offset) + np.arange(h, dtype=F32)) * step
        cx, cy = np.broadcast_to(cx[None, :], (h, w)), np.broadcast_to(cy[:, None], (h, w))
        out = np.empty((h, w, len(priors), 4), F32)
        iwi, ihi = F32(1) / F32(iw), F32(1) / F32(ih)
        for p, (sx, sy, bw, bh, clip) in enumerate(priors):
            x, y = cx, cy
            for t in sx:
                x = x + t
            for t in sy:
                y = y + t
            box = [(x - bw) * iwi, (y - bh) * ihi, (x + bw) * iwi, (y + bh) * ihi]
            if clip:
                box = [np.maximum(box[0], 0), np.maximum(box[1], 0), np.minimum(box[2], 1),
                       np.minimum(box[3], 1)]
            out[:, :, p] = np.stack(box, axis=-1)
        # OpenVINO sizes the output by its own count of priors, which some combinations of
        # fixed_size, fixed_ratio and density exceed: the boxes written past it are dropped
        size = 4 * h * w * self.count
        out = np.concatenate([out.reshape(-1), np.zeros(max(size - out.size, 0), F32)])[:size]
        if self.clip:
            out = np.clip(out, F32(0), F32(1))
        return np.stack([out, _variances(self.variance, h * w * self.count)])


def _prior_box(version: int):
    return lambda layer: PriorBox(layer, version)


def _grid_shape(count):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        size = consts[0]
        if size is None:
            return TensorInfo("f32", (2, -1))
        hw = np.asarray(size).reshape(-1)
        return TensorInfo("f32", (2, 4 * int(hw[0]) * int(hw[1]) * count(layer)))
    return rule


op("PriorBox", versions=(1,), shape=_grid_shape(lambda layer: _prior_box(1)(layer).count))(
    _prior_box(1))
op("PriorBox", versions=(8,), shape=_grid_shape(lambda layer: _prior_box(8)(layer).count))(
    _prior_box(8))


# ---- PriorBoxClustered -------------------------------------------------------------------------


def _clustered_count(layer: Layer) -> int:
    return len(floats(layer, "width"))


@op("PriorBoxClustered", shape=_grid_shape(_clustered_count))
def _prior_box_clustered1(layer: Layer):
    widths, heights = floats(layer, "width"), floats(layer, "height")
    if len(widths) != len(heights):
        raise ValueError(f"width ({len(widths)} values) and height ({len(heights)}) differ in "
                         f"length")
    clip = flag(layer, "clip", True)
    step, offset = float_attr(layer, "step", 0.0), float_attr(layer, "offset")
    step_w = float_attr(layer, "step_w", 0.0) or step
    step_h = float_attr(layer, "step_h", 0.0) or step
    variance = floats(layer, "variance")
    _variances(variance, 0)
    bw = np.array(widths, F32) / F32(2)
    bh = np.array(heights, F32) / F32(2)

    def run(output_size, image_size):
        h, w, ih, iw = _sizes(output_size, image_size)
        sw, sh = F32(step_w), F32(step_h)
        if sw == 0 and sh == 0:
            sw, sh = F32(iw) / F32(w), F32(ih) / F32(h)
        cx = ((np.arange(w, dtype=F32) + F32(offset)) * sw)[None, :, None]
        cy = ((np.arange(h, dtype=F32) + F32(offset)) * sh)[:, None, None]
        box = [(cx - bw) / F32(iw), (cy - bh) / F32(ih), (cx + bw) / F32(iw),
               (cy + bh) / F32(ih)]
        box = np.stack(np.broadcast_arrays(*box), axis=-1).astype(F32)
        if clip:
            box = np.clip(box, F32(0), F32(1))
        box = box.reshape(-1)
        return np.stack([box, _variances(variance, h * w * len(widths))])

    return run
