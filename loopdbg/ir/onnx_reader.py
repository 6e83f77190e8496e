"""Reading an ONNX model (.onnx) into loopdbg's graph model, with ONNX's own loop semantics.

Every ONNX node becomes a ``Layer`` of type ``onnx.<OpType>`` (``onnx.<domain>.<OpType>`` for
other domains) and version ``opset<N>``, N being the model's opset import for the node's domain,
so ONNX kernels (``loopdbg/ops/onnx_*.py``) never collide with OpenVINO ones. ``Layer.data`` holds
the node's attributes as Python values (ints, floats, strings, lists, numpy arrays), and the node
itself, serialized (``onnx_names.NODE_PROTO``), for the kernels that run onnx.reference's
implementations; ``ir_type`` the plain op type. Layers are named by their first output tensor,
so a breakpoint names a value as the model does (``my_local``); control-flow layers by the node
name, else ``loop``, ``scan``, ``if`` (made unique). Initializers and Constant nodes become
Constant layers, graph inputs Parameters (``data`` ``shape``/``element_type`` as in IR, and
``onnx_names.VALUE_KIND`` for a sequence or optional input) and graph outputs Results named as
the outputs. An empty optional input is an unconnected input index (the plan passes None).
Element types are read as ``onnx_types`` says (ml_dtypes for those numpy lacks, unicode strings).

Control flow (Loop, Scan, If) is translated as ``onnx_control`` says; ``onnx_builder`` holds
the graph being assembled.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from loopdbg.errors import ModelError
from loopdbg.ir import onnx_lib
from loopdbg.ir.model import Graph, Layer, Model
from loopdbg.ir.onnx_builder import Builder
from loopdbg.ir.onnx_control import CONTROL, ControlFlow
from loopdbg.ir.onnx_external import ExternalData, external_files
from loopdbg.ir.onnx_file import (ONNX_LIMIT, READ_FACTOR, READ_SLACK,  # noqa: F401 - its names,
                                  read_onnx, read_within)                # as they were
from loopdbg.ir.onnx_names import NODE_PROTO, OPSETS, OPTIONAL, OPTIONAL_SEQUENCE, SEQUENCE
from loopdbg.ir.onnx_types import (GRAPH, GRAPHS, TENSOR, TENSORS, TensorType, UNKNOWN,
                                   attribute_value, cast_target, collect_types, shared_port,
                                   tensor_type, to_array, value_kind)

INSTALL_HINT = "reading .onnx files needs the onnx package: pip install 'loopdbg[onnx]'"


def _import_onnx() -> onnx_lib.Onnx:
    """onnx's protobuf classes and extension, without its package __init__ (``onnx_lib``)."""
    try:
        return onnx_lib.modules()
    except ImportError:
        raise ModelError(INSTALL_HINT) from None


def free_names(graph) -> list[str]:
    """Names a graph reads but does not define (outer-scope values), in order of first use."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {o for n in graph.node for o in n.output if o}
    seen: dict[str, None] = {}           # in order of first use (a dict: linear time)
    for node in graph.node:
        used = [i for i in node.input if i]
        for a in node.attribute:
            subs = [a.g] if a.type == a.GRAPH else list(a.graphs) if a.type == a.GRAPHS else []
            for g in subs:
                used.extend(free_names(g))
        for name in used:
            if name not in defined:
                seen.setdefault(name)
    for o in graph.output:
        if o.name not in defined:
            seen.setdefault(o.name)
    return list(seen)


def from_bytes(held: list[bytes], path: Path) -> Model:
    """The Model of an .onnx file's bytes, which ``held`` holds (``onnx_file.read_onnx``) and
    gives up once they are parsed: a big model's bytes are not kept through its translation."""
    _import_onnx()
    # a tensor's external data is named by an entry keyed "location", which the file holds as
    # those very bytes: without them there is none to look for (a walk over every tensor)
    external = b"location" in held[0]
    try:        # without its external data: onnx_external maps that, each file once
        proto = onnx_lib.parse_model(held[0])
        held.clear()
    except Exception as exc:  # DecodeError, ...
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: not a readable ONNX model: {text}.") from None
    # protobuf reads many byte strings as a message of unknown fields: an ONNX model has an IR
    # version and a graph with at least one output
    if proto.ir_version <= 0 or not proto.HasField("graph") or not proto.graph.output:
        raise ModelError(f"{path} is not an ONNX model (it has no IR version, or no graph with "
                         f"outputs).")
    return from_proto(proto, str(path),
                      external_files(proto, str(path.parent)) if external else ())


