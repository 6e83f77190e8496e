"""``explain``'s facts as the text ``loopdbg explain`` prints, or ready for ``json.dumps``."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopdbg.engine.if_op import runs_text
from loopdbg.engine.trip import UNBOUNDED, trip_text
from loopdbg.teach.explain import RUN_BUDGET
from loopdbg.text import safe


def format_text(facts: dict) -> str:
    """``explain``'s facts as the text ``loopdbg explain`` prints."""
    out: list[str] = []
    ifs = facts.get("ifs", [])
    if not facts["loops"]:
        out.extend(_no_loop_text(facts, ifs))
    for k, loop in enumerate(facts["loops"]):
        if k:
            out.append("")
        out.extend(_loop_text(loop, facts["inputs_given"]))
    if facts["loops"] and ifs:
        out.extend([""] + _if_lines(ifs))
    if "cannot_run" in facts:
        out.append("")
        decided = (" The inputs decided only the loops that start before the first of them."
                   if facts["inputs_given"] else "")
        out.append(f"note: loopdbg cannot run this model, so this is read from its structure: "
                   f"{facts['cannot_run']}{decided}")
    if "run_error" in facts:
        out.append("")
        out.append(f"note: the run on the given inputs failed: {facts['run_error']}")
    return "\n".join(map(safe, out)) + "\n"     # names from the model escaped, one line each


def _no_loop_text(facts: dict, ifs: list) -> list[str]:
    """A model without loops: its Ifs, or plainly no control flow (and what it computes)."""
    if ifs:
        return [f"{facts['model']}: no Loop, Scan or TensorIterator; its control flow is "
                f"{len(ifs)} If node{'s' if len(ifs) != 1 else ''}."] + _if_lines(ifs)
    out = [f"{facts['model']}: no control flow (no Loop, Scan, TensorIterator or If): the "
           f"model runs once from its inputs to its outputs, and the debugger has nothing to "
           f"step through."]
    outputs = facts.get("outputs")
    if outputs:
        out.append("outputs with the given inputs:")
        width = max(len(n) for n in outputs)
        for name, o in outputs.items():
            out.append(f"  {name:<{width}}  {o['dtype']}, shape {o['shape']}")
    return out


def _if_lines(ifs: list) -> list[str]:
    """One line per If: where, its condition and the branch the run took."""
    out = ["If nodes (which branch ran with the given inputs):" if "then_runs" in ifs[0]
           else "If nodes (give INPUTS to see which branch runs):"]
    width = max(len(f["name"]) for f in ifs)
    for f in ifs:
        where = f" in loop {f['loop']}" if f["loop"] else ""
        cond = f"condition {f['condition']}" if f["condition"] else "condition"
        line = f"  If {f['name']:<{width}}{where}: {cond}"
        if "then_runs" in f:
            text = runs_text(f["then_runs"], f["else_runs"], f["last_condition"])
            line += f" {text}" if text.startswith("=") else f"; {text}"
        out.append(line)
    return out


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
        if v in UNBOUNDED:
            return f"{v} ({UNBOUNDED[v]}: no limit, a while loop)"
        return f"{v}" + (" (negative: no limit)" if v < 0 else "")
    text = _source_text(t)
    if "value" in t:
        v = t["value"]
        text += f", {trip_text(v)} with the given inputs"
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
