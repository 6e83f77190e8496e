"""What a value is, for the people looking at it: tensors, ONNX sequences and empty optionals.

The engine's values are numpy arrays, and for ONNX models also sequences (Python lists of
arrays) and empty optionals (``None``); arrays may hold ml_dtypes types numpy cannot do
statistics on (bfloat16, float8, int4) or strings. The report, the watches and the UI describe
all of them through these functions.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.elements import dtype_name, is_ml_dtype


def is_sequence(value) -> bool:
    return isinstance(value, list)


def numbers(a: np.ndarray) -> np.ndarray | None:
    """``a`` as numbers numpy can take statistics of (ml_dtypes types widened: float32, or int64
    for the integer ones); None for strings and other non-numbers."""
    if is_ml_dtype(a.dtype):
        return a.astype(np.int64 if "int" in a.dtype.name else np.float32)
    return a if a.dtype.kind in "biuf" else None


def type_text(value) -> str:
    """``float32``, ``bfloat16``, ``string``; ``sequence of float32`` (``sequence`` when empty);
    ``empty optional``."""
    if value is None:
        return "empty optional"
    if is_sequence(value):
        return f"sequence of {dtype_name(np.asarray(value[0]).dtype)}" if value else "sequence"
    return dtype_name(np.asarray(value).dtype)


def shape_text(value) -> str:
    """``(2, 3)``, ``(4,)``; a sequence by its length (``[3 tensors]``); ``-`` for None."""
    if value is None:
        return "-"
    if is_sequence(value):
        return f"[{len(value)} tensor{'s' if len(value) != 1 else ''}]"
    s = np.shape(value)
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


def mean_of(value) -> float:
    """The mean of a numeric tensor; NaN for anything else (for sparklines)."""
    if value is None or is_sequence(value):
        return float("nan")
    a = numbers(np.asarray(value))
    return float(np.mean(a)) if a is not None and a.size else float("nan")


def same_value(a, b) -> bool:
    """Whether two values are equal: same kind, shape, dtype and elements (NaN equals NaN)."""
    if is_sequence(a) or is_sequence(b) or a is None or b is None:
        if type(a) is not type(b):
            return False
        return a is None or (len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b)))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except TypeError:               # an ml_dtypes type numpy will not compare with NaNs
        return bool(np.array_equal(a.view(np.uint8), b.view(np.uint8)))
