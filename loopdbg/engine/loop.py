"""Running Loop-5 and TensorIterator-1, one body iteration at a time, with an event after each.

This is the semantic heart of loopdbg; every rule here is a rule of docs/semantics.md
(numbered in the comments). The per-iteration path only feeds slices and the counter, calls the
compiled body, collects scan pieces, checks the condition and applies the back edges.
"""

from __future__ import annotations

import sys
from time import perf_counter
from typing import Generator

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.slicing import Chunks, chunks, is_canonical
from loopdbg.errors import LoopdbgError, ResourceLimitError, RunError
from loopdbg.ir import model as irm
from loopdbg.ops.budget import BUDGET, SLACK
from loopdbg.ops.budget import used as budget_used
from loopdbg.text import byte_size

COUNTER_BLOCK = 4096


class Start:
    """What the setup of one loop execution (``begin``) hands to the iteration code."""

    __slots__ = ("outer", "trip", "params", "sliced", "n_slices", "limit", "cap", "held",
                 "back_edges", "collected", "outputs", "run")


def begin(spec: LoopSpec, ctx: RunContext, args: tuple):
    """Set an execution up: feeds, trip count and condition, LoopStarted and the notices. A loop
    that runs no iteration is finished here (``outputs`` set); otherwise the body Parameters'
    first values are ready in ``params``."""
    st = Start()
    st.outer = outer = tuple(ctx.outer)
    path = spec.path
    is_loop = spec.kind == "Loop"
    params: list = [None] * len(spec.param_names)
    for pos, ext in spec.merged + spec.invariant:
        params[pos] = _external(spec, args, ext)
    sliced = [(f.pos, _chunks(spec, f, args)) for f in spec.sliced]

    if is_loop:
        trip, exec_cond = _trip_and_condition(spec, args)
    else:
        trip, exec_cond = _ti_iterations(spec, sliced), True
    yield ev.LoopStarted(path, spec.layer.id, spec.layer.name, spec.kind, trip, exec_cond,
                         outer, spec)
    yield from _setup_notices(spec, ctx, args)
    st.outputs = None
    if trip == 0 or not exec_cond:
        reason = (ev.STOP_NOT_STARTED if not exec_cond else
                  ev.STOP_ZERO_TRIP if is_loop else ev.STOP_SLICES)
        outputs = yield from _zero_iteration_outputs(spec, ctx, args)
        finished = ev.LoopFinished(path, 0, reason, _named(spec, outputs), outer)
        ctx.loops.append(finished)
        yield finished
        st.outputs = outputs
        return st

    cur = spec.current_iteration
    if cur is not None and spec.cur_fed_back:      # REF: zero first, then the back edge's value
        params[cur] = counter_block(spec, 0)[0]
    if spec.condition_param is not None:
        params[spec.condition_param] = np.asarray(exec_cond)
    st.trip, st.params, st.sliced = trip, params, sliced
    st.n_slices = min((len(pieces) for _, pieces in sliced), default=sys.maxsize)
    st.cap = cap = ctx.max_iterations
    st.limit = min(trip if trip is not None else sys.maxsize,
                   cap if cap is not None else sys.maxsize)
    st.held = ctx.scan_bytes       # pieces the enclosing loop executions are collecting
    st.back_edges = [(p, r, params[p].dtype if isinstance(params[p], np.ndarray) else None)
                     for p, r in spec.back_edges]       # ONNX sequences and optionals: no dtype
    st.collected = tuple([] for _ in spec.concats)
    st.run = ev.LoopRun(path, trip, spec, st.collected, outer)    # shared by its events
    return st


def end(spec: LoopSpec, ctx: RunContext, st: Start, i: int, stop: str, outs: tuple):
    """Finish an execution that ran ``i`` iterations: the outputs, LoopFinished."""
    path = spec.path
    if stop == ev.STOP_CAP:
        yield from _notice(ctx, path, f"loop '{path}' stopped after {i} iterations at the "
                                      f"iteration cap (--max-iterations {st.cap}); its outputs "
                                      f"are what those produced.", 9)
    ctx.scan_bytes = st.held       # this execution's pieces end here, joined into its outputs
    outputs = tuple(outs[o.result_pos] if o.kind == irm.LAST_VALUE
                    else spec.join_concat(o.concat_k, st.collected[o.concat_k])
                    for o in spec.outputs)
    finished = ev.LoopFinished(path, i, stop, _named(spec, outputs), st.outer)
    ctx.loops.append(finished)
    yield finished
    return outputs