def from_proto(proto, path: str | None = None, data_files: tuple[str, ...] = ()) -> Model:
    """Convert a loaded ``onnx.ModelProto`` (for tests and tools that build models in memory)."""
    _import_onnx()
    opsets = {}
    for imp in proto.opset_import:
        opsets[imp.domain or "ai.onnx"] = int(imp.version)
    if "ai.onnx" not in opsets:
        opsets["ai.onnx"] = 1 if proto.ir_version < 3 else 21
    inferred = proto
    try:
        inferred = onnx_lib.infer_shapes(proto)
    except Exception:  # shape inference is only for the declared port shapes the UI shows
        pass
    types: dict[str, TensorType] = {}
    collect_types(proto.graph, types)
    if inferred is not proto:
        collect_types(inferred.graph, types)
    file = path or proto.graph.name or "model"
    conv = _Converter(opsets, types, f"{file}: ",
                      ExternalData(Path(path).parent if path else None, f"{file}: "))
    graph = conv.graph(proto.graph, proto.graph.name or "model", top=True)
    return Model(graph=graph, path=path, ir_version=int(proto.ir_version), format="onnx",
                 opsets=opsets, warnings=tuple(conv.warnings), data_files=data_files)


@functools.lru_cache(maxsize=None)
def _arity(op_type: str, version: int, domain: str) -> tuple[int, int, int, int] | None:
    """(min inputs, max inputs, min outputs, max outputs) of an operator's schema, None for one
    onnx does not know; looked up once per operator (a schema lookup costs ~0.1 ms a node)."""
    try:
        schema = onnx_lib.get_schema(op_type, version, domain)
    except Exception:  # noqa: BLE001 - an operator or domain onnx does not know
        return None
    return schema.min_input, schema.max_input, schema.min_output, schema.max_output


# ----------------------------------------------------------------------------------------------


