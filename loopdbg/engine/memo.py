"""Shape arithmetic remembered at run time: a loop body's small steps that compute from shapes give
their last value again, without running their kernel, while their inputs are the same.

Converters write what a model's code does with ``x.shape`` as graph nodes: ONNX exported from
PyTorch takes ``Shape`` of a block's input three times in every block, ``Gather``s a dimension,
``Unsqueeze``s it again for every ``Concat`` of a target shape, divides a width by the number of
heads and ``Cast``s it twice. A GPT decoder's body so runs about 25 such steps per block, 1-8 µs
each, as many as its numeric steps. Nothing is known about their values at plan time (without a KV
cache the sequence length changes at every iteration), but within one iteration every block asks
the same questions of tensors of the same shape.

So the ``FAST`` loop code (``loopcode``) runs each step ``steps`` selects through a one-entry memo
(a list in the code's namespace), checked inline::

    v8_0 = _S_m3[0] if type(v7_0) is _S_nd and v7_0.shape == _S_m3[1] else _S_shape(_S_m3, k8, v7_0)
    v9_0 = _S_m4[0] if v8_0 is _S_m4[1] else _S_same(_S_m4, k9, (v8_0,), v8_0, c4)

* ``Shape``/``Size``/``ShapeOf`` (what depends on an input's shape alone) are keyed by that shape;
  every other selected step by the identity of its inputs that are not constants (a memo keeps
  what it was given, so an identity is never reused while it is compared). A step is selected
  when its type is pure shape or integer arithmetic (``PURE``) and each input is a constant, a
  value that stays the same object for the whole loop execution (an invariant input, a hoisted
  step's output) or the output of another selected step: so a chain of them hits from its
  ``Shape`` down as soon as the shape repeats. A hoisted step (``hoist.invariant_steps``: it runs
  in the first iteration only) is selected only when a memo of every iteration reads it, so
  that each block's ``Unsqueeze`` of the number of heads gives the block's ``Concat`` one key.
* Steps that compute the same function share one memo: same type, version, attributes, port
  element types and ranks, constant inputs equal (dtype, shape, bytes), connected alike. The
  24 blocks' ``Shape``, ``Gather``, ``Unsqueeze``, ``Concat`` of one iteration so run their
  kernels once, in the first block; the three ``Shape`` of one tensor run one kernel.
* On a miss the step's own kernel runs (its error names its own layer, as before), and its value is
  kept when it is small (``MAX_BYTES``, far under the budget's ``SMALL``, which no memory check
  refuses: a hit skips none that could fail); a kept array is made read-only, since several
  nodes may now show the same array (no step writes into it: ``elide`` never picks it).

What a memo gives is what the kernel gave for equal inputs, the same array: a node's value is
exactly the one it had. Runs that record every node (``run_all``) and the plain iteration
(``loopcode.CALLED``, which the tests compare with ``FAST`` event by event) run every kernel.
A memo keeps its last key and value (small arrays, and the small inputs they were computed
from) until the step runs again, in this run or the next one of the same engine. ``ENABLED`` turns
the memos off.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.onnx_names import NODE_PROTO

ENABLED = True
MAX_BYTES = 4096                # the biggest value a memo keeps (shape vectors are a few bytes)

# What a memo may stand in for: kernels that compute from their inputs alone, on small values.
SHAPE_OF = frozenset({"onnx.Shape", "onnx.Size", "ShapeOf"})
PURE = SHAPE_OF | frozenset({
    "onnx.Gather", "onnx.Unsqueeze", "onnx.Squeeze", "onnx.Concat", "onnx.Slice", "onnx.Cast",
    "onnx.Div", "onnx.Mul", "onnx.Add", "onnx.Sub", "onnx.Equal", "onnx.Where", "onnx.Not",
    "onnx.And", "onnx.Or", "onnx.Less", "onnx.Greater", "onnx.LessOrEqual",
    "onnx.GreaterOrEqual", "onnx.Identity", "onnx.Reshape", "onnx.Floor", "onnx.Ceil",
    "onnx.Mod", "onnx.Max", "onnx.Min", "onnx.Neg", "onnx.Abs", "onnx.ReduceProd",
    "onnx.ReduceSum", "onnx.ReduceMax", "onnx.ReduceMin", "onnx.Sqrt", "onnx.Reciprocal",
    "onnx.Flatten", "onnx.Range", "onnx.ConstantOfShape", "onnx.Expand",
    "Gather", "Unsqueeze", "Squeeze", "Concat", "StridedSlice", "Slice", "Convert", "Divide",
    "Multiply", "Add", "Subtract", "Equal", "Select", "Reshape", "Floor", "Maximum", "Minimum",
    "ReduceProd", "ReduceSum", "Range", "Broadcast", "Sqrt",
})

# What an ONNX layer's data holds besides its attributes: its name, and the node as read (for
# onnx.reference's kernels), which adds only the names of its values to the attributes (a graph
# attribute is kept only there: no type of ``PURE`` has one).
_NAMES_ONLY = frozenset({"onnx_name", NODE_PROTO})
_MISSING = object()             # the key of a memo not yet filled: equal to nothing
_nd = np.ndarray


class Memo:
    """How ``loopcode`` writes one selected step: its memo's name and what keys it."""

    __slots__ = ("name", "shape_of", "keys")

    def __init__(self, name: str, shape_of: bool, keys: tuple[str, ...]):
        self.name = name            # a name of the loop code's namespace (a list)
        self.shape_of = shape_of    # keyed by the shape of its one input
        self.keys = keys            # else by these inputs' identity

    def expression(self, k: int, args: str) -> str:
        """The step's value, from the memo or from its kernel ``kK``."""
        m = self.name
        if self.shape_of:
            x = self.keys[0]
            return (f"{m}[0] if type({x}) is _S_nd and {x}.shape == {m}[1] else "
                    f"_S_shape({m}, k{k}, {args})")
        if len(self.keys) == 1:             # (the usual case, without the joins)
            a = self.keys[0]
            return f"{m}[0] if {a} is {m}[1] else _S_same({m}, k{k}, ({a}, ), {args})"
        same = " and ".join([f"{a} is {m}[{j + 1}]" for j, a in enumerate(self.keys)])
        keys = "".join([f"{a}, " for a in self.keys])
        return f"{m}[0] if {same} else _S_same({m}, k{k}, ({keys}), {args})"


