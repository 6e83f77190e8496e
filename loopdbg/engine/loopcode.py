"""A loop's iteration, written once: the generator function that runs one execution of a
Loop/TensorIterator, generated from its ``LoopSpec``. This is the semantic heart of loopdbg (every
rule is a rule of docs/semantics.md); every way of running an iteration is this one emitter,
``_iteration``, with a flag or two, so a semantic fix lands everywhere::

    def loop_run(ctx, args):
        st = yield from begin(SPEC, ctx, args)          # LoopStarted, notices (execution.begin)
        ...
        while True:
            p2 = pieces0[i]                             # only the feeds this loop has
            body_in = (p0, p1, p2)
            v0_0 = k0(p0, c0)                           # the body's own lines (plan.step_lines)
            v1_0 = k1(v0_0, p1)
            outs = (v1_0, v0_0)
            ...                                         # scan pieces, condition, stop
            yield done((RUN, i - 1, ...))               # IterationDone
            p0, = (v0_0,)                               # back edges, all at once
        return (yield from end(SPEC, ctx, st, i, stop, outs))

The body runs as the ``mode`` says. ``FAST``, what a run takes: a small body's lines are inlined
(a scalar while loop runs its two kernels in about a microsecond, so a call and a loop over
outputs would cost as much as the work); a body step that gives the same value at every
iteration of an execution (it reads constants and the loop's invariant inputs only:
``hoist.invariant_steps``) runs in the first iteration only, ``if _L_i == 0:``, and a step folded
at plan time (``hoist.fold``) not at all (what reads it reads the constant); big elementwise
temporaries are reused in place (``engine.elide``); and a body of numpy ufuncs only gets a second
copy of the iteration, from the same emitter with ``checked=False``, without the per-iteration
checks of the scan pieces' shapes and the back edges' dtypes, entered once
``iteration_checks.steady`` proves that every later iteration repeats them (``steady_kind``; the
loop execution's ``LoopRun.steady_from`` tells consumers). A body of more than
``interp.COMPILE_LIMIT`` steps is called (interpreted) rather than inlined (``inlined``).
Before each iteration the ``FAST`` code reads the run's ``keep_nodes`` (``RunContext``: one
attribute and one comparison): when a debugger has asked for the coming iteration's every value
(it will stop there), that iteration calls the body's ``run_all`` instead, as ``RECORDED`` does,
and its event carries them; its first iteration so also gives the values of the invariant steps
to the later ones.
``CALLED`` calls the body's own function each iteration and nothing more: the plain iteration,
which tests run every model on and compare with ``FAST`` event by event. ``RECORDED`` calls the
body's ``run_all``, so each event carries every node's value (runs with ``record_nodes``).

Every check is a function of ``iteration_checks`` (``no_slice``, ``piece_check``,
``stop_reason`` ...); an execution's ends are ``execution.begin``, ``end`` and ``fail``. A failing
kernel is found by line as in any plan (``GraphPlan.compile_with``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from loopdbg.engine import events as ev
from loopdbg.engine import execution, hoist, iteration_checks as checks, memo
from loopdbg.engine.elide import fits
from loopdbg.engine.interp import COMPILE_LIMIT
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.errors import LoopdbgError


# How the iteration code runs the body (``compile_loop``'s ``mode``):
FAST = "fast"           # inlined (up to COMPILE_LIMIT steps), hoisted, elided, a steady copy
CALLED = "called"       # the body's own function called (``GraphPlan.run``): the plain iteration
RECORDED = "recorded"   # the body's ``run_all`` called: every node's value in each event


def compile_loop(spec: LoopSpec, mode: str = FAST) -> Callable:
    """The generator function ``loop_run(ctx, args)`` of one execution of ``spec``'s loop, its
    body run as ``mode`` says (``FAST``, ``CALLED`` or ``RECORDED``)."""
    n_params = len(spec.param_names)
    feed_counter = spec.current_iteration is not None and not spec.cur_fed_back
    src = [
        "def loop_run(ctx, args):",
        "    st = yield from _L_begin(_L_SPEC, ctx, args)",
        "    if st.outputs is not None:",
        "        return st.outputs",
        "    _L_params = st.params",
        "    " + "".join(f"p{k}, " for k in range(n_params)) + "= _L_params"
        if n_params else "    pass",
        "    _L_run, _L_trip, _L_limit, _L_collected = st.run, st.trip, st.limit, st.collected",
        "    _L_budget = ctx.max_memory",
        "    _L_pace = _L_Pace()                      # the checkpoints (checks.checkpoint)",
        "    _L_check_at = 1",
        "    _L_i = 0",
        "    _L_cond = True",
        "    _L_stop = None",
        "    _L_probe = True                          # may it still become steady?",
        "    _L_depth = len(st.outer)                 # (keep_nodes: the debugger's wish)",
    ]
    for m, f in enumerate(spec.sliced):
        src.append(f"    _L_pieces{m} = st.sliced[{m}][1]")
    if spec.sliced:
        src.append("    _L_n_slices = st.n_slices")
    for k in range(len(spec.concats)):
        src += [f"    _L_first{k} = None", f"    _L_key{k} = _L_NOT_KEY",
                f"    _L_append{k} = _L_collected[{k}].append"]
    for m in range(len(spec.back_edges)):
        src.append(f"    _L_dt{m} = st.back_edges[{m}][2]")
    if feed_counter:
        src += ["    _L_block_base = 0", "    _L_block = _L_counter_block(_L_SPEC, 0)"]
    src += ["    try:", "        while True:"]
    line_map: dict[int, int] = {}
    fast = _Inlined(spec) if mode == FAST and inlined(spec.body) else None
    _iteration(spec, src, line_map, "            ", mode, checked=True, fast=fast)
    if mode == FAST and steady_kind(spec):  # values keep their shapes and dtypes: checks end
        new = "".join(f"p{p}, " for p, _ in spec.back_edges)
        old = "".join(f"_L_body_in[{p}], " for p, _ in spec.back_edges)
        keys = "".join(f"_L_key{k}, " for k in range(len(spec.concats)))
        src += ["            if _L_probe:",
                f"                _L_now = _L_steady(({new}), ({old}), ({keys}))",
                "                if _L_now:",
                "                    _L_run.steady_from = _L_i - 1   # (consumers may rely on it)",
                "                    break",
                "                _L_probe = _L_now is not None      # None: it never will be",
                "        if _L_stop is None:",
                "            while True:                  # steady: nothing left to check"]
        _iteration(spec, src, line_map, "                ", mode, checked=False, fast=fast)
    src += ["    except Exception as _L_exc:",
            "        _L_err = yield from _L_fail(_L_SPEC, ctx, st, _L_i, _L_exc)",
            "        if _L_err is _L_exc:",
            "            raise",
            "        raise _L_err from None",
            "    return (yield from _L_end(_L_SPEC, ctx, st, _L_i, _L_stop, _L_outs))"]
    names = {"_L_SPEC": spec, "_L_PATH": spec.path, "_L_IS_LOOP": spec.kind == "Loop",
             "_L_begin": execution.begin, "_L_end": execution.end, "_L_fail": execution.fail,
             "_L_no_slice": checks.no_slice, "_L_piece_check": checks.piece_check,
             "_L_NOT_KEY": checks.NOT_KEY, "_L_same_dtype": checks.same_dtype, "_L_steady": checks.steady,
             "_L_count_bytes": checks.count_bytes, "_L_bad_condition": checks.bad_condition,
             "_L_stop_reason": checks.stop_reason, "_L_counter_block": execution.counter_block,
             "_L_done": ev.IterationDone, "_L_asarray": np.asarray,
             "_L_checkpoint": checks.checkpoint, "_L_Pace": checks.Pace,
             "_E_fits": fits, "LoopdbgError": LoopdbgError,
             "_L_body_run": None if mode == FAST and inlined(spec.body) else
             spec.body.run_all if mode == RECORDED else spec.body.run,
             "_L_body_all": _all_values(spec.body),
             "_L_result_values": spec.body.result_values,
             **memo.NAMES, **(fast.memos if fast is not None else {})}
    return spec.body.compile_with("\n".join(src) + "\n", line_map, names, "loop_run")


_NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def steady_kind(spec: LoopSpec) -> bool:
    """Can this loop reach a steady state, where every value keeps its shape and dtype from one
    iteration to the next? When every body step is a numpy ufunc, their outputs' shapes and
    dtypes follow from their inputs' alone (numpy 2 has no value-based casting), so once the
    back edges feed values of the shapes and dtypes the Parameters had and every scan piece is
    an array of rank 1 or more (``iteration_checks.steady``, asked after each iteration until then), all
    later iterations repeat them: the code from there on checks nothing per iteration."""
    steps = spec.body.steps
    return _NUMPY2 and bool(steps) and all(
        type(s.fn) is np.ufunc and not s.nested and not s.with_ctx for s in steps)


class _Inlined:
    """What the ``FAST`` code of a loop whose body is inlined knows of its steps: those it runs
    in the first iteration only (``hoist.invariant_steps``), those it runs through a memo
    (``memo.steps``: the values that stay the same objects are the invariant inputs and the
    hoisted steps' outputs) and the memos, by name."""

    def __init__(self, spec: LoopSpec):
        body = spec.body
        self.once = _once(spec)
        stable = {f"p{p}" for p, _ in spec.invariant}
        stable.update(o for k in self.once for o in body.steps[k].outs)
        self.memo, self.memos = memo.steps(body, stable, self.once)


def _iteration(spec: LoopSpec, src: list, line_map: dict, ind: str, mode: str,
               checked: bool, fast: _Inlined | None = None) -> None:
    """Append one iteration's lines at indent ``ind``: feeds, the body (as ``mode`` says), scan
    pieces, the condition, the event, the back edges; ``checked``: with the checks of the
    pieces' shapes and of the back edges' dtypes; ``fast``: the inlined body's steps."""
    body = spec.body
    inline = fast is not None
    record = mode == RECORDED
    results = body.result_locals if inline else [f"_L_r{j}" for j in range(len(body.result_locals))]
    n_params = len(spec.param_names)
    params = "".join(f", p{k}" for k in range(n_params))
    cur = spec.current_iteration
    if spec.sliced:
        src += [f"{ind}if _L_i >= _L_n_slices:",
                f"{ind}    raise _L_no_slice(_L_SPEC, st.sliced, _L_i)"]
        src += [f"{ind}p{f.pos} = _L_pieces{m}[_L_i]" for m, f in enumerate(spec.sliced)]
    if cur is not None and not spec.cur_fed_back:
        src += [f"{ind}_L_j = _L_i - _L_block_base",
                f"{ind}if _L_j >= {execution.COUNTER_BLOCK}:",
                f"{ind}    _L_block_base, _L_j = _L_i, 0",
                f"{ind}    _L_block = _L_counter_block(_L_SPEC, _L_i)",
                f"{ind}p{cur} = _L_block[_L_j]"]
    src.append(f"{ind}_L_body_in = (" + "".join(f"p{k}, " for k in range(n_params)) + ")")
    if body.is_generator:
        src.append(f"{ind}ctx.outer.append(_L_i)")
    if mode == FAST:                        # the debugger may want this one's every value
        src += [f"{ind}if ctx.keep_nodes > _L_depth:  # (RunContext.keep_nodes)"]
        once = fast.once if inline and checked else frozenset()
        _recorded_body(spec, src, ind + "    ", results, params, once)
        src.append(f"{ind}else:")
        _body(spec, src, line_map, ind + "    ", fast, checked, results, params, keep=True)
    elif record:
        _recorded_body(spec, src, ind, results, params)
    else:
        _body(spec, src, line_map, ind, fast, checked, results, params)
    if body.is_generator:
        src.append(f"{ind}ctx.outer.pop()")
    for k, o in enumerate(spec.concats):
        value = results[o.result_pos]
        piece = f"_L_piece{k}" if checked else value
        if checked:
            src += [f"{ind}{piece} = {value}",
                    f"{ind}try:         # the key is the first piece's shape if it is an array",
                    f"{ind}    if {piece}.shape != _L_key{k}:     # of rank 1 or more, else NOT_KEY",
                    f"{ind}        {piece}, _L_first{k}, _L_key{k} = _L_piece_check(_L_SPEC, {k}, "
                    f"{piece}, _L_first{k}, _L_i)",
                    f"{ind}except AttributeError:               # not a tensor (a sequence, None)",
                    f"{ind}    {piece}, _L_first{k}, _L_key{k} = _L_piece_check(_L_SPEC, {k}, "
                    f"{piece}, _L_first{k}, _L_i)"]
        src += [f"{ind}_L_append{k}({piece})",
                f"{ind}if _L_budget is not None:",
                f"{ind}    _L_count_bytes(_L_SPEC, ctx, {piece}, _L_budget, _L_i)"]
    if spec.cond_result is not None:
        c = results[spec.cond_result]
        src += [f"{ind}try:",
                f"{ind}    _L_cond = bool({c})",
                f"{ind}except ValueError:",
                f"{ind}    raise _L_bad_condition(_L_SPEC, {c}, _L_i) from None"]
    nodes = "None" if mode == CALLED else "_L_nodes"
    event = "_L_done((_L_run, _L_i - 1, _L_cond, {}, _L_body_in, _L_outs, %s, {}))" % nodes
    src += [f"{ind}_L_i += 1",
            f"{ind}if _L_cond and _L_i < _L_check_at:   # the usual case: another one follows",
            f"{ind}    yield " + event.format("True", "None"),
            f"{ind}elif _L_cond and _L_i < _L_limit:    # the same, and a checkpoint",
            f"{ind}    yield " + event.format("True", "None"),
            f"{ind}    _L_check_at = _L_checkpoint(_L_SPEC, _L_i, _L_limit, _L_pace, ("
            + "".join(f"{results[r]}, " for _, r in spec.back_edges) + "), _L_run)",
            f"{ind}else:",
            f"{ind}    _L_stop = _L_stop_reason(_L_cond, _L_trip, _L_i, _L_IS_LOOP)",
            f"{ind}    yield " + event.format("False", "_L_stop"),
            f"{ind}    break"]
    for m, (p, r) in enumerate(spec.back_edges if checked else ()):
        v = results[r]                      # (no dtype: an ONNX sequence or optional)
        src += [f"{ind}try:",
                f"{ind}    if {v}.dtype is not _L_dt{m}:",
                f"{ind}        _L_same_dtype(_L_SPEC, {p}, {r}, _L_dt{m}, {v}, _L_i - 1)",
                f"{ind}except AttributeError:               # no dtype: a sequence, an optional",
                f"{ind}    _L_same_dtype(_L_SPEC, {p}, {r}, _L_dt{m}, {v}, _L_i - 1)"]
    if spec.back_edges:                      # rule 5: all at once (a Result may be a Parameter)
        src.append(ind + "".join(f"p{p}, " for p, _ in spec.back_edges) + "= "
                   + "".join(f"{results[r]}, " for _, r in spec.back_edges))
    if spec.condition_param is not None:
        src.append(f"{ind}p{spec.condition_param} = _L_asarray(_L_cond)")


def _body(spec: LoopSpec, src: list, line_map: dict, ind: str, fast: _Inlined | None,
          checked: bool, results: list, params: str, keep: bool = False) -> None:
    """The body's lines of an iteration that keeps only its Results (``FAST``, ``CALLED``);
    ``fast``: inlined (``FAST``); ``keep``: one that could have kept every value says it did
    not (``_L_nodes``)."""
    body = spec.body
    if fast is not None:                    # invariant steps: the first iteration only
        for line, k in body.step_lines(ind, elide=True, guard=checked, once=fast.once,
                                       once_if="_L_i == 0" if checked else None,
                                       folded=False, memo=fast.memo):
            line_map[len(src) + 1] = k
            src.append(line)
    else:                                   # the body's own function (interp past the limit)
        call = _call("_L_body_run", body, params)
        how = "interpreted" if len(body.steps) > COMPILE_LIMIT else "called"
        target = "".join(f"{r}, " for r in results) + "= " if results else ""
        src.append(f"{ind}{target}{call}  # the body: {len(body.steps)} steps, {how}")
    outs = "(" + "".join(f"{r}, " for r in results) + ")"
    src.append(f"{ind}_L_outs, _L_nodes = {outs}, None" if keep else f"{ind}_L_outs = {outs}")


def _recorded_body(spec: LoopSpec, src: list, ind: str, results: list, params: str,
                   once: frozenset[int] = frozenset()) -> None:
    """The body's lines of an iteration that keeps every node's value (``_L_nodes``): its
    ``run_all`` called. ``once``: the invariant steps of inlined code, whose values the first
    iteration also gives, since the later iterations of the same code do not compute them."""
    body = spec.body
    call = _call("_L_body_all", body, params)
    src += [f"{ind}_L_outs, _L_every = {call}  # the body: every node recorded",
            f"{ind}_L_nodes = _L_result_values(_L_every)"]
    consts = body.consts                    # (a name of the plan's namespace: never assigned)
    if results:
        src.append(f"{ind}" + "".join(f"{r}, " if r not in consts else "_L_x, " for r in results)
                   + "= _L_outs")
    outs = [o for k in sorted(once) for o in body.steps[k].outs
            if type(body.steps[k].fn) is not hoist.Folded and o not in consts]
    if outs:                                # (not the folded ones: constants, no lines)
        slot = {name: k for k, name in enumerate(
            [f"p{j}" for j in range(len(body.param_ids))] + [o for s in body.steps for o in s.outs])}
        src.append(f"{ind}if _L_i == 0:                    # the values the later iterations keep")
        src.append(f"{ind}    " + "".join(f"{o}, " for o in outs) + "= "
                   + "".join(f"_L_every[{slot[o]}], " for o in outs))


def _all_values(body) -> Callable:
    """The body's ``run_all``, compiled on the first call (a run that keeps every node's value
    of one iteration now and then need not compile it before it is asked for)."""
    def run_all(ctx, *params):
        return body.run_all(ctx, *params)
    return run_all


def _call(fn: str, body, params: str) -> str:
    call = f"{fn}(ctx{params})"
    return f"(yield from {call})" if body.is_generator else call


def _once(spec: LoopSpec) -> frozenset[int]:
    """The body steps the inlined ``FAST`` code runs in the first iteration only."""
    body = spec.body
    return hoist.invariant_steps(body.steps, body.consts, {f"p{p}" for p, _ in spec.invariant})


def inlined(body) -> bool:
    """Are a body's steps inlined into its loop's code? Not past ``COMPILE_LIMIT`` steps: CPython
    compiles ~30 µs per line, more than a few dozen iterations of a big body save, so its loop's
    code calls the body's interpreted ``run`` (interp) for them in one line instead. The loop
    semantics are the same code either way."""
    return len(body.steps) <= COMPILE_LIMIT


def runner(spec: LoopSpec) -> Callable:
    """``run(ctx, *args)``: an execution of the loop, by its ``FAST`` code, or by its
    ``RECORDED`` code (compiled on first use) when the run records every node."""
    fast = compile_loop(spec)
    recorded = None

    def run(ctx, *args):
        nonlocal recorded
        if ctx.record_nodes:
            if recorded is None:
                recorded = compile_loop(spec, RECORDED)
            return recorded(ctx, args)
        return fast(ctx, args)

    return run
