"""A branch of an If opened from its box in a body picture: which branch the stop took, the branch
shaped as a loop body is (so it is laid out and drawn as one), and its values at the stop.

    branch = open_branch(engine, parent, layer, values)   # the branch taken at this stop
    branch.role, branch.taken, branch.status()            # "then_body", True, "taken (condition true)"
    branch.values                                         # every value of the branch, by name
    other = branch.other(values)                          # the branch not taken, on the same inputs

The engine keeps no value of a branch; they are computed again from the If's inputs at the stop
(kernels are pure functions of their inputs), as the debugger recomputes a body's values. The
branch not taken is run on the same inputs to show what it would have given; when it fails on
them (its shapes may not fit) it is drawn without values and says why.

No UI toolkit: the terminal UI's graph asks this what to draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopdbg.engine.context import RunContext
from loopdbg.engine.if_op import choices_kept
from loopdbg.engine.inputs import match_inputs
from loopdbg.text import safe

ROLES = ("then_body", "else_body")
WORD = {"then_body": "then", "else_body": "else"}


class GraphBody:
    """A graph that is not a loop's body, with the fields a body picture reads from a loop
    (``LoopSpec``): its plan as ``body``, Parameter and Result names, no back edges, and every
    value of one run of it (``run``)."""

    back_edges: tuple = ()
    sliced: tuple = ()
    outputs: tuple = ()
    cond_result = None
    onnx = False

    def __init__(self, plan, path: str, layer):
        self.body = plan
        self.path = path
        self.layer = layer
        self.param_names = plan.param_names
        self.result_names = plan.result_names
        self.roles: dict = {}
        self.values: dict[str, Any] = {}
        self.failure: str | None = None            # why the values could not be computed

    def run(self, params: list) -> None:
        """Every value of the graph run on ``params`` (what its Ifs choose is not counted)."""
        self.values = dict(zip(self.param_names, params))
        try:
            with choices_kept(self.body):
                for layer, outs in self.body.interpret(RunContext(), params):
                    for k, value in enumerate(outs):
                        self.values[layer.name if k == 0 else f"{layer.name}:{k}"] = value
        except Exception as exc:  # noqa: BLE001 - the branch not taken may not fit its inputs
            text = str(exc).strip()
            why = text.splitlines()[0] if text else type(exc).__name__
            self.failure = f"it fails on these inputs: {safe(why)}"
        for pos, lid in enumerate(self.body.result_ids):
            value = _input_value(self.body.graph, lid, 0, self.values)
            if value is not None:
                self.values[self.result_names[pos]] = value


class BranchBody(GraphBody):
    """One branch of an If, drawn as a body; its Parameters say which If input feeds them."""

    kind = "If"

    def __init__(self, if_spec, role: str, parent):
        super().__init__(if_spec.branches[role][0], f"{parent.path}/{if_spec.layer.name}:"
                         f"{WORD[role]}", if_spec.layer)
        self.if_spec = if_spec
        self.role = role
        self.parent = parent                       # the loop or branch the If is drawn in
        self.roles = {pos: f"input {ext}" for pos, ext in if_spec.branches[role][1]}
        self.condition: bool | None = None         # the If's condition at the stop (None: unknown)

    @property
    def taken(self) -> bool | None:
        """Whether the stop ran this branch (None: the condition is not known)."""
        if self.condition is None:
            return None
        return (self.role == "then_body") == self.condition

    def title(self) -> str:
        """``If_1: then branch`` (a breadcrumb)."""
        return f"{safe(self.layer.name)}: {WORD[self.role]} branch"

    def status(self) -> str:
        """Whether the stop ran it: ``taken (condition true)``, ``not taken (condition true):
        what it would give``, ``not run at this stop``."""
        if self.condition is None:
            return "not run at this stop"
        cond = "true" if self.condition else "false"
        if self.taken:
            return f"taken (condition {cond})"
        return f"not taken (condition {cond}): what it would give"

    def other(self, parent_values: dict) -> "BranchBody":
        """The If's other branch, its values computed from the same inputs."""
        other = BranchBody(self.if_spec, ROLES[1 - ROLES.index(self.role)], self.parent)
        other.fill(parent_values)
        return other

    def fill(self, parent_values: dict) -> None:
        """The condition and the branch's values from the values of the graph the If is in."""
        graph = self.parent.body.graph
        inputs = {}
        for port in range(len(self.layer.inputs)):
            value = _input_value(graph, self.layer.id, port, parent_values)
            if value is not None:
                inputs[port] = value
        self.condition, self.values, self.failure = None, {}, None
        cond = inputs.get(0)
        if cond is None or np.asarray(cond).size != 1:
            return
        self.condition = bool(np.asarray(cond).reshape(()))
        feeds = self.if_spec.branches[self.role][1]
        if any(ext not in inputs for _, ext in feeds):
            self.failure = "the If's inputs are not known at this stop"
            return
        params = [None] * len(self.body.param_ids)
        for pos, ext in feeds:
            params[pos] = inputs[ext]
        self.run(params)


def find_if(engine, layer):
    """The engine's IfSpec of If ``layer`` (the layer object itself: ids repeat across graphs)."""
    return next((spec for spec in engine.ifs.values() if spec.layer is layer), None)


def open_branch(engine, parent, layer, parent_values: dict) -> BranchBody | None:
    """The branch of If ``layer`` (drawn in ``parent``, a loop or a branch) taken at the stop
    whose values are ``parent_values`` (the then branch when the condition is not known)."""
    spec = find_if(engine, layer)
    if spec is None:
        return None
    cond = _input_value(parent.body.graph, layer.id, 0, parent_values)
    is_false = cond is not None and np.asarray(cond).size == 1 and \
        not bool(np.asarray(cond).reshape(()))
    branch = BranchBody(spec, ROLES[1] if is_false else ROLES[0], parent)
    branch.fill(parent_values)
    return branch


def _value_name(graph, lid: int, port: int) -> str:
    layer = graph.layers[lid]
    return layer.name if port == 0 else f"{layer.name}:{port}"


def _input_value(graph, lid: int, port: int, values: dict):
    src = graph.producer(lid, port)
    if src is None:
        return None
    layer = graph.layers[src[0]]
    if layer.type == "Constant":
        return layer.value
    return values.get(_value_name(graph, *src))


class ModelGraph(GraphBody):
    """The model's own graph drawn as a body, with every value of the run: what a model without
    loops whose control flow is If shows, its Ifs opened from their boxes. The values are the
    run's again (the model run once more from its inputs)."""

    kind = "model"

    def __init__(self, engine, inputs):
        super().__init__(engine.plan, "model", _Named(""))
        try:
            params = match_inputs(engine.model, inputs)
        except Exception as exc:  # noqa: BLE001 - values are decoration: the graph still draws
            self.failure = safe(str(exc).strip().splitlines()[0] if str(exc).strip() else
                                type(exc).__name__)
            return
        self.run(params)


class _Named:
    """A layer's name and nothing else (a model's graph has no layer of its own)."""

    def __init__(self, name: str):
        self.name = name
