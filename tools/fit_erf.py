"""Fit the coefficients of loopdbg/ops/erf.py: erf(x) = x / sqrt(x² + h(x²)), h = P/Q.

h(s) = s (1/erf(√s)² - 1) on s in [0, 3.92²], P and Q of degree 5, Q monic. The fit is
linearized least squares (P - h Q = 0) on Chebyshev nodes, weighted so that the residual is erf's
relative error (δh / (2 (s + h))), reweighted by Lawson's iteration toward the smallest largest
one; then the coefficients are rounded to float32 and nudged a unit at a time (a seeded random
search) where that lowers the largest error of the float32 evaluation against math.erf.

    python tools/fit_erf.py [--nudges 500]

prints the float64 fit's error, the float32 evaluation's largest error in units in the last
place, and the coefficients as erf.py writes them. numpy's least squares may differ in the last
digits from one machine to another, so a run may find coefficients a unit or two apart.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

CLAMP, DEGREE, NODES = 3.92, 5, 3000


def h_exact(x: float) -> float:
    if x == 0:
        return math.pi / 4
    e = math.erf(x)
    return x * x * math.erfc(x) * (1 + e) / (e * e)      # s (1 - erf²) / erf², without cancelling


def fit() -> tuple[np.ndarray, np.ndarray, float]:
    k = np.arange(NODES)
    t = (1 - np.cos(np.pi * (k + 0.5) / NODES)) / 2        # Chebyshev nodes of [0, 1]
    s = CLAMP * CLAMP * t
    f = np.array([h_exact(v) for v in np.sqrt(s)])
    scale = 2 * (s + f)                                    # erf's relative error is δh / scale
    vp = np.polynomial.chebyshev.chebvander(2 * t - 1, DEGREE)
    vq = np.polynomial.chebyshev.chebvander(2 * t - 1, DEGREE)
    weights, q_values, best = np.ones(NODES), np.ones(NODES), (math.inf, None)
    for step in range(300):
        a = np.hstack([vp, -f[:, None] * vq[:, 1:]])
        w = weights / np.abs(q_values) / scale
        sol = np.linalg.lstsq(a * w[:, None], f * w, rcond=None)[0]
        p_cheb, q_cheb = sol[:DEGREE + 1], np.concatenate([[1.0], sol[DEGREE + 1:]])
        q_values = vq @ q_cheb
        err = ((vp @ p_cheb) / q_values - f) / scale
        if np.abs(err).max() < best[0]:
            best = (np.abs(err).max(), (p_cheb, q_cheb))
        if step >= 10:
            weights = weights * np.sqrt(np.abs(err))
            weights /= weights.max()
    p_cheb, q_cheb = best[1]
    to_power = np.polynomial.Polynomial([-1, 2])           # Chebyshev's u = 2t - 1, t = s / C²

    def in_s(c):
        poly = np.polynomial.Polynomial(np.polynomial.chebyshev.cheb2poly(c))(to_power).coef
        return np.array([v / CLAMP ** (2 * i) for i, v in enumerate(poly)])

    p, q = in_s(p_cheb), in_s(q_cheb)
    return p / q[-1], q / q[-1], best[0]


def evaluate(p: np.ndarray, q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """erf.py's float32 evaluation (Horner, in the same order)."""
    s = x * x
    num = np.full_like(s, p[-1])
    for c in p[-2::-1]:
        num = num * s + c
    den = s + q[-2]
    for c in q[-3::-1]:
        den = den * s + c
    return x / np.sqrt(s + num / den)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nudges", type=int, default=500)
    args = ap.parse_args()
    p, q, err = fit()
    print(f"float64 fit: erf's largest relative error {err:.3g}")
    x = np.concatenate([np.linspace(0, 3.95, 300_001), np.geomspace(1e-5, 4, 50_001)])
    x = x.astype(np.float32)
    exact = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)
    x = np.minimum(x, np.float32(CLAMP))          # (the search's sample ends where the fit does)
    unit = np.spacing(exact.astype(np.float32)).astype(np.float64)

    def worst(p32, q32):
        """The largest error in units, then the mean (which breaks ties)."""
        units = np.abs(evaluate(p32, q32, x).astype(np.float64) - exact) / unit
        return units.max(), units.mean()

    best_p, best_q = p.astype(np.float32), q.astype(np.float32)
    best = worst(best_p, best_q)
    print(f"float32, rounded: {best[0]:.3f} units at worst")
    rng = np.random.default_rng(1)
    up, down = np.float32(np.inf), np.float32(-np.inf)
    for _ in range(args.nudges):
        dp, dq = rng.integers(-1, 2, DEGREE + 1), rng.integers(-1, 2, DEGREE + 1)
        dq[-1] = 0                                          # Q stays monic
        tp = np.array([v if d == 0 else np.nextafter(v, up if d > 0 else down)
                       for v, d in zip(best_p, dp)], np.float32)
        tq = np.array([v if d == 0 else np.nextafter(v, up if d > 0 else down)
                       for v, d in zip(best_q, dq)], np.float32)
        score = worst(tp, tq)
        if score < best:
            best, best_p, best_q = score, tp, tq
    print(f"float32, nudged: {best[0]:.3f} units at worst")
    print("_P =", tuple(float(v) for v in best_p))
    print("_Q =", tuple(float(v) for v in best_q[:-1]))


if __name__ == "__main__":
    main()
