"""erf, and Gelu's erf form, without scipy: a rational function fitted for loopdbg, no exp.

erf(x) = x P(x²) / Q(x²) for |x| up to ``_ERF_CLAMP`` and ±1 beyond (float32's erf is 1 from 3.92
on: erfc(3.92) = 2.9e-8 is under half a unit below 1), P of degree 5 and Q of degree 5 with leading
coefficient 1. The coefficients were fitted for this project: linearized least squares on 3,000
Chebyshev nodes of s = x² in [0, 3.92²], reweighted (Lawson) toward the smallest largest relative
error against ``math.erf`` (1.9e-8 in float64), then rounded to float32 and nudged by a unit where
that lowered the largest error of the float32 evaluation.

Measured against ``math.erf`` (tests/unit/test_ops_erf.py holds the bounds): float32 within 7.3 units
in the last place everywhere (at most 4.3e-7 absolute; relative near 0, so no special case there;
±0 keeps its sign, NaN stays NaN, ±inf gives ±1); float64 within 8.3e-8, relative; float16 is computed
in float32 and rounded once. Abramowitz & Stegun 7.1.26, used before, was 4.8e-7 absolute and 56
units off near |x| 0.1 in float32, and cost twice the time: numpy's float32 exp (unvectorized on an
AVX2 machine) was most of it. This is about 25 passes of multiply/add over the array, in place.

The error is float32 rounding: Horner's 20 operations without a fused multiply-add (numpy has none)
each round, and a fit more accurate than 1.9e-8 would not show. The result is clamped to [-1, 1].

Gelu(x) = x (1/2 + erf(x/√2)/2) is the same function with its coefficients scaled (the powers of 2
exactly) so that x, not x/√2, is the variable: fewer passes, and Gelu(x) = x exactly for large x.

scipy's erf is used instead when scipy is installed (exact to float64; imported on first use).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

# P's coefficients from x⁰ up, then Q's below its leading 1 (float32 numbers, written out exactly).
_P = (29622.669921875, 4998.6484375, 1384.78369140625, 98.85746002197266, 7.478887557983398,
      0.053819652646780014)
_Q = (26252.408203125, 13180.7275390625, 2995.646728515625, 392.97979736328125, 30.519607543945312)
# Where the rational reaches ±1 (float32 and float64 alike), and Gelu's x/√2 where it reaches ±1/2.
_ERF_CLAMP = 3.92
_GELU_CLAMP = 5.75
_DEGREE = len(_Q)


def _scaled(half: float) -> tuple[float, ...]:
    """The numbers of ``_odd_rational`` for erf(x/√2)/2 in x: s = x² is (x/√2)² times 2, so Q
    monic in x² takes 2^(5-k) on each x^2k coefficient, and P that and 1/(2√2)."""
    return ((_GELU_CLAMP, -_GELU_CLAMP)
            + tuple(p * 2.0 ** (_DEGREE - k) * half / math.sqrt(2) for k, p in enumerate(_P))[::-1]
            + tuple(q * 2.0 ** (_DEGREE - k) for k, q in enumerate(_Q))[::-1])


_ERF_NUMBERS = (_ERF_CLAMP, -_ERF_CLAMP) + _P[::-1] + _Q[::-1]
_GELU_NUMBERS = _scaled(0.5)
_BOUNDS = (1, -1)
_GELU_BOUNDS = (0.5, -0.5)
_TYPED: dict[tuple, tuple[np.ndarray, ...]] = {}


def _typed(numbers: tuple, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """``numbers`` as read-only 0-d arrays of ``dtype``: what numpy converts the Python numbers
    to beside an array of that type, once (not on every call)."""
    found = _TYPED.get((numbers, dtype))
    if found is None:
        found = _TYPED[(numbers, dtype)] = tuple(np.array(v, dtype) for v in numbers)
        for v in found:
            v.flags.writeable = False
    return found


def _odd_rational(x: np.ndarray, numbers: tuple, bounds: tuple) -> np.ndarray:
    """x P(x²) / Q(x²), x clamped to ``numbers``' first two, the result to ``bounds``; a new
    array of x's (float32/float64) type, four temporaries, every step in place."""
    hi, lo, *coefficients = _typed(numbers, x.dtype)
    top, bottom = _typed(bounds, x.dtype)
    p_high, q_high = coefficients[:_DEGREE + 1], coefficients[_DEGREE + 1:]
    xc = np.clip(x, lo, hi)                    # a NaN stays NaN, ±inf comes to the clamp
    s = np.multiply(xc, xc)
    p = np.multiply(s, p_high[0])
    for c in p_high[1:-1]:
        np.add(p, c, out=p)
        np.multiply(p, s, out=p)
    np.add(p, p_high[-1], out=p)
    q = np.add(s, q_high[0])
    for c in q_high[1:]:
        np.multiply(q, s, out=q)
        np.add(q, c, out=q)
    np.multiply(p, xc, out=p)                  # ±0 keeps its sign here
    np.divide(p, q, out=p)
    np.clip(p, bottom, top, out=p)             # (one clip: 3x faster than a minimum and a
    return p                                   # maximum with a 0-d bound, vectorized neither)


def _erf_rational(x):
    """erf without scipy, of any input: a float32/float64 array in its type, float16 in float32
    rounded back once (the rational in float16 arithmetic would keep three digits), anything
    else (Python numbers, integers) in float64."""
    a = x if type(x) is np.ndarray and x.dtype.kind == "f" else np.asarray(x, np.float64)
    if a.dtype == np.float16:
        return _erf_rational(a.astype(np.float32)).astype(np.float16)
    if a.dtype not in (np.float32, np.float64):                 # long double
        a = a.astype(np.float64)
    if a.ndim:
        return _odd_rational(a, _ERF_NUMBERS, _BOUNDS)
    out = _odd_rational(a.reshape(1), _ERF_NUMBERS, _BOUNDS).reshape(())
    return out if type(x) is np.ndarray else out[()]


_ERF: Callable | None = None


def _erf_function() -> Callable:
    """scipy's erf when installed (imported on first use: it costs half a second), else
    ``_erf_rational``."""
    global _ERF
    if _ERF is None:
        try:
            from scipy.special import erf as _ERF
        except ImportError:  # pragma: no cover - scipy is optional
            _ERF = _erf_rational
    return _ERF


def erf(x):
    """scipy's erf when installed, else ``_erf_rational`` (see the module)."""
    return (_ERF or _erf_function())(x)


def gelu_erf(x):
    """Gelu's erf form, x (1 + erf(x/√2))/2: without scipy the scaled rational (see the module),
    float16 in float32 rounded back once; with scipy its erf in the formula."""
    if type(x) is np.ndarray and x.dtype == np.float16:
        return gelu_erf(x.astype(np.float32)).astype(np.float16)
    if (_ERF or _erf_function()) is _erf_rational and type(x) is np.ndarray and x.ndim \
            and x.dtype in (np.float32, np.float64):
        half = _typed(_GELU_BOUNDS, x.dtype)[0]
        w = _odd_rational(x, _GELU_NUMBERS, _GELU_BOUNDS)   # erf(x/√2)/2, within ±1/2
        np.add(w, half, out=w)
        np.multiply(w, x, out=w)
        return w
    return 0.5 * x * (1 + erf(x * math.sqrt(0.5)))
