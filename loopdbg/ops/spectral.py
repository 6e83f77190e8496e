"""Fourier transforms: DFT, IDFT (opset 7), RDFT, IRDFT (opset 9), STFT (15) and ISTFT (16).

Complex tensors are real tensors with a last dimension of 2 (real, imaginary), as in OpenVINO.
numpy's FFT (float64) does the work; results return in the input's type.

* DFT/IDFT: ``axes`` count from the end of the complex shape (rank − 1) when negative;
  ``signal_size`` (−1: keep) zero-pads or trims each axis at its end first. IDFT divides by the
  product of the transformed sizes.
* RDFT: a real input; the last of ``axes`` keeps ``n//2 + 1`` frequencies. IRDFT: the inverse,
  whose last axis has ``signal_size`` (default ``2·(n − 1)``) real samples.
* STFT: frames of ``frame_size`` every ``frame_step`` samples of a [T] or [B, T] signal, times
  the window (zero-padded, centred, to ``frame_size``), each RDFT'd: [B, frames, bins, 2], or
  [B, bins, frames, 2] with ``transpose_frames``.
* ISTFT: [B, bins, frames, 2] (or without B) back to [B, length]: each frame's IRDFT times the
  window is added at its place, the sum divided by the sum of the squared windows there (0
  where that is 0), times
  sqrt(frame_size) when ``normalized``; ``center`` drops frame_size//2 samples at the start;
  ``signal_length`` (input 4) sets the length, padding with zeros.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import flag, ints, scalar
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


def _fft_axes(axes, rank: int) -> list[int]:
    """Axes of a tensor of ``rank`` dims (without the complex pair, for complex inputs)."""
    out = []
    for a in ints(axes):
        b = a + rank if a < 0 else a
        if not 0 <= b < rank:
            raise ValueError(f"axis {a} is out of range for {rank} signal dimensions")
        if b in out:
            raise ValueError(f"axis {a} appears twice in axes")
        out.append(b)
    return out


def _sizes(x_shape, axes: list[int], signal_size) -> list[int]:
    if signal_size is None:
        return [x_shape[a] for a in axes]
    sizes = ints(signal_size)
    if len(sizes) != len(axes):
        raise ValueError(f"signal_size {sizes} does not match axes {axes}")
    return [x_shape[a] if s == -1 else s for a, s in zip(axes, sizes)]


def _complex(x: np.ndarray) -> np.ndarray:
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError(f"a complex input needs a last dimension of 2, got shape {x.shape}")
    xf = x.astype(np.float64)
    return xf[..., 0] + 1j * xf[..., 1]


def _pair(z: np.ndarray, dtype) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


def _fit(z: np.ndarray, axes: list[int], sizes: list[int]) -> np.ndarray:
    """``z`` trimmed or zero-padded at the end of each axis to ``sizes``."""
    for a, n in zip(axes, sizes):
        if n < 0:
            raise ValueError(f"signal size {n} is negative")
        have = z.shape[a]
        if n < have:
            z = np.take(z, np.arange(n), axis=a)
        elif n > have:
            pad = [(0, 0)] * z.ndim
            pad[a] = (0, n - have)
            z = np.pad(z, pad)
    return z


def _complex_shape(layer: Layer, ins, consts):
    """The input's shape with each transformed axis resized to signal_size (when constant)."""
    s = ins[0].shape
    if s is None or consts[1] is None or (len(consts) > 2 and consts[2] is None):
        return TensorInfo(ins[0].type, None if s is None else (-1,) * len(s))
    axes = _fft_axes(consts[1], len(s) - 1)
    out = list(s)
    for a, n in zip(axes, _sizes(s, axes, consts[2] if len(consts) > 2 else None)):
        out[a] = n
    return TensorInfo(ins[0].type, tuple(out))


def _dft_kernel(inverse: bool):
    def dft(x, axes, signal_size=None):
        x = np.asarray(x)
        z = _complex(x)
        ax = _fft_axes(axes, z.ndim)
        z = _fit(z, ax, _sizes(z.shape, ax, signal_size))
        z = np.fft.ifftn(z, axes=ax) if inverse else np.fft.fftn(z, axes=ax)
        return _pair(z, x.dtype)

    return dft


