"""ONNX types as loopdbg reads them: tensor types of values, what a graph input holds (tensor,
sequence, optional), tensors' values, and Cast's target, for the ONNX reader.

onnx is imported inside the functions that need it, as in the reader.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Port
from loopdbg.ir.onnx_names import (ONNX_TYPES, OPTIONAL, OPTIONAL_SEQUENCE, SEQUENCE,
                                   onnx_type_name)


def cast_target(to) -> str:
    """Cast's ``to`` as an element type name (``f32``), so that the kernel needs no onnx: ONNX's
    enum (Cast-6 on) or its spelled name (Cast-1: ``"FLOAT"``). A type loopdbg lacks keeps ONNX's
    name (``string``), for the kernel to refuse by name."""
    if isinstance(to, str):
        from loopdbg.ir.onnx_lib import modules

        try:
            to = modules().pb.TensorProto.DataType.Value(to.upper())
        except ValueError:
            return to
    return onnx_type_name(int(to)) if isinstance(to, (int, np.integer)) else repr(to)


# AttributeProto.AttributeType's values (fixed by the ONNX standard), and the field each type's
# value is in, as onnx.helper.get_attribute_value reads it (a repeated field as a list)
(FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS, TENSORS, GRAPHS, SPARSE_TENSOR,
 SPARSE_TENSORS, TYPE_PROTO, TYPE_PROTOS) = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
_SINGLE = {FLOAT: "f", INT: "i", STRING: "s", TENSOR: "t", GRAPH: "g", SPARSE_TENSOR:
           "sparse_tensor", TYPE_PROTO: "tp"}
_REPEATED = {FLOATS: "floats", INTS: "ints", STRINGS: "strings", TENSORS: "tensors",
             GRAPHS: "graphs", SPARSE_TENSORS: "sparse_tensors", TYPE_PROTOS: "type_protos"}


def attribute_value(attr, kind: int) -> Any:
    """``onnx.helper.get_attribute_value(attr)`` for an attribute of type ``kind`` (its
    ``attr.type``, read once), without importing onnx's helper; a type it does not list is
    left to onnx's function (its error)."""
    field = _SINGLE.get(kind)
    if field is not None and not attr.ref_attr_name:
        return getattr(attr, field)
    field = _REPEATED.get(kind)
    if field is not None and not attr.ref_attr_name:
        return list(getattr(attr, field))
    if kind == 0 and not attr.ref_attr_name:           # UNDEFINED
        return None
    from loopdbg.ir.onnx_lib import full

    return full().helper.get_attribute_value(attr)


# ONNX element types whose raw bytes numpy_helper.to_array reads as they are (no packing, no
# ml_dtypes): read here directly, as it would (exported models hold hundreds of small Constants)
_PLAIN = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
          7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_LITTLE = sys.byteorder == "little"


# The same types held in the TensorProto's typed fields instead (what helper.make_tensor writes
# without raw=True): (field, the field's dtype); numpy_helper reads them as that dtype, then
# converts to the element type (16-bit ones: their bits, kept in int32_data, viewed as the type;
# bool: the bytes of those ints)
_TYPED = {1: ("float_data", np.float32), 2: ("int32_data", np.int32), 3: ("int32_data", np.int32),
          6: ("int32_data", np.int32), 7: ("int64_data", np.int64), 11: ("double_data", np.float64),
          12: ("uint64_data", np.uint64), 13: ("uint64_data", np.uint64)}
_BITS = {4: (np.uint16, np.uint16), 5: (np.uint16, np.int16), 10: (np.uint16, np.float16),
         9: (np.uint8, np.bool_)}


def to_array(tensor) -> np.ndarray:
    """A TensorProto as loopdbg holds values: numpy_helper's array, but strings as numpy unicode
    (numpy_helper gives Python objects, which loopdbg never holds). The plain numeric types
    are read here as numpy_helper reads them (the module imports the whole onnx package: ~80 ms
    of opening a small model whose tensors sit in typed fields)."""
    kind = tensor.data_type
    plain = _PLAIN.get(kind)
    if plain is not None and tensor.data_location != tensor.EXTERNAL and \
            not tensor.HasField("segment"):
        if tensor.HasField("raw_data"):
            if _LITTLE:
                return np.frombuffer(tensor.raw_data, dtype=plain).reshape(tensor.dims)
        elif kind in _TYPED:
            field, stored = _TYPED[kind]
            return np.asarray(getattr(tensor, field), dtype=stored).astype(plain).reshape(
                tensor.dims)
        else:
            bits, view = _BITS[kind]
            return np.array(tensor.int32_data, dtype=np.int32).view(np.uint32).astype(
                bits).reshape(tensor.dims).view(view)
    from onnx import numpy_helper

    value = numpy_helper.to_array(tensor)
    if value.dtype == object:
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                for v in value.reshape(-1)]
        value = np.array(flat, dtype=str).reshape(value.shape)
    return value


