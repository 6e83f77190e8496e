"""The arithmetic of breakpoint and watch expressions, refusing what would be too big to make:
an integer power past ``MAX_DIGITS`` digits, a string or list repeated past ``MAX_ITEMS`` items,
an array (a broadcast, a matrix product, min/max stacking their arguments) past what is left of
the run's ``--max-memory`` (``MAX_BYTES`` without one), all before it is made."""

from __future__ import annotations

import operator
from typing import Callable

import numpy as np

from loopdbg.errors import LoopdbgError
from loopdbg.ops.budget import BUDGET, BudgetExceeded, elements, reserve
from loopdbg.text import byte_size

MAX_DIGITS = 1000          # decimal digits of an integer power
MAX_ITEMS = 1_000_000      # items of a repeated string, list or tuple
MAX_BYTES = 256 << 20      # an array an expression makes, when the run has no memory budget


class ExprError(LoopdbgError):
    """An expression outside the language, or one that failed when evaluated."""


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def power(a, b):
    """``a ** b``, refused when an integer result would be too big to compute or print."""
    if _is_int(a) and _is_int(b) and abs(int(a)) > 1 and int(b) > 0:
        digits = int(b) * np.log10(abs(int(a)))
        if digits > MAX_DIGITS:
            raise ExprError(f"{a} ** {b} would have about {digits:,.0f} digits (at most "
                             f"{MAX_DIGITS:,} are allowed).")
    return operator.pow(a, b)


def times(a, b):
    """``a * b``, refused when it repeats a string, list or tuple past MAX_ITEMS items."""
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and _is_int(n) and len(seq) * int(n) > MAX_ITEMS:
            raise ExprError(f"repeating a {type(seq).__name__} of {len(seq):,} items {int(n):,} "
                             f"times is past the limit of {MAX_ITEMS:,} items.")
    return operator.mul(a, b)


def fits(nbytes: float, what: str) -> None:
    """An array of ``nbytes`` the expression is about to make must fit in what is left of the
    run's memory budget (``--max-memory``), and in ``MAX_BYTES`` when the run has none."""
    if nbytes > MAX_BYTES and BUDGET.limit is None:
        raise ExprError(f"{what} would make an array of {byte_size(nbytes)}, past the "
                        f"{byte_size(MAX_BYTES)} an expression may make.")
    try:
        reserve(nbytes)
    except BudgetExceeded as exc:
        raise ExprError(f"{what} would make an array too big for the run: {exc}.") from None


def grows(op: Callable, matmul: bool = False) -> Callable:
    """``op(a, b)``, its result's size checked first when two arrays of different shapes
    broadcast (an outer sum ``x[None] + x[:, None]``) or multiply as matrices."""
    def run(a, b):
        if type(a) is np.ndarray and type(b) is np.ndarray and a.shape != b.shape:
            try:
                if matmul and a.ndim >= 2 and b.ndim >= 2:
                    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + \
                        (a.shape[-2], b.shape[-1])
                else:
                    shape = np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                return op(a, b)                   # numpy says what does not broadcast
            n = elements(shape)
            if n > max(a.size, b.size):
                fits(n * max(a.itemsize, b.itemsize, 1), f"an operation on shapes {a.shape} "
                                                          f"and {b.shape}")
        return op(a, b)
    return run
