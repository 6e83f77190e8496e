"""Temporary elision in compiled loop bodies: an elementwise step writes into a big temporary.

``h = h * 0.5 + c`` in numpy allocates one array for the product and writes the sum into it (numpy
elides the temporary when nothing else refers to it). A loop body compiled by ``loopcode`` calls
``multiply`` and ``add`` as two steps, so it would allocate a second array of the same size every
iteration, and with states of a megabyte that costs as much as the arithmetic. At plan time
``candidates`` finds the steps that may reuse an input instead, and ``fits`` decides at run time:

* the input is the output of a plain numpy ufunc step (a fresh array nobody else has seen),
* no other step and no Result reads it (so no event, view or history can ever hold it),
* the step is a plain elementwise ufunc whose loop for that dtype gives the same dtype,
* the other inputs have that dtype and broadcast to the input's shape, and
* the input is big enough (``MIN_BYTES``) for the saved allocation to matter.

Then ``ufunc(a, b, out=a)`` computes exactly what ``ufunc(a, b)`` would (the same inner loop), in
place. Runs that record every node, and the top graph, take the plain code.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

import numpy as np

MIN_BYTES = 256 << 10           # numpy's own threshold for eliding temporaries
_ndarray = np.ndarray
_same_type: dict = {}           # (ufunc, dtype) -> does its loop for that dtype give that dtype?


def candidates(steps, results, keep=frozenset()) -> dict[int, int]:
    """{step index: input position} of the steps that may write into that input; never into
    the outputs of the steps ``keep`` names (values kept from one iteration to the next)."""
    ufunc = np.ufunc                    # (one pass, inline: a body has thousands of steps)
    plain = [k for k, s in enumerate(steps) if type(s.fn) is ufunc and s.fn.nout == 1
             and len(s.outs) == 1 and not s.nested and not s.with_ctx]
    if not plain:
        return {}
    fresh = {steps[k].outs[0] for k in plain if k not in keep}
    uses = Counter(chain.from_iterable([s.ins for s in steps]))     # (None counted: no matter)
    uses.update(results)
    found = {}
    for k in plain:
        s = steps[k]
        fn = s.fn
        if fn.signature is not None or fn.nin != len(s.ins):
            continue                    # matmul (a gufunc) has a signature: not elementwise
        for j, a in enumerate(s.ins):
            if a in fresh and uses.get(a) == 1:
                found[k] = j
                break
    return found


def fits(ufunc: np.ufunc, x, *others) -> bool:
    """May ``ufunc(..., out=x)`` replace ``ufunc(...)`` (see the module docstring)?"""
    if type(x) is not _ndarray or x.base is not None or not x.flags.writeable:
        return False
    dt = x.dtype
    shape = x.shape
    for y in others:
        if getattr(y, "dtype", None) is not dt and getattr(y, "dtype", None) != dt:
            return False
        ys = y.shape
        if ys != shape and (len(ys) > len(shape) or any(
                b != 1 and b != a for a, b in zip(shape[::-1], ys[::-1]))):
            return False
    key = (ufunc, dt)
    same = _same_type.get(key)
    if same is None:
        c = dt.char
        same = _same_type[key] = (c * ufunc.nin + "->" + c) in ufunc.types
    return same
