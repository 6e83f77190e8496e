"""Colour conversions: NV12toRGB/BGR, I420toRGB/BGR (opset 8), RGBtoNV12/BGRtoNV12 (opset 17).

Images are NHWC. NV12 is a Y plane [N, H, W, 1] and an interleaved UV plane [N, H/2, W/2, 2],
or both in one [N, 3H/2, W, 1] tensor; I420 has separate U and V planes [N, H/2, W/2, 1], or all
three in one [N, 3H/2, W, 1] tensor (Y, then U, then V). Each 2×2 block of pixels shares its U
and V. The arithmetic is OpenVINO's, in float32:

    R = 1.164(Y − 16) + 1.596(V − 128)
    G = 1.164(Y − 16) − 0.391(U − 128) − 0.813(V − 128)
    B = 1.164(Y − 16) + 2.018(U − 128)

clipped to [0, 255] and, for integer types, rounded half to even, as OpenVINO's CPU plugin does
(the specification does not say; OpenVINO's reference, which cannot run these ops in 2026.4,
rounds half away from zero). The other way, each pixel's Y, U and V are taken with the BT.601
matrix, clipped and rounded half away from zero, and a block's U and V are the mean of its four
pixels' (rounded again), as OpenVINO's reference has it: no OpenVINO 2026.4 device runs
RGBtoNV12/BGRtoNV12, so they are tested by hand.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def _clip(x: np.ndarray, dtype: np.dtype, rounding=_round_half_away) -> np.ndarray:
    if dtype.kind in "iu":
        x = rounding(x)
    return np.minimum(np.maximum(x, np.float32(0)), np.float32(255)).astype(dtype)


def _to_rgb(y, u, v, dtype: np.dtype, bgr: bool) -> np.ndarray:
    """[N, H, W] planes (U and V already repeated to full size) to [N, H, W, 3]."""
    c = y.astype(np.float32) - np.float32(16)
    d = u.astype(np.float32) - np.float32(128)
    e = v.astype(np.float32) - np.float32(128)
    r = _clip(np.float32(1.164) * c + np.float32(1.596) * e, dtype, np.rint)
    g = _clip(np.float32(1.164) * c - np.float32(0.391) * d - np.float32(0.813) * e, dtype,
              np.rint)
    b = _clip(np.float32(1.164) * c + np.float32(2.018) * d, dtype, np.rint)
    return np.stack([b, g, r] if bgr else [r, g, b], axis=-1)


def _full(plane: np.ndarray) -> np.ndarray:
    """A half-resolution plane [N, h, w] repeated over 2×2 blocks."""
    return plane.repeat(2, axis=1).repeat(2, axis=2)


def _image_size(y: np.ndarray, single: bool) -> tuple[int, int, int]:
    if y.ndim != 4 or y.shape[3] != 1:
        raise ValueError(f"the Y input must be [N, H, W, 1], got shape {y.shape}")
    n, h, w = y.shape[:3]
    if single:
        if h % 3:
            raise ValueError(f"a single-plane image's height {h} is not 3/2 of an image's")
        h = h * 2 // 3
    if h % 2 or w % 2:
        raise ValueError(f"image height {h} and width {w} must be even")
    return n, h, w


def _from_yuv_shape(layer: Layer, ins, consts):
    """[N, H, W, 3], H being 2/3 of a single plane's height."""
    s = ins[0].shape
    if s is None:
        return TensorInfo(ins[0].type, None)
    h = s[1] * 2 // 3 if len(ins) == 1 and s[1] >= 0 else s[1]
    return TensorInfo(ins[0].type, (s[0], h, s[2], 3))


