"""Comparing one of loopdbg's values with another's (a runtime's, or another model's), as
docs/semantics.md rule 14 says.

Floats are compared with ``numpy.isclose(loopdbg, openvino, rtol, atol)`` (NaN equals NaN),
integers and booleans exactly, and shapes must be identical (zero-length ones too). Element types
must be of the same kind (float, signed/unsigned integer, boolean); a different width of the same
kind (an IR v10 model's i64 output that OpenVINO hands back as i32) is compared by value and noted.
``other`` names the other side in the sentences (``"OpenVINO"``, ``"onnxruntime"``, a model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_KIND = {"f": "float", "i": "integer", "u": "integer", "b": "boolean", "c": "complex"}


@dataclass
class Comparison:
    """The verdict on one tensor: ``ok``, with the largest absolute and relative errors."""

    name: str
    shape: tuple | None              # loopdbg's
    dtype: str | None                # loopdbg's (numpy name)
    other_shape: tuple | None = None     # the other side's
    other_dtype: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    ok: bool = True
    why: str = ""                    # what differs, empty when ok
    worst: tuple | None = None       # index of the largest absolute error
    note: str = ""                   # e.g. a dtype width difference that was tolerated

    @property
    def verdict(self) -> str:
        if self.ok:
            return "ok" + (f" ({self.note})" if self.note else "")
        return self.why


def compare(name: str, ours, theirs, rtol: float = 1e-5, atol: float = 1e-5,
            other: str = "OpenVINO") -> Comparison:
    """Compare loopdbg's value ``ours`` with ``other``'s ``theirs`` (rule 14)."""
    if theirs is None:
        a = np.asarray(ours)
        return Comparison(name, a.shape, str(a.dtype), ok=False, why=f"{other} gave no value")
    a, b = np.asarray(ours), np.asarray(theirs)
    c = Comparison(name, a.shape, str(a.dtype), b.shape, str(b.dtype))
    ka, kb = _KIND.get(a.dtype.kind), _KIND.get(b.dtype.kind)
    if ka != kb:
        c.ok, c.why = False, f"dtype {a.dtype} vs {other}'s {b.dtype}"
        return c
    if a.dtype != b.dtype:
        c.note = f"{other} gives {b.dtype}"
    if a.shape != b.shape:
        c.ok, c.why = False, f"shape {_shape(a.shape)} vs {other}'s {_shape(b.shape)}"
        return c
    c.max_abs, c.max_rel = 0.0, 0.0
    if a.size == 0:
        return c
    if ka not in ("float", "complex"):
        same = np.array_equal(a, b)
        fa, fb = a.astype(np.float64), b.astype(np.float64)
    else:
        fa, fb = a.astype(np.complex128 if ka == "complex" else np.float64), \
            b.astype(np.complex128 if ka == "complex" else np.float64)
        with np.errstate(all="ignore"):
            same = bool(np.isclose(fa, fb, rtol=rtol, atol=atol, equal_nan=True).all())
    diff, rel = errors(fa, fb)
    c.max_abs, c.max_rel = float(diff.max()), float(rel.max())
    if c.max_abs > 0:
        c.worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
    if not same:
        c.ok = False
        c.why = "values differ" if ka in ("float", "complex") else f"{ka} values differ"
    return c


def keep_largest(holder, c: Comparison) -> None:
    """Raise ``holder.max_abs``/``max_rel`` (a loop's largest errors so far) to ``c``'s finite
    ones."""
    if c.max_abs is not None and math.isfinite(c.max_abs):
        holder.max_abs = max(holder.max_abs, c.max_abs)
    if c.max_rel is not None and math.isfinite(c.max_rel):
        holder.max_rel = max(holder.max_rel, c.max_rel)


def errors(fa: np.ndarray, fb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise absolute and relative (to the other value) errors; NaN vs NaN counts as 0."""
    with np.errstate(all="ignore"):
        diff = np.abs(fa - fb).astype(np.float64)
        both_nan = np.isnan(fa) & np.isnan(fb)
        diff = np.where(both_nan, 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        ref = np.abs(fb).astype(np.float64)
        rel = np.where(diff == 0, 0.0, np.where(ref > 0, diff / ref, np.inf))
    return diff, rel


def _shape(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def fmt_shape(shape) -> str:
    return "-" if shape is None else _shape(shape)


def fmt_err(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if np.isinf(x):
        return "inf"
    return f"{x:.3g}"
