"""A loop written as C-like pseudo-code with the model's own names, one phase per line.

Each line carries the phase of the loop it belongs to, so a face can highlight where a stop is:
``init`` (before the first iteration), ``test`` (the trip-count / condition test), ``feed`` (slices
and the counter), ``body``, ``collect`` (scan pieces), ``cond`` (the body condition), ``carry``
(back edges), ``output`` (after the loop).

Names are the debugger's: a body value is named by its layer (``cell``, and ``cell:1`` for a
second output), a body Parameter by its name, an outer value by the layer that produces it, a
one-element Constant by its value (``2.0``, ``true``). The shape of the code follows the loop's
mode (``teach.modes``): ``for``, ``while``, ``do { } while``, ``for (;;)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loopdbg.engine.loopspec import LoopSpec
from loopdbg.ir import model as irm


@dataclass(frozen=True)
class Line:
    """One line of the pseudocode, with the phase of the loop it belongs to."""

    phase: str
    text: str
    indent: int = 0

    def render(self) -> str:
        return "    " * self.indent + self.text


# ----------------------------------------------------------------------------------------------
# Names


def value_text(value) -> str | None:
    """A one-element constant as C would write it (``5``, ``2.0``, ``true``); else None."""
    arr = np.asarray(value)
    if arr.size != 1:
        return None
    v = arr.reshape(()).item()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        text = f"{v:g}"
        return text if any(c in text for c in ".en") else text + ".0"
    return str(v)


def source_name(graph, layer_id: int, port: int, inline_consts: bool = True) -> str | None:
    """The name of what feeds input ``port`` of layer ``layer_id`` in ``graph`` (None: nothing)."""
    if graph is None:
        return None
    src = graph.producer(layer_id, port)
    if src is None:
        return None
    layer = graph.layers[src[0]]
    if layer.type == "Constant" and inline_consts and layer.value is not None:
        text = value_text(layer.value)
        if text is not None:
            return text
    return layer.name if src[1] == 0 else f"{layer.name}:{src[1]}"


def outer_name(spec: LoopSpec, ext: int) -> str:
    """What feeds input ``ext`` of the loop layer, in the graph around it."""
    name = source_name(getattr(spec, "parent_graph", None), spec.layer.id, ext)
    return name if name is not None else f"input {ext}"


def result_source(spec: LoopSpec, result_pos: int) -> str:
    """What feeds body Result ``result_pos`` (the value a back edge, scan or output reads)."""
    rid = spec.body.result_ids[result_pos]
    name = source_name(spec.body.graph, rid, 0)
    return name if name is not None else spec.result_names[result_pos]


def back_edge_text(spec: LoopSpec, param_pos: int, result_pos: int) -> str:
    return f"{spec.param_names[param_pos]} <- {result_source(spec, result_pos)}"


# ----------------------------------------------------------------------------------------------
# Slices


def _affine(base: str, coef: int, i: str, sign: str) -> str:
    """``base + coef*i`` (sign "+") or ``base - coef*i`` without the noise of 0 and 1."""
    term = i if coef == 1 else f"{coef}*{i}"
    if base in ("", "0"):
        return term if sign == "+" else f"-{term}"
    return f"{base} {sign} {term}"


def _start_text(start: int) -> str:
    return str(start) if start >= 0 else ("L-1" if start == -1 else f"L{start}")


def slice_text(spec: LoopSpec, f, i: str) -> str:
    """``x_t = X[:, i:i+1];`` for a sliced input (L is the length of the sliced axis)."""
    p, st = f.part_size, f.stride
    if st > 0:
        lo = _affine(_start_text(f.start), st, i, "+")
        hi = f"{lo} + {p}" if lo != i or p != 1 else f"{i}+1"
    else:
        term = i if st == -1 else f"{-st}*{i}"
        if f.start >= 0:
            top, hi = f"{f.start} - {term}", f"{f.start + 1} - {term}"
        else:
            hi_base = "L" if f.start == -1 else f"L{f.start + 1}"
            top, hi = f"{_start_text(f.start)} - {term}", f"{hi_base} - {term}"
        lo = top if p == 1 else f"{top} - {p - 1}"
    lead = ":, " * f.axis
    if getattr(spec, "onnx", False):          # ONNX Scan: the slice loses the scanned axis
        return f"{f.name} = {outer_name(spec, f.ext)}[{lead}{lo}];"
    return f"{f.name} = {outer_name(spec, f.ext)}[{lead}{lo} : {hi}];"


def slice_comment(f) -> str:
    order = "forward" if f.stride > 0 else "backward"
    return (f"sliced on axis {f.axis}, {order}: start={f.start} end={f.end} stride={f.stride} "
            f"part_size={f.part_size}" + (", L = length of the axis" if "L" in
                                          _start_text(f.start) or f.stride < 0 else ""))


# ----------------------------------------------------------------------------------------------
# The code


def counter_name(spec: LoopSpec) -> str:
    """The iteration counter as the code names it: the model's name for it, or ``i`` when that
    is a bare number (TorchScript's exporter names it ``57``, which reads as a constant)."""
    if spec.current_iteration is None:
        return "i"
    name = spec.param_names[spec.current_iteration]
    if name.lstrip("-").replace(".", "", 1).isdigit():
        return "i" if "i" not in spec.param_names else "iteration"
    return name


def _counter_layer(spec: LoopSpec):
    """The counter's Parameter layer id when the code renames it (else None)."""
    ci = spec.current_iteration
    if ci is None or counter_name(spec) == spec.param_names[ci]:
        return None
    return spec.body.param_ids[ci]


def body_statements(spec: LoopSpec, rename=None) -> list[str]:
    """One C-like statement per body layer, in execution order (``rename``: how a body name is
    written, e.g. shortened; as it is by default)."""
    rename = rename or (lambda name: name)
    g = spec.body.graph
    counter, i = _counter_layer(spec), counter_name(spec)
    lines = []
    for step in spec.body.steps:
        layer = step.layer
        args = []
        for k in range(len(layer.inputs)):
            src = g.producer(layer.id, k) if counter is not None else None
            name = i if src is not None and src[0] == counter else source_name(g, layer.id, k)
            if name is not None:
                args.append(name if name == i else rename(name))
        n_out = max(len(step.outs), 1)
        short = rename(layer.name)
        outs = [short] + [f"{short}:{k}" for k in range(1, n_out)]
        lhs = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
        op = layer.ir_type if layer.type.startswith("onnx.") and layer.ir_type else layer.type
        text = f"{lhs} = {op}({', '.join(args)});"
        if step.nested:
            text += f"  // a nested {layer.type}, explained on its own"
        lines.append(text)
    return lines


def pseudocode(spec: LoopSpec, trip_text: str | None = None, cond_text: str | None = None,
               *, started=None, detail: bool = False, by_mode: bool = False,
               rename=None) -> list[Line]:
    """The pseudo-code of one Loop/TensorIterator (see the module docstring for the phases).

    ``started`` (a LoopStarted event) decides an input-dependent mode; ``detail`` writes the body
    layer by layer instead of one ``(results) = body(parameters)`` line; ``by_mode`` shapes a Loop
    after its mode (``while``, ``do { } while``) instead of always as a ``for``; ``rename``
    writes the body's names in the detailed body (shortened, for a face).
    """
    from loopdbg.teach import modes

    mode = modes.loop_mode(spec, started)
    names = spec.param_names
    lines: list[Line] = []
    for pos, ext in spec.invariant:
        outer = outer_name(spec, ext)
        if outer == names[pos]:       # ONNX: the body reads the outer value by its own name
            lines.append(Line("init", f"// {outer}: invariant, read from outside the loop"))
        else:
            lines.append(Line("init", f"{names[pos]} = {outer};  // invariant"))
    for pos, ext in spec.merged:
        carried = [back_edge_text(spec, p, r) for p, r in spec.back_edges if p == pos]
        note = f"  // merged: {carried[0]} after each iteration" if carried else "  // merged"
        lines.append(Line("init", f"{names[pos]} = {outer_name(spec, ext)};{note}"))
    joined = "stacked on a new axis" if getattr(spec, "onnx", False) else "concatenated on axis"
    for o in spec.concats:
        lines.append(Line("init", f"{o.name} = [];  // {joined} {o.axis}"
                                  + (", in reverse order" if o.stride < 0 else "")))
    i = counter_name(spec)
    if _counter_layer(spec) is not None:
        lines.append(Line("init", f"// {i}: the iteration counter (the model names it "
                                  f"'{names[spec.current_iteration]}')"))
    closing = "}"
    if spec.kind != "Loop":
        n = " and ".join(f"{outer_name(spec, f.ext)} (axis {f.axis})" for f in spec.sliced)
        lines.append(Line("test", f"for ({i} = 0; {i} < N; {i}++) {{  // N = number of slices"
                                  + (f" of {n}" if n else "")))
    else:
        trip = trip_text or _trip_text(spec, mode)
        cond = cond_text or _exec_cond_text(spec)
        body_cond_const = mode.body_condition is True
        needs_cond = not (cond == "true" and body_cond_const)
        shape = mode.mode if by_mode else modes.FOR_COND
        if needs_cond and shape != modes.DO_WHILE:
            lines.append(Line("init", f"cond = {cond};  // the execution condition"))
        if shape == modes.DO_WHILE:
            if spec.current_iteration is not None:
                lines.append(Line("init", f"{i} = 0;"))
            lines.append(Line("test", "do {"))
            closing = "} while (cond);"
        elif shape == modes.WHILE and trip is None:
            lines.append(Line("test", "while (cond) {" if spec.current_iteration is None
                              else f"for ({i} = 0; cond; {i}++) {{"))
        elif shape == modes.INFINITE:
            lines.append(Line("test", f"for ({i} = 0; ; {i}++) {{  // nothing stops this loop"))
        else:
            tests = ([f"{i} < {trip}"] if trip is not None else []) + (
                ["cond"] if needs_cond else [])
            means = "runs no iteration (ONNX)" if getattr(spec, "onnx", False) else "means no limit"
            comment = (f"  // {trip} < 0 {means}" if mode.depends_on_inputs
                       and not trip.lstrip("-").isdigit() else "")
            lines.append(Line("test", f"for ({i} = 0; {' && '.join(tests)}; {i}++) {{{comment}"))
    for f in spec.sliced:
        lines.append(Line("feed", f"{slice_text(spec, f, i)}  // {slice_comment(f)}", 1))
    if detail:
        for text in body_statements(spec, rename):
            lines.append(Line("body", text, 1))
    else:
        outs = ", ".join(result_source(spec, r) for r in range(len(spec.result_names)))
        lines.append(Line("body", f"({outs}) = body({', '.join(names)});", 1))
    for o in spec.concats:
        verb = "prepend" if o.stride < 0 else "append"
        lines.append(Line("collect", f"{o.name}.{verb}({result_source(spec, o.result_pos)});", 1))
    if spec.kind == "Loop" and spec.cond_result is not None and \
            modes.body_condition(spec) is not True:
        lines.append(Line("cond", f"cond = {result_source(spec, spec.cond_result)};"
                                  "  // if false: this iteration still counts, then stop", 1))
    for p, r in spec.back_edges:
        if p == spec.current_iteration:
            lines.append(Line("carry", f"{back_edge_text(spec, p, r)};  // overrides {i}++", 1))
        else:
            lines.append(Line("carry", f"{back_edge_text(spec, p, r)};", 1))
    if by_mode and mode.mode == modes.DO_WHILE and spec.current_iteration is not None:
        lines.append(Line("carry", f"{i}++;", 1))
    lines.append(Line("test", closing))
    for o in spec.outputs:
        if o.kind == irm.CONCAT:
            join = "stack" if getattr(spec, "onnx", False) else "concat"
            lines.append(Line("output", f"{o.name} = {join}({o.name}, axis={o.axis});"))
        else:
            lines.append(Line("output", _last_value_text(spec, o)))
    return lines


def _last_value_text(spec: LoopSpec, o) -> str:
    """A last-value output as the code computes it, true for zero iterations too: one that a
    back edge carries is read from the Parameter it is carried into (which holds the initial
    value when no iteration ran); any other is the value of the last iteration."""
    source = result_source(spec, o.result_pos)
    names = spec.param_names
    carried = [p for p, r in spec.back_edges if r == o.result_pos and p != spec.current_iteration]
    if carried:
        p = carried[0]
        initial = next((outer_name(spec, ext) for pos, ext in spec.merged if pos == p), None)
        start = f" ({initial} if none ran)" if initial is not None else ""
        return (f"{o.name} = {names[p]};  // {source} of the last iteration, carried into "
                f"{names[p]}{start}")
    return f"{o.name} = {source};  // its value in the last iteration (undefined if none ran)"


def _trip_text(spec: LoopSpec, mode) -> str | None:
    """The trip count as the test writes it: a number, the name feeding it, or None (no limit)."""
    if isinstance(mode.trip_count, int):
        return str(mode.trip_count)
    if mode.trip_count is None:
        return None
    return outer_name(spec, 0)


def _exec_cond_text(spec: LoopSpec) -> str:
    graph = getattr(spec, "parent_graph", None)
    if graph is None or graph.producer(spec.layer.id, 1) is None:
        return "true"
    return outer_name(spec, 1)