def fail(spec: LoopSpec, ctx: RunContext, st: Start, i: int, exc: Exception):
    """The error that stopped iteration ``i``: a LoopdbgError as it is, a kernel's exception as
    a RunError naming the loop, the iteration and the layer; LoopFinished(error) is yielded."""
    if not isinstance(exc, LoopdbgError):
        exc = spec.body.failure(exc, f"loop '{spec.path}', iteration {i}: ", "the body",
                                loop_path=spec.path, iteration=i)
    yield from _fail(spec, ctx, i, st.outer, exc)
    return exc


def run_loop(spec: LoopSpec, ctx: RunContext, args: tuple) -> Generator[ev.Event, None, tuple]:
    """Run one execution of a Loop/TensorIterator; yields events, returns the output tuple.

    The general code: ``loopcode`` compiles the same iteration, specialised to one loop, for
    runs that do not record every node."""
    st = yield from begin(spec, ctx, args)
    if st.outputs is not None:
        return st.outputs
    outer = st.outer
    path = spec.path
    is_loop = spec.kind == "Loop"
    here = f"loop '{path}'"
    params, sliced, trip, limit = st.params, st.sliced, st.trip, st.limit
    cur = spec.current_iteration
    body = spec.body
    run = body.run_all if ctx.record_nodes else body.run
    is_gen = body.is_generator
    cond_pos = spec.cond_result
    concat_pos = [(o.concat_k, o.result_pos) for o in spec.concats]
    collected = st.collected
    first_shapes: list = [None] * len(collected)
    back_edges = st.back_edges
    record = ctx.record_nodes
    cond_param = spec.condition_param
    budget = ctx.max_memory
    pace = Pace()                                    # the memory checkpoints (``checkpoint``)
    check_at = 1 if BUDGET.limit is not None else limit
    feed_counter = cur is not None and not spec.cur_fed_back
    block_base, block = 0, (counter_block(spec, 0) if feed_counter else None)
    nodes = None
    cond = True
    n_slices = st.n_slices
    done, execution = ev.IterationDone, st.run
    i = 0
    try:
        while True:
            if i >= n_slices:                                 # rule 8 / rule 10
                raise no_slice(spec, sliced, i)
            for pos, pieces in sliced:
                params[pos] = pieces[i]
            if feed_counter:                                  # rule 4
                j = i - block_base
                if j >= COUNTER_BLOCK:
                    block_base, j = i, 0
                    block = counter_block(spec, i)
                params[cur] = block[j]
            body_in = tuple(params)
            if is_gen:
                ctx.outer.append(i)
                outs = yield from run(ctx, *body_in)
                ctx.outer.pop()
            else:
                outs = run(ctx, *body_in)
            if record:
                outs, every = outs
                nodes = body.result_values(every)
            for k, r in concat_pos:                           # rule 7
                piece = outs[r]
                if not isinstance(piece, np.ndarray):
                    piece = _tensor_piece(spec, k, piece, i)
                shape = piece.shape
                if shape != first_shapes[k]:
                    first_shapes[k] = piece_shape(spec, k, shape, first_shapes[k], i)
                collected[k].append(piece)
                if budget is not None:
                    count_bytes(spec, ctx, piece, budget, i)
            if cond_pos is not None:                          # rule 3: this iteration still counts
                try:
                    cond = bool(outs[cond_pos])
                except ValueError:
                    raise bad_condition(spec, outs[cond_pos], i) from None
            i += 1
            if cond and i < limit:                            # the usual case: one comparison
                stop = None
            else:
                stop = stop_reason(cond, trip, i, is_loop)
            yield done((execution, i - 1, cond, stop is None, body_in, outs, nodes, stop))
            if stop is not None:
                break
            if i >= check_at:                                 # the memory budget's checkpoint
                check_at = checkpoint(spec, i, limit, pace, [outs[r] for _, r, _ in back_edges])
            for p, r, dt in back_edges:                       # rule 5: all at once
                v = outs[r]
                if dt is not None and (vd := getattr(v, "dtype", None)) is not dt and vd != dt:
                    raise dtype_changed(spec, p, r, dt, v, i - 1)
                params[p] = v
            if cond_param is not None:
                params[cond_param] = np.asarray(cond)
    except Exception as exc:  # a kernel failed: name the loop, the iteration and the layer
        err = yield from fail(spec, ctx, st, i, exc)
        if err is exc:
            raise
        raise err from None
    return (yield from end(spec, ctx, st, i, stop, outs))


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
        piece = _tensor_piece(spec, k, piece, i)
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
    are not checked)."""
    vd = getattr(v, "dtype", None)
    if dt is not None and vd is not dt and vd != dt:
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
    """When one loop execution checks the memory budget next (see ``checkpoint``)."""

    __slots__ = ("step", "last", "held")

    def __init__(self):
        self.step, self.last, self.held = 1, perf_counter(), -1


def checkpoint(spec: LoopSpec, i: int, limit: int, pace: Pace, carried) -> int:
    """The memory budget between iterations (see ``loopdbg.ops.budget``), after iteration
    ``i - 1``: what the run added to the process (its RSS) must stay within the budget.

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


