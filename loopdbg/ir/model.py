"""The model as plain data: graphs, layers, ports, port maps and back edges.

Everything here is immutable and free of parsing or execution logic, so that the XML reader, the
ONNX reader, the IR builder and the engine can all share it. Ports are stored by *index* (their
position inside ``<input>`` / ``<output>``), which the reader resolves from the XML port ids.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field, fields
from typing import Any, Mapping

from loopdbg.ir.record import Record, set_field as _set

# Roles of a Loop/TensorIterator port_map input, decided by ``classify_inputs``.
SLICED = "sliced"
MERGED = "merged"
INVARIANT = "invariant"
CURRENT_ITERATION = "current_iteration"
CONDITION = "condition"          # draft Loop-5 spelling: a body Parameter fed the execution condition
UNUSED = "unused"                # external_port_id < 0 without a purpose: never fed

# Roles of a port_map output.
CONCAT = "concat"
LAST_VALUE = "last_value"
EXECUTION_CONDITION = "execution_condition"

# IR type spellings that OpenVINO writes for an op loopdbg knows under another name.
CANONICAL_TYPES = {"Const": "Constant", "ReLU": "Relu", "PReLU": "PRelu", "SoftMax": "Softmax"}


class Port(Record):
    """One input or output port of a layer as declared in the XML.

    ``dims`` holds the declared dimensions (-1 for a dynamic one); it is ``()`` when the port has no
    ``<dim>`` (a scalar, or dynamic rank). Declared shapes are hints: the engine trusts values.
    """

    __slots__ = ("id", "index", "precision", "dims", "names")
    id: int
    index: int
    precision: str | None
    dims: tuple[int, ...]
    names: tuple[str, ...]

    def __init__(self, id: int, index: int, precision: str | None = None,  # noqa: A002
                 dims: tuple[int, ...] = (), names: tuple[str, ...] = ()):
        _set(self, "id", id)
        _set(self, "index", index)
        _set(self, "precision", precision)
        _set(self, "dims", dims)
        _set(self, "names", names)


class Edge(Record):
    """A data edge, with both ports already resolved to indices."""

    __slots__ = ("from_layer", "from_port", "to_layer", "to_port")
    from_layer: int
    from_port: int     # output index of the producer
    to_layer: int
    to_port: int       # input index of the consumer

    def __init__(self, from_layer: int, from_port: int, to_layer: int, to_port: int):
        _set(self, "from_layer", from_layer)
        _set(self, "from_port", from_port)
        _set(self, "to_layer", to_layer)
        _set(self, "to_port", to_port)


class BackEdge(Record):
    """A Loop/TensorIterator back edge: body Result ``from_layer`` feeds body Parameter ``to_layer``."""

    __slots__ = ("from_layer", "to_layer")
    from_layer: int
    to_layer: int

    def __init__(self, from_layer: int, to_layer: int):
        _set(self, "from_layer", from_layer)
        _set(self, "to_layer", to_layer)


class _PortMapping(Record):
    """The fields of a ``port_map`` entry (defaults applied: start=0, end=-1, stride=1,
    part_size=1)."""

    __slots__ = ("external_port_id", "internal_layer_id", "axis", "start", "end", "stride",
                 "part_size", "purpose")
    external_port_id: int
    internal_layer_id: int
    axis: int | None
    start: int
    end: int
    stride: int
    part_size: int
    purpose: str | None

    def __init__(self, external_port_id: int, internal_layer_id: int, axis: int | None = None,
                 start: int = 0, end: int = -1, stride: int = 1, part_size: int = 1,
                 purpose: str | None = None):
        _set(self, "external_port_id", external_port_id)
        _set(self, "internal_layer_id", internal_layer_id)
        _set(self, "axis", axis)
        _set(self, "start", start)
        _set(self, "end", end)
        _set(self, "stride", stride)
        _set(self, "part_size", part_size)
        _set(self, "purpose", purpose)


class InputMapping(_PortMapping):
    """One ``port_map/input`` entry (defaults applied: start=0, end=-1, stride=1, part_size=1)."""

    __slots__ = ()


class OutputMapping(_PortMapping):
    """One ``port_map/output`` entry; ``axis`` set means a concatenated (scan) output."""

    __slots__ = ()


_FRESH: Any = object()      # Layer's ``data`` not given: a new dict


class _Fixed:
    """What the model's dataclasses (``Layer``, ``Graph``, ``SubGraph``, ``Model``: compared
    by identity) have without ``dataclass`` compiling it for each at every start (``ir.record``):
    assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``, and ``repr``
    is the dataclass's. Their ``__init__`` sets the fields in one update of the instance's
    dict; ``dataclasses.fields`` and ``replace`` work on them as on any dataclass."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join([f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr])
        return f"{self.__class__.__qualname__}({shown})"


