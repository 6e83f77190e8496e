"""Build models in Python: the test-case factory for loopdbg (and for anyone writing a small IR).

    b = GraphBuilder("net")
    seq = b.parameter("seq", "f32", [4, 2])
    acc0 = b.parameter("acc0", "f32", [1, 2])
    loop = b.loop("loop", trip=-1, cond=True)      # a LoopBuilder with its own body GraphBuilder
    x_t = loop.sliced_input(seq, "x_t", axis=0)
    acc = loop.merged_input(acc0, "acc")
    it = loop.current_iteration("iter")
    acc_new = loop.body.op("Add", [acc, x_t], name="acc_new")
    loop.back_edge(acc_new, acc)
    loop.condition(loop.body.op("Less", [it, np.array([2], np.int64)]))
    b.result(loop.output_last(acc_new, name="acc_final"))
    b.result(loop.output_concat(acc_new, axis=0, name="acc_seq"))
    model = b.build()              # a loopdbg.ir.model.Model, ready for write_ir(model, path)

Everything is recorded first and turned into a ``Model`` by ``build()``: only then are port types
and shapes inferred (``shape_infer``), because a body's shapes depend on how its loop is fed and on
its back edges, which are often declared after the body. Layer ids follow creation order within
each graph, so Parameter and Result order (the model's inputs and outputs) is creation order too.
The result is exactly what ``read_ir`` returns for the written file: canonical types with the IR
spelling in ``ir_type``, ``<data>`` as strings, Const values as they decode from the ``.bin``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.bin_writer import normalise
from loopdbg.ir.xml_reader import CANONICAL_TYPES
from loopdbg.ir.xml_writer import IR_SPELLINGS, format_const_shape

if TYPE_CHECKING:
    from loopdbg.ir.builder_control import IfBuilder, LoopBuilder, TensorIteratorBuilder
    from loopdbg.ir.model import Model

# The opset that introduced the version of an op OpenVINO 2026 uses; anything else is opset1.
DEFAULT_VERSIONS = {
    "Loop": "opset5", "If": "opset8", "Softmax": "opset8", "LogSoftmax": "opset5",
    "Gather": "opset8", "GatherND": "opset8", "GatherElements": "opset6", "ShapeOf": "opset3",
    "Range": "opset4", "Broadcast": "opset3", "TopK": "opset11", "LSTMCell": "opset4",
    "GRUCell": "opset3", "Slice": "opset8", "NonZero": "opset3", "ScatterUpdate": "opset3",
    "CumSum": "opset3", "Mish": "opset4", "HSwish": "opset4", "Swish": "opset4",
    "SoftPlus": "opset4", "ReduceL1": "opset4", "ReduceL2": "opset4", "Round": "opset5",
    "Gelu": "opset7", "Roll": "opset7", "Einsum": "opset7", "HSigmoid": "opset5",
    "IsNaN": "opset10", "IsInf": "opset10", "IsFinite": "opset10", "SoftSign": "opset9",
    "BitwiseAnd": "opset13", "BitwiseOr": "opset13", "BitwiseXor": "opset13",
    "BitwiseNot": "opset13", "Pad": "opset12", "ScatterElementsUpdate": "opset12",
}

# Ops with more than one output, and how many (Split reads ``num_splits``).
DEFAULT_OUTPUTS = {"LSTMCell": 2, "TopK": 2, "LSTMSequence": 3, "GRUSequence": 2,
                   "RNNSequence": 2}

_RESERVED = ("Parameter", "Constant", "Result", "Loop", "TensorIterator", "If")


@dataclass(frozen=True)
class Tensor:
    """One output port of a node in one graph: what ops take as inputs."""

    graph: "GraphBuilder" = field(repr=False)
    node: int
    port: int = 0

    @property
    def name(self) -> str:
        """The tensor's first name, else ``<layer name>`` (``.k`` for port k > 0)."""
        node = self.graph._nodes[self.node]
        names = node.out_names[self.port] if self.port < len(node.out_names) else []
        if names:
            return names[0]
        return node.name if self.port == 0 else f"{node.name}.{self.port}"


@dataclass(frozen=True)
class ResultRef:
    """A Result layer of a graph (from ``GraphBuilder.result``), for port maps and back edges."""

    graph: "GraphBuilder" = field(repr=False)
    node: int


@dataclass
class _Node:
    """A layer as recorded: turned into a ``Layer`` by ``build()`` once types are inferred."""

    id: int
    name: str
    type: str
    version: str
    attrs: dict[str, str] = field(default_factory=dict)
    inputs: list[Tensor] = field(default_factory=list)
    n_out: int = 1
    out_names: list[list[str]] = field(default_factory=list)
    out_types: list[str | None] | None = None       # declared by the caller; None: infer
    out_shapes: list[tuple[int, ...] | None] | None = None
    declared: tuple[str | None, tuple[int, ...] | None] | None = None   # Parameter type, shape
    value: np.ndarray | None = None
    control: Any = None                               # LoopBuilder / IfBuilder


