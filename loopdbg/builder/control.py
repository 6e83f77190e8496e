"""Builders for the control-flow layers: Loop-5, TensorIterator-1 and If-8.

Each owns its body ``GraphBuilder`` (or two, for If) and records the port map as it is declared:
feeding an outer tensor in creates a Layer input and a body Parameter together, declaring an
output creates a Layer output read from a body Result. Sources of outputs and back edges may be
body tensors (a Result is made for each tensor, once) or ``ResultRef``s from ``body.result`` when
the exact Results matter.

External port ids follow OpenVINO's serializer: inputs are numbered by position (a Loop's 0 and 1
are the trip count and the execution condition), outputs by ``n_inputs + position``; since inputs
may still be added after an output is declared, output ids are fixed by ``build()``.

A body is made with the class of the graph that owns the control layer (``type(parent)``), so this
module needs only the records of ``nodes``, and ``graph``, which makes control builders, imports it
without a circle.
"""

from __future__ import annotations

import numpy as np

from typing import Any

from loopdbg.builder.nodes import Node, ResultRef, Tensor
from loopdbg.ir.model import BackEdge, InputMapping, OutputMapping, SubGraph


class _IterationBuilder:
    """What Loop and TensorIterator share: sliced/merged/invariant inputs, back edges, outputs."""

    def __init__(self, parent: Any, node: Node):
        self.parent = parent
        self.node = node
        self.body = type(parent)(f"{node.name}/body", _owner=self)
        self.inputs: list[InputMapping] = []
        self.outputs: list[OutputMapping] = []      # external_port_id holds the output index
        self.back_edges: list[BackEdge] = []
        self._merged: set[int] = set()

    @property
    def name(self) -> str:
        return self.node.name

    def output(self, k: int) -> Tensor:
        """Output ``k`` of the layer, as an outer tensor."""
        return Tensor(self.parent, self.node.id, k)

    # -- inputs ---------------------------------------------------------------------------------
    def sliced_input(self, outer: Tensor, name: str, axis: int, start: int = 0, end: int = -1,
                     stride: int = 1, part_size: int = 1) -> Tensor:
        """A body Parameter fed one slice of ``outer`` along ``axis`` per iteration (axis kept)."""
        if axis < 0:
            raise ValueError(f"{self.name}: a sliced input needs a non-negative axis "
                             f"(OpenVINO refuses {axis})")
        return self._feed(outer, name, axis=axis, start=start, end=end, stride=stride,
                          part_size=part_size)

    def merged_input(self, outer: Tensor, name: str) -> Tensor:
        """A body Parameter starting at ``outer``, then fed by its ``back_edge`` each iteration."""
        param = self._feed(outer, name)
        self._merged.add(param.node)
        return param

    def invariant_input(self, outer: Tensor, name: str) -> Tensor:
        """A body Parameter that sees ``outer`` unchanged in every iteration."""
        return self._feed(outer, name)

    def _feed(self, outer: Tensor, name: str, **slicing) -> Tensor:
        src = self.parent.as_input(outer)
        ext = len(self.node.inputs)
        self.node.inputs.append(src)
        param = self.body.body_parameter(name, declared=False)
        self.inputs.append(InputMapping(ext, param.node, **slicing))
        return param

    def back_edge(self, source: Tensor | ResultRef, target: Tensor) -> None:
        """After each iteration, ``source`` (a body tensor or Result) becomes ``target``'s value."""
        if not isinstance(target, Tensor) or target.graph is not self.body or \
                target.node not in self._back_edge_targets():
            raise ValueError(f"{self.name}: a back edge must end at a body Parameter made by "
                             f"merged_input" + (" or current_iteration"
                                                if isinstance(self, LoopBuilder) else ""))
        if any(be.to_layer == target.node for be in self.back_edges):
            raise ValueError(f"{self.name}: '{target.name}' already has a back edge")
        result = self.body.result_of(source)
        self.back_edges.append(BackEdge(result.node, target.node))

    def _back_edge_targets(self) -> set[int]:
        return self._merged

    # -- outputs --------------------------------------------------------------------------------
    def output_last(self, source: Tensor | ResultRef, name: str | None = None) -> Tensor:
        """An output holding ``source``'s value from the last iteration."""
        return self._output(source, name)

    def output_concat(self, source: Tensor | ResultRef, axis: int, name: str | None = None,
                      start: int = 0, end: int = -1, stride: int = 1,
                      part_size: int = 1) -> Tensor:
        """An output joining ``source``'s value of every iteration along ``axis``."""
        return self._output(source, name, axis=axis, start=start, end=end, stride=stride,
                            part_size=part_size)

    def _output(self, source, name: str | None, **concat) -> Tensor:
        result = self.body.result_of(source)
        k = self.node.n_out
        if name is not None:
            self.parent.claim(name)
        self.node.n_out += 1
        self.node.out_names.append([name] if name is not None else [])
        self.outputs.append(OutputMapping(k, result.node, **concat))
        return self.output(k)

    # -- for build() ----------------------------------------------------------------------------
    def check(self) -> None:
        fed_back = {be.to_layer for be in self.back_edges}
        for pid in sorted(self._merged - fed_back):
            raise ValueError(f"{self.name}: merged input '{self.body.nodes[pid].name}' has no "
                             f"back edge; call back_edge(source, it) or use invariant_input")

    def subgraphs(self, body_graph, n_in: int) -> tuple[SubGraph, ...]:
        outputs = [OutputMapping(n_in + m.external_port_id, m.internal_layer_id, m.axis, m.start,
                                 m.end, m.stride, m.part_size) for m in self.outputs]
        return (SubGraph("body", body_graph, tuple(self.inputs),
                         tuple(outputs + self._special_outputs()), tuple(self.back_edges)),)

    def _special_outputs(self) -> list[OutputMapping]:
        return []