@dataclass(eq=False, init=False, repr=False)
class Layer(_Fixed):
    """One layer (operation) of a graph.

    ``type`` is canonical (``Const`` and ``Constant`` are both ``Constant``; ``ReLU`` is ``Relu``);
    ``ir_type`` keeps the spelling of the file. ``data`` holds the raw ``<data>`` strings; kernels
    parse what they need once, when the execution plan is built. ``value`` is the array of a
    Constant. ``subgraphs`` holds the bodies of Loop, TensorIterator and If.

    Its ``__init__`` is the dataclass's, with the fields set in one update of the instance's
    dict: a frozen dataclass's own sets each through ``object.__setattr__``, about 4x slower,
    and reading a model makes one Layer per node (a real decoder's loop body: thousands).
    Frozen as a dataclass would be (``_Fixed``).
    """

    id: int
    name: str
    type: str
    version: str
    data: Mapping[str, str] = field(default_factory=dict)
    inputs: tuple[Port, ...] = ()
    outputs: tuple[Port, ...] = ()
    subgraphs: tuple["SubGraph", ...] = ()
    value: Any = None
    ir_type: str | None = None
    line: int | None = None

    def __init__(self, id: int, name: str, type: str, version: str,  # noqa: A002 - the fields
                 data: Mapping[str, str] = _FRESH, inputs: tuple[Port, ...] = (),
                 outputs: tuple[Port, ...] = (), subgraphs: tuple["SubGraph", ...] = (),
                 value: Any = None, ir_type: str | None = None, line: int | None = None):
        self.__dict__.update(id=id, name=name, type=type, version=version,
                             data={} if data is _FRESH else data, inputs=inputs, outputs=outputs,
                             subgraphs=subgraphs, value=value, ir_type=ir_type, line=line)

    def describe(self) -> str:
        """How error messages name a layer: ``layer 7 'h_new' (Add)``."""
        return f"layer {self.id} '{self.name}' ({self.type})"

    @property
    def body(self) -> "SubGraph | None":
        for sub in self.subgraphs:
            if sub.role == "body":
                return sub
        return None


@dataclass(eq=False, init=False, repr=False)
class Graph(_Fixed):
    """A graph (the model, or a body): layers in XML order, edges, Parameter and Result order.

    ``parameters`` and ``results`` are layer ids in XML order: that order defines the model's
    inputs and outputs. Frozen (``_Fixed``).
    """

    name: str
    layers: Mapping[int, Layer]
    edges: tuple[Edge, ...]
    parameters: tuple[int, ...]
    results: tuple[int, ...]

    def __init__(self, name: str, layers: Mapping[int, Layer], edges: tuple[Edge, ...],
                 parameters: tuple[int, ...], results: tuple[int, ...]):
        self.__dict__.update(name=name, layers=layers, edges=edges, parameters=parameters,
                             results=results)

    def producer(self, layer_id: int, input_index: int) -> tuple[int, int] | None:
        """The (layer id, output index) feeding input ``input_index`` of layer ``layer_id``."""
        return self._producers.get((layer_id, input_index))

    @property
    def _producers(self) -> dict[tuple[int, int], tuple[int, int]]:
        cache = self.__dict__.get("_producer_cache")
        if cache is None:
            cache = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in self.edges}
            object.__setattr__(self, "_producer_cache", cache)
        return cache

    def consumers(self, layer_id: int, output_index: int) -> list[tuple[int, int]]:
        return [(e.to_layer, e.to_port) for e in self.edges
                if e.from_layer == layer_id and e.from_port == output_index]

    def n_inputs(self, layer_id: int) -> int:
        """Number of connected inputs (OpenVINO: the edges that end at the layer)."""
        return sum(1 for e in self.edges if e.to_layer == layer_id)


