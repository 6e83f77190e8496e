"""One loopdbg Graph being assembled from an ONNX graph (``onnx_reader``, ``onnx_control``):
its layers and edges, where each ONNX name comes from, and the outer values a body reads."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopdbg.errors import ModelError
from loopdbg.ir import elements
from loopdbg.ir.model import Edge, Graph, Layer
from loopdbg.ir.onnx_names import VALUE_KIND
from loopdbg.ir.onnx_types import UNKNOWN, TensorType


class Builder:
    """One loopdbg Graph being assembled (a plain class: reading imports it, and a dataclass
    costs a millisecond of compiling its methods at every start)."""

    def __init__(self, name: str, top: bool, conv: Any, where: str):
        self.name = name
        self.top = top
        self.conv = conv                        # the onnx_reader converter (its types)
        self.where = where
        self.layers: dict[int, Layer] = {}
        self.edges: list[Edge] = []
        self.params: list[int] = []
        self.results: list[int] = []
        self.source: dict[str, tuple[int, int]] = {}
        self.captures: list[str] = []
        self.local: set[str] = set()
        self.result_names: set[str] = set()
        self._next = 0

    def new_id(self) -> int:
        self._next += 1
        return self._next - 1

    def add(self, layer: Layer) -> Layer:
        self.layers[layer.id] = layer
        return layer

    def parameter(self, name: str, ttype: TensorType | None, *, force: TensorType | None = None,
                  kind: str | None = None) -> int:
        t = force or ttype or UNKNOWN
        lid = self.new_id()
        data = {"shape": t.shape_text, "element_type": t.element_type}
        if kind is not None:             # a sequence or optional: t describes its tensors
            data[VALUE_KIND] = kind
        self.add(Layer(lid, name, "Parameter", "opset1", data=data,
                       outputs=(t.port(0, 0, (name,)),), ir_type="Parameter"))
        self.params.append(lid)
        self.source[name] = (lid, 0)
        return lid

    def constant(self, name: str, value: np.ndarray) -> int:
        value = np.asarray(value)
        try:
            et = elements.from_numpy(value.dtype)
        except ValueError:
            raise ModelError(f"{self.where}constant '{name}' has element type {value.dtype}, "
                             f"which loopdbg does not support.") from None
        lid = self.new_id()
        t = TensorType(et, tuple(value.shape))
        self.add(Layer(lid, name, "Constant", "opset1",
                       data={"shape": t.shape_text, "element_type": et},
                       outputs=(t.port(0, 0, (name,)),), value=value, ir_type="Constant"))
        self.source[name] = (lid, 0)
        return lid

    def result(self, name: str, tensor: str) -> int:
        src = self.lookup(tensor)
        lid = self.new_id()
        t = self.conv.types.get(tensor) or UNKNOWN
        used = self.result_names             # (a set kept as Results are added: linear time)
        label = name if name not in used else f"{name}#{len(self.results)}"
        used.add(label)
        self.add(Layer(lid, label, "Result", "opset1", inputs=(t.port(0, 0),), ir_type="Result"))
        self.edges.append(Edge(src[0], src[1], lid, 0))
        self.results.append(lid)
        return lid

    def lookup(self, tensor: str) -> tuple[int, int]:
        """Where ``tensor`` comes from here; an outer-scope value becomes a captured Parameter."""
        src = self.source.get(tensor)
        if src is not None:
            return src
        if tensor in self.local:
            raise ModelError(f"{self.where}'{tensor}' is read before the node that computes it; "
                             f"the graph is not in topological order.")
        if self.top:
            raise ModelError(f"{self.where}'{tensor}' is read, but no node, input or initializer "
                             f"of the graph defines it.")
        self.captures.append(tensor)
        self.parameter(tensor, self.conv.types.get(tensor))
        return self.source[tensor]

    def connect(self, lid: int, names) -> None:
        source, edges = self.source, self.edges
        for k, name in enumerate(names):
            if name:
                src = source.get(name) or self.lookup(name)
                edges.append(Edge(src[0], src[1], lid, k))

    def graph(self) -> Graph:
        return Graph(self.name, dict(self.layers), tuple(self.edges), tuple(self.params),
                     tuple(self.results))
