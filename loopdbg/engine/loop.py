"""Running Loop-5 and TensorIterator-1, one body iteration at a time, with an event after each.

This is the semantic heart of loopdbg; every rule here is a rule of docs/semantics.md
(numbered in the comments). The per-iteration path only feeds slices and the counter, calls the
compiled body, collects scan pieces, checks the condition and applies the back edges. An
execution's ends are in ``engine.execution`` (``begin``, ``end``, ``fail``), the checks an
iteration makes in ``engine.iteration_checks``; ``loopcode`` compiles the same iteration.
"""

from __future__ import annotations

from typing import Generator

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine.context import RunContext
from loopdbg.engine.execution import COUNTER_BLOCK, begin, counter_block, end, fail
from loopdbg.engine.iteration_checks import (Pace, bad_condition, checkpoint, count_bytes,
                                             no_slice, piece_shape, same_dtype, stop_reason,
                                             tensor_piece)
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.ops.budget import BUDGET


def run_loop(spec: LoopSpec, ctx: RunContext, args: tuple) -> Generator[ev.Event, None, tuple]:
    """Run one execution of a Loop/TensorIterator; yields events, returns the output tuple.

    The general code: ``loopcode`` compiles the same iteration, specialised to one loop, for
    runs that do not record every node."""
    st = yield from begin(spec, ctx, args)
    if st.outputs is not None:
        return st.outputs
    is_loop = spec.kind == "Loop"
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
                    piece = tensor_piece(spec, k, piece, i)
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
                    same_dtype(spec, p, r, dt, v, i - 1)
                params[p] = v
            if cond_param is not None:
                params[cond_param] = np.asarray(cond)
    except Exception as exc:  # a kernel failed: name the loop, the iteration and the layer
        err = yield from fail(spec, ctx, st, i, exc)
        if err is exc:
            raise
        raise err from None
    return (yield from end(spec, ctx, st, i, stop, outs))
