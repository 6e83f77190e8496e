"""Explain every Loop and TensorIterator of a model in plain words: ``loopdbg explain``.

For each loop (nested ones included, outermost first) ``explain`` gathers the facts a student
needs: its mode (``teach.modes``), C-like pseudo-code with the model's names
(``teach.pseudocode``), every body input by role, every output, and the pitfalls the model walks
into. ``format_text`` writes them as text, ``json.dumps`` takes them as they are.

Modes that depend on the model's inputs (a trip count or an execution condition fed by a model
input) are decided by running the model on given inputs up to the start of each loop; without
inputs the explanation says what the mode would be either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.paths import matches_loop
from loopdbg.engine.slicing import is_canonical
from loopdbg.ir import model as irm
from loopdbg.teach import modes
from loopdbg.teach.pseudocode import (back_edge_text, outer_name, pseudocode, result_source,
                                      source_name, value_text)

# How many iterations each loop may run when explain runs the model on the given inputs.
RUN_BUDGET = 10_000


# ----------------------------------------------------------------------------------------------
# Running to learn the input-dependent parts


def loop_starts(engine, inputs: Mapping[str, np.ndarray]) -> tuple[dict, dict, str | None]:
    """Run ``engine`` on ``inputs``: the first LoopStarted of each loop path, each loop's
    executions as ``LoopRun``s, and the error that ended the run, if any."""
    from loopdbg.engine import events as ev
    from loopdbg.errors import LoopdbgError

    started: dict[str, Any] = {}
    runs: dict[str, list] = {}
    error = None
    try:
        with np.errstate(all="ignore"):
            for event in engine.run(inputs, max_iterations=RUN_BUDGET):
                if isinstance(event, ev.LoopStarted):
                    started.setdefault(event.path, event)
                elif isinstance(event, ev.LoopFinished):
                    runs.setdefault(event.path, []).append(
                        LoopRun(event.iterations, event.reason, event.reason_text))
    except LoopdbgError as exc:
        error = str(exc)
    return started, runs, error


@dataclass(frozen=True)
class LoopRun:
    """One execution of a loop: how many iterations and why it stopped."""

    iterations: int
    reason: str
    reason_text: str


# ----------------------------------------------------------------------------------------------
# Facts


def explain(engine, inputs: Mapping[str, np.ndarray] | None = None, loop: str | None = None
            ) -> dict:
    """The facts about every loop of ``engine``'s model (or the one at path/name ``loop``)."""
    from loopdbg.errors import LoopdbgError

    specs = outermost_first(engine.loops)
    if loop is not None:
        chosen = [s for s in specs if matches_loop(s.path, loop, s.layer.name)]
        if not chosen:
            known = ", ".join(s.path for s in specs) or "none"
            raise LoopdbgError(f"{engine.file}: no loop named '{loop}'; the loops are: {known}.")
        specs = chosen
    started: dict = {}
    runs: dict = {}
    error = None
    if inputs is not None:
        started, runs, error = loop_starts(engine, inputs)
    facts = {"model": engine.file, "inputs_given": inputs is not None,
             "loops": [loop_facts(s, started.get(s.path), runs.get(s.path),
                                  inputs_given=inputs is not None) for s in specs]}
    if error is not None:
        facts["run_error"] = error
    return facts


def outermost_first(loops: Mapping[str, LoopSpec]) -> list[LoopSpec]:
    """The loops in model order, each enclosing loop before the loops of its body."""
    found = {path: k for k, path in enumerate(loops)}

    def key(path: str):
        parts = path.split("/")
        return [found.get("/".join(parts[:n]), -1) for n in range(1, len(parts) + 1)]
    return [loops[p] for p in sorted(loops, key=key)]