@dataclass(eq=False, init=False, repr=False)
class SubGraph(_Fixed):
    """A body of Loop/TensorIterator (role ``body``) or a branch of If (``then_body``/``else_body``)."""

    role: str
    graph: Graph
    inputs: tuple[InputMapping, ...] = ()
    outputs: tuple[OutputMapping, ...] = ()
    back_edges: tuple[BackEdge, ...] = ()

    def __init__(self, role: str, graph: Graph, inputs: tuple[InputMapping, ...] = (),
                 outputs: tuple[OutputMapping, ...] = (), back_edges: tuple[BackEdge, ...] = ()):
        self.__dict__.update(role=role, graph=graph, inputs=inputs, outputs=outputs,
                             back_edges=back_edges)


@dataclass(eq=False, init=False, repr=False)
class Model(_Fixed):
    """A whole model: the top graph plus where it came from. Frozen (``_Fixed``)."""

    graph: Graph
    path: str | None = None
    weights_path: str | None = None
    ir_version: int | None = None
    format: str = "ir"           # "ir" or "onnx"
    opsets: Mapping[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    data_files: tuple[str, ...] = ()     # other files it reads: an ONNX model's external data

    def __init__(self, graph: Graph, path: str | None = None, weights_path: str | None = None,
                 ir_version: int | None = None, format: str = "ir",  # noqa: A002 - the field
                 opsets: Mapping[str, int] = _FRESH, warnings: tuple[str, ...] = (),
                 data_files: tuple[str, ...] = ()):
        self.__dict__.update(graph=graph, path=path, weights_path=weights_path,
                             ir_version=ir_version, format=format,
                             opsets={} if opsets is _FRESH else opsets, warnings=warnings,
                             data_files=data_files)


def classify_inputs(sub: SubGraph) -> list[tuple[str, InputMapping]]:
    """Classify port_map inputs, in ascending ``external_port_id`` order.

    First match wins: ``axis`` → sliced; ``purpose`` → current_iteration / condition; target of a
    back edge → merged; external id ≥ 0 → invariant; otherwise unused. ``purpose`` comes before
    the back edges: a current_iteration Parameter that a back edge also feeds keeps its role (the
    engine gives it 0, then the back edge's value). OpenVINO's reader looks at ``axis`` and the
    back edges only, and finds the special Parameters separately, by purpose.
    """
    targets = {be.to_layer for be in sub.back_edges}
    roles = []
    for m in sorted(sub.inputs, key=lambda m: m.external_port_id):
        if m.axis is not None:
            role = SLICED
        elif m.purpose == CURRENT_ITERATION:
            role = CURRENT_ITERATION
        elif m.purpose == CONDITION:
            role = CONDITION
        elif m.internal_layer_id in targets:
            role = MERGED
        elif m.external_port_id >= 0:
            role = INVARIANT
        else:
            role = UNUSED
        roles.append((role, m))
    return roles


def classify_outputs(sub: SubGraph) -> list[tuple[str, OutputMapping]]:
    """Classify port_map outputs; data outputs come in ascending ``external_port_id`` order."""
    roles = []
    for m in sorted(sub.outputs, key=lambda m: m.external_port_id):
        if m.purpose == EXECUTION_CONDITION:
            roles.append((EXECUTION_CONDITION, m))
        elif m.external_port_id < 0:
            continue
        elif m.axis is not None:
            roles.append((CONCAT, m))
        else:
            roles.append((LAST_VALUE, m))
    return roles