class LoopBuilder(_IterationBuilder):
    """Loop-5: adds the current-iteration input and the body condition."""

    def __init__(self, parent: Any, node: Node):
        super().__init__(parent, node)
        self._current: int | None = None
        self._condition: ResultRef | None = None

    def current_iteration(self, name: str = "iter", type: str = "i64", shape=(1,)) -> Tensor:
        """A body Parameter holding the 0-based iteration number (i32/i64, shape [] or [1])."""
        if self._current is not None:
            raise ValueError(f"{self.name} already has a current_iteration input")
        param = self.body.body_parameter(name, type, shape)
        self._current = param.node
        self.inputs.append(InputMapping(-1, param.node, purpose="current_iteration"))
        return param

    def condition(self, source: Tensor | ResultRef) -> None:
        """The body's boolean output deciding whether another iteration runs."""
        if self._condition is not None:
            raise ValueError(f"{self.name} already has a body condition")
        self._condition = self.body.result_of(source)

    def _back_edge_targets(self) -> set[int]:
        return self._merged | ({self._current} if self._current is not None else set())

    def check(self) -> None:
        super().check()
        if self._condition is None:      # a for-loop: the body always asks to continue
            self.condition(self.body.result(self.body.const(None, np.bool_(True)), "continue"))

    def _special_outputs(self) -> list[OutputMapping]:
        return [OutputMapping(-1, self._condition.node, purpose="execution_condition")]

    @property
    def condition_source(self) -> Tensor:
        """The body tensor feeding the condition Result (for shape inference)."""
        return self.body.nodes[self._condition.node].inputs[0]


class TensorIteratorBuilder(_IterationBuilder):
    """TensorIterator-1: the iteration count comes from the sliced inputs."""


class IfBuilder:
    """If-8: two bodies; every input and output is declared for both branches at once."""

    def __init__(self, parent: Any, node: Node):
        self.parent = parent
        self.node = node
        self.then_body = type(parent)(f"{node.name}/then_body", _owner=self)
        self.else_body = type(parent)(f"{node.name}/else_body", _owner=self)
        self.bodies = {"then_body": self.then_body, "else_body": self.else_body}
        self.maps = {role: ([], []) for role in self.bodies}     # (inputs, outputs) per branch

    @property
    def name(self) -> str:
        return self.node.name

    def input(self, outer: Tensor, name: str, else_name: str | None = None
              ) -> tuple[Tensor, Tensor]:
        """Feed ``outer`` to a new Parameter of each branch; returns (then_param, else_param)."""
        src = self.parent.as_input(outer)
        ext = len(self.node.inputs)
        self.node.inputs.append(src)
        params = []
        for role, pname in (("then_body", name), ("else_body", else_name or name)):
            param = self.bodies[role].body_parameter(pname, declared=False)
            self.maps[role][0].append(InputMapping(ext, param.node))
            params.append(param)
        return params[0], params[1]

    def output(self, then_source: Tensor | ResultRef, else_source: Tensor | ResultRef,
               name: str | None = None) -> Tensor:
        """An output taking ``then_source`` or ``else_source``, whichever branch ran."""
        k = self.node.n_out
        for role, source in (("then_body", then_source), ("else_body", else_source)):
            result = self.bodies[role].result_of(source)
            self.maps[role][1].append(OutputMapping(k, result.node))
        if name is not None:
            self.parent.claim(name)
        self.node.n_out += 1
        self.node.out_names.append([name] if name is not None else [])
        return Tensor(self.parent, self.node.id, k)

    def check(self) -> None:
        pass

    def subgraphs(self, graphs: dict, n_in: int) -> tuple[SubGraph, ...]:
        subs = []
        for role in ("then_body", "else_body"):
            inputs, outputs = self.maps[role]
            outs = tuple(OutputMapping(n_in + m.external_port_id, m.internal_layer_id)
                         for m in outputs)
            subs.append(SubGraph(role, graphs[role], tuple(inputs), outs))
        return tuple(subs)
