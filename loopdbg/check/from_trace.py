"""loopdbg's side of a check taken from a trace (``loopdbg run --trace``) instead of a live run.

The trace gives the model's inputs and outputs, how each loop ran, loopdbg's notices, and each
iteration's body inputs; the body outputs (and every node, with ``all_nodes``) are recomputed
from those inputs, so a trace recorded without ``--trace-all`` serves ``--all-nodes`` too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from loopdbg.check import bookkeeping as bk
from loopdbg.check.oracle import CheckUnavailable
from loopdbg.engine.context import RunContext
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.engine.plan import drain


def trace_inputs(model, reader, inputs):
    """The inputs to check with: the trace's own, or the given ones when they are the trace's."""
    from loopdbg.trace.record import file_sha256, inputs_sha256

    header = reader.header
    recorded = header.get("model", {}).get("xml_sha256")
    if model.path and recorded and Path(model.path).suffix.lower() == ".xml":
        if file_sha256(model.path) != recorded:
            raise CheckUnavailable(f"{reader.path} was recorded from another model than "
                                   f"{model.path} (their sha256 differ).")
    saved = reader.model_inputs()
    if inputs is None:
        if saved is None:
            raise CheckUnavailable(f"{reader.path} holds no model inputs; give the INPUTS "
                                   f"file it was recorded with.")
        return saved
    want = header.get("inputs", {}).get("sha256")
    if want and inputs_sha256({k: np.asarray(v) for k, v in inputs.items()}) != want:
        raise CheckUnavailable(f"{reader.path} was recorded with other inputs than the ones "
                               f"given.")
    return inputs


def from_trace(chk, reader, report):
    """loopdbg's side from a trace: (outputs, loop runs, notices); with ``chk.per_iteration``,
    every recorded iteration is given to ``chk.check_iteration``."""
    from loopdbg.trace import TraceError

    if reader.truncated:
        report.notes.append("the trace is truncated; only the iterations it holds were "
                            "compared")
    if (reader.header.get("options") or {}).get("max_iterations"):
        report.notes.append(f"the trace was recorded with --max-iterations, so its loops may "
                            f"have stopped early where {chk.label}'s did not")
    records = reader.loops()
    runs = [bk.LoopRun(r.path, r.iterations, r.reason) for r in records]
    notices = [(n.get("path", ""), n.get("message", ""), n.get("rule"))
               for n in reader.notices()]
    if chk.per_iteration:
        try:
            for rec in records:
                spec = chk.engine.loops.get(rec.path)
                if spec is None:
                    raise CheckUnavailable(f"{reader.path} has a loop '{rec.path}' that the "
                                           f"model does not have.")
                for k in range(rec.recorded):
                    body_in = _trace_body_inputs(reader, spec, k, rec.outer)
                    body_out, nodes = _recompute(spec, body_in, chk.all_nodes)
                    chk.check_iteration(spec, rec.outer, k, body_in, body_out, nodes)
        except TraceError as exc:
            raise CheckUnavailable(str(exc)) from None
    return reader.outputs(), runs, notices


def _trace_body_inputs(reader, spec: LoopSpec, k: int, outer: tuple) -> tuple:
    values = reader.body_inputs(spec.path, k, outer)
    missing = [n for n in spec.param_names if n not in values]
    if missing:
        raise CheckUnavailable(f"{reader.path} does not hold the input(s) "
                               f"{', '.join(missing)} of loop '{spec.path}' at iteration {k}.")
    return tuple(values[n] for n in spec.param_names)


def _recompute(spec: LoopSpec, body_in: tuple, all_nodes: bool):
    """loopdbg's body outputs (and every node) for recorded inputs; nested events are dropped."""
    body = spec.body
    ctx = RunContext()
    result = drain(body.run_all(ctx, *body_in) if all_nodes else body.run(ctx, *body_in))
    if all_nodes:
        outs, every = result
        return outs, body.result_values(every)
    return result, None
