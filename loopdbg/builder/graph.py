"""``GraphBuilder``: a graph under construction, and the attribute spelling of ``<data>``.

Versions, output counts and (in ``assemble``) shape rules come from the op table
(``loopdbg.ops.registry``), which is why the builder sits above ``ops``. Bodies of Loop,
TensorIterator and If are GraphBuilders too, made by the control builders of ``control``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np

from loopdbg.builder.assemble import assemble
from loopdbg.builder.control import IfBuilder, LoopBuilder, TensorIteratorBuilder
from loopdbg.builder.nodes import Node, ResultRef, Tensor
from loopdbg.ir import elements
from loopdbg.ir.bin_writer import normalise
from loopdbg.ir.model import CANONICAL_TYPES, Layer, Model
from loopdbg.ir.xml_writer import format_const_shape
from loopdbg.ops import registry

_RESERVED = ("Parameter", "Constant", "Result", "Loop", "TensorIterator", "If")


class GraphBuilder:
    """A graph under construction: the model itself, or a body owned by a Loop/TI/If builder."""

    def __init__(self, name: str = "model", *, _owner: Any = None):
        self.name = name
        self._owner = _owner
        self._nodes: dict[int, Node] = {}
        self._tensor_names: set[str] = set()
        self._auto_results: dict[Tensor, ResultRef] = {}

    # -- leaves ---------------------------------------------------------------------------------
    def parameter(self, name: str, type: str, shape: Sequence[int] | None) -> Tensor:
        """A model input. ``shape`` uses -1 (or None) for a dynamic dim; ``None`` is dynamic rank.

        Inside a body, Parameters come from the owner (``sliced_input`` and friends) instead,
        because a body Parameter that nothing feeds is an error.
        """
        if self._owner is not None:
            raise ValueError(f"'{name}': a body Parameter is created by its loop or If "
                             f"(sliced_input, merged_input, invariant_input, input), so that "
                             f"something feeds it")
        return self.body_parameter(name, type, shape)

    @property
    def nodes(self) -> Mapping[int, Node]:
        """The nodes so far, by id (read-only: ``assemble`` and the loop builders read them)."""
        return MappingProxyType(self._nodes)

    def body_parameter(self, name: str, type: str | None = None, shape=None, *,
                       declared: bool = True) -> Tensor:
        """A Parameter of this graph for its owner (a loop or If builder) to feed.
        ``declared=False``: its type and shape come from what feeds it."""
        node = self._add(name, "Parameter", "opset1", n_out=1, out_names=[name])
        if declared:
            et = elements.canonical(type)
            node.declared = (None if et in ("dynamic", "undefined") else et, _dims(shape))
        return Tensor(self, node.id)

    def const(self, name: str | None, value, type: str | None = None) -> Tensor:
        """A Constant holding ``value``; ``type`` defaults to the numpy dtype's element type.

        ``type`` may name a type numpy lacks (``bf16``, ``u4``, ``i4``, ``u1``): the value is then
        rounded or packed as the ``.bin`` stores it, and holds what reading it back gives.
        """
        arr = np.asarray(value)
        et = elements.canonical(type) if type is not None else elements.from_numpy(arr.dtype)
        stored = normalise(arr, et)
        if stored.dtype.kind in "biu" and not np.array_equal(stored, arr):
            raise ValueError(f"Constant '{name}': {arr.dtype} values do not fit element type "
                             f"'{et}'")
        node = self._add(name, "Constant", "opset1", n_out=1, out_names=[name] if name else [])
        node.value = stored
        node.attrs = {"element_type": et, "shape": format_const_shape(arr.shape),
                      "offset": "0", "size": "0"}
        return Tensor(self, node.id)

    # -- operations -----------------------------------------------------------------------------
    def op(self, type: str, inputs: Sequence[Any] = (), *, name: str | None = None,
           version: str | None = None, outputs: int | None = None,
           out_shape=None, out_type=None, out_names: Sequence[str] | None = None,
           **attrs) -> Tensor | tuple[Tensor, ...]:
        """Add an operation; returns its output tensor (a tuple when it has several outputs).

        ``inputs`` are Tensors of this graph, or numpy values (turned into Constants). ``attrs``
        become ``<data>`` strings: booleans ``true``/``false``, sequences ``"a, b"``, floats by
        ``repr``, numpy dtypes by element-type name; ``None`` leaves an attribute out.
        ``out_shape`` / ``out_type`` declare the output port (a list of them for several outputs)
        where inference cannot. ``name`` names the layer and its output tensor.
        """
        canonical = CANONICAL_TYPES.get(type, type)
        if canonical in _RESERVED:
            raise ValueError(f"use the builder's own method for {canonical}, not op()")
        version = version or registry.default_version(canonical) or "opset1"
        data = {k: format_attr(v) for k, v in attrs.items() if v is not None}
        n_out = outputs if outputs is not None else _default_outputs(canonical, version, data)
        names = list(out_names) if out_names is not None else (
            [name] + [f"{name}.{k}" for k in range(1, n_out)] if name else [])
        shapes = _per_port(out_shape, n_out, "out_shape", _dims)
        types = _per_port(out_type, n_out, "out_type", elements.canonical)
        taken = [n for n in names if n in self._tensor_names]
        if taken:        # checked before any Constant is made for the inputs
            raise ValueError(f"the tensor name '{taken[0]}' is already used in graph "
                             f"'{self.name}'")
        feeds = [self.as_input(x) for x in inputs]
        node = self._add(name, canonical, version, n_out=n_out, out_names=names)
        node.inputs, node.attrs, node.out_shapes, node.out_types = feeds, data, shapes, types
        outs = tuple(Tensor(self, node.id, k) for k in range(n_out))
        return outs[0] if n_out == 1 else outs

    def result(self, tensor: Tensor, name: str | None = None) -> ResultRef:
        """A Result fed by ``tensor``. In the model graph it is an output named ``name``.

        The name is also given to the tensor (first), which is how OpenVINO and loopdbg name a
        model output.
        """
        src = self.as_input(tensor)
        if name is None:
            name = f"{src.name}/result"
        elif self._owner is None:
            self._name_tensor(src, name)
        node = self._add(name, "Result", "opset1", n_out=0)
        node.inputs = [src]
        return ResultRef(self, node.id)

    # -- control flow ---------------------------------------------------------------------------
    def loop(self, name: str, trip: Tensor | int = -1, cond: Tensor | bool = True) -> LoopBuilder:
        """A Loop-5 fed ``trip`` (trip count, negative: no limit) and ``cond`` (run at all?)."""
        trip_t = trip if isinstance(trip, Tensor) else self.const(f"{name}/trip_count",
                                                                 np.int64(trip))
        cond_t = cond if isinstance(cond, Tensor) else self.const(f"{name}/exec_cond",
                                                                 np.bool_(cond))
        node = self._add(name, "Loop", "opset5", n_out=0)
        node.inputs = [self.as_input(trip_t), self.as_input(cond_t)]
        node.control = LoopBuilder(self, node)
        return node.control

    def tensor_iterator(self, name: str) -> TensorIteratorBuilder:
        """A TensorIterator-1; its iteration count comes from its sliced inputs."""
        node = self._add(name, "TensorIterator", "opset1", n_out=0)
        node.control = TensorIteratorBuilder(self, node)
        return node.control

    def if_(self, name: str, cond: Tensor | bool) -> IfBuilder:
        """An If-8 choosing ``then_body`` when ``cond`` (one boolean element) is true."""
        cond_t = cond if isinstance(cond, Tensor) else self.const(f"{name}/cond", np.bool_(cond))
        node = self._add(name, "If", "opset8", n_out=0)
        node.inputs = [self.as_input(cond_t)]
        node.control = IfBuilder(self, node)
        return node.control

    # -- building -------------------------------------------------------------------------------
    def build(self) -> Model:
        """The finished ``Model`` (the builder stays usable; building twice gives equal models)."""
        if self._owner is not None:
            raise ValueError(f"build() the model's top GraphBuilder, not the body '{self.name}'")
        return assemble(self)

    # -- helpers --------------------------------------------------------------------------------
    def _add(self, name: str | None, type_: str, version: str, n_out: int,
             out_names: Sequence[str] = ()) -> Node:
        node_id = len(self._nodes)
        names = [[n] for n in out_names[:n_out]] + [[] for _ in range(n_out - len(out_names))]
        for port_names in names:
            for n in port_names:
                self.claim(n)
        node = Node(id=node_id, name=name or f"{type_}_{node_id}", type=type_, version=version,
                     n_out=n_out, out_names=names)
        self._nodes[node_id] = node
        return node

    def claim(self, tensor_name: str) -> None:
        """Tensor names are unique in a graph (OpenVINO would silently rename a duplicate)."""
        if not isinstance(tensor_name, str) or not tensor_name:
            raise ValueError(f"a tensor name must be a non-empty string, not {tensor_name!r}")
        if tensor_name in self._tensor_names:
            raise ValueError(f"the tensor name '{tensor_name}' is already used in graph "
                             f"'{self.name}'")
        self._tensor_names.add(tensor_name)

    def _name_tensor(self, t: Tensor, name: str) -> None:
        names = self._nodes[t.node].out_names[t.port]
        if name not in names:
            self.claim(name)
            names.insert(0, name)

    def as_input(self, x) -> Tensor:
        """A Tensor of this graph; numpy values and Python numbers become Constants here."""
        if isinstance(x, Tensor):
            if x.graph is not self:
                raise ValueError(f"tensor '{x.name}' belongs to graph '{x.graph.name}', not "
                                 f"'{self.name}'; feed it into a body with the loop's or If's "
                                 f"input methods")
            return x
        if isinstance(x, ResultRef):
            raise ValueError("a Result has no output to feed an op")
        if isinstance(x, (bool, np.bool_)):
            return self.const(None, np.bool_(x))
        if isinstance(x, int):
            return self.const(None, np.int64(x))
        if isinstance(x, float):
            return self.const(None, np.float32(x))
        if isinstance(x, (np.ndarray, np.generic)):
            return self.const(None, x)
        raise TypeError(f"an op input must be a Tensor or a numpy value, not {type(x).__name__}")

    def result_of(self, source: Tensor | ResultRef) -> ResultRef:
        """The Result a port map entry reads: the given one, or one per tensor, made on demand."""
        if isinstance(source, ResultRef):
            if source.graph is not self:
                raise ValueError(f"that Result belongs to graph '{source.graph.name}', not "
                                 f"'{self.name}'")
            return source
        src = self.as_input(source)
        if src not in self._auto_results:
            self._auto_results[src] = self.result(src)
        return self._auto_results[src]


# ----------------------------------------------------------------------------------------------
# Attribute strings


def format_attr(value) -> str:
    """An attribute value as OpenVINO writes it in ``<data>``."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, (np.dtype, type)) and value is not str:
        return elements.from_numpy(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return ", ".join(format_attr(v) for v in np.asarray(value, dtype=object).ravel()) \
            if isinstance(value, np.ndarray) else ", ".join(format_attr(v) for v in value)
    raise TypeError(f"cannot write an attribute of type {type(value).__name__}")


def _default_outputs(type_: str, version: str, data: dict[str, str]) -> int:
    """The op table's output count for the layer as written so far (no ports yet): 1 for an op
    loopdbg has no kernel for, or whose count comes from its ports (VariadicSplit) or from an
    attribute not given."""
    spec = registry.lookup(type_, version)
    if spec is None:
        return 1
    try:
        return max(spec.count_outputs(Layer(-1, type_, type_, version, data=data)), 1)
    except KeyError:
        return 1


def _dims(shape) -> tuple[int, ...] | None:
    return None if shape is None else tuple(-1 if d is None else int(d) for d in shape)


def _per_port(value, n_out: int, what: str, convert) -> list | None:
    """``out_shape=[2, 3]`` for one output; ``[[2, 3], [2, 3]]`` (one per port) for several."""
    if value is None:
        return None
    if n_out == 1:
        return [convert(value)]
    if len(value) != n_out:
        raise ValueError(f"{what} needs one entry per output ({n_out})")
    return [None if v is None else convert(v) for v in value]
