"""Turn a ``GraphBuilder`` into a ``Model``: infer port types and shapes, then make the layers.

Inference runs over whole graphs, bodies included, because a body's shapes come from outside: a
sliced Parameter is the fed tensor with ``part_size`` on the sliced axis, a merged or invariant one
is the fed tensor. A back edge may carry a value of another shape than the initial one; as
OpenVINO does, the merged Parameter is then widened (differing dims become dynamic) and the body
inferred again. A concatenated output's axis is ``body dim × iterations`` when the iteration count
is known from constants (a TensorIterator's sliced input, a Loop with a constant trip count and
conditions), and dynamic otherwise. Every other layer's outputs come from its shape rule in the op
table (``loopdbg.ops.shape_rules.infer``), for the layer's own version.

The graphs handled here are ``GraphBuilder``s (``graph``), used through their records only.
"""

from __future__ import annotations

import heapq

import numpy as np

from loopdbg.builder.control import IfBuilder, LoopBuilder, TensorIteratorBuilder
from loopdbg.ir import elements
from loopdbg.ir.bin_writer import BlobTable
from loopdbg.ir.model import Edge, Graph, Layer, Model, Port
from loopdbg.ir.xml_writer import IR_SPELLINGS, format_shape, place_consts
from loopdbg.ops.shape_rules import UNKNOWN, TensorInfo, infer

_WIDEN_ROUNDS = 4


def assemble(top) -> Model:
    """The ``Model`` of the top GraphBuilder ``top``."""
    a = _Assembler()
    a.infer_graph(top, {})
    graph = place_consts(a.emit(top), BlobTable())
    return Model(graph=graph, ir_version=11, format="ir")


def widen(a: TensorInfo, b: TensorInfo) -> TensorInfo:
    """The info covering both: dims that differ become -1, ranks that differ a dynamic rank."""
    type_ = a.type or b.type
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorInfo(type_, None)
    return TensorInfo(type_, tuple(x if x == y else -1 for x, y in zip(a.shape, b.shape)))


class _Assembler:
    def __init__(self) -> None:
        self.infos: dict[int, dict[tuple[int, int], TensorInfo]] = {}   # by id(GraphBuilder)

    # -- inference ------------------------------------------------------------------------------
    def infer_graph(self, gb, feeds: dict[int, TensorInfo]
                    ) -> dict[tuple[int, int], TensorInfo]:
        info: dict[tuple[int, int], TensorInfo] = {}
        for nid in topological_order(gb):
            node = gb.nodes[nid]
            ins = [info[(t.node, t.port)] for t in node.inputs]
            consts = [_const_value(gb, t) for t in node.inputs]
            if node.type == "Parameter":
                outs = [TensorInfo(*node.declared) if node.declared is not None
                        else feeds.get(nid, UNKNOWN)]
            elif node.type == "Constant":
                outs = [TensorInfo(node.attrs["element_type"], node.value.shape)]
            elif node.control is not None:
                node.control.check()
                outs = self._infer_control(node.control, ins, consts)
            else:
                outs = infer(node.type, ins, node.attrs, consts, node.n_out, node.version)
            for k, out in enumerate(outs[:node.n_out]):
                if node.out_types is not None and node.out_types[k] is not None:
                    out = TensorInfo(node.out_types[k], out.shape)
                if node.out_shapes is not None and node.out_shapes[k] is not None:
                    out = TensorInfo(out.type, node.out_shapes[k])
                info[(nid, k)] = out
        self.infos[id(gb)] = info
        return info

    def _infer_control(self, ctl, ins, consts) -> list[TensorInfo]:
        if isinstance(ctl, IfBuilder):
            return self._infer_if(ctl, ins)
        feeds = {}
        for m in ctl.inputs:
            if m.purpose is None:
                outer = ins[m.external_port_id]
                feeds[m.internal_layer_id] = outer if m.axis is None else \
                    _resize(outer, m.axis, m.part_size)
        for _ in range(_WIDEN_ROUNDS):
            body = self.infer_graph(ctl.body, feeds)
            changed = False
            for be in ctl.back_edges:
                if be.to_layer in feeds:
                    wider = widen(feeds[be.to_layer], _result_info(ctl.body, be.from_layer, body))
                    changed |= wider != feeds[be.to_layer]
                    feeds[be.to_layer] = wider
            if not changed:
                break
        n = _iterations(ctl, ins, consts)
        outs = []
        for m in ctl.outputs:
            value = _result_info(ctl.body, m.internal_layer_id, body)
            outs.append(value if m.axis is None else _concat(value, m.axis, n))
        return outs

    def _infer_if(self, ctl: IfBuilder, ins) -> list[TensorInfo]:
        per_branch = []
        for role, body in ctl.bodies.items():
            inputs, outputs = ctl.maps[role]
            info = self.infer_graph(body, {m.internal_layer_id: ins[m.external_port_id]
                                           for m in inputs})
            per_branch.append([_result_info(body, m.internal_layer_id, info) for m in outputs])
        return [widen(a, b) if a != b else a for a, b in zip(*per_branch)]

    # -- layers ---------------------------------------------------------------------------------
    def emit(self, gb) -> Graph:
        info = self.infos[id(gb)]
        layers: dict[int, Layer] = {}
        edges = []
        for nid, node in gb.nodes.items():
            in_infos = [info[(t.node, t.port)] for t in node.inputs]
            out_infos = [info[(nid, k)] for k in range(node.n_out)]
            n_in = len(in_infos)
            inputs = tuple(_port(k, k, i) for k, i in enumerate(in_infos))
            outputs = tuple(_port(n_in + k, k, i, node.out_names[k])
                            for k, i in enumerate(out_infos))
            data = dict(node.attrs)
            if node.type == "Parameter":
                data = {"shape": format_shape(out_infos[0].shape),
                        "element_type": out_infos[0].type or "dynamic"}
            subgraphs = ()
            if isinstance(node.control, IfBuilder):
                subgraphs = node.control.subgraphs(
                    {role: self.emit(body) for role, body in node.control.bodies.items()}, n_in)
            elif node.control is not None:
                subgraphs = node.control.subgraphs(self.emit(node.control.body), n_in)
            layers[nid] = Layer(id=nid, name=node.name, type=node.type, version=node.version,
                                data=data, inputs=inputs, outputs=outputs, subgraphs=subgraphs,
                                value=node.value, ir_type=IR_SPELLINGS.get(node.type, node.type))
            edges.extend(Edge(t.node, t.port, nid, k) for k, t in enumerate(node.inputs))
        return Graph(name=gb.name, layers=layers, edges=tuple(edges),
                     parameters=tuple(i for i, lay in layers.items() if lay.type == "Parameter"),
                     results=tuple(i for i, lay in layers.items() if lay.type == "Result"))


