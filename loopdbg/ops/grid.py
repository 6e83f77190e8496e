"""GridSample-9: sampling an NCHW image at normalised ``[x, y]`` grid points.

Grid values in ``[-1, 1]`` are mapped to pixel coordinates (``align_corners``: to the centres of the
border pixels, else to their outer edges); ``nearest`` rounds them half to even, ``bilinear`` and
``bicubic`` (Keys' kernel, A = -0.75) weigh the 2x2 or 4x4 pixels around them. The padding mode
decides what a pixel index outside the image reads: 0 (``zeros``), the nearest border pixel
(``border``) or the pixel mirrored back into the image (``reflection``, about the pixel edges
without ``align_corners``, about the border pixel centres with it). As in OpenVINO's reference,
padding applies to each pixel index read (not to the coordinate before interpolating); the
arithmetic is float32, and integer images are truncated back to their type (saturating), as
the reference does; OpenVINO's CPU plugin rounds 8-bit images to nearest instead.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, flag
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32


def _padded_index(i: np.ndarray, size: int, mode: str, align: bool):
    """Index arrays made valid for ``size`` pixels, and the mask of indices that read 0."""
    if mode == "zeros":
        outside = (i < 0) | (i >= size)
        return np.clip(i, 0, size - 1), outside
    if mode == "border":
        return np.clip(i, 0, size - 1), None
    if align:
        period = 1 if size == 1 else 2 * (size - 1)
        i = np.abs(i) % period
        return np.where(i >= size, period - i, i), None
    i = np.mod(i, 2 * size)
    return np.where(i >= size, 2 * size - 1 - i, i), None


def _cubic(r: np.ndarray) -> list[np.ndarray]:
    a = F32(-0.75)
    one, two = F32(1), F32(2)
    return [((a * (r + one) - 5 * a) * (r + one) + 8 * a) * (r + one) - 4 * a,
            ((a + two) * r - (a + 3)) * r * r + one,
            ((a + two) * (one - r) - (a + 3)) * (one - r) * (one - r) + one,
            ((a * (two - r) - 5 * a) * (two - r) + 8 * a) * (two - r) - 4 * a]


def grid_sample(data: np.ndarray, grid: np.ndarray, *, align: bool, mode: str,
                padding: str) -> np.ndarray:
    data, grid = np.asarray(data), np.asarray(grid)
    if data.ndim != 4 or grid.ndim != 4 or grid.shape[3] != 2 or grid.shape[0] != data.shape[0]:
        raise ValueError(f"GridSample needs data [N, C, H, W] and grid [N, H_out, W_out, 2] with "
                         f"the same N, got {data.shape} and {grid.shape}")
    n, c, h, w = data.shape
    g = grid.astype(F32)
    xn, yn = g[..., 0], g[..., 1]
    if align:
        xd = (xn + F32(1)) * F32(w - 1) / F32(2)
        yd = (yn + F32(1)) * F32(h - 1) / F32(2)
    else:
        xd = ((xn + F32(1)) * F32(w) - F32(1)) / F32(2)
        yd = ((yn + F32(1)) * F32(h) - F32(1)) / F32(2)
    batch = np.arange(n)[:, None, None, None]
    chan = np.arange(c)[None, :, None, None]

    def read(yi: np.ndarray, xi: np.ndarray) -> np.ndarray:
        """Pixels at integer (y, x) [N, Ho, Wo], padded: [N, C, Ho, Wo]."""
        if h == 0 or w == 0:
            return np.zeros((n, c) + yi.shape[1:], F32)
        ys, ymask = _padded_index(yi, h, padding, align)
        xs, xmask = _padded_index(xi, w, padding, align)
        out = data[batch, chan, ys[:, None], xs[:, None]].astype(F32)
        if ymask is not None:
            out[np.broadcast_to((ymask | xmask)[:, None], out.shape)] = 0
        return out

    big = 2 ** 62     # keep float-to-int conversions of wild coordinates defined
    with np.errstate(invalid="ignore"):
        if mode == "nearest":
            yi = np.clip(np.rint(yd), -big, big).astype(np.int64)
            xi = np.clip(np.rint(xd), -big, big).astype(np.int64)
            out = read(yi, xi)
        else:
            y0, x0 = np.floor(yd), np.floor(xd)
            dy, dx = (yd - y0)[:, None], (xd - x0)[:, None]
            yi = np.clip(y0, -big, big).astype(np.int64)
            xi = np.clip(x0, -big, big).astype(np.int64)
            if mode == "bilinear":
                one = F32(1)
                q0 = (one - dx) * read(yi, xi) + dx * read(yi, xi + 1)
                q1 = (one - dx) * read(yi + 1, xi) + dx * read(yi + 1, xi + 1)
                out = dy * q1 + (one - dy) * q0
            else:
                cy, cx = _cubic(dy), _cubic(dx)
                out = 0
                for j in range(4):
                    row = 0
                    for i in range(4):
                        row = row + cx[i] * read(yi + j - 1, xi + i - 1)
                    out = out + cy[j] * row
    out = np.asarray(out)
    if data.dtype.kind in "iu":
        info = np.iinfo(data.dtype)
        return np.clip(np.nan_to_num(np.trunc(out)), info.min, info.max).astype(data.dtype)
    if data.dtype.kind == "b":
        return out != 0
    return out.astype(data.dtype)


def _shape(layer: Layer, ins, consts) -> TensorInfo:
    d, g = ins[0].shape, ins[1].shape
    if d is None or g is None:
        return TensorInfo(ins[0].type, (-1,) * 4)
    return TensorInfo(ins[0].type, (d[0] if d[0] != -1 else g[0], d[1], g[1], g[2]))


@op("GridSample", versions=(9,), shape=_shape,
    notes="an integer image's results are truncated toward zero (saturating), as in OpenVINO's "
          "reference; the CPU plugin rounds 8-bit images to nearest")
def _grid_sample9(layer: Layer):
    align = flag(layer, "align_corners", False)
    mode = choice(layer, "mode", ("bilinear", "bicubic", "nearest"), "bilinear")
    padding = choice(layer, "padding_mode", ("zeros", "border", "reflection"), "zeros")
    return lambda data, grid: grid_sample(data, grid, align=align, mode=mode, padding=padding)