@op("DFT", versions=(7,), shape=_complex_shape)
def _dft(layer: Layer):
    return _dft_kernel(False)


@op("IDFT", versions=(7,), shape=_complex_shape)
def _idft(layer: Layer):
    return _dft_kernel(True)


def _rdft_shape(layer: Layer, ins, consts):
    """The real input's shape, resized by signal_size, the last axis halved, with a pair."""
    s = ins[0].shape
    if s is None or consts[1] is None or (len(consts) > 2 and consts[2] is None):
        return TensorInfo(ins[0].type, None)
    axes = _fft_axes(consts[1], len(s))
    out = list(s)
    for a, n in zip(axes, _sizes(s, axes, consts[2] if len(consts) > 2 else None)):
        out[a] = n
    out[axes[-1]] = out[axes[-1]] // 2 + 1 if out[axes[-1]] >= 0 else -1
    return TensorInfo(ins[0].type, tuple(out) + (2,))


@op("RDFT", versions=(9,), shape=_rdft_shape,
    notes="a signal_size of -1 keeps the axis and a larger one zero-pads it, as specified; "
          "OpenVINO's CPU plugin refuses both")
def _rdft(layer: Layer):
    def rdft(x, axes, signal_size=None):
        x = np.asarray(x)
        ax = _fft_axes(axes, x.ndim)
        xf = _fit(x.astype(np.float64), ax, _sizes(x.shape, ax, signal_size))
        return _pair(np.fft.rfftn(xf, axes=ax), x.dtype)

    return rdft


def _irdft_shape(layer: Layer, ins, consts):
    """The complex input's shape, resized by signal_size, the last axis 2·(n − 1) by default."""
    s = ins[0].shape
    if s is None or consts[1] is None or (len(consts) > 2 and consts[2] is None):
        return TensorInfo(ins[0].type, None if s is None else (-1,) * (len(s) - 1))
    axes = _fft_axes(consts[1], len(s) - 1)
    out = list(s[:-1])
    given = ints(consts[2]) if len(consts) > 2 else [-1] * len(axes)
    for a, n in zip(axes, given):
        out[a] = n if n != -1 else s[a]
    if given[-1] == -1:
        out[axes[-1]] = 2 * (s[axes[-1]] - 1) if s[axes[-1]] >= 0 else -1
    return TensorInfo(ins[0].type, tuple(out))


@op("IRDFT", versions=(9,), shape=_irdft_shape,
    notes="an axis other than the last that signal_size lengthens is zero-padded, as specified; "
          "OpenVINO's CPU plugin leaves it unwritten")
def _irdft(layer: Layer):
    def irdft(x, axes, signal_size=None):
        x = np.asarray(x)
        z = _complex(x)
        ax = _fft_axes(axes, z.ndim)
        given = ints(signal_size) if signal_size is not None else [-1] * len(ax)
        if len(given) != len(ax):
            raise ValueError(f"signal_size {given} does not match axes {ax}")
        sizes = [z.shape[a] if n == -1 else n for a, n in zip(ax, given)]
        if given[-1] == -1:
            sizes[-1] = 2 * (z.shape[ax[-1]] - 1)
        return np.fft.irfftn(z, s=sizes, axes=ax).astype(x.dtype)

    return irdft


# ---- STFT, ISTFT -------------------------------------------------------------------------------

def _padded_window(window, frame_size: int) -> np.ndarray:
    w = np.asarray(window, np.float64).reshape(-1)
    if w.size > frame_size:
        raise ValueError(f"the window ({w.size}) is longer than frame_size {frame_size}")
    out = np.zeros(frame_size)
    start = (frame_size - w.size) // 2
    out[start:start + w.size] = w
    return out


def _frame_args(frame_size, frame_step) -> tuple[int, int]:
    size, step = scalar(frame_size), scalar(frame_step)
    if size <= 0 or step <= 0:
        raise ValueError(f"frame_size {size} and frame_step {step} must be positive")
    return size, step


