"""A Loop/TensorIterator body of an IR as a standalone model, for OpenVINO to run one iteration.

The body graph is copied as it is (nested loops stay layers inside it, which OpenVINO runs itself)
with two changes:

* every body Parameter gets the element type of the values loopdbg fed it and a dynamic shape of
  the same rank (``?,?``), so one compiled model serves every iteration even when a back edge
  changes a value's shape, and every execution of a nested loop; a value whose rank differs from
  the first one's gets a model of its own (``signature``);
* with ``all_nodes``, every output port of every layer loopdbg runs (in execution order) is made an
  output too, through an extra Result.

The outputs of the standalone model are the body's Results in order, then (``all_nodes``) the node
outputs; ``Target`` says which is which, with the name loopdbg gives the value (``body_targets``,
shared with ``extract_onnx``, which does the same for the bodies of an ONNX model).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from loopdbg.engine.plan import GraphPlan
from loopdbg.ir import elements
from loopdbg.ir.model import Edge, Graph, Layer, Model, Port

RESULT = "result"
NODE = "node"


@dataclass(frozen=True)
class Target:
    """One output of a standalone body: a body Result, or a node made an output."""

    kind: str                   # RESULT or NODE
    name: str                   # the Result's name, or the node's value name (``layer[:k]``)
    index: int                  # position among the body Results, or in the plan's value list
    layer: Layer | None         # the layer that computes the value (None: a Parameter or Const)
    order: int                  # execution order of that layer (-1: a Parameter or Const)
    port: int = 0               # the output port of ``layer`` holding the value


def signature(values: Sequence) -> tuple:
    """What a compiled body depends on: each Parameter's rank and dtype."""
    return tuple((np.ndim(v), np.asarray(v).dtype.str) for v in values)


def body_targets(plan: GraphPlan, all_nodes: bool = False) -> list[Target]:
    """The outputs of a standalone body: its Results in order, then (``all_nodes``) every output
    port of every layer loopdbg runs, in execution order."""
    graph = plan.graph
    order = {s.layer.id: k for k, s in enumerate(plan.steps)}
    targets = []
    for k, rid in enumerate(graph.results):
        src = graph.producer(rid, 0)
        producer = graph.layers.get(src[0]) if src else None
        computed_by = producer if producer is not None and producer.id in order else None
        targets.append(Target(RESULT, graph.layers[rid].name, k, computed_by,
                              order.get(src[0], -1) if src else -1, src[1] if src else 0))
    if all_nodes:
        value_index = {n: k for k, n in enumerate(plan.all_value_names)}
        for k, step in enumerate(plan.steps):
            layer = step.layer
            for j in range(min(len(step.outs), len(layer.outputs))):
                label = layer.name if j == 0 else f"{layer.name}:{j}"
                targets.append(Target(NODE, label, value_index.get(label, -1), layer, k, j))
    return targets


def standalone_body(plan: GraphPlan, values: Sequence, *, all_nodes: bool = False,
                    name: str = "body") -> tuple[Model, list[Target]]:
    """The body of ``plan`` as a Model whose Parameters take ``values``' types (see module doc)."""
    graph = plan.graph
    layers: dict[int, Layer] = {}
    param_pos = {pid: k for k, pid in enumerate(graph.parameters)}
    for lid, layer in graph.layers.items():
        if lid in param_pos:
            layer = _dynamic_parameter(layer, np.asarray(values[param_pos[lid]]))
        layers[lid] = layer
    edges = list(graph.edges)
    results = list(graph.results)
    targets = body_targets(plan, all_nodes)
    next_id = max(graph.layers, default=-1) + 1
    for t in targets:
        if t.kind != NODE:
            continue
        port = t.layer.outputs[t.port]
        rid = next_id
        next_id += 1
        layers[rid] = Layer(id=rid, name=f"{t.name}/check_output", type="Result",
                            version="opset1", ir_type="Result",
                            inputs=(Port(0, 0, port.precision, port.dims),))
        edges.append(Edge(t.layer.id, t.port, rid, 0))
        results.append(rid)
    body = Graph(name=name, layers=layers, edges=tuple(edges), parameters=graph.parameters,
                 results=tuple(results))
    return Model(graph=body, ir_version=11, format="ir"), targets


def _dynamic_parameter(layer: Layer, value: np.ndarray) -> Layer:
    et = elements.from_numpy(value.dtype)
    precision = elements.lookup(et).precision
    rank = value.ndim
    data = dict(layer.data)
    data.update(shape=",".join("?" * rank), element_type=et)
    port = layer.outputs[0] if layer.outputs else Port(0, 0)
    port = port.replace(precision=precision, dims=(-1,) * rank)
    return replace(layer, data=data, outputs=(port,) + tuple(layer.outputs[1:]))
