"""One execution of a Loop/TensorIterator, entered and left: the feeds, the trip count and the
execution condition, LoopStarted and the notices (``begin``); the outputs and LoopFinished
(``end``), or the error that stopped it (``fail``): the ends of the iteration code ``loopcode``
generates, whichever way it runs the body. Every rule is a rule of docs/semantics.md (numbered
in the comments).
"""

from __future__ import annotations

import sys

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.open_scans import open_outputs, zero_trip_scans
from loopdbg.engine.slicing import Chunks, chunks, is_canonical
from loopdbg.errors import LoopdbgError, RunError
from loopdbg.ir import model as irm
from loopdbg.ops import threads


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
        params[pos] = _external(spec, args, ext, pos in spec.may_be_empty)
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
        outputs = yield from _zero_iteration_outputs(spec, ctx, args, params)
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
    st.run = ev.LoopRun(path, trip, spec, st.collected, outer,   # shared by its events
                        threads.current())
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


# -- setting up -------------------------------------------------------------------------------
def _external(spec: LoopSpec, args: tuple, ext: int, may_be_empty: bool = False):
    """External input ``ext``; None (an unconnected input) only where an ONNX body takes an
    empty optional (``LoopSpec.may_be_empty``)."""
    if not 0 <= ext < len(args) or (args[ext] is None and not may_be_empty):  # -1: the last
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


def _zero_iteration_outputs(spec: LoopSpec, ctx: RunContext, args, params):
    """Rule 6: outputs of a loop whose body never ran."""
    outputs = []
    open_ = open_outputs(spec)
    fixed = zero_trip_scans(spec, args, params) if open_ else {}
    for o in spec.outputs:
        if o.kind == irm.CONCAT:
            value, exact = fixed.get(o.result_pos, (None, False))
            outputs.append(spec.empty_concat(o) if value is None else value)
            if o.result_pos in open_ and not exact:
                yield from _notice(ctx, spec.path,
                                   f"loop '{spec.path}' ran zero iterations, and neither the "
                                   f"model nor shape inference on this run's inputs fixes the "
                                   f"shape of one value of scan output '{o.name}'; loopdbg gives "
                                   f"shape {outputs[-1].shape} (0 for each dim left open).", 6)
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


def counter_block(spec: LoopSpec, base: int) -> np.ndarray:
    values = np.arange(base, base + COUNTER_BLOCK, dtype=spec.cur_dtype)
    return values.reshape(-1, 1) if spec.cur_shape == (1,) else values


def _named(spec: LoopSpec, outputs) -> dict:
    return {o.name: v for o, v in zip(spec.outputs, outputs)}


def _notice(ctx: RunContext, path: str, message: str, rule: int | None):
    """Record a notice once per run and return the events to yield (none if already said)."""
    return ctx.notice(path, message, rule)


def _fail(spec: LoopSpec, ctx: RunContext, i: int, outer, exc: Exception):
    finished = ev.LoopFinished(spec.path, i, ev.STOP_ERROR, {}, outer, error=str(exc))
    ctx.loops.append(finished)
    yield finished