@dataclass(frozen=True)
class TensorType:
    """An ONNX value's tensor type: its element type and dims, as a Port declares them."""

    element_type: str            # IR name, or "dynamic"
    dims: tuple[int, ...] | None  # None: unknown rank; -1: a symbolic or unknown dim

    @property
    def shape_text(self) -> str:
        if self.dims is None:
            return "..."
        return ",".join("?" if d < 0 else str(d) for d in self.dims)

    def port(self, index: int, port_id: int, names: tuple[str, ...] = ()) -> Port:
        """The Port of this type at ``index`` (id ``port_id``); one object per distinct unnamed
        port (``shared_port``)."""
        if not names:
            return shared_port(self.element_type, self.dims, index, port_id)
        precision = None if self.element_type == "dynamic" else _precision(self.element_type)
        return Port(port_id, index, precision, tuple(self.dims or ()), names)


_PORTS: dict[tuple, Port] = {}
PORTS_KEPT = 1 << 16


def shared_port(element_type: str, dims: tuple[int, ...] | None, index: int,
                port_id: int) -> Port:
    """The unnamed Port of these fields, one object for them all: Ports are immutable, and a
    model's input ports repeat a few dozen declarations (a decoder body: thousands of ports,
    each a frozen dataclass that takes microseconds to make). At most PORTS_KEPT are kept."""
    key = (element_type, dims, index, port_id)
    found = _PORTS.get(key)
    if found is None:
        if len(_PORTS) >= PORTS_KEPT:
            _PORTS.clear()
        precision = None if element_type == "dynamic" else _precision(element_type)
        found = _PORTS[key] = Port(port_id, index, precision, tuple(dims or ()))
    return found


UNKNOWN = TensorType("dynamic", None)


@functools.lru_cache(maxsize=None)
def _precision(element_type: str) -> str:
    """A port's precision for an element type (every port of a model asks: looked up once)."""
    return elements.lookup(element_type).precision


def tensor_type(type_proto) -> TensorType | None:
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return None
    tt = type_proto.tensor_type
    et = ONNX_TYPES.get(tt.elem_type, "dynamic")
    if not tt.HasField("shape"):
        return TensorType(et, None)
    dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim)
    return TensorType(et, dims)


def value_kind(type_proto) -> tuple[str | None, Any]:
    """What an input holds: (None, the type) for a tensor; ``sequence``, ``optional`` or
    ``optional sequence`` with the TypeProto of their tensors; ``map`` for what loopdbg lacks."""
    which = type_proto.WhichOneof("value") if type_proto is not None else None
    if which == "sequence_type":
        return SEQUENCE, type_proto.sequence_type.elem_type
    if which == "optional_type":
        inner = type_proto.optional_type.elem_type
        if inner.WhichOneof("value") == "sequence_type":
            return OPTIONAL_SEQUENCE, inner.sequence_type.elem_type
        return OPTIONAL, inner
    if which in ("map_type", "sparse_tensor_type", "opaque_type"):
        return which.removesuffix("_type").replace("_", " "), None
    return None, type_proto


def collect_types(graph, types: dict[str, TensorType],
                  known: dict[bytes, TensorType | None] | None = None) -> None:
    """Types of every named value of ``graph`` and its subgraphs (inputs, outputs, value_info);
    ``known``: the types read so far by their TypeProto's bytes (a model's values share a few
    dozen types: each is read field by field once)."""
    known = {} if known is None else known
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        type_proto = vi.type
        key = type_proto.SerializeToString()
        t = known[key] if key in known else known.setdefault(key, tensor_type(type_proto))
        name = vi.name
        if t is not None and name and (name not in types or t.dims is not None):
            types[name] = t
    for init in graph.initializer:        # its shape is fixed, whatever a value_info leaves open
        name = init.name
        declared = types.get(name)
        if name and (declared is None or declared.dims is None or -1 in declared.dims):
            types[name] = TensorType(ONNX_TYPES.get(init.data_type, "dynamic"),
                                     tuple(int(d) for d in init.dims))
    for node in graph.node:
        for a in node.attribute:
            kind = a.type
            if kind == GRAPH:
                collect_types(a.g, types, known)
            elif kind == GRAPHS:
                for g in a.graphs:
                    collect_types(g, types, known)
