"""Slicing of sliced inputs, the same rule for TensorIterator and Loop (docs/semantics.md rules 8, 10).

``start``/``end`` are normalised with the axis length (-1 is the last element); ``end`` is
inclusive; ``stride`` is the step and must have ``|stride| == part_size``; each chunk keeps the
axis with length ``part_size``. For ``stride > 0`` chunk k starts at ``start + k*stride``; for
``stride < 0`` chunk k ends at ``start - k*|stride|``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.errors import RunError


class Chunks:
    """The chunks of a sliced input, made one at a time when an iteration asks for its chunk.

    A sequence (``len``, indexing, iteration): making every view up front would cost a Python
    object per chunk before the first iteration runs (hundreds of MB for a long axis, even when
    ``--max-iterations`` stops the loop after five).
    """

    __slots__ = ("x", "lead", "first", "step", "n", "squeeze")

    def __init__(self, x: np.ndarray, axis: int, first: int, step: int, n: int,
                 squeeze: bool = False):
        self.x, self.lead, self.first, self.step, self.n = x, (slice(None),) * axis, first, step, n
        self.squeeze = squeeze        # ONNX Scan: the slice loses the axis

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> np.ndarray:
        if not -self.n <= k < self.n:
            raise IndexError(k)
        if k < 0:
            k += self.n
        lo = self.first + k * self.step
        if self.squeeze:
            return self.x[self.lead + (lo,)]
        return self.x[self.lead + (slice(lo, lo + abs(self.step)),)]


def chunks(x: np.ndarray, axis: int, start: int, end: int, stride: int, part_size: int,
           *, what: str, squeeze: bool = False) -> Chunks:
    """Every chunk of ``x`` along ``axis``, in the order the iterations consume them (made
    lazily); ``squeeze``: each chunk drops the axis (``part_size`` must be 1)."""
    x = np.asarray(x)
    if axis < 0:
        axis += x.ndim
    if not 0 <= axis < x.ndim:
        raise RunError(f"{what} slices along axis {axis}, but the input has rank {x.ndim}.")
    if part_size < 1 or abs(stride) != part_size:
        raise RunError(f"{what} has stride={stride} and part_size={part_size}; loopdbg needs "
                       f"|stride| == part_size (the only meaning both OpenVINO implementations share).")
    length = x.shape[axis]
    s = start + length if start < 0 else start
    e = end + length if end < 0 else end
    if length and not (0 <= s < length and 0 <= e < length):   # else: zero chunks, silently
        raise RunError(f"{what}: start={start} end={end} reach outside the axis of length "
                       f"{length}.")
    p = part_size
    if stride > 0:
        n = max((e - s + 1) // p, 0)
        first, step = s, p
    else:
        n = max((s - e + 1) // p, 0)
        first, step = s - p + 1, -p
    if n:
        lows = (first, first + (n - 1) * step)
        if min(lows) < 0 or max(lows) + p > length:
            raise RunError(f"{what}: start={start} end={end} stride={stride} part_size={p} reach "
                           f"outside the axis of length {length}.")
    return Chunks(x, axis, first, step, n, squeeze)


def is_canonical(start: int, end: int, stride: int, length: int) -> bool:
    """Whether OpenVINO's CPU plugin slices this the same way (it always starts at an end)."""
    s = start + length if start < 0 else start
    e = end + length if end < 0 else end
    if stride > 0:
        return s == 0 and e == length - 1
    return s == length - 1 and e == 0
