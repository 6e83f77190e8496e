"""Slicing of sliced inputs, the same rule for TensorIterator and Loop (docs/semantics.md rules 8, 10).

``start``/``end`` are normalised with the axis length (-1 is the last element); ``end`` is
inclusive; ``stride`` is the step and must have ``|stride| == part_size``; each chunk keeps the
axis with length ``part_size``. For ``stride > 0`` chunk k starts at ``start + k*stride``; for
``stride < 0`` chunk k ends at ``start - k*|stride|``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.errors import RunError


def chunks(x: np.ndarray, axis: int, start: int, end: int, stride: int, part_size: int,
           *, what: str) -> list[np.ndarray]:
    """Every chunk of ``x`` along ``axis``, in the order the iterations consume them."""
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
    lead = (slice(None),) * axis
    p = part_size
    if stride > 0:
        n = max((e - s + 1) // p, 0)
        bounds = [(s + k * p, s + k * p + p) for k in range(n)]
    else:
        n = max((s - e + 1) // p, 0)
        bounds = [(s - k * p - p + 1, s - k * p + 1) for k in range(n)]
    for lo, hi in bounds[:1] + bounds[-1:]:
        if lo < 0 or hi > length:
            raise RunError(f"{what}: start={start} end={end} stride={stride} part_size={p} reach "
                           f"outside the axis of length {length}.")
    return [x[lead + (slice(lo, hi),)] for lo, hi in bounds]


def is_canonical(start: int, end: int, stride: int, length: int) -> bool:
    """Whether OpenVINO's CPU plugin slices this the same way (it always starts at an end)."""
    s = start + length if start < 0 else start
    e = end + length if end < 0 else end
    if stride > 0:
        return s == 0 and e == length - 1
    return s == length - 1 and e == 0
