"""The pitfalls of a loop: where a model relies on something undefined, fragile or specific to
one implementation (outputs undefined after zero iterations, concatenations whose pieces may
change shape, loops that may never end, slicing OpenVINO does differently, slices that may run
out, conditions that are not one boolean...)."""

from __future__ import annotations

import numpy as np

from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.slicing import is_canonical
from loopdbg.ir import model as irm
from loopdbg.teach import modes
from loopdbg.teach.pseudocode import outer_name, result_source


def pitfalls(spec: LoopSpec, mode: modes.Mode, static: modes.Mode) -> list[dict]:
    """Where the model relies on something undefined, fragile or implementation-specific."""
    found: list[dict] = []
    # An ONNX Scan slices whole axes one step at a time and stacks its outputs on a new axis:
    # what OpenVINO's CPU plugin does with a TensorIterator's slicing and pieces does not apply.
    onnx_scan = getattr(spec, "onnx", False) and spec.kind != "Loop"

    def add(kind: str, message: str) -> None:
        found.append({"kind": kind, "message": message})

    zero = zero_iterations_possible(spec, static)
    if zero:
        for o in spec.outputs:
            if o.kind == irm.LAST_VALUE and spec.merged_source(o.result_pos) is None:
                add("undefined_after_zero_iterations",
                    f"output '{o.name}' (the last value of {result_source(spec, o.result_pos)}) is "
                    f"not fed by a back edge; {zero} its value is undefined by the specification "
                    f"(loopdbg gives zeros, OpenVINO's CPU plugin whatever is in memory).")
    for o in spec.concats:
        dims = _result_dims(spec, o.result_pos)
        if dims is None:
            add("concat_shape_may_vary",
                f"concatenated output '{o.name}': the shape of "
                f"{result_source(spec, o.result_pos)} is not declared, so it may change between "
                f"iterations; the pieces must agree in every dimension but axis {o.axis}.")
        elif any(d < 0 for k, d in enumerate(dims) if k != _norm(o.axis, len(dims))):
            add("concat_shape_may_vary",
                f"concatenated output '{o.name}': {result_source(spec, o.result_pos)} has dynamic "
                f"dimensions {_dims_text(dims)}; if they change between iterations the pieces "
                f"cannot be joined (only axis {o.axis} may differ).")
        else:
            axis = _norm(o.axis, len(dims))
            along = dims[axis] if 0 <= axis < len(dims) and not getattr(spec, "onnx", False) \
                else None                     # ONNX stacks on a new axis: no length along it
            if along == -1:
                add("concat_shape_may_vary",
                    f"concatenated output '{o.name}': the length of "
                    f"{result_source(spec, o.result_pos)} along axis {o.axis} is dynamic; loopdbg "
                    f"joins pieces of any length there, OpenVINO's CPU plugin expects 1.")
            elif along not in (None, 1) and spec.kind == "Loop":
                add("concat_piece_not_one",
                    f"concatenated output '{o.name}': each piece has length {along} along "
                    f"axis {o.axis}; OpenVINO's CPU plugin expects 1 there.")
        if spec.kind == "Loop" and o.stride < 0:
            add("reversed_loop_concat",
                f"concatenated output '{o.name}' has stride {o.stride}: Loop-5 does not define "
                f"a reversed concatenation (OpenVINO's CPU plugin reverses it, as loopdbg does).")
    if mode.mode == modes.INFINITE or (static.mode == modes.INFINITE
                                        and not static.depends_on_inputs):
        add("infinite",
            "the trip count is negative (no limit) and the conditions are constant true: this "
            "loop never stops on its own; run it with --max-iterations N.")
    elif static.depends_on_inputs and static.execution_condition is True and \
            static.body_condition is True and not spec.onnx:    # ONNX: a negative M runs none
        add("may_be_infinite",
            f"the trip count comes from '{outer_name(spec, 0)}' and nothing else can stop the "
            f"loop: a negative value makes it run forever.")
    for f in spec.sliced:
        length = _axis_length(spec, f)
        if length is not None:
            ok = is_canonical(f.start, f.end, f.stride, length)
        else:
            ok = (f.start, f.end) == ((0, -1) if f.stride > 0 else (-1, 0))
        if not ok and not onnx_scan:
            where = "" if length is not None else " (the axis length is not declared)"
            add("non_canonical_slicing",
                f"sliced input '{f.name}' starts at {f.start} and ends at {f.end} with stride "
                f"{f.stride}{where}: OpenVINO's CPU plugin always starts at an end of the axis "
                f"and so slices differently from the specification (which loopdbg follows).")
        if spec.kind == "Loop":
            _slices_may_run_out(spec, f, static, length, add)
        if abs(f.stride) != f.part_size:
            add("stride_not_part_size",
                f"sliced input '{f.name}' has stride {f.stride} and part_size {f.part_size}: "
                f"OpenVINO's two implementations only agree when |stride| == part_size; loopdbg "
                f"refuses to run it.")
    if spec.kind == "Loop":
        _condition_checks(spec, add)
    for text in spec.duplicates:
        add("duplicate_port_map", text)
    return found


