"""Loop-invariant code: what depends on constants alone is computed once per plan, what depends on
constants and the loop's invariant inputs once per loop execution.

Models saved with f16 weights decompress every weight with a Convert inside the loop body;
converters transpose weights, reshape by constant shapes, take ShapeOf of constants. All of that
gives the same value at every iteration, so the planner (``GraphPlan._build``) asks ``fold`` for
each step of a loop body whose inputs are all constants (including values folded before it): the
kernel runs once, now, and

* its outputs become constants of the plan, so the steps reading them see constants (MatMul then
  transposes a weight once, into C order, instead of every iteration);
* the step itself stays, its kernel replaced by one that returns the folded values: the debugger
  shows the layer and its value at every iteration exactly as before (``run_all``, node events,
  stepping node by node), the same array each time, read-only.

Not folded: control flow, kernels of run state (``needs_context``: ReadValue, Assign, the
random generators that advance), kernels that say something of themselves (``notice``: ONNX's
random ops), outputs that are not plain arrays (sequences, optionals), a kernel that fails now
(it fails at run time, at its iteration, as before), and values past the memory bound: one plan
keeps at most ``FOLD_BYTES`` of folded values (or a quarter of the run's memory budget, when one
is set, if that is less). The top graph is not folded: it runs once per run anyway.

``ENABLED`` turns folding off (the tests compare folded and unfolded runs event by event).

A body's constants include the outer ones (``outer_constants``): an invariant input of a loop
(an input of an If) fed by a constant of the enclosing graph, or an Identity of one, is that
constant at every iteration, so the body's plan reads its Parameter as a constant (ONNX
exporters write the weights as initializers of the main graph, read from the outer scope). That
holds with folding off too: the kernels chosen for a constant (a weight's MatMul) are the same
either way, only what is folded differs.

Per loop execution (``invariant_steps``): a body step whose inputs are all constants, invariant
inputs of the loop (an outer value an ONNX body reads, a TensorIterator's invariant port: the same
object at every iteration of one execution) or outputs of such steps gives the same value at
every iteration of that execution. ``loopcode`` runs it in the first iteration only, in its place
among the body's steps (so an error, a budget refusal or an event comes where and when it came
before), and the later iterations keep its value: the debugger sees the same value for that layer
at every iteration. The steps not to move are those ``fold`` leaves (control flow, run state,
kernels with a notice), and a value moved is never a temporary a later step writes into
(``elide``). Runs that record every node (``loopcode.RECORDED``) call the body's own
``run_all``, nothing moved. ``INVARIANTS`` turns it off (the tests compare both runs event by
event).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from loopdbg.ir.model import INVARIANT, SubGraph, classify_inputs
from loopdbg.ops import budget

ENABLED = True
INVARIANTS = True               # per loop execution: invariant steps run in the first iteration
FOLD_BYTES = 256 << 20          # folded values one plan may keep
POOLED_FROM = 32768             # the values of a decompressed weight put in the weight buffer


class Folded:
    """The kernel of a folded step: returns its values, whatever it is given."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self, *_ins):
        return self.value