def loop_facts(spec: LoopSpec, started=None, runs=None, *, inputs_given: bool = False) -> dict:
    """The facts about one loop (see ``explain``)."""
    static = modes.loop_mode(spec)
    mode = modes.loop_mode(spec, started) if started is not None else static
    facts: dict[str, Any] = {
        "type": spec.kind,
        "name": spec.layer.name,
        "path": spec.path,
        "mode": None if mode.depends_on_inputs else mode.mode,
        "depends_on_inputs": static.depends_on_inputs,
    }
    if mode.depends_on_inputs:
        facts["mode_if"] = _possible_modes(spec, static)
    if spec.kind == "Loop":
        facts["trip_count"] = _trip_fact(spec, mode)
        facts["execution_condition"] = _exec_fact(spec, started)
        facts["body_condition"] = _body_cond_fact(spec)
    else:
        facts["iterations"] = _ti_count_fact(spec)
    facts["pseudocode"] = [line.render() for line in pseudocode(spec, started=started,
                                                                  detail=True, by_mode=True)]
    facts["inputs"] = _input_facts(spec)
    zero = _zero_iterations_possible(spec, static)
    facts["zero_iterations_possible"] = zero is not None
    facts["outputs"] = _output_facts(spec)
    facts["pitfalls"] = pitfalls(spec, mode, static)
    if runs:
        facts["runs"] = [{"iterations": r.iterations, "stopped": r.reason,
                          "stopped_because": r.reason_text} for r in runs]
    elif inputs_given:
        facts["runs"] = []
    return facts


def _possible_modes(spec: LoopSpec, static: modes.Mode) -> dict[str, str]:
    """What the mode is for either sign of an input-dependent trip count."""
    body_cond = static.body_condition
    limited = modes.FOR if body_cond is True else modes.FOR_COND
    exec_cond = static.execution_condition
    if exec_cond is True:
        unlimited = modes.INFINITE if body_cond is True else modes.DO_WHILE
    else:
        unlimited = modes.WHILE
    name = outer_name(spec, 0)
    if getattr(spec, "onnx", False):           # ONNX: a negative M runs no iteration
        unlimited = limited
    return {f"{name} >= 0": limited, f"{name} < 0": unlimited}


def _trip_fact(spec: LoopSpec, mode: modes.Mode) -> dict:
    graph = getattr(spec, "parent_graph", None)
    kind = modes._input_kind(spec, 0)
    fact: dict[str, Any] = {"source": source_name(graph, spec.layer.id, 0, inline_consts=False)}
    if kind in ("input", "computed"):
        fact["kind"] = kind
        if isinstance(mode.trip_count, int) or (mode.trip_count is None
                                                and not mode.depends_on_inputs):
            fact["value"] = mode.trip_count
    elif kind is None:
        fact.update(kind="absent", value=None)
    else:
        fact.update(kind="constant", value=int(kind))
    fact["limit"] = ("depends on the inputs" if mode.depends_on_inputs
                     else "none" if mode.trip_count is None else str(mode.trip_count))
    return fact


def _exec_fact(spec: LoopSpec, started=None) -> dict:
    kind = modes._input_kind(spec, 1)
    if kind is None:
        return {"kind": "absent", "value": True, "source": None}
    if isinstance(kind, str):
        fact = {"kind": kind, "source": outer_name(spec, 1)}
        if started is not None:
            fact["value"] = bool(started.execution_condition)
        return fact
    return {"kind": "constant", "value": bool(kind),
            "source": source_name(getattr(spec, "parent_graph", None), spec.layer.id, 1,
                                  inline_consts=False)}


def _body_cond_fact(spec: LoopSpec) -> dict:
    value = modes.body_condition(spec)
    source = result_source(spec, spec.cond_result) if spec.cond_result is not None else None
    if value == "computed":
        return {"kind": "computed", "source": source}
    return {"kind": "constant", "value": bool(value), "source": source}


def _ti_count_fact(spec: LoopSpec) -> str:
    if spec.sliced:
        return "one per slice of " + " and ".join(
            f"{outer_name(spec, f.ext)} along axis {f.axis}" for f in spec.sliced)
    if spec.concats:
        return "from the first concatenated output's shape (no sliced input)"
    return "one (no sliced input and no concatenated output)"