# -- setting up -------------------------------------------------------------------------------
def _external(spec: LoopSpec, args: tuple, ext: int):
    if not 0 <= ext < len(args) or args[ext] is None:     # -1 would read the last input
        raise RunError(f"{spec.where}{spec.layer.describe()}: the port map reads input {ext}, "
                       f"which is not connected.", loop_path=spec.path)
    return args[ext]


def _chunks(spec: LoopSpec, f, args) -> Chunks:
    x = _external(spec, args, f.ext)
    what = f"{spec.where}{spec.layer.describe()}: sliced input '{f.name}'"
    try:
        return chunks(x, f.axis, f.start, f.end, f.stride, f.part_size, what=what,
                      squeeze=spec.onnx)              # ONNX Scan: the slice loses the axis
    except RunError as exc:
        exc.loop_path = spec.path
        raise


def _single(value, what: str, spec: LoopSpec):
    arr = np.asarray(value)
    if arr.size != 1:
        raise RunError(f"{spec.where}{spec.layer.describe()}: the {what} must hold one element, "
                       f"but it has shape {arr.shape}.", loop_path=spec.path)
    return arr.reshape(()).item()


def _trip_and_condition(spec: LoopSpec, args) -> tuple[int | None, bool]:
    """Rules 1, 2 and 15: trip count (negative or absent: no limit) and execution condition."""
    trip = None
    if len(args) > 0 and args[0] is not None:
        arr = np.asarray(args[0])
        if arr.dtype.kind not in "iu":
            raise RunError(f"{spec.where}{spec.layer.describe()}: the trip count must be i32 or "
                           f"i64, but it is {arr.dtype}.", loop_path=spec.path)
        t = int(_single(arr, "trip count", spec))
        trip = t if t >= 0 else (0 if spec.onnx else None)   # ONNX: negative M runs none
    cond = True
    if len(args) > 1 and args[1] is not None:
        cond = bool(_single(args[1], "execution condition", spec))
    return trip, cond


def _ti_iterations(spec: LoopSpec, sliced) -> int:
    """Rule 10 (all sliced inputs agree) and rule 12 (no sliced input)."""
    if sliced:
        counts = {spec.param_names[pos]: len(pieces) for pos, pieces in sliced}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"'{n}' gives {c}" for n, c in counts.items())
            raise RunError(f"{spec.where}{spec.layer.describe()}: the sliced inputs disagree on the "
                           f"number of iterations: {listed}.", loop_path=spec.path)
        return next(iter(counts.values()))
    if spec.concats:
        o = spec.concats[0]
        return abs(o.end - o.start) // max(abs(o.stride), 1)
    return 1


