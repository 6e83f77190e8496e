"""The checks an iteration makes, written once and called by the iteration code ``loopcode``
generates, whichever way it runs the body: a scan input without a slice left, a scan piece whose
shape differs, a back edge whose dtype changes, a condition that is not one boolean, the memory
budget and BLAS's threads between iterations, why a loop stopped, when a loop is steady.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.errors import ResourceLimitError, RunError
from loopdbg.ops.budget import BUDGET, SLACK
from loopdbg.ops.budget import used as budget_used
from loopdbg.ops.threads import revisit as revisit_threads
from loopdbg.text import byte_size


# -- the per-iteration checks, shared with loopcode ------------------------------------------
def no_slice(spec: LoopSpec, sliced, i: int) -> RunError:
    """Rules 8 and 10: a sliced input ran out of slices before the loop ended."""
    pos, pieces = min(sliced, key=lambda sp: len(sp[1]))
    return RunError(f"loop '{spec.path}' needs a slice for iteration {i} of sliced input "
                    f"'{spec.param_names[pos]}', but it has only {len(pieces)} slices.",
                    loop_path=spec.path, iteration=i)


def piece_shape(spec: LoopSpec, k: int, shape: tuple, first, i: int):
    """Rule 7: the shape of concatenated output ``k``'s pieces (set by the first; a later one
    that does not fit raises)."""
    if first is None:
        return shape
    if spec.onnx or not _agree_off_axis(shape, first, spec.concats[k].axis):
        raise RunError(
            f"loop '{spec.path}': iteration {i} produced a value of shape {shape} for "
            f"concatenated output '{spec.concats[k].name}', but iteration 0 produced {first}; "
            + ("ONNX stacks scan outputs, so every iteration must give the same shape."
               if spec.onnx else "the pieces of a concatenation must agree in every dimension "
               "but the axis."), loop_path=spec.path, iteration=i)
    return first


# The compiled code (loopcode) compares each piece's shape with a key: the first piece's shape
# when that was an array of rank 1 or more, else this (equal to no shape), so that numpy scalars
# and 0-d pieces always take ``piece_check``.
NOT_KEY = object()


def piece_check(spec: LoopSpec, k: int, piece, first, i: int):
    """What the compiled code does with a piece whose shape is not the key: make it a tensor,
    check its shape (``piece_shape``); return (piece, first shape, key)."""
    if type(piece) is not np.ndarray:
        piece = tensor_piece(spec, k, piece, i)
    shape = piece.shape
    if shape != first:
        first = piece_shape(spec, k, shape, first, i)
    return piece, first, first if piece.ndim else NOT_KEY


def steady(new: tuple, old: tuple, keys: tuple) -> bool | None:
    """After an iteration of a loop whose body only runs ufuncs (``loopcode.steady_kind``): do
    the back edges feed values of the shapes and dtypes their Parameters had, and is every scan
    piece's key a shape (an array of rank 1 or more)? Then every later iteration computes
    values of the same shapes and dtypes, and the compiled code stops checking them. None: it
    never will be (a scan of 0-d pieces keeps NOT_KEY)."""
    if any(k is NOT_KEY for k in keys):
        return None
    for a, b in zip(new, old):
        if getattr(a, "shape", None) != getattr(b, "shape", ()) or \
                getattr(a, "dtype", None) != getattr(b, "dtype", ()):
            return False
    return True


def same_dtype(spec: LoopSpec, p: int, r: int, dt, v, i: int) -> None:
    """Rule 5: a back edge keeps its dtype (values without one, ONNX sequences and optionals,
    are not checked; an ONNX optional may become empty)."""
    vd = getattr(v, "dtype", None)
    if dt is not None and vd is not dt and vd != dt:
        if v is None and p in spec.may_be_empty:    # ONNX Loop-16: an optional made empty
            return
        raise dtype_changed(spec, p, r, dt, v, i)


# What a held scan piece costs beyond its data: the array object and its slot in the list.
PIECE_OVERHEAD = 120


def count_bytes(spec: LoopSpec, ctx: RunContext, piece, budget: int, i: int) -> None:
    """--max-memory: the concatenated pieces held so far must stay within the budget."""
    ctx.scan_bytes += np.asarray(piece).nbytes + PIECE_OVERHEAD
    if ctx.scan_bytes > budget:
        raise ResourceLimitError(
            f"loop '{spec.path}': at iteration {i} the concatenated outputs hold "
            f"{byte_size(ctx.scan_bytes)}, past the memory budget of {byte_size(budget)} "
            f"(--max-memory).", loop_path=spec.path, iteration=i)


class Pace:
    """When one loop execution looks between iterations next (see ``checkpoint``)."""

    __slots__ = ("step", "last", "held")

    def __init__(self):
        self.step, self.last, self.held = 1, perf_counter(), -1


def checkpoint(spec: LoopSpec, i: int, limit: int, pace: Pace, carried,
               run: ev.LoopRun) -> int:
    """Between iterations, after iteration ``i - 1``: the memory budget (see
    ``loopdbg.ops.budget``: what the run added to the process, its RSS, must stay within it),
    and BLAS's threads, which follow the cores other processes leave free (``ops.threads``):
    looked at between the iterations of outermost loops only, so that an iteration runs with
    one count, recorded on its ``run`` (``LoopRun.blas_threads``), nested loops and all.

    Returns the iteration after which to check next: after every one while iterations are slow
    (a millisecond or more between checks) or the values ``carried`` by the back edges change
    size (a back edge that doubles outgrows any interval), else up to every 4,096."""
    budget = BUDGET.limit
    if budget is not None and (grown := budget_used()) > budget + SLACK:
        raise ResourceLimitError(
            f"loop '{spec.path}': after iteration {i - 1} the run holds {byte_size(grown)} more "
            f"than when it started, past the memory budget of {byte_size(budget)} "
            f"(--max-memory); the iterations so far can still be inspected.",
            loop_path=spec.path, iteration=i - 1)
    if not run.outer:
        moved = revisit_threads()
        if moved is not None:
            run.blas_threads.append((i, moved))
    now = perf_counter()
    held = sum(getattr(v, "nbytes", 0) for v in carried)
    steady = held == pace.held and now - pace.last < 1e-3
    pace.step = min(pace.step * 2, 4096) if steady else 1
    pace.last, pace.held = now, held
    return min(i + pace.step, limit)


def bad_condition(spec: LoopSpec, value, i: int) -> RunError:
    return RunError(f"loop '{spec.path}': iteration {i} produced a body condition of shape "
                    f"{np.shape(value)}; it must hold one element.", loop_path=spec.path,
                    iteration=i)


def stop_reason(cond, trip, i: int, is_loop: bool) -> str:
    """Why the loop stops after ``i`` iterations, when it does (rule 3, trip count, the cap)."""
    if not cond:
        return ev.STOP_CONDITION
    if trip is not None and i >= trip:
        return ev.STOP_TRIP_COUNT if is_loop else ev.STOP_SLICES
    return ev.STOP_CAP


def dtype_changed(spec: LoopSpec, p: int, r: int, dt, v, i: int) -> RunError:
    return RunError(f"loop '{spec.path}': the back edge from Result '{spec.result_names[r]}' to "
                    f"Parameter '{spec.param_names[p]}' changed dtype from {dt} to "
                    f"{getattr(v, 'dtype', _what(v))} at iteration {i}.", loop_path=spec.path,
                    iteration=i)


# -- per-iteration helpers --------------------------------------------------------------------
def _what(v) -> str:
    return ("an empty optional" if v is None else f"a sequence of {len(v)} tensors"
            if isinstance(v, list) else type(v).__name__)


def tensor_piece(spec: LoopSpec, k: int, piece, i: int) -> np.ndarray:
    """A scan output's piece must be a tensor (numpy scalars become 0-d arrays)."""
    if piece is None or isinstance(piece, list):
        raise RunError(f"loop '{spec.path}': iteration {i} produced {_what(piece)} for "
                       f"concatenated output '{spec.concats[k].name}'; scan outputs are tensors.",
                       loop_path=spec.path, iteration=i)
    return np.asarray(piece)


def _agree_off_axis(shape: tuple, first: tuple, axis: int) -> bool:
    """Rule 7: pieces are joined by a plain concatenation, so only the axis dim may vary."""
    if len(shape) != len(first) or not shape:
        return False
    axis = axis + len(shape) if axis < 0 else axis
    return all(a == b for j, (a, b) in enumerate(zip(shape, first)) if j != axis)