def bound() -> int:
    """The bytes of folded values one plan may keep."""
    limit = budget.BUDGET.limit
    return FOLD_BYTES if limit is None else min(FOLD_BYTES, limit // 4)


@contextmanager
def quiet() -> Iterator[None]:
    """Warnings and numpy's floating-point errors ignored: what ``fold`` runs kernels in. The
    planner enters it once around a loop body's steps (``quieted=True``): entering it costs
    about 15 µs, as much as folding a small step, and a decoder's body folds hundreds."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def fold(fn: Callable, args: tuple[Any, ...], n_out: int, room: int,
         quieted: bool = False) -> tuple | None:
    """The outputs of ``fn(*args)`` (every input a constant) as read-only arrays, or None when
    the step is not to be folded (see the module docstring); ``room``: the bytes still free;
    ``quieted``: the caller runs this in ``quiet()`` already."""
    if not ENABLED or getattr(fn, "needs_context", False) or getattr(fn, "notice", None):
        return None
    for a in args:
        if a is not None:
            break
    else:
        return None                 # no input at all: nothing to gain, nothing to check
    try:
        if quieted:
            out = fn(*args)
        else:
            with quiet():
                out = fn(*args)
    except Exception:  # noqa: BLE001 - it fails at run time, at its iteration, with its message
        return None
    if n_out <= 1:
        if type(out) is not np.ndarray or out.nbytes > room:
            return None
        out.setflags(write=False)
        return (out,)
    outs = tuple(out) if isinstance(out, (tuple, list)) else None
    if outs is None or len(outs) != n_out:
        return None
    if not all(type(v) is np.ndarray for v in outs) or sum(v.nbytes for v in outs) > room:
        return None
    for v in outs:
        v.setflags(write=False)
    return outs


def weight_buffer(layers, order, sources, room: int) -> dict[int, np.ndarray]:
    """{Convert layer id: the float32 array its folded value is to be written into} for a loop
    body's big decompressions (a Convert to f32 of a float16 Constant of ``POOLED_FROM`` values
    or more: the weights of an IR saved with ``compress_to_fp16``), each a view of one buffer
    made for all of them, the first that fit in ``room`` bytes (``order``, ``sources``:
    ``graph_order.structure``'s). One buffer for a decoder's weights is allocated once (and big
    enough for numpy to ask the kernel for huge pages), where an array each (a few hundred KB:
    past the allocator's own threshold of 128 KiB, under those of huge pages) has the kernel
    map and zero each of their pages in a process's first plan, as ``loopdbg run``'s (gpt_mid:
    37 weights, 8.8 MB, decompressed in 5.7 ms instead of 9.4; later plans of a process find
    memory the allocator kept either way). Smaller weights come from the allocator's heap
    (gpt_deep24's 196 of 9 KB: a buffer of their own would cost more). The folded values are
    the same, read-only, in C order (the buffer lives as long as any of them: the plan's)."""
    if not ENABLED:
        return {}
    found = []
    total = 0                           # (values: 4 bytes each)
    for lid in order:
        layer = layers[lid]
        if layer.type != "Convert" or layer.data.get("destination_type") != "f32":
            continue
        srcs = sources.get(lid)
        if not srcs or len(srcs) != 1:
            continue
        source = layers[srcs[0][0]]
        value = source.value if source.type == "Constant" else None
        if type(value) is not np.ndarray or value.dtype != np.float16 or \
                value.size < POOLED_FROM or not value.flags.c_contiguous or \
                4 * (total + value.size) > room:
            continue
        found.append((lid, value.shape, value.size))
        total += value.size
    if len(found) < 2:
        return {}
    buffer = np.empty(total, np.float32)
    slots = {}
    start = 0
    for lid, shape, size in found:
        slots[lid] = buffer[start:start + size].reshape(shape)
        start += size
    return slots


def fold_into(fn: Callable, args: tuple[Any, ...], out: np.ndarray) -> tuple | None:
    """``fold`` of a kernel that offers to write its value into ``out`` (``fn.into``: a
    decompression, ``weight_buffer``): its one output, read-only; None when it does not."""
    into = getattr(fn, "into", None)
    if not ENABLED or into is None or len(args) != 1 or into(args[0], out) is None:
        return None
    out.setflags(write=False)
    return (out,)


def invariant_steps(steps, consts, invariant: set[str]) -> frozenset[int]:
    """The indices of the ``steps`` (a loop body's, ``plan.Step``) that give the same value at
    every iteration of one loop execution: every input a constant (a name in ``consts``), one of
    the ``invariant`` Parameter locals or an output of such a step, at least one input not a
    constant (those are ``fold``'s), and a kernel that computes from its inputs alone."""
    if not INVARIANTS or not invariant:
        return frozenset()
    known = set(invariant)
    found = []
    for k, step in enumerate(steps):
        reads_known = False             # every input known or a constant, one at least known
        for a in step.ins:              # (a loop: most steps fail at an input, cheaply)
            if a is None:
                continue
            if a in known:
                reads_known = True
            elif a not in consts:
                break
        else:
            fn = step.fn
            if reads_known and not (step.nested or step.with_ctx or type(fn) is Folded or
                                    getattr(fn, "needs_context", False) or
                                    getattr(fn, "notice", None)):
                found.append(k)
                known.update(step.outs)
    return frozenset(found)


def outer_constants(sub: SubGraph, known: tuple, loop: bool) -> dict[int, np.ndarray]:
    """{body Parameter id: value} of the Parameters of ``sub`` (a loop's body, an If's branch)
    fed by an input whose value ``known`` holds (``GraphPlan.known``): for a loop, the invariant
    inputs only (not sliced, not carried, not the counter or condition); a Parameter fed by two
    entries of the port map is left alone."""
    if not any(v is not None for v in known):
        return {}
    roles = classify_inputs(sub) if loop else [(INVARIANT, m) for m in sub.inputs]
    fed: dict[int, int] = {}
    for _, m in roles:
        fed[m.internal_layer_id] = fed.get(m.internal_layer_id, 0) + 1
    found = {}
    for role, m in roles:
        ext = m.external_port_id
        if role == INVARIANT and fed[m.internal_layer_id] == 1 and 0 <= ext < len(known) \
                and type(known[ext]) is np.ndarray:
            found[m.internal_layer_id] = known[ext]
    return found