def steps(plan, stable: set[str], once=frozenset()) -> tuple[dict[int, Memo], dict[str, list]]:
    """The steps of ``plan`` (a loop body's) to run through memos, and the memos by name.
    ``stable``: the locals that are the same object for a whole loop execution (the invariant
    inputs, the hoisted steps' outputs); ``once``: the hoisted steps. A hoisted step runs once
    per execution anyway: it is chosen only when a memo of every iteration reads it (itself or
    through other hoisted ones), so that its blocks' copies give that memo one key."""
    if not ENABLED:
        return {}, {}
    from loopdbg.engine.hoist import Folded

    consts = plan.consts
    # What each value is, as an expression (of constants by value, Parameters by position and
    # any tensor's shape): the steps that share a memo compute the same expression, so its key
    # (the identity of their inputs) repeats among them rather than alternating.
    what: dict[str, object] = {v: ("v", v) for v in stable}
    interned: dict[object, int] = {}
    chosen: dict[int, Memo] = {}
    memos: dict[str, list] = {}
    names: list[str] = []                   # memo n's name (made once, not per step)
    pure, shape_types, names_only, plain = PURE, SHAPE_OF, _NAMES_ONLY, _PLAIN
    for k, step in enumerate(plan.steps):
        layer = step.layer
        kind = layer.type
        if kind not in pure or len(step.outs) != 1 or step.nested or step.with_ctx:
            continue        # (with_ctx: the kernel needs the run's context, ``needs_context``)
        fn = step.fn
        if type(fn) is Folded:
            continue        # (folded: no input moves; its weight's bytes are not read for that)
        ins = step.ins
        shape_of = kind in shape_types and len(ins) == 1
        # the inputs that key the memo (not constants) and what each input is, in one pass
        # (a loop: no frame of a comprehension per step)
        moving: tuple = ()
        known: list = []
        for a in ins:
            if a is None:
                known.append(None)
            elif a in consts:
                c = consts[a]       # (by dtype, not dtype.str: numpy builds that anew, 1 us)
                known.append((c.dtype, c.shape, c.tobytes()))
            elif shape_of:
                moving += (a,)
                known.append("shape")
            else:
                seen = what.get(a)
                if seen is None:
                    moving = ()
                    break
                moving += (a,)
                known.append(seen)
        if not moving:
            continue
        if getattr(fn, "notice", None):
            continue
        # what the step computes besides its keys: its type, attributes (in the file's order:
        # an attribute written first elsewhere only shares no memo), inputs and declared element
        # types and ranks (no kernel of PURE reads a declared dimension, which shape inference
        # may give one block and not the next)
        attrs = []
        data = layer.data
        for key, value in data.items() if len(data) > 2 or not names_only.issuperset(data) \
                else ():                # (an ONNX node without attributes: nothing to read)
            if key in names_only:
                continue
            if value.__class__ in plain:
                attrs.append((key, value.__class__, value))
            else:
                value = _canonical(value)
                if value is None:
                    break
                attrs.append((key, value))
        else:
            ports = []                  # (a loop: no frame of a comprehension per step)
            for p in layer.inputs + layer.outputs:
                ports.append((p.precision, len(p.dims)))
            ports = tuple(ports)
            sig = (kind, layer.version, tuple(attrs), tuple(known), ports, 1, shape_of)
            n = interned.get(sig)
            if n is None:
                n = interned[sig] = len(interned)
                names.append(f"_S_m{n}")
                memos[names[n]] = [None] + [_MISSING] * len(moving)
            what[step.outs[0]] = (n, 0)
            chosen[k] = Memo(names[n], shape_of, moving)
    read: set[str] = set()                  # by the memos kept, last step first
    for k in sorted(chosen, reverse=True):
        if k in once and read.isdisjoint(plan.steps[k].outs):
            del chosen[k]
        elif not chosen[k].shape_of:
            read.update(chosen[k].keys)
    used = {m.name for m in chosen.values()}
    return chosen, {name: m for name, m in memos.items() if name in used}