def _slices_may_run_out(spec: LoopSpec, f, static: modes.Mode, length: int | None, add) -> None:
    """A Loop's trip count may ask for more slices than its sliced input has (rule 8)."""
    trip = static.trip_count
    if isinstance(trip, int) and length is not None:
        s = f.start + length if f.start < 0 else f.start
        e = f.end + length if f.end < 0 else f.end
        n = (e - s + 1) // f.part_size if f.stride > 0 else (s - e + 1) // f.part_size
        if trip <= max(n, 0):
            return
        bound = f"the trip count {trip} is more than its {max(n, 0)} slices"
    elif isinstance(trip, int):
        return                           # a fixed count on an undeclared length: cannot tell
    else:
        bound = ("nothing but the body condition bounds the iterations" if trip is None
                 else f"the trip count comes from '{outer_name(spec, 0)}'")
    add("slices_may_run_out",
        f"sliced input '{f.name}': {bound}; an iteration without a slice left is an error in "
        f"loopdbg (OpenVINO's reference silently repeats the last slice).")


def zero_iterations_possible(spec: LoopSpec, static: modes.Mode) -> str | None:
    """Why this loop may run zero iterations (a clause for a sentence), or None."""
    if spec.kind != "Loop":
        return None
    if static.trip_count == 0:
        return "the trip count is 0, so no iteration runs and"
    exec_cond = static.execution_condition
    if exec_cond is False:
        return "the execution condition is false, so no iteration runs and"
    reasons = []
    if static.trip_count in ("input", "computed"):
        reasons.append(f"the trip count ('{outer_name(spec, 0)}') is 0")
    if exec_cond in ("input", "computed"):
        reasons.append(f"the execution condition ('{outer_name(spec, 1)}') is false")
    if reasons:
        return "if " + " or ".join(reasons) + ", no iteration runs and"
    return None


def _condition_checks(spec: LoopSpec, add) -> None:
    """The execution and body conditions must be one boolean element (docs/semantics.md rule 2)."""
    layer = spec.layer
    checks = []
    if len(layer.inputs) > 1 and getattr(spec, "parent_graph", None) is not None and \
            spec.parent_graph.producer(layer.id, 1) is not None:
        port = layer.inputs[1]
        checks.append(("execution condition", outer_name(spec, 1), port.precision, port.dims))
    if spec.cond_result is not None:
        rid = spec.body.result_ids[spec.cond_result]
        result = spec.body.graph.layers[rid]
        port = result.inputs[0] if result.inputs else None
        if port is not None:
            checks.append(("body condition", result_source(spec, spec.cond_result),
                           port.precision, port.dims))
    for what, name, precision, dims in checks:
        problems = []
        if precision and precision.upper() not in ("BOOL", "BOOLEAN", "UNSPECIFIED"):
            problems.append(f"its type is {precision}, not boolean")
        if dims and int(np.prod([max(d, 2) if d < 0 else d for d in dims])) != 1:
            problems.append(f"its shape is {_dims_text(dims)}, not a single element")
        if problems:
            add("condition_not_boolean_scalar",
                f"the {what} '{name}': {' and '.join(problems)}; a Loop needs one boolean "
                f"element there.")


def _result_dims(spec: LoopSpec, result_pos: int) -> tuple[int, ...] | None:
    layer = spec.body.graph.layers[spec.body.result_ids[result_pos]]
    port = layer.inputs[0] if layer.inputs else None
    if port is None or (not port.dims and not port.precision):
        return None
    return tuple(port.dims)


def _axis_length(spec: LoopSpec, f) -> int | None:
    if f.ext >= len(spec.layer.inputs):
        return None
    dims = spec.layer.inputs[f.ext].dims
    axis = _norm(f.axis, len(dims))
    if 0 <= axis < len(dims) and dims[axis] >= 0:
        return dims[axis]
    return None


def _norm(axis: int | None, rank: int) -> int:
    if axis is None:
        return 0
    return axis + rank if axis < 0 else axis


def _dims_text(dims) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in dims) + "]"