def _setup_notices(spec: LoopSpec, ctx: RunContext, args):
    path = spec.path
    for text in spec.duplicates:
        yield from _notice(ctx, path, f"loop '{path}': {text}.", None)
    for f in spec.sliced:
        length = np.shape(args[f.ext])[f.axis] if args[f.ext] is not None else 0
        if length and not is_canonical(f.start, f.end, f.stride, length):
            yield from _notice(ctx, path,
                          f"loop '{path}': sliced input '{f.name}' uses start={f.start} "
                          f"end={f.end} stride={f.stride}; loopdbg follows the specification, "
                          f"OpenVINO's CPU plugin slices from the end of the axis instead.", 10)
    if spec.kind == "Loop":
        for o in spec.concats:
            if o.stride < 0:
                yield from _notice(ctx, path,
                              f"loop '{path}': concatenated output '{o.name}' has stride "
                              f"{o.stride}; loopdbg reverses it as OpenVINO's CPU plugin does, "
                              f"the Loop-5 specification does not define it.", 7)
    elif not spec.sliced:
        yield from _notice(ctx, path,
                      f"loop '{path}' has no sliced input; its iteration count comes from "
                      + ("its first concatenated output." if spec.concats else
                         "nothing, so it runs once."), 12)


def _zero_iteration_outputs(spec: LoopSpec, ctx: RunContext, args):
    """Rule 6: outputs of a loop whose body never ran."""
    outputs = []
    for o in spec.outputs:
        if o.kind == irm.CONCAT:
            outputs.append(spec.empty_concat(o))
            continue
        ext = spec.merged_source(o.result_pos)
        if ext is not None:
            outputs.append(args[ext])
            continue
        dims, dtype = spec.declared(o.result_pos)
        outputs.append(np.zeros(dims, dtype))
        yield from _notice(ctx, spec.path,
                      f"loop '{spec.path}' ran zero iterations, so output '{o.name}' (not fed by "
                      f"a back edge) is undefined by the specification; loopdbg gives zeros of "
                      f"shape {dims}.", 6)
    return tuple(outputs)


# -- per-iteration helpers --------------------------------------------------------------------
def _what(v) -> str:
    return ("an empty optional" if v is None else f"a sequence of {len(v)} tensors"
            if isinstance(v, list) else type(v).__name__)


def _tensor_piece(spec: LoopSpec, k: int, piece, i: int) -> np.ndarray:
    """A scan output's piece must be a tensor (numpy scalars become 0-d arrays)."""
    if piece is None or isinstance(piece, list):
        raise RunError(f"loop '{spec.path}': iteration {i} produced {_what(piece)} for "
                       f"concatenated output '{spec.concats[k].name}'; scan outputs are tensors.",
                       loop_path=spec.path, iteration=i)
    return np.asarray(piece)


def counter_block(spec: LoopSpec, base: int) -> np.ndarray:
    values = np.arange(base, base + COUNTER_BLOCK, dtype=spec.cur_dtype)
    return values.reshape(-1, 1) if spec.cur_shape == (1,) else values


def _agree_off_axis(shape: tuple, first: tuple, axis: int) -> bool:
    """Rule 7: pieces are joined by a plain concatenation, so only the axis dim may vary."""
    if len(shape) != len(first) or not shape:
        return False
    axis = axis + len(shape) if axis < 0 else axis
    return all(a == b for j, (a, b) in enumerate(zip(shape, first)) if j != axis)


def _named(spec: LoopSpec, outputs) -> dict:
    return {o.name: v for o, v in zip(spec.outputs, outputs)}


def _notice(ctx: RunContext, path: str, message: str, rule: int | None):
    """Record a notice once per run and return the events to yield (none if already said)."""
    return ctx.notice(path, message, rule)


def _fail(spec: LoopSpec, ctx: RunContext, i: int, outer, exc: Exception):
    finished = ev.LoopFinished(spec.path, i, ev.STOP_ERROR, {}, outer, error=str(exc))
    ctx.loops.append(finished)
    yield finished