def _stft_shape(layer: Layer, ins, consts):
    """[B, frames, bins, 2] ([B, bins, frames, 2] with transpose_frames); B for a 2-D signal."""
    s = ins[0].shape
    if s is None:
        return TensorInfo(ins[0].type, None)
    frames = bins = -1
    if consts[2] is not None and consts[3] is not None and s[-1] >= 0:
        size, step = _frame_args(consts[2], consts[3])
        frames, bins = (s[-1] - size) // step + 1, size // 2 + 1
    elif consts[2] is not None:
        bins = scalar(consts[2]) // 2 + 1
    inner = (bins, frames) if flag(layer, "transpose_frames") else (frames, bins)
    return TensorInfo(ins[0].type, tuple(s[:-1]) + inner + (2,))


@op("STFT", versions=(15,), shape=_stft_shape)
def _stft(layer: Layer):
    transposed = flag(layer, "transpose_frames", False)

    def stft(signal, window, frame_size, frame_step):
        signal = np.asarray(signal)
        size, step = _frame_args(frame_size, frame_step)
        x = signal.astype(np.float64)
        batched = x.ndim == 2
        x = x if batched else x[None]
        if x.ndim != 2 or x.shape[1] < size:
            raise ValueError(f"signal of shape {signal.shape} is not [T] or [B, T] with T >= "
                             f"frame_size {size}")
        n = (x.shape[1] - size) // step + 1
        starts = np.arange(n) * step
        frames = x[:, starts[:, None] + np.arange(size)] * _padded_window(window, size)
        spec = np.fft.rfft(frames, axis=-1)                  # [B, frames, bins]
        out = _pair(spec, signal.dtype)
        if transposed:
            out = out.transpose(0, 2, 1, 3)
        return np.ascontiguousarray(out if batched else out[0])

    return stft


def _istft_shape(layer: Layer, ins, consts):
    """[B, length] or [length]: the length known when the inputs that set it are constants."""
    s = ins[0].shape
    if s is None:
        return TensorInfo(ins[0].type, None)
    length = -1
    if len(consts) > 4 and consts[4] is not None and scalar(consts[4]) > 0:
        length = scalar(consts[4])
    elif consts[2] is not None and consts[3] is not None and s[-2] >= 0:
        size, step = _frame_args(consts[2], consts[3])
        length = (s[-2] - 1) * step + (0 if flag(layer, "center") else size)
    return TensorInfo(ins[0].type, tuple(s[:-3]) + (length,))


@op("ISTFT", versions=(16,), shape=_istft_shape)
def _istft(layer: Layer):
    center = flag(layer, "center", False)
    normalized = flag(layer, "normalized", False)

    def istft(data, window, frame_size, frame_step, signal_length=None):
        data = np.asarray(data)
        size, step = _frame_args(frame_size, frame_step)
        batched = data.ndim == 4
        z = _complex(data if batched else data[None])        # [B, bins, frames]
        if z.shape[1] != size // 2 + 1:
            raise ValueError(f"{z.shape[1]} frequency bins for frame_size {size}")
        n = z.shape[2]
        frames = np.fft.irfft(np.swapaxes(z, 1, 2), n=size, axis=-1)   # [B, frames, size]
        full = (n - 1) * step + size
        total = np.zeros((z.shape[0], full))
        weight = np.zeros(full)
        w = _padded_window(window, size)
        for f in range(n):
            total[:, f * step:f * step + size] += frames[:, f] * w
            weight[f * step:f * step + size] += w * w
        with np.errstate(divide="ignore", invalid="ignore"):
            total = np.where(weight != 0, total / np.where(weight != 0, weight, 1), 0.0)
        if normalized:
            total *= np.sqrt(size)
        margin = size // 2 if center else 0
        length = scalar(signal_length) if signal_length is not None else -1
        if length <= 0:
            length = full - size if center else full
        out = np.zeros((z.shape[0], length))
        kept = total[:, margin:margin + length]
        out[:, :kept.shape[1]] = kept
        out = out.astype(data.dtype)
        return out if batched else out[0]

    return istft