class GraphBuilder:
    """A graph under construction: the model itself, or a body owned by a Loop/TI/If builder."""

    def __init__(self, name: str = "model", *, _owner: Any = None):
        self.name = name
        self._owner = _owner
        self._nodes: dict[int, _Node] = {}
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
        return self._parameter(name, type, shape)

    def _parameter(self, name: str, type: str | None = None, shape=None, *,
                   declared: bool = True) -> Tensor:
        """``declared=False``: a body Parameter whose type and shape come from what feeds it."""
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
        n_out = outputs if outputs is not None else _default_outputs(canonical, attrs)
        names = list(out_names) if out_names is not None else (
            [name] + [f"{name}.{k}" for k in range(1, n_out)] if name else [])
        data = {k: format_attr(v) for k, v in attrs.items() if v is not None}
        shapes = _per_port(out_shape, n_out, "out_shape", _dims)
        types = _per_port(out_type, n_out, "out_type", elements.canonical)
        taken = [n for n in names if n in self._tensor_names]
        if taken:        # checked before any Constant is made for the inputs
            raise ValueError(f"the tensor name '{taken[0]}' is already used in graph "
                             f"'{self.name}'")
        feeds = [self._as_input(x) for x in inputs]
        node = self._add(name, canonical, version or DEFAULT_VERSIONS.get(canonical, "opset1"),
                         n_out=n_out, out_names=names)
        node.inputs, node.attrs, node.out_shapes, node.out_types = feeds, data, shapes, types
        outs = tuple(Tensor(self, node.id, k) for k in range(n_out))
        return outs[0] if n_out == 1 else outs

    def result(self, tensor: Tensor, name: str | None = None) -> ResultRef:
        """A Result fed by ``tensor``. In the model graph it is an output named ``name``.

        The name is also given to the tensor (first), which is how OpenVINO and loopdbg name a
        model output.
        """
        src = self._as_input(tensor)
        if name is None:
            name = f"{src.name}/result"
        elif self._owner is None:
            self._name_tensor(src, name)
        node = self._add(name, "Result", "opset1", n_out=0)
        node.inputs = [src]
        return ResultRef(self, node.id)

    # -- control flow ---------------------------------------------------------------------------
    def loop(self, name: str, trip: Tensor | int = -1, cond: Tensor | bool = True) -> "LoopBuilder":
        """A Loop-5 fed ``trip`` (trip count, negative: no limit) and ``cond`` (run at all?)."""
        from loopdbg.ir.builder_control import LoopBuilder

        trip_t = trip if isinstance(trip, Tensor) else self.const(f"{name}/trip_count",
                                                                 np.int64(trip))
        cond_t = cond if isinstance(cond, Tensor) else self.const(f"{name}/exec_cond",
                                                                 np.bool_(cond))
        node = self._add(name, "Loop", "opset5", n_out=0)
        node.inputs = [self._as_input(trip_t), self._as_input(cond_t)]
        node.control = LoopBuilder(self, node)
        return node.control

    def tensor_iterator(self, name: str) -> "TensorIteratorBuilder":
        """A TensorIterator-1; its iteration count comes from its sliced inputs."""
        from loopdbg.ir.builder_control import TensorIteratorBuilder

        node = self._add(name, "TensorIterator", "opset1", n_out=0)
        node.control = TensorIteratorBuilder(self, node)
        return node.control

    def if_(self, name: str, cond: Tensor | bool) -> "IfBuilder":
        """An If-8 choosing ``then_body`` when ``cond`` (one boolean element) is true."""
        from loopdbg.ir.builder_control import IfBuilder

        cond_t = cond if isinstance(cond, Tensor) else self.const(f"{name}/cond", np.bool_(cond))
        node = self._add(name, "If", "opset8", n_out=0)
        node.inputs = [self._as_input(cond_t)]
        node.control = IfBuilder(self, node)
        return node.control

    # -- building -------------------------------------------------------------------------------
    def build(self) -> "Model":
        """The finished ``Model`` (the builder stays usable; building twice gives equal models)."""
        if self._owner is not None:
            raise ValueError(f"build() the model's top GraphBuilder, not the body '{self.name}'")
        from loopdbg.ir.builder_assemble import assemble

        return assemble(self)

    # -- helpers --------------------------------------------------------------------------------
    def _add(self, name: str | None, type_: str, version: str, n_out: int,
             out_names: Sequence[str] = ()) -> _Node:
        node_id = len(self._nodes)
        names = [[n] for n in out_names[:n_out]] + [[] for _ in range(n_out - len(out_names))]
        for port_names in names:
            for n in port_names:
                self._claim(n)
        node = _Node(id=node_id, name=name or f"{type_}_{node_id}", type=type_, version=version,
                     n_out=n_out, out_names=names)
        self._nodes[node_id] = node
        return node

    def _claim(self, tensor_name: str) -> None:
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
            self._claim(name)
            names.insert(0, name)

    def _as_input(self, x) -> Tensor:
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

    def _auto_result(self, source: Tensor | ResultRef) -> ResultRef:
        """The Result a port map entry reads: the given one, or one per tensor, made on demand."""
        if isinstance(source, ResultRef):
            if source.graph is not self:
                raise ValueError(f"that Result belongs to graph '{source.graph.name}', not "
                                 f"'{self.name}'")
            return source
        src = self._as_input(source)
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


def ir_spelling(type_: str) -> str:
    return IR_SPELLINGS.get(type_, type_)


def _default_outputs(type_: str, attrs: dict) -> int:
    if type_ == "Split" and "num_splits" in attrs:
        return int(attrs["num_splits"])
    return DEFAULT_OUTPUTS.get(type_, 1)


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
