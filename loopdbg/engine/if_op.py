"""If-8: run the then- or else-branch, mapping inputs and outputs through their port maps."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from loopdbg.engine.plan import GraphPlan
from loopdbg.errors import ModelError, RunError
from loopdbg.ir.model import Layer


def runs_text(then: int, other: int, last) -> str:
    """What the runs of an If chose, in words: "= true, ran the then branch", "not reached",
    "ran 3 times: then 2, else 1 (last condition true)"."""
    if then + other == 0:
        return "not reached"
    last = str(last).lower()
    if then + other == 1:
        return f"= {last}, ran the {'then' if then else 'else'} branch"
    return f"ran {then + other} times: then {then}, else {other} (last condition {last})"


class IfSpec:
    """The two branches of an If layer, each a compiled plan with its input/output mapping."""

    parent = ""                      # the loop path the If is in ("": the model's graph)

    def __init__(self, layer: Layer, branches: dict[str, GraphPlan], where: str):
        self.layer = layer
        self.where = where
        # What the runs so far chose (explain and the debugger tell it): runs per branch, and
        # the last condition value.
        self.taken = {"then_body": 0, "else_body": 0}
        self.last_condition = None
        self.branches = {}
        n_out = len(layer.outputs)
        for sub in layer.subgraphs:
            plan = branches[sub.role]
            feeds = []
            for m in sub.inputs:
                if m.internal_layer_id not in plan.param_ids:
                    raise ModelError(f"{where}{layer.describe()}: {sub.role} port map names layer "
                                     f"{m.internal_layer_id}, which is not a Parameter of it.")
                feeds.append((plan.param_ids.index(m.internal_layer_id), m.external_port_id))
            outs = sorted((m for m in sub.outputs if m.external_port_id >= 0),
                          key=lambda m: m.external_port_id)
            picks = []
            for m in outs:
                if m.internal_layer_id not in plan.result_ids:
                    raise ModelError(f"{where}{layer.describe()}: {sub.role} port map names layer "
                                     f"{m.internal_layer_id}, which is not a Result of it.")
                picks.append(plan.result_ids.index(m.internal_layer_id))
            if n_out and len(picks) != n_out:
                raise ModelError(f"{where}{layer.describe()}: {sub.role} maps {len(picks)} outputs, "
                                 f"the layer declares {n_out}.")
            self.branches[sub.role] = (plan, feeds, picks)
        if set(self.branches) != {"then_body", "else_body"}:
            raise ModelError(f"{where}{layer.describe()} needs both then_body and else_body.")

    def reset(self) -> None:
        """A new run: nothing chosen yet."""
        self.taken = {"then_body": 0, "else_body": 0}
        self.last_condition = None

    def runs_text(self) -> str:
        """What the runs so far chose (``runs_text``)."""
        return runs_text(self.taken["then_body"], self.taken["else_body"], self.last_condition)

    def run(self, ctx, *args):
        cond = np.asarray(args[0])
        if cond.size != 1:
            raise RunError(f"{self.where}{self.layer.describe()}: the condition must hold one "
                           f"element, but it has shape {cond.shape}.")
        value = bool(cond.reshape(()))
        role = "then_body" if value else "else_body"
        self.taken[role] += 1
        self.last_condition = value
        plan, feeds, picks = self.branches[role]
        values = [None] * len(plan.param_ids)
        for pos, ext in feeds:
            values[pos] = args[ext]
        try:
            if plan.is_generator:
                outs = yield from plan.run(ctx, *values)
            else:
                outs = plan.run(ctx, *values)
        except RunError:
            raise
        except Exception as exc:
            raise plan.failure(exc, f"{self.where}{self.layer.describe()}: ", "the branch") from None
        return tuple(outs[p] for p in picks)


def ifs_in(plan) -> list["IfSpec"]:
    """The Ifs a run of ``plan`` runs: its own If steps, and those inside their branches."""
    out = []
    for step in plan.steps:
        spec = getattr(step.fn, "__self__", None)
        if isinstance(spec, IfSpec):
            out.append(spec)
            for branch, _, _ in spec.branches.values():
                out += ifs_in(branch)
    return out


@contextmanager
def choices_kept(plan):
    """Run ``plan`` again (a debugger recomputing values) without counting what its Ifs choose
    then: what the run chose is put back after."""
    specs = ifs_in(plan)
    saved = [(dict(s.taken), s.last_condition) for s in specs]
    try:
        yield
    finally:
        for spec, (taken, last) in zip(specs, saved):
            spec.taken, spec.last_condition = taken, last