# ----------------------------------------------------------------------------------------------
# Helpers


def topological_order(gb) -> list[int]:
    """Node ids, producers first (lowest id first among the ready); a cycle is a ValueError."""
    waiting = {nid: len(node.inputs) for nid, node in gb.nodes.items()}
    consumers: dict[int, list[int]] = {}
    for nid, node in gb.nodes.items():
        for t in node.inputs:
            consumers.setdefault(t.node, []).append(nid)
    ready = [nid for nid, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        nid = heapq.heappop(ready)
        order.append(nid)
        for c in consumers.get(nid, ()):
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    if len(order) < len(gb.nodes):
        stuck = sorted(gb.nodes[n].name for n in set(gb.nodes) - set(order))
        raise ValueError(f"graph '{gb.name}' has a cycle through {', '.join(stuck)}")
    return order


def _const_value(gb, t) -> np.ndarray | None:
    node = gb.nodes[t.node]
    return node.value if node.type == "Constant" else None


def _result_info(gb, result_id: int, info) -> TensorInfo:
    src = gb.nodes[result_id].inputs[0]
    return info[(src.node, src.port)]


def _resize(outer: TensorInfo, axis: int, size: int) -> TensorInfo:
    """A slice of ``outer``: ``size`` along ``axis``."""
    if outer.shape is None or axis >= len(outer.shape):
        return TensorInfo(outer.type, outer.shape)
    shape = list(outer.shape)
    shape[axis] = size
    return TensorInfo(outer.type, tuple(shape))


def _concat(value: TensorInfo, axis: int, n: int | None) -> TensorInfo:
    if value.shape is None:
        return value
    if not value.shape:
        return TensorInfo(value.type, (-1 if n is None else n,))
    axis = axis + len(value.shape) if axis < 0 else axis
    shape = list(value.shape)
    shape[axis] = -1 if n is None or shape[axis] < 0 else shape[axis] * n
    return TensorInfo(value.type, tuple(shape))


def _iterations(ctl, ins, consts) -> int | None:
    """The iteration count when constants decide it, else None."""
    if isinstance(ctl, LoopBuilder):
        trip, cond = consts[0], consts[1]
        if trip is None or cond is None:
            return None
        trip = int(np.ravel(trip)[0])
        if trip == 0 or not bool(np.ravel(cond)[0]):
            return 0
        body_cond = _const_value(ctl.body, ctl.condition_source)
        if trip < 0 or body_cond is None or not bool(np.all(body_cond)):
            return None
        return trip
    assert isinstance(ctl, TensorIteratorBuilder)
    for m in ctl.inputs:
        shape = ins[m.external_port_id].shape
        if m.axis is not None and shape is not None and m.axis < len(shape) \
                and shape[m.axis] >= 0:
            return _chunks(shape[m.axis], m.start, m.end, m.stride, m.part_size)
    return None


def _chunks(length: int, start: int, end: int, stride: int, part_size: int) -> int:
    """Whole chunks between ``start`` and ``end`` (inclusive), decisions.md rule 10."""
    s = start + length if start < 0 else start
    e = end + length if end < 0 else end
    span = e - s + 1 if stride > 0 else s - e + 1
    return max(span, 0) // max(part_size, 1)


def _port(port_id: int, index: int, info: TensorInfo, names=()) -> Port:
    precision = elements.lookup(info.type).precision if info.type else "UNSPECIFIED"
    return Port(id=port_id, index=index, precision=precision,
                dims=tuple(info.shape) if info.shape is not None else (), names=tuple(names))