class _Converter(ControlFlow):
    def __init__(self, opsets: dict[str, int], types: dict[str, TensorType], where: str,
                 external: ExternalData):
        self.external = external
        self.opsets = opsets
        self.types = types
        self.where = where
        self.warnings: list[str] = []
        self._names: dict[str, int] = {}
        self._versions: dict[str, str] = {}     # domain -> its layers' version

    # -- naming -----------------------------------------------------------------------------------
    def control_name(self, node) -> str:
        base = node.name or node.op_type.lower()
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def _ttype(self, name: str) -> TensorType:
        return self.types.get(name) or UNKNOWN

    # -- graphs -----------------------------------------------------------------------------------
    def graph(self, g, name: str, *, top: bool, where: str | None = None,
              inputs: list[tuple[str, TensorType | None]] | None = None) -> Graph:
        b = self.builder(g, name, top=top, where=where, inputs=inputs)
        for out in g.output:
            b.result(out.name, out.name)
        return b.graph()

    def builder(self, g, name: str, *, top: bool, where: str | None = None,
                inputs: list[tuple] | None = None) -> Builder:
        """Convert ``g``'s inputs, initializers and nodes (not its outputs) into a builder."""
        b = Builder(name, top, self, where or self.where)
        inits = {}
        for t in g.initializer:
            inits[t.name] = self.tensor(b, t, f"initializer '{t.name}'")
        if g.sparse_initializer:
            raise ModelError(f"{b.where}the graph has sparse initializers, which loopdbg does not "
                             f"support.")
        b.local = {o for n in g.node for o in n.output if o}
        if inputs is None:
            for vi in g.input:
                if vi.name in inits:      # an input with a default (IR < 4): a constant here
                    continue
                kind, inner = value_kind(vi.type)
                if kind not in (None, SEQUENCE, OPTIONAL, OPTIONAL_SEQUENCE):
                    raise ModelError(f"{b.where}input '{vi.name}' is a {kind}, which loopdbg "
                                     f"does not model (tensors, sequences and optionals only).")
                b.parameter(vi.name, tensor_type(inner), kind=kind)
        else:
            for n, t, *kind in inputs:       # (name, type[, kind]): a sequence, an optional
                b.parameter(n, self.types.get(n), force=t, kind=kind[0] if kind else None)
        for tname, value in inits.items():
            if tname not in b.source:
                b.constant(tname, value)
        for node in g.node:
            self.node(b, node)
        return b

    # -- nodes ------------------------------------------------------------------------------------
    def version(self, node, domain: str | None = None) -> str:
        """``opset<N>`` of the node's domain (``domain``: node.domain, when read already)."""
        domain = (node.domain if domain is None else domain) or "ai.onnx"
        found = self._versions.get(domain)
        if found is None:
            found = self._versions[domain] = \
                f"opset{self.opsets.get(domain, self.opsets.get('ai.onnx', 1))}"
        return found

    def node(self, b: Builder, node) -> None:
        # each protobuf field read once: reading one builds a new Python object every time
        op_type, domain = node.op_type, node.domain or ""
        inputs, outputs = list(node.input), list(node.output)
        n_in = len(inputs)
        self.check_arity(b, node, op_type, domain, n_in, len(outputs))
        onnx_domain = domain in ("", "ai.onnx")
        if onnx_domain and op_type == "Constant":
            self.constant_node(b, node)
            return
        if onnx_domain and op_type in CONTROL:
            getattr(self, "_" + op_type.lower())(b, node)
            return
        attrs, graphs = self.attributes(b, node)
        attrs[NODE_PROTO] = node.SerializeToString()
        if graphs:
            attrs[OPSETS] = dict(self.opsets)
        type_ = f"onnx.{op_type}" if onnx_domain else f"onnx.{domain}.{op_type}"
        if type_ == "onnx.Cast" and "to" in attrs:
            attrs["to"] = cast_target(attrs["to"])
        name = outputs[0] if outputs and outputs[0] else \
            next((o for o in outputs if o), node.name or op_type)
        lid = b.new_id()
        types = self.types
        ins = tuple((types.get(t) or UNKNOWN).port(k, k) if t else shared_port("dynamic", None, k, k)
                    for k, t in enumerate(inputs))
        outs = tuple((types.get(t) or UNKNOWN).port(j, n_in + j, (t,) if t else ())
                     for j, t in enumerate(outputs))
        b.connect(lid, inputs)
        b.add(Layer(lid, name, type_, self.version(node, domain), data=attrs, inputs=ins,
                    outputs=outs, ir_type=op_type))
        for j, t in enumerate(outputs):
            if t:
                b.source[t] = (lid, j)

    def check_arity(self, b: Builder, node, op_type: str, domain: str, n_in: int,
                    n_out: int) -> None:
        """The node's input and output counts against its operator's schema (onnx.defs), so a
        Constant without an output or an If without a condition is one sentence, not an
        IndexError in a kernel. Operators onnx does not know are left to their kernels."""
        arity = _arity(op_type, self.opsets.get(domain or "ai.onnx", 1) or 1, domain)
        if arity is None or (arity[0] <= n_in <= arity[1] and arity[2] <= n_out <= arity[3]):
            return                      # (the usual case, without building the message's parts)
        for kind, got, low, high in (("inputs", n_in, arity[0], arity[1]),
                                     ("outputs", n_out, arity[2], arity[3])):
            if not low <= got <= high:
                what = f"{b.where}node '{node.name or next(iter(node.output), '') or op_type}' " \
                       f"({op_type})"
                want = f"{low}" if low == high else (f"at least {low}" if high > 1 << 20
                                                    else f"{low} to {high}")
                raise ModelError(f"{what} has {got} {kind if got != 1 else kind[:-1]}; its "
                                 f"operator takes {want}.")

    def attributes(self, b: Builder, node) -> tuple[dict[str, Any], bool]:
        """The node's attributes as Python values, and whether it has graph attributes."""
        data: dict[str, Any] = {}
        graphs = False
        if node.name:
            data["onnx_name"] = node.name
        for a in node.attribute:
            kind = a.type                     # read once: each read of a field costs a call
            if kind in (GRAPH, GRAPHS):
                graphs = True
                subs = [a.g] if kind == GRAPH else list(a.graphs)
                outer = [n for g in subs for n in free_names(g)]
                if outer:
                    raise ModelError(f"{b.where}node '{node.name or node.op_type}' "
                                     f"({node.op_type}) has a graph attribute '{a.name}' that "
                                     f"reads '{outer[0]}' from the enclosing graph; loopdbg "
                                     f"passes outer values only into Loop, Scan and If.")
                continue              # kept in the node proto (NODE_PROTO) for its kernel
            if a.ref_attr_name:
                raise ModelError(f"{b.where}node '{node.name or node.op_type}' refers to a function "
                                 f"attribute '{a.ref_attr_name}'; loopdbg reads plain graphs only.")
            if kind == TENSOR:
                value: Any = self.tensor(b, a.t, f"attribute '{a.name}' of node "
                                                 f"'{node.name or node.op_type}'")
            elif kind == TENSORS:
                value = [self.tensor(b, t, f"attribute '{a.name}' of node "
                                           f"'{node.name or node.op_type}'") for t in a.tensors]
            else:
                value = attribute_value(a, kind)
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                elif isinstance(value, list):
                    value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                             for v in value]
            data[a.name] = value
        return data, graphs

    def tensor(self, b: Builder, t, what: str) -> np.ndarray:
        """A tensor of the file (an initializer, a Constant's value, a tensor attribute) as an
        array; data that does not match its shape and type is one sentence naming ``what``."""
        if t.data_location == t.EXTERNAL:
            return self.external.array(t, what)
        try:
            return to_array(t)
        except Exception as exc:  # noqa: BLE001 - numpy_helper's errors are many kinds
            raise ModelError(f"{b.where}{what} cannot be read: {exc}.") from None

    def constant_node(self, b: Builder, node) -> None:
        out = node.output[0]
        attrs = {a.name: a for a in node.attribute}
        what = f"Constant node '{node.name or out}'"
        if "value" in attrs:
            value = self.tensor(b, attrs["value"].t, what)
        elif "value_float" in attrs:
            value = np.array(attrs["value_float"].f, dtype=np.float32)
        elif "value_floats" in attrs:
            value = np.array(list(attrs["value_floats"].floats), dtype=np.float32)
        elif "value_int" in attrs:
            value = np.array(attrs["value_int"].i, dtype=np.int64)
        elif "value_ints" in attrs:
            value = np.array(list(attrs["value_ints"].ints), dtype=np.int64)
        elif "value_string" in attrs:
            value = np.array(attrs["value_string"].s.decode("utf-8", "replace"), dtype=str)
        elif "value_strings" in attrs:
            value = np.array([v.decode("utf-8", "replace") for v in attrs["value_strings"].strings],
                             dtype=str)
        else:
            kinds = ", ".join(attrs) or "no value"
            raise ModelError(f"{b.where}{what} has {kinds}; loopdbg supports numeric tensors only.")
        b.constant(out, value)