def _nv12(bgr: bool):
    def nv12_to_rgb(y, uv=None):
        y = np.asarray(y)
        n, h, w = _image_size(y, uv is None)
        if uv is None:
            flat = y.reshape(n, -1)
            uv = flat[:, h * w:].reshape(n, h // 2, w // 2, 2)
            y = flat[:, :h * w].reshape(n, h, w, 1)
        uv = np.asarray(uv)
        if uv.shape != (n, h // 2, w // 2, 2):
            raise ValueError(f"the UV input has shape {uv.shape}, expected "
                             f"{(n, h // 2, w // 2, 2)}")
        return _to_rgb(y[..., 0], _full(uv[..., 0]), _full(uv[..., 1]), y.dtype, bgr)

    return nv12_to_rgb


def _i420(bgr: bool):
    def i420_to_rgb(y, u=None, v=None):
        y = np.asarray(y)
        n, h, w = _image_size(y, u is None)
        q = (h // 2) * (w // 2)
        if u is None:
            flat = y.reshape(n, -1)
            u = flat[:, h * w:h * w + q].reshape(n, h // 2, w // 2, 1)
            v = flat[:, h * w + q:].reshape(n, h // 2, w // 2, 1)
            y = flat[:, :h * w].reshape(n, h, w, 1)
        elif v is None:
            raise ValueError("I420 takes one input or three (Y, U, V)")
        u, v = np.asarray(u), np.asarray(v)
        for name, plane in (("U", u), ("V", v)):
            if plane.shape != (n, h // 2, w // 2, 1):
                raise ValueError(f"the {name} input has shape {plane.shape}, expected "
                                 f"{(n, h // 2, w // 2, 1)}")
        return _to_rgb(y[..., 0], _full(u[..., 0]), _full(v[..., 0]), y.dtype, bgr)

    return i420_to_rgb


for _name, _factory, _bgr in (("NV12toRGB", _nv12, False), ("NV12toBGR", _nv12, True),
                              ("I420toRGB", _i420, False), ("I420toBGR", _i420, True)):
    op(_name, versions=(8,), shape=_from_yuv_shape)(
        lambda layer, f=_factory, b=_bgr: f(b))


# ---- RGB/BGR to NV12 ---------------------------------------------------------------------------

def _nv12_outputs(layer: Layer) -> int:
    """1 with single_plane, else 2 (Y and UV)."""
    return 1 if flag(layer, "single_plane", False) else 2


def _to_nv12_shape(layer: Layer, ins, consts):
    """[N, 3H/2, W, 1] with single_plane, else Y [N, H, W, 1] and UV [N, H/2, W/2, 2]."""
    s = ins[0].shape
    t = ins[0].type
    if s is None:
        return [TensorInfo(t, None)] * _nv12_outputs(layer)
    n, h, w = s[:3]
    if flag(layer, "single_plane", False):
        return TensorInfo(t, (n, h * 3 // 2 if h >= 0 else -1, w, 1))
    half = tuple(d // 2 if d >= 0 else -1 for d in (h, w))
    return [TensorInfo(t, (n, h, w, 1)), TensorInfo(t, (n,) + half + (2,))]


def _to_nv12(layer: Layer, bgr: bool):
    single = flag(layer, "single_plane", False)

    def rgb_to_nv12(image):
        image = np.asarray(image)
        if image.ndim != 4 or image.shape[3] != 3:
            raise ValueError(f"the image must be [N, H, W, 3], got shape {image.shape}")
        n, h, w = image.shape[:3]
        if h % 2 or w % 2:
            raise ValueError(f"image height {h} and width {w} must be even")
        dtype = image.dtype
        px = image.astype(np.float32)
        r, g, b = (px[..., 2], px[..., 1], px[..., 0]) if bgr else \
            (px[..., 0], px[..., 1], px[..., 2])
        f = np.float32
        y = _clip(f(0.257) * r + f(0.504) * g + f(0.098) * b + f(16), dtype)
        u = _clip(f(-0.148) * r - f(0.291) * g + f(0.439) * b + f(128), dtype)
        v = _clip(f(0.439) * r - f(0.368) * g - f(0.071) * b + f(128), dtype)

        def block_mean(plane):
            s = plane.astype(np.float32).reshape(n, h // 2, 2, w // 2, 2)
            total = (s[:, :, 0, :, 0] + s[:, :, 0, :, 1]) + (s[:, :, 1, :, 0] + s[:, :, 1, :, 1])
            mean = total / f(4)
            return (_round_half_away(mean) if dtype.kind in "iu" else mean).astype(dtype)

        uv = np.stack([block_mean(u), block_mean(v)], axis=-1)
        y = y[..., None]
        if single:
            return np.concatenate([y.reshape(n, -1), uv.reshape(n, -1)], axis=1).reshape(
                n, h * 3 // 2, w, 1)
        return y, uv

    return rgb_to_nv12


_TO_NV12_NOTES = ("as OpenVINO's reference header has it; no OpenVINO 2026.4 device (CPU or "
                  "reference evaluate) runs it, so it is tested by hand")


@op("RGBtoNV12", versions=(17,), outputs=_nv12_outputs, shape=_to_nv12_shape,
    notes=_TO_NV12_NOTES)
def _rgb_to_nv12(layer: Layer):
    return _to_nv12(layer, False)


@op("BGRtoNV12", versions=(17,), outputs=_nv12_outputs, shape=_to_nv12_shape,
    notes=_TO_NV12_NOTES)
def _bgr_to_nv12(layer: Layer):
    return _to_nv12(layer, True)
