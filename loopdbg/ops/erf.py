"""erf, and Gelu's erf form, without scipy: a rational function fitted for loopdbg, no exp.

erf(x) = x / sqrt(x² + h(x²)) for |x| up to ``_ERF_CLAMP`` and ±1 beyond (float32's erf rounds to
1 from 3.92 on), h = P/Q, P of degree 5 and Q of degree 5 with leading coefficient 1. h(s) is
s (1/erf(√s)² - 1): π/4 at 0, and it falls to nothing where erf nears 1, so its own rounding errors
reach erf damped (by h/(2(s + h))): 2.7 units in the last place at worst, where x P(x²)/Q(x²)
evaluated in float32 (numpy has no fused multiply-add) was 7 units off near erf = 1.

The coefficients were fitted for this project: linearized least squares on 3,000 Chebyshev nodes
of s in [0, 3.92²], weighted for erf's relative error and reweighted (Lawson) toward the smallest
largest one against ``math.erf``/``math.erfc`` (2.8e-8 in float64), then rounded to float32 and
nudged by a unit where that lowered the largest error of the float32 evaluation
(``tools/fit_erf.py`` does it all again).

Measured against ``math.erf`` (tests/unit/test_ops_erf.py holds the bounds): float32 within 2.7
units in the last place (every float32 in [1/8, 4) tried: 2.67 at 2.006), 1.6e-7 absolute (the
final sqrt and division round, at the bottom of their binades there), relative near 0 (no
special case there; ±0 keeps its sign, NaN stays NaN, ±inf gives ±1); float64 within 4e-8,
relative; float16 is computed in float32 and rounded once. Abramowitz & Stegun 7.1.26, used
before, was 4.8e-7 absolute and 56 units off near |x| 0.1 in float32 (a series took over below
0.1), and slower: numpy's float32 exp (unvectorized on an AVX2 machine) was a third of it. This is
26 numpy calls, in place.

Gelu(x) = x (1 + erf(x/√2))/2 uses the same function with its coefficients scaled by powers of 2
(exactly) so that x, not x/√2, is the variable: a pass less, and Gelu(x) = x exactly for large x.

scipy's erf is used instead when scipy is installed (exact to float64; imported on first use).
"""

from __future__ import annotations

import importlib
import math
from typing import Callable

import numpy as np

# h = P/Q's coefficients from s⁰ up, then Q's below its leading 1 (float32 numbers, exactly).
_P = (7510.94482421875, -2620.169189453125, 378.86480712890625, -28.250715255737305,
      1.0805473327636719, -0.016865313053131104)
_Q = (9563.2314453125, 2464.71826171875, 702.1484985351562, 102.22901916503906,
      10.668115615844727)
# Where erf is ±1 (the rational reaches 1 there in float32 and float64), and Gelu's x (4 √2).
_ERF_CLAMP = 4.0
_GELU_CLAMP = 5.66
_DEGREE = len(_Q)


def _numbers(clamp: float, a: float) -> tuple[float, ...]:
    """The numbers of ``_erf_form`` for erf(x/√a) in x (a = 1 for erf, 2 for Gelu): x/√a over
    sqrt(s/a + h(s/a)) is x over sqrt(s + a h(s/a)), s = x², whose P and Q, Q kept monic, take
    a^(5-k) on each s^k coefficient, and P another a: powers of 2, exact."""
    return ((clamp, -clamp, 1, -1)
            + tuple(p * a * a ** (_DEGREE - k) for k, p in enumerate(_P))[::-1]
            + tuple(q * a ** (_DEGREE - k) for k, q in enumerate(_Q))[::-1])


def _clip_ufunc() -> Callable:
    """The ufunc ``np.clip`` ends in, called directly: ``np.clip``'s own checks cost 3 µs a call,
    half a (1, 5, 768) pass (numpy 2 keeps it in ``numpy._core``, 1.x in ``numpy.core``)."""
    for name in ("numpy._core.umath", "numpy.core.umath"):
        try:
            return importlib.import_module(name).clip
        except (ImportError, AttributeError):  # pragma: no cover - other numpy versions
            continue
    return np.clip  # pragma: no cover