def _input_facts(spec: LoopSpec) -> list[dict]:
    by_pos: dict[int, dict] = {}
    for f in spec.sliced:
        by_pos[f.pos] = {"name": f.name, "role": "sliced", "from": outer_name(spec, f.ext),
                         "axis": f.axis, "start": f.start, "end": f.end, "stride": f.stride,
                         "part_size": f.part_size,
                         "order": "forward" if f.stride > 0 else "backward"}
    for pos, ext in spec.merged:
        edges = [back_edge_text(spec, p, r) for p, r in spec.back_edges if p == pos]
        by_pos[pos] = {"name": spec.param_names[pos], "role": "merged",
                       "from": outer_name(spec, ext), "back_edge": edges[0] if edges else None}
    for pos, ext in spec.invariant:
        by_pos[pos] = {"name": spec.param_names[pos], "role": "invariant",
                       "from": outer_name(spec, ext)}
    if spec.current_iteration is not None:
        pos = spec.current_iteration
        fact = {"name": spec.param_names[pos], "role": "current_iteration",
                "type": spec.cur_dtype.name, "shape": list(spec.cur_shape)}
        edges = [back_edge_text(spec, p, r) for p, r in spec.back_edges if p == pos]
        if edges:
            fact["back_edge"] = edges[0]
        by_pos[pos] = fact
    if spec.condition_param is not None:
        by_pos[spec.condition_param] = {"name": spec.param_names[spec.condition_param],
                                        "role": "execution_condition"}
        if getattr(spec, "onnx", False):
            by_pos[spec.condition_param]["onnx"] = True
    return [by_pos[p] for p in sorted(by_pos)]


def _output_facts(spec: LoopSpec) -> list[dict]:
    facts = []
    for o in spec.outputs:
        fact = {"index": o.index, "name": o.name, "from": result_source(spec, o.result_pos)}
        if o.kind == irm.CONCAT:
            fact.update(kind="concat", axis=o.axis,
                        order="reversed" if o.stride < 0 else "iteration order")
            if getattr(spec, "onnx", False):
                fact["stacked"] = True          # ONNX: on a new axis, not an existing one
        else:
            fact.update(kind="last_value", fed_back=spec.merged_source(o.result_pos) is not None)
        facts.append(fact)
    return facts


# ----------------------------------------------------------------------------------------------
# Pitfalls


def pitfalls(spec: LoopSpec, mode: modes.Mode, static: modes.Mode) -> list[dict]:
    """Where the model relies on something undefined, fragile or implementation-specific."""
    found: list[dict] = []

    def add(kind: str, message: str) -> None:
        found.append({"kind": kind, "message": message})

    zero = _zero_iterations_possible(spec, static)
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
            along = dims[axis] if 0 <= axis < len(dims) else None
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
            static.body_condition is True:
        add("may_be_infinite",
            f"the trip count comes from '{outer_name(spec, 0)}' and nothing else can stop the "
            f"loop: a negative value makes it run forever.")
    for f in spec.sliced:
        length = _axis_length(spec, f)
        if length is not None:
            ok = is_canonical(f.start, f.end, f.stride, length)
        else:
            ok = (f.start, f.end) == ((0, -1) if f.stride > 0 else (-1, 0))
        if not ok:
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


def _zero_iterations_possible(spec: LoopSpec, static: modes.Mode) -> str | None:
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
    """The execution and body conditions must be one boolean element (decisions.md rule 2)."""
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


# ----------------------------------------------------------------------------------------------
# Text


def format_text(facts: dict) -> str:
    """``explain``'s facts as the text ``loopdbg explain`` prints."""
    out: list[str] = []
    if not facts["loops"]:
        return f"{facts['model']}: no Loop or TensorIterator.\n"
    for k, loop in enumerate(facts["loops"]):
        if k:
            out.append("")
        out.extend(_loop_text(loop, facts["inputs_given"]))
    if "run_error" in facts:
        out.append("")
        out.append(f"note: the run on the given inputs failed: {facts['run_error']}")
    return "\n".join(out) + "\n"


