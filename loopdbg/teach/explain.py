"""Explain every Loop and TensorIterator of a model in plain words: ``loopdbg explain``.

For each loop (nested ones included, outermost first) ``explain`` gathers the facts a student
needs: its mode (``teach.modes``), C-like pseudo-code with the model's names
(``teach.pseudocode``), every body input by role, every output, and the pitfalls the model walks
into. ``format_text`` writes them as text, ``json.dumps`` takes them as they are.

Modes that depend on the model's inputs (a trip count or an execution condition fed by a model
input) are decided by running the model on given inputs up to the start of each loop; without
inputs the explanation says what the mode would be either way.

A model with operations loopdbg cannot run is explained all the same, from its structure (an
Engine made with ``require_kernels=False``): the facts say so (``cannot_run``), and a run on
given inputs decides only the loops that start before the first such operation.

The facts are gathered here; ``teach.pitfalls`` finds the pitfalls and ``teach.explain_text``
writes the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.paths import matches_loop
from loopdbg.ir import model as irm
from loopdbg.teach import modes
from loopdbg.teach.pitfalls import pitfalls, zero_iterations_possible
from loopdbg.teach.pseudocode import (back_edge_text, outer_name, pseudocode, result_source,
                                      source_name)

# How many iterations each loop may run when explain runs the model on the given inputs.
RUN_BUDGET = 10_000


# ----------------------------------------------------------------------------------------------
# Running to learn the input-dependent parts


def loop_starts(engine, inputs: Mapping[str, np.ndarray], max_memory: int | None = None
                ) -> tuple[dict, dict, str | None]:
    """Run ``engine`` on ``inputs`` (within ``max_memory`` bytes, as ``run`` would): the first
    LoopStarted of each loop path, each loop's executions as ``LoopRun``s, and the error that
    ended the run, if any (not when the run reached an operation loopdbg cannot run:
    ``engine.unsupported`` already says that)."""
    from loopdbg.engine import events as ev
    from loopdbg.errors import LoopdbgError, UnsupportedOperation

    started: dict[str, Any] = {}
    runs: dict[str, list] = {}
    error = None
    try:
        with np.errstate(all="ignore"):
            for event in engine.run(inputs, max_iterations=RUN_BUDGET, max_memory=max_memory):
                if isinstance(event, ev.RunFinished):
                    started.setdefault("", event)          # the model's outputs (if_facts)
                elif isinstance(event, ev.LoopStarted):
                    started.setdefault(event.path, event)
                elif isinstance(event, ev.LoopFinished):
                    runs.setdefault(event.path, []).append(
                        LoopRun(event.iterations, event.reason, event.reason_text))
    except UnsupportedOperation as exc:
        error = None if getattr(engine, "unsupported", None) else str(exc)
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


def explain(engine, inputs: Mapping[str, np.ndarray] | None = None, loop: str | None = None,
            max_memory: int | None = None) -> dict:
    """The facts about every loop of ``engine``'s model (or the one at path/name ``loop``);
    with ``inputs``, the model is run on them within ``max_memory`` bytes."""
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
        started, runs, error = loop_starts(engine, inputs, max_memory)
    finished = started.pop("", None)
    facts = {"model": engine.file, "inputs_given": inputs is not None,
             "loops": [loop_facts(s, started.get(s.path), runs.get(s.path),
                                  inputs_given=inputs is not None) for s in specs]}
    if loop is None:
        facts["ifs"] = if_facts(engine, ran=inputs is not None and error is None)
        if finished is not None and not specs:
            facts["outputs"] = {name: {"shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)}
                                for name, v in finished.outputs.items()}
    if getattr(engine, "unsupported", None):
        facts["cannot_run"] = engine.unsupported
    if error is not None:
        facts["run_error"] = error
    return facts


def if_facts(engine, ran: bool) -> list[dict]:
    """Each If of the model (in loop bodies too): where it is, what feeds its condition and,
    after a run, which branch ran (how often, and the last condition value)."""
    out = []
    for spec in engine.ifs.values():
        layer = spec.layer
        try:
            condition = source_name(_graph_of(engine, spec), layer.id, 0)
        except (KeyError, AttributeError):     # an If inside a branch: its graph is not at hand
            condition = None
        fact: dict[str, Any] = {"name": layer.name, "loop": spec.parent or None,
                                "condition": condition}
        if ran:
            fact["then_runs"] = spec.taken["then_body"]
            fact["else_runs"] = spec.taken["else_body"]
            fact["last_condition"] = spec.last_condition
        out.append(fact)
    return out


def _graph_of(engine, spec):
    """The graph holding an If layer (to name what feeds it): the model's or a loop body's."""
    if not spec.parent:
        return engine.model.graph
    loop = engine.loops.get(spec.parent)
    return loop.body.graph if loop is not None else None


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
        "type": spec.source_kind,       # the model's word: an ONNX Scan is a Scan
        "name": spec.layer.name,
        "path": spec.path,
        "mode": None if mode.depends_on_inputs else (
            "scan" if spec.source_kind == "Scan" else mode.mode),
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
    zero = zero_iterations_possible(spec, static)
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
    kind = modes.input_kind(spec, 0)
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
    kind = modes.input_kind(spec, 1)
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


__all__ = ["explain", "loop_facts", "loop_starts", "outermost_first"]
