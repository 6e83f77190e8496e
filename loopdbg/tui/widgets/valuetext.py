"""A tensor in a given number of characters: as much of it as fits, never cut mid-number.

``value_text(v, width)`` picks the most telling form that fits: every element (``[0.5 -1.25
3]``), else the shape with the range (``(1,4) -0.53 … 0.91``), with fewer significant digits as
room shrinks, then the shape alone. The graph's boxes, the pseudo-code's values and the watches
use it.

One formatter for every value shown in a line: a float has at most ``DIGITS`` significant
digits (as in the back-edge table) whether its elements or its range are shown, and the values
shown side by side (the boxes of one picture) share one precision (``side_by_side``): a box
with less room does not read ``0.4464`` next to its neighbour's ``0.446429``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.debug.values import is_sequence, numbers, type_text

ELLIPSIS = "…"
DIGITS = 4              # significant digits of a float in a line of text
LEAST_SHARED = 3        # ... that values side by side share at least (a cramped box: fewer)


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


def value_text(value, width: int = 24, digits: int = DIGITS) -> str:
    """``value`` in at most ``width`` characters, floats with at most ``digits`` significant
    digits (see the module docstring)."""
    return value_fit(value, width, digits)[0]


def side_by_side(items: dict, digits: int = DIGITS) -> dict:
    """The texts of values shown together, ``{key: (value, width)}`` → ``{key: text}``: every
    float at the one precision the most cramped of them needs (at least ``LEAST_SHARED``
    digits; a box with less room than that goes lower alone)."""
    first = {key: value_fit(value, width, digits) for key, (value, width) in items.items()}
    used = [d for _, d in first.values() if d is not None]
    shared = max(min(used, default=digits), LEAST_SHARED)
    if shared >= digits:
        return {key: text for key, (text, _) in first.items()}
    return {key: (text if d is None or d <= shared
                  else value_fit(items[key][0], items[key][1], shared)[0])
            for key, (text, d) in first.items()}


def value_fit(value, width: int, digits: int = DIGITS) -> tuple[str, int | None]:
    """``value_text``, and the significant digits its floats were given (None: no float digits
    shown: integers, booleans, the shape alone)."""
    if value is None:                                   # an empty ONNX optional
        return _cut("empty", width), None
    if is_sequence(value):                              # an ONNX sequence: its length
        return _cut(f"seq[{len(value)}] {type_text(value)}", width), None
    raw = np.asarray(value)
    wide = numbers(raw) if raw.dtype.kind not in "biufcUSb" else raw
    if wide is not None and wide is not raw:            # bfloat16, float8, int4: widened
        text, used = value_fit(wide, max(width - 10, 8), digits)
        return _cut(f"{text} {type_text(raw)}", width), used
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything at all still gets a text
        return _cut(str(value), width), None
    kind = a.dtype.kind
    shape = shape_text(a.shape)
    if kind not in "biufc":
        return _cut(f"{shape} {type_text(a)}" if a.ndim else str(a.reshape(()).item()),
                    width), None
    if a.size == 0:
        return _cut(f"{shape} empty", width), None
    lead = "" if a.ndim <= 1 else shape + " "
    tries = [d for d in (digits, 3, 2) if d <= digits]
    # every element, if even the shortest spelling fits (cheap test first: one cell each)
    if a.size <= 16 and len(lead) + 2 * a.size + 1 <= width:
        if kind in "iub":                               # no digits to drop
            text = lead + _elements(a, 6)
            if len(text) <= width:
                return text, None
        elif len(lead + _elements(a, 2)) <= width:
            for d in tries:
                text = lead + _elements(a, d)
                if len(text) <= width:
                    return text, d
    if kind == "b":
        return _cut(f"{shape} {int(a.sum())} true", width), None
    finite = a[np.isfinite(a)] if kind in "fc" else a
    bad = a.size - finite.size
    flag = f" {bad} NaN/Inf" if bad else ""
    if finite.size == 0:
        return _cut(f"{shape} all NaN/Inf", width), None
    lo, hi = finite.min(), finite.max()
    used = (lambda d: d) if kind in "fc" else (lambda d: None)
    for d in tries:
        text = f"{shape} {number(lo, d)} {ELLIPSIS} {number(hi, d)}{flag}"
        if len(text) <= width:
            return text, used(d)
    for d in (2, 1):
        text = f"{shape} {number(lo, d)}{ELLIPSIS}{number(hi, d)}" \
               f"{' NaN!' if bad else ''}"
        if len(text) <= width:
            return text, used(d)
    return _cut(shape + (" NaN!" if bad else ""), width), None


def _cut(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS if width > 0 else ""
