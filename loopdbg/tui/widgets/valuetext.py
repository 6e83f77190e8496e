"""A tensor in a given number of characters: as much of it as fits, never cut mid-number.

``value_text(v, width)`` picks the most telling form that fits: every element (``[0.5 -1.25
3]``), else the shape with the range (``(1,4) -0.53 … 0.91``), with fewer significant digits as
room shrinks, then the shape alone. The graph's boxes and the watches use it.
"""

from __future__ import annotations

import numpy as np

from loopdbg.debug.values import is_sequence, numbers, type_text

ELLIPSIS = "…"


def number(v, digits: int = 6) -> str:
    """One number, short: ``3``, ``0.4464``, ``1.2e+07``, ``true``, ``nan``."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (complex, np.complexfloating)):
        return f"{complex(v):.{digits}g}"
    f = float(v)
    if np.isfinite(f) and f == int(f) and abs(f) < 1e15:
        return str(int(f)) + "."             # a float written as one: 3. (not the integer 3)
    return f"{f:.{digits}g}"


def shape_text(shape) -> str:
    return "(" + ",".join(map(str, shape)) + ")"


def _elements(a: np.ndarray, digits: int) -> str:
    kind = a.dtype.kind                      # the common cases without number()'s type tests
    if kind == "f":
        items = [_float(f, digits) for f in a.reshape(-1).tolist()]
    elif kind in "iu":
        items = [str(v) for v in a.reshape(-1).tolist()]
    elif kind == "b":
        items = ["true" if v else "false" for v in a.reshape(-1).tolist()]
    else:
        items = [number(v, digits) for v in a.reshape(-1)]
    if a.ndim == 0:
        return items[0]
    return "[" + " ".join(items) + "]"


def _float(f: float, digits: int) -> str:
    """``number`` of a Python float."""
    if f == f and abs(f) < 1e15 and f == int(f):
        return str(int(f)) + "."
    return f"{f:.{digits}g}"


def value_text(value, width: int = 24) -> str:
    """``value`` in at most ``width`` characters (see the module docstring)."""
    if value is None:                                   # an empty ONNX optional
        return _cut("empty", width)
    if is_sequence(value):                              # an ONNX sequence: its length
        return _cut(f"seq[{len(value)}] {type_text(value)}", width)
    raw = np.asarray(value)
    wide = numbers(raw) if raw.dtype.kind not in "biufcUSb" else raw
    if wide is not None and wide is not raw:            # bfloat16, float8, int4: widened
        return _cut(f"{value_text(wide, max(width - 10, 8))} {type_text(raw)}", width)
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything at all still gets a text
        return _cut(str(value), width)
    kind = a.dtype.kind
    shape = shape_text(a.shape)
    if kind not in "biufc":
        return _cut(f"{shape} {type_text(a)}" if a.ndim else str(a.reshape(()).item()), width)
    if a.size == 0:
        return _cut(f"{shape} empty", width)
    lead = "" if a.ndim <= 1 else shape + " "
    # every element, if even the shortest spelling fits (cheap test first: one cell each)
    if a.size <= 16 and len(lead) + 2 * a.size + 1 <= width:
        if kind in "iub":                               # no digits to drop
            text = lead + _elements(a, 6)
            if len(text) <= width:
                return text
        elif len(lead + _elements(a, 2)) <= width:
            for digits in (6, 4, 3, 2):
                text = lead + _elements(a, digits)
                if len(text) <= width:
                    return text
    if kind == "b":
        return _cut(f"{shape} {int(a.sum())} true", width)
    finite = a[np.isfinite(a)] if kind in "fc" else a
    bad = a.size - finite.size
    flag = f" {bad} NaN/Inf" if bad else ""
    if finite.size == 0:
        return _cut(f"{shape} all NaN/Inf", width)
    lo, hi = finite.min(), finite.max()
    for digits in (4, 3, 2):
        text = f"{shape} {number(lo, digits)} {ELLIPSIS} {number(hi, digits)}{flag}"
        if len(text) <= width:
            return text
    for digits in (2, 1):
        text = f"{shape} {number(lo, digits)}{ELLIPSIS}{number(hi, digits)}" \
               f"{' NaN!' if bad else ''}"
        if len(text) <= width:
            return text
    return _cut(shape + (" NaN!" if bad else ""), width)


def _cut(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS if width > 0 else ""