_PLAIN = frozenset({int, str, float, bool})


def _canonical(value):
    """An attribute's ``value`` as something hashable and exact, or None."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return (type(value), value)
    if isinstance(value, np.ndarray):
        return ("a", value.dtype, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("g", value.dtype, value.tobytes())
    if isinstance(value, (list, tuple)):
        items = [_canonical(v) for v in value]
        return None if None in items else (type(value), tuple(items))
    return None


def _keep(out, args) -> bool:
    """Is ``out`` (a kernel's value on ``args``) a small array or numpy scalar, to keep? A
    sequence (a list) is not. A kept array the kernel made becomes read-only (not an input it
    gave back: that is someone else's; a numpy scalar is read-only)."""
    if type(out) is _nd:
        if out.nbytes > MAX_BYTES:
            return False
        if not any(out is x for x in args):
            out.setflags(write=False)
        return True
    return isinstance(out, np.generic) and out.nbytes <= MAX_BYTES


def shape(memo: list, fn, x):
    """A ``Shape``-like step's value on a miss: ``fn(x)``, kept under ``x``'s shape."""
    out = fn(x)
    if type(x) is _nd and _keep(out, (x,)):
        memo[:] = out, x.shape
    return out


def same(memo: list, fn, keys: tuple, *args):
    """A selected step's value on a miss: ``fn(*args)``, kept under its ``keys``' identity
    when they are small too (a memo holds what it compares: never a big input past its run)."""
    out = fn(*args)
    if all(type(k) is not _nd or k.nbytes <= MAX_BYTES for k in keys) and _keep(out, args):
        memo[:] = out, *keys
    return out


NAMES = {"_S_nd": _nd, "_S_shape": shape, "_S_same": same}
