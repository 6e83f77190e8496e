"""The functions of a big plan, interpreted instead of compiled; and any plan run one step at a
time (``stepwise``, for stepping node by node), from the same step table.

Compiling a plan's generated source costs about 30 µs per step in CPython's compiler, more than
running the step does once: a 50,000-layer graph would take seconds to plan. A graph of more than
``COMPILE_LIMIT`` steps is therefore run by one loop over its steps (``_execute``, a generator
whether or not the graph holds loops), with the values in a list (``run``, ``run_all`` and
``run_events`` behave as the generated ones do). The limit is set past the bodies of real decoders
(1,000-3,000 layers), which are compiled as small ones are: CPython compiles a function of 50,000
lines (and as many locals) in one piece, so only the time to compile bounds it. When a kernel raises,
``step_of`` finds the step from the interpreter's frame, as ``GraphPlan.locate`` finds it from a
line of generated code. ``stepwise`` walks the same table (``_tables``: kernels, slots, the
broadcast check of multi-input ufuncs) as ``_execute``, so what the debugger steps through is what
a run computes.
"""

from __future__ import annotations

import math
import weakref
from types import GeneratorType
from typing import Callable, Iterator

import numpy as np

from loopdbg.errors import LoopdbgError
from loopdbg.ops.sizes import CHECKED_ELEMENTS, broadcast_check

COMPILE_LIMIT = 5000        # steps: bigger graphs are interpreted


def _tables(plan):
    """(environment template, steps as (kernel, input slots, output slots, nested, with
    context), result slots, value slots): the plan's local names turned into list positions."""
    slot: dict[str | None, int] = {}
    template: list = []
    for k in range(len(plan.param_ids)):
        slot[f"p{k}"] = len(template)
        template.append(None)
    for name, value in plan.consts.items():
        slot[name] = len(template)
        template.append(value)
    steps = []
    for step in plan.steps:
        for out in step.outs:
            slot[out] = len(template)
            template.append(None)
    slot[None] = len(template)                   # an unconnected optional input: None
    template.append(None)
    for step in plan.steps:                 # with_ctx: a kernel of run state, fn(ctx, *ins)
        fn = step.fn
        if type(fn) is np.ufunc and fn.nin >= 2:    # as the compiled plans: broadcast checked
            fn = _broadcast_checked(fn)
        steps.append((fn, tuple(slot[a] for a in step.ins),
                      tuple(slot[o] for o in step.outs), step.nested, step.with_ctx))
    results = tuple(slot[r] for r in plan.result_locals)
    values = tuple(range(len(plan.param_ids))) + tuple(slot[o] for s in plan.steps
                                                       for o in s.outs)
    return template, steps, results, values


_STEP_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # plan -> _tables


def stepwise(plan, ctx, params) -> Iterator[tuple]:
    """Run ``plan`` on ``params`` one step at a time, yielding ``(layer, outputs)`` after each;
    a nested loop or If runs to its end inside its step (its events are dropped)."""
    tables = _STEP_TABLES.get(plan)
    if tables is None:
        tables = _STEP_TABLES[plan] = _tables(plan)
    template, steps = tables[0], tables[1]
    env = template.copy()
    env[:len(params)] = params
    for step, (fn, ins, outs, nested, with_ctx) in zip(plan.steps, steps):
        args = [env[i] for i in ins]
        if nested:
            r = tuple(drain(fn(ctx, *args)))
        else:
            r = fn(ctx, *args) if with_ctx else fn(*args)
            r = (r,) if len(outs) == 1 else tuple(r)
        for o, v in zip(outs, r):
            env[o] = v
        yield step.layer, r


def drain(result):
    """Run a generator made by a plan (or a nested loop) to its end, dropping its events, and
    return its value; anything else is returned as it is."""
    if type(result) is not GeneratorType:
        return result
    try:
        while True:
            next(result)
    except StopIteration as stop:
        return stop.value


def _broadcast_checked(ufunc) -> Callable:
    """``ufunc`` with the budget's check of its broadcast output first (``ops.sizes``)."""
    def checked(*ins):
        if len({np.shape(x) for x in ins}) > 1 and \
                math.prod(np.size(x) for x in ins) > CHECKED_ELEMENTS:
            broadcast_check(*ins)
        return ufunc(*ins)
    return checked


def _execute(owner, template, steps, ctx, params):
    """Run the steps of ``owner`` (a plan, read by ``step_of``) on ``params``, as a generator
    (the events of nested loops pass; a plan without any yields none, ``drain`` runs it);
    returns the values."""
    env = template.copy()
    env[:len(params)] = params
    for k, (fn, ins, outs, nested, with_ctx) in enumerate(steps):   # k: read by step_of
        if nested:
            r = yield from fn(ctx, *[env[i] for i in ins])
        else:
            r = fn(ctx, *[env[i] for i in ins]) if with_ctx else fn(*[env[i] for i in ins])
            if len(outs) == 1:
                env[outs[0]] = r
                continue
        for o, v in zip(outs, r):
            env[o] = v
    return env


def _drain(gen):
    """The value of a generator of ``_execute`` that yields nothing (a plan without loops)."""
    try:
        next(gen)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("an interpreted plan without nested loops yielded an event")


def interpreted(plan, kind: str) -> Callable:
    """The function ``kind`` (run, run_all, run_events) of ``plan``, interpreted."""
    template, steps, results, values = _tables(plan)

    def execute(ctx, params):
        return _execute(plan, template, steps, ctx, params)

    def pick(env):
        return tuple(env[i] for i in results)

    if not plan.is_generator:
        if kind == "run":
            return lambda ctx, *params: pick(_drain(execute(ctx, params)))
        if kind == "run_all":
            def run_all(ctx, *params):
                env = _drain(execute(ctx, params))
                return pick(env), tuple(env[i] for i in values)
            return run_all
    else:
        if kind == "run":
            def run(ctx, *params):
                return pick((yield from execute(ctx, params)))
            return run
        if kind == "run_all":
            def run_all_nested(ctx, *params):
                env = yield from execute(ctx, params)
                return pick(env), tuple(env[i] for i in values)
            return run_all_nested

    def run_events(ctx, finish, fail, *params):
        yield from ctx.notices
        try:
            env = yield from execute(ctx, params)
        except LoopdbgError:
            raise
        except Exception as exc:
            raise fail(exc) from None
        yield finish(pick(env))

    return run_events


def step_of(plan, frame) -> int | None:
    """The step an interpreter ``frame`` of ``plan`` was running, or None."""
    if frame.f_code is _execute.__code__ and frame.f_locals.get("owner") is plan:
        return frame.f_locals.get("k")
    return None