_CLIP = _clip_ufunc()


def _typed(numbers: tuple) -> dict[np.dtype, tuple[np.ndarray, ...]]:
    """``numbers`` as read-only 0-d arrays of float32 and of float64, by type: what numpy would
    convert the Python numbers to beside an array of that type on every call, once."""
    found = {}
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        found[dtype] = tuple(np.array(v, dtype) for v in numbers)
        for v in found[dtype]:
            v.flags.writeable = False
    return found


# (clamp, -clamp, 1, -1, P's coefficients from the top, Q's below its leading 1 from the top)
_ERF_NUMBERS = _typed(_numbers(_ERF_CLAMP, 1.0))
_GELU_NUMBERS = _typed(_numbers(_GELU_CLAMP, 2.0))
_GELU_ONE_HALF = _typed((1, 0.5))


def _erf_form(x: np.ndarray, numbers: tuple) -> np.ndarray:
    """x / sqrt(x² + h(x²)), h = P/Q, x clamped to ``numbers``' first two and the result to
    ±1; a new array of x's (float32/float64) type, four temporaries, every step in place (the
    ufuncs as locals and ``out`` by position: a decoder's small GELUs pay per call, not per
    element)."""
    hi, lo, top, bottom, *coefficients = numbers
    p_high, q_high = coefficients[:_DEGREE + 1], coefficients[_DEGREE + 1:]
    add, multiply = np.add, np.multiply
    xc = _CLIP(x, lo, hi)                      # a NaN stays NaN, ±inf comes to the clamp
    s = multiply(xc, xc)
    p = multiply(s, p_high[0])
    for c in p_high[1:-1]:
        add(p, c, p)
        multiply(p, s, p)
    add(p, p_high[-1], p)
    q = add(s, q_high[0])
    for c in q_high[1:]:
        multiply(q, s, q)
        add(q, c, q)
    np.divide(p, q, p)
    add(p, s, p)
    np.sqrt(p, p)
    np.divide(xc, p, p)                        # ±0 keeps its sign here
    _CLIP(p, bottom, top, p)                   # (one clip: 3x faster than a minimum and a
    return p                                   # maximum with a 0-d bound, vectorized neither)


def _erf_rational(x):
    """erf without scipy, of any input: a float32/float64 array in its type, float16 in float32
    rounded back once (the rational in float16 arithmetic would keep three digits), anything
    else (Python numbers, integers) in float64."""
    if type(x) is np.ndarray and x.ndim:
        numbers = _ERF_NUMBERS.get(x.dtype)
        if numbers is not None:
            return _erf_form(x, numbers)
    a = x if type(x) is np.ndarray and x.dtype.kind == "f" else np.asarray(x, np.float64)
    if a.dtype == np.float16:
        return _erf_rational(a.astype(np.float32)).astype(np.float16)
    if a.dtype not in _ERF_NUMBERS:                              # long double
        a = a.astype(np.float64)
    out = _erf_form(a.reshape(-1), _ERF_NUMBERS[a.dtype]).reshape(a.shape)
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
    numbers = _GELU_NUMBERS.get(x.dtype) if type(x) is np.ndarray and x.ndim else None
    if numbers is not None and (_ERF or _erf_function()) is _erf_rational:
        one, half = _GELU_ONE_HALF[x.dtype]
        e = _erf_form(x, numbers)                       # erf(x/√2), its numbers scaled
        np.add(e, one, e)
        np.multiply(e, half, e)                         # exact, and before x: no overflow
        np.multiply(e, x, e)                            # for |x| above half the largest
        return e
    return 0.5 * x * (1 + erf(x * math.sqrt(0.5)))