def _loop_text(loop: dict, inputs_given: bool) -> list[str]:
    out = [f"{loop['type']} '{loop['name']}'"
           + (f"  (path {loop['path']})" if loop["path"] != loop["name"] else "")]
    if loop["mode"] is not None:
        line = f"mode: {loop['mode']}"
        if loop["depends_on_inputs"]:
            line += "  (decided by the given inputs)"
        out.append(line)
    else:
        either = "; ".join(f"{m} when {cond}" for cond, m in loop["mode_if"].items())
        hint = "" if inputs_given else "; give INPUTS to decide"
        out.append(f"mode: depends on the inputs: {either}{hint}")
    if loop["type"] == "Loop":
        out.append(f"  trip count: {_trip_line(loop['trip_count'])}")
        out.append(f"  execution condition: {_cond_line(loop['execution_condition'])}")
        out.append(f"  body condition: {_cond_line(loop['body_condition'])}")
    else:
        out.append(f"  iterations: {loop['iterations']}")
    out.append("")
    out.extend("    " + line for line in loop["pseudocode"])
    out.append("")
    out.append("inputs:")
    if not loop["inputs"]:
        out.append("  (none)")
    width = max((len(i["name"]) for i in loop["inputs"]), default=0)
    for i in loop["inputs"]:
        out.append(f"  {i['name']:<{width}}  {_input_line(i)}")
    out.append("outputs:")
    if not loop["outputs"]:
        out.append("  (none)")
    width = max((len(o["name"]) for o in loop["outputs"]), default=0)
    for o in loop["outputs"]:
        out.append(f"  {o['name']:<{width}}  {_output_line(o, loop['zero_iterations_possible'])}")
    if "runs" in loop:
        out.append("with the given inputs:")
        if not loop["runs"]:
            out.append("  never started")
        for r in loop["runs"][:5]:
            n = r["iterations"]
            out.append(f"  {n} iteration{'s' if n != 1 else ''}, stopped because "
                       f"{r['stopped_because']}"
                       + (f" (explain runs a loop {RUN_BUDGET} iterations at most)"
                          if r["stopped"] == "iteration_cap" else ""))
        if len(loop["runs"]) > 5:
            total = sum(r["iterations"] for r in loop["runs"])
            out.append(f"  ... {len(loop['runs'])} executions, {total} iterations in all")
    out.append("pitfalls:")
    if not loop["pitfalls"]:
        out.append("  none found")
    for p in loop["pitfalls"]:
        out.append(f"  - {p['message']}")
    return out


def _trip_line(t: dict) -> str:
    if t["kind"] == "absent":
        return "none (not connected: no limit)"
    if t["kind"] == "constant":
        v = t["value"]
        return f"{v}" + (" (negative: no limit)" if v < 0 else "")
    text = _source_text(t)
    if "value" in t:
        v = t["value"]
        text += f", {'no limit' if v is None else v} with the given inputs"
    return text


def _source_text(fact: dict) -> str:
    if fact["kind"] == "input":
        return f"'{fact['source']}', an input of the graph around the loop"
    return f"computed by '{fact['source']}'"


def _cond_line(c: dict) -> str:
    if c["kind"] == "absent":
        return "true (not connected)"
    if c["kind"] == "constant":
        return "true" if c["value"] else "false"
    text = _source_text(c)
    if "value" in c:
        text += f", {'true' if c['value'] else 'false'} with the given inputs"
    return text


def _input_line(i: dict) -> str:
    role = i["role"]
    if role == "sliced":
        return (f"sliced from {i['from']} along axis {i['axis']}, {i['order']} (start={i['start']}"
                f", end={i['end']}, stride={i['stride']}, part_size={i['part_size']})")
    if role == "merged":
        edge = i["back_edge"] or "no back edge: keeps its initial value"
        return f"merged: starts as {i['from']}, then {edge}"
    if role == "invariant":
        return f"invariant: {i['from']}, the same in every iteration"
    if role == "current_iteration":
        text = f"current iteration: 0, 1, 2, ... ({i['type']}, shape {i['shape']})"
        if "back_edge" in i:
            text += f"; also fed back: {i['back_edge']}"
        return text
    if i.get("onnx"):
        return "the loop condition: the execution condition, then each iteration's body condition"
    return "the execution condition (draft Loop-5 form)"


def _output_line(o: dict, zero_possible: bool) -> str:
    if o["kind"] == "concat":
        how = "stacked on a new axis" if o.get("stacked") else "concatenated on axis"
        return f"{o['from']} of every iteration, {how} {o['axis']} ({o['order']})"
    text = f"last value of {o['from']}"
    if zero_possible:
        text += (" (fed back: the initial value if no iteration runs)" if o["fed_back"]
                 else " (not fed back: undefined if no iteration runs)")
    return text


def to_json_ready(facts: Any) -> Any:
    """``facts`` with numpy scalars turned into plain Python values (for ``json.dumps``)."""
    if isinstance(facts, dict):
        return {k: to_json_ready(v) for k, v in facts.items()}
    if isinstance(facts, (list, tuple)):
        return [to_json_ready(v) for v in facts]
    if isinstance(facts, np.generic):
        return facts.item()
    return facts


__all__ = ["explain", "loop_facts", "pitfalls", "format_text", "to_json_ready", "value_text"]
