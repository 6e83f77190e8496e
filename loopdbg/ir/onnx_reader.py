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

Control flow is translated to the engine's Loop / TensorIterator / If layers, marked with
``data["onnx_semantics"] = "true"`` so the engine applies ONNX's rules where they differ from
OpenVINO's (loop_semantics.md §7): a negative M runs zero iterations, scan outputs are *stacked*
along a new axis, and Scan slices lose the scanned axis. The body keeps ONNX's names and order:

* Loop: body Parameters ``(iteration_num, cond_in, carried...)`` fed as the current iteration,
  the condition (port-map purpose ``condition``) and merged inputs with back edges from the
  carried outputs; body Results ``(cond_out, carried..., scan...)``; outputs ``carried finals,
  scans`` stacked on axis 0.
* Scan (opset 9+): a TensorIterator; state variables are merged inputs, scan inputs are sliced on
  ``scan_input_axes`` (backward for ``scan_input_directions`` 1), scan outputs stacked on
  ``scan_output_axes`` (reversed for ``scan_output_directions`` 1).
* Scan-8 (a batch axis 0 and the sequence on axis 1): an outer TensorIterator named
  ``<name>_batch`` over the batch, whose body holds the Scan as above. ``sequence_lens`` is not
  supported.
* If: an If layer whose branches read what they need through its inputs.

Values a body reads from an enclosing graph by name become explicit Parameters of the body (named
as the outer value), fed as invariant inputs of the control-flow layer, through every level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from loopdbg.errors import ModelError
from loopdbg.ir import elements
from loopdbg.ir.model import (BackEdge, Edge, Graph, InputMapping, Layer, Model, OutputMapping,
                              Port, SubGraph)
from loopdbg.ir.onnx_names import (BODY_PROTO, NODE_PROTO, OPEN_OUTPUTS, OPSETS, OPTIONAL,
                                   OPTIONAL_SEQUENCE, SCAN8_STATES, SEQUENCE, VALUE_KIND)
from loopdbg.ir.onnx_types import (UNKNOWN, TensorType, cast_target, collect_types,
                                   tensor_type, to_array, value_kind)

INSTALL_HINT = "reading .onnx files needs the onnx package: pip install 'loopdbg[onnx]'"
ONNX_FLAG = "onnx_semantics"
_CONTROL = ("Loop", "Scan", "If")


def _import_onnx():
    try:
        import onnx  # noqa: F401
        from onnx import numpy_helper  # noqa: F401
    except ImportError:
        raise ModelError(INSTALL_HINT) from None
    return onnx


def free_names(graph) -> list[str]:
    """Names a graph reads but does not define (outer-scope values), in order of first use."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {o for n in graph.node for o in n.output if o}
    seen: list[str] = []
    for node in graph.node:
        used = [i for i in node.input if i]
        for a in node.attribute:
            subs = [a.g] if a.type == a.GRAPH else list(a.graphs) if a.type == a.GRAPHS else []
            for g in subs:
                used.extend(free_names(g))
        for name in used:
            if name not in defined and name not in seen:
                seen.append(name)
    for o in graph.output:
        if o.name not in defined and o.name not in seen:
            seen.append(o.name)
    return seen


def read_onnx(path: str | Path) -> Model:
    """Read ``path`` (an ONNX model) into a ``Model`` with ``format="onnx"``."""
    onnx = _import_onnx()
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ModelError(f"{path}: cannot read it: {exc.strerror or exc}.") from None
    if size == 0:
        raise ModelError(f"{path} is empty (0 bytes), not an ONNX model.")
    try:
        proto = onnx.load(str(path))
    except Exception as exc:  # DecodeError, missing external data, ...
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: not a readable ONNX model: {text}.") from None
    # protobuf reads many byte strings as a message of unknown fields: an ONNX model has an IR
    # version and a graph with at least one output
    if proto.ir_version <= 0 or not proto.HasField("graph") or not proto.graph.output:
        raise ModelError(f"{path} is not an ONNX model (it has no IR version, or no graph with "
                         f"outputs).")
    return from_proto(proto, str(path))


def from_proto(proto, path: str | None = None) -> Model:
    """Convert a loaded ``onnx.ModelProto`` (for tests and tools that build models in memory)."""
    onnx = _import_onnx()
    opsets = {}
    for imp in proto.opset_import:
        opsets[imp.domain or "ai.onnx"] = int(imp.version)
    if "ai.onnx" not in opsets:
        opsets["ai.onnx"] = 1 if proto.ir_version < 3 else 21
    inferred = proto
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # shape inference is only for the declared port shapes the UI shows
        pass
    types: dict[str, TensorType] = {}
    collect_types(proto.graph, types)
    if inferred is not proto:
        collect_types(inferred.graph, types)
    file = path or proto.graph.name or "model"
    conv = _Converter(opsets, types, f"{file}: ")
    graph = conv.graph(proto.graph, proto.graph.name or "model", top=True)
    return Model(graph=graph, path=path, ir_version=int(proto.ir_version), format="onnx",
                 opsets=opsets, warnings=tuple(conv.warnings))


# ----------------------------------------------------------------------------------------------


@dataclass
class _Builder:
    """One loopdbg Graph being assembled."""

    name: str
    top: bool
    conv: "_Converter"
    where: str
    layers: dict[int, Layer] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    params: list[int] = field(default_factory=list)
    results: list[int] = field(default_factory=list)
    source: dict[str, tuple[int, int]] = field(default_factory=dict)
    captures: list[str] = field(default_factory=list)
    local: set[str] = field(default_factory=set)
    _next: int = 0

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
        used = {self.layers[r].name for r in self.results}
        label = name if name not in used else f"{name}#{len(self.results)}"
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
        for k, name in enumerate(names):
            if name:
                src = self.lookup(name)
                self.edges.append(Edge(src[0], src[1], lid, k))

    def graph(self) -> Graph:
        return Graph(self.name, dict(self.layers), tuple(self.edges), tuple(self.params),
                     tuple(self.results))


class _Converter:
    def __init__(self, opsets: dict[str, int], types: dict[str, TensorType], where: str):
        self.opsets = opsets
        self.types = types
        self.where = where
        self.warnings: list[str] = []
        self._names: dict[str, int] = {}

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
                inputs: list[tuple] | None = None) -> _Builder:
        """Convert ``g``'s inputs, initializers and nodes (not its outputs) into a builder."""
        b = _Builder(name, top, self, where or self.where)
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
    def version(self, node) -> str:
        domain = node.domain or "ai.onnx"
        return f"opset{self.opsets.get(domain, self.opsets.get('ai.onnx', 1))}"

    def node(self, b: _Builder, node) -> None:
        domain = node.domain or ""
        self.check_arity(b, node)
        if domain in ("", "ai.onnx") and node.op_type == "Constant":
            self.constant_node(b, node)
            return
        if domain in ("", "ai.onnx") and node.op_type in _CONTROL:
            getattr(self, "_" + node.op_type.lower())(b, node)
            return
        attrs = self.attributes(b, node)
        attrs[NODE_PROTO] = node.SerializeToString()
        if any(at.type in (at.GRAPH, at.GRAPHS) for at in node.attribute):
            attrs[OPSETS] = dict(self.opsets)
        type_ = f"onnx.{node.op_type}" if domain in ("", "ai.onnx") else f"onnx.{domain}.{node.op_type}"
        if type_ == "onnx.Cast" and "to" in attrs:
            attrs["to"] = cast_target(attrs["to"])
        name = next((o for o in node.output if o), node.name or node.op_type)
        lid = b.new_id()
        n_in = len(node.input)
        ins = tuple(self._ttype(t).port(k, k) if t else Port(k, k) for k, t in enumerate(node.input))
        outs = tuple(self._ttype(t).port(j, n_in + j, (t,) if t else ())
                     for j, t in enumerate(node.output))
        b.connect(lid, node.input)
        b.add(Layer(lid, name, type_, self.version(node), data=attrs, inputs=ins, outputs=outs,
                    ir_type=node.op_type))
        for j, t in enumerate(node.output):
            if t:
                b.source[t] = (lid, j)

    def check_arity(self, b: _Builder, node) -> None:
        """The node's input and output counts against its operator's schema (onnx.defs), so a
        Constant without an output or an If without a condition is one sentence, not an
        IndexError in a kernel. Operators onnx does not know are left to their kernels."""
        from onnx import defs

        domain = node.domain or ""
        try:
            schema = defs.get_schema(node.op_type, self.opsets.get(domain or "ai.onnx", 1) or 1,
                                     domain)
        except Exception:  # noqa: BLE001 - an operator or domain onnx does not know
            return
        what = f"{b.where}node '{node.name or next(iter(node.output), '') or node.op_type}' " \
               f"({node.op_type})"
        for kind, got, low, high in (("inputs", len(node.input), schema.min_input,
                                      schema.max_input),
                                     ("outputs", len(node.output), schema.min_output,
                                      schema.max_output)):
            if not low <= got <= high:
                want = f"{low}" if low == high else (f"at least {low}" if high > 1 << 20
                                                    else f"{low} to {high}")
                raise ModelError(f"{what} has {got} {kind if got != 1 else kind[:-1]}; its "
                                 f"operator takes {want}.")

    def attributes(self, b: _Builder, node) -> dict[str, Any]:
        from onnx import helper

        data: dict[str, Any] = {}
        if node.name:
            data["onnx_name"] = node.name
        for a in node.attribute:
            if a.type in (a.GRAPH, a.GRAPHS):
                subs = [a.g] if a.type == a.GRAPH else list(a.graphs)
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
            if a.type == a.TENSOR:
                value: Any = self.tensor(b, a.t, f"attribute '{a.name}' of node "
                                                 f"'{node.name or node.op_type}'")
            elif a.type == a.TENSORS:
                value = [self.tensor(b, t, f"attribute '{a.name}' of node "
                                           f"'{node.name or node.op_type}'") for t in a.tensors]
            else:
                value = helper.get_attribute_value(a)
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                elif isinstance(value, list):
                    value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                             for v in value]
            data[a.name] = value
        return data

    def tensor(self, b: _Builder, t, what: str) -> np.ndarray:
        """A tensor of the file (an initializer, a Constant's value, a tensor attribute) as an
        array; data that does not match its shape and type is one sentence naming ``what``."""
        try:
            return to_array(t)
        except Exception as exc:  # noqa: BLE001 - numpy_helper's errors are many kinds
            raise ModelError(f"{b.where}{what} cannot be read: {exc}.") from None

    def constant_node(self, b: _Builder, node) -> None:
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

    # -- control flow -----------------------------------------------------------------------------
    def _sub_where(self, kind: str, name: str) -> str:
        return f"{self.where}in the body of {kind} '{name}', "

    def _attr_graph(self, b: _Builder, node, name: str):
        for a in node.attribute:
            if a.name == name and a.type == a.GRAPH:
                return a.g
        raise ModelError(f"{b.where}{node.op_type} node '{node.name or node.output[0]}' has no "
                         f"'{name}' graph attribute.")

    def _attr_ints(self, node, name: str, default=None):
        for a in node.attribute:
            if a.name == name:
                return list(a.ints) if a.ints else ([a.i] if a.type == a.INT else [])
        return default

    def _control_layer(self, b: _Builder, node, lname: str, type_: str, version: str,
                       in_names: list[str], out_names: list[str], subs: tuple[SubGraph, ...],
                       extra: dict | None = None) -> None:
        lid = b.new_id()
        n_in = len(in_names)
        ins = tuple(self._ttype(t).port(k, k) if t else Port(k, k) for k, t in enumerate(in_names))
        outs = tuple(self._ttype(t).port(j, n_in + j, (t,) if t else ())
                     for j, t in enumerate(out_names))
        data = {ONNX_FLAG: "true", "onnx_op": node.op_type}
        if node.name:
            data["onnx_name"] = node.name
        data.update(extra or {})
        b.connect(lid, in_names)
        b.add(Layer(lid, lname, type_, version, data=data, inputs=ins, outputs=outs,
                    subgraphs=subs, ir_type=node.op_type))
        for j, t in enumerate(out_names):
            if t:
                b.source[t] = (lid, j)
        # Layer ids of nested bodies are their own; we need the placeholder id for the subgraphs.
        return lid

    def _loop(self, b: _Builder, node) -> None:
        lname = self.control_name(node)
        body = self._attr_graph(b, node, "body")
        where = self._sub_where("loop", lname)
        ins = list(node.input) + [""] * max(0, 2 - len(node.input))
        n_carried = len(ins) - 2
        if len(body.input) != 2 + n_carried:
            raise ModelError(f"{where}the body has {len(body.input)} inputs; a Loop with "
                             f"{n_carried} carried values needs {2 + n_carried} (iteration_num, "
                             f"cond_in, then one per carried value).")
        n_scan = len(body.output) - 1 - n_carried
        if n_scan < 0:
            raise ModelError(f"{where}the body has {len(body.output)} outputs; it needs at least "
                             f"{1 + n_carried} (cond_out, then one per carried value).")
        if len(node.output) != n_carried + n_scan:
            raise ModelError(f"{where}the Loop node has {len(node.output)} outputs, but its body "
                             f"gives {n_carried} carried values and {n_scan} scan outputs.")
        forced: list[tuple] = [
            (body.input[0].name, TensorType("i64", ())),
            (body.input[1].name, TensorType("boolean", ())),
        ] + [(vi.name, tensor_type(vi.type) or self.types.get(ins[2 + k]), _kind(vi))
             for k, vi in enumerate(body.input[2:])]
        bb = self.builder(body, f"{lname}/body", top=False, where=where, inputs=forced)
        results = [bb.result(o.name, o.name) for o in body.output]
        graph = bb.graph()
        p = graph.parameters
        all_in = ins + bb.captures
        n_all = len(all_in)
        inputs = [InputMapping(-1, p[0], purpose="current_iteration"),
                  InputMapping(1, p[1], purpose="condition")]
        back = []
        for k in range(n_carried):
            inputs.append(InputMapping(2 + k, p[2 + k]))
            back.append(BackEdge(results[1 + k], p[2 + k]))
        for c in range(len(bb.captures)):
            inputs.append(InputMapping(len(ins) + c, p[2 + n_carried + c]))
        outputs = [OutputMapping(-1, results[0], purpose="execution_condition")]
        for k in range(n_carried):
            outputs.append(OutputMapping(n_all + k, results[1 + k]))
        for j in range(n_scan):
            outputs.append(OutputMapping(n_all + n_carried + j, results[1 + n_carried + j], axis=0))
        sub = SubGraph("body", graph, tuple(inputs), tuple(outputs), tuple(back))
        self._control_layer(b, node, lname, "Loop", "opset5", all_in, list(node.output), (sub,),
                            self._open_scans(body, 1 + n_carried))

    def _scan(self, b: _Builder, node) -> None:
        lname = self.control_name(node)
        body = self._attr_graph(b, node, "body")
        opset = self.opsets.get("ai.onnx", 21)
        m = (self._attr_ints(node, "num_scan_inputs") or [None])[0]
        if m is None:
            raise ModelError(f"{b.where}Scan node '{lname}' has no num_scan_inputs attribute.")
        n_scan_max = len(node.input) - (1 if opset < 9 else 0)
        if not 1 <= m <= n_scan_max:
            raise ModelError(f"{b.where}Scan node '{lname}' has num_scan_inputs={m}, but "
                             f"it has {n_scan_max} input{'s' if n_scan_max != 1 else ''} to scan.")
        if opset < 9:
            self._scan8(b, node, lname, body, m)
            return
        ins = list(node.input)
        n_state = len(ins) - m
        k_out = len(node.output) - n_state
        in_axes = self._attr_ints(node, "scan_input_axes") or [0] * m
        in_dirs = self._attr_ints(node, "scan_input_directions") or [0] * m
        out_axes = self._attr_ints(node, "scan_output_axes") or [0] * k_out
        out_dirs = self._attr_ints(node, "scan_output_directions") or [0] * k_out
        sub, captures = self._scan_body(b, lname, body, n_state, m, in_axes, in_dirs, out_axes,
                                        out_dirs, len(ins), ins)
        self._control_layer(b, node, lname, "TensorIterator", "opset1", ins + captures,
                            list(node.output), (sub,), self._open_scans(body, n_state))

    def _open_scans(self, body, first: int) -> dict:
        """The body (``onnx_infer.BODY_PROTO``) of a Loop/Scan whose scan outputs (body outputs
        ``first`` on) have shapes the file leaves open, for the element shapes of a run of zero
        iterations (``onnx_infer``); nothing when every one is known."""
        open_ = []
        for j, out in enumerate(body.output[first:], first):
            t = self.types.get(out.name)
            if t is None or t.dims is None or any(d < 0 for d in t.dims):
                open_.append(j)
        if not open_:
            return {}
        return {BODY_PROTO: body.SerializeToString(), OPEN_OUTPUTS: tuple(open_),
                OPSETS: dict(self.opsets)}

    def _scan_body(self, b: _Builder, lname: str, body, n_state: int, m: int, in_axes, in_dirs,
                   out_axes, out_dirs, n_ins: int, outer_ins: list[str]):
        """The TensorIterator body of a Scan; returns it with the names it captures."""
        where = self._sub_where("scan", lname)
        if len(body.input) != n_state + m:
            raise ModelError(f"{where}the body has {len(body.input)} inputs, but the Scan gives "
                             f"{n_state} state variables and {m} scan inputs.")
        k_out = len(body.output) - n_state
        if k_out < 0:
            raise ModelError(f"{where}the body has {len(body.output)} outputs, fewer than the "
                             f"{n_state} state variables.")
        for what, vals, n in (("scan_input_axes", in_axes, m), ("scan_input_directions", in_dirs, m),
                              ("scan_output_axes", out_axes, k_out),
                              ("scan_output_directions", out_dirs, k_out)):
            if len(vals) != n:
                raise ModelError(f"{where}{what} has {len(vals)} entries; it needs {n}.")
        forced = [(vi.name, tensor_type(vi.type)) for vi in body.input]
        bb = self.builder(body, f"{lname}/body", top=False, where=where, inputs=forced)
        results = [bb.result(o.name, o.name) for o in body.output]
        graph = bb.graph()
        p = graph.parameters
        n_all = n_ins + len(bb.captures)
        inputs, back, outputs = [], [], []
        for k in range(n_state):
            inputs.append(InputMapping(k, p[k]))
            back.append(BackEdge(results[k], p[k]))
        for j in range(m):
            fwd = in_dirs[j] == 0
            inputs.append(InputMapping(n_state + j, p[n_state + j], axis=in_axes[j],
                                       start=0 if fwd else -1, end=-1 if fwd else 0,
                                       stride=1 if fwd else -1, part_size=1))
        for c in range(len(bb.captures)):
            inputs.append(InputMapping(n_ins + c, p[n_state + m + c]))
        for k in range(n_state):
            outputs.append(OutputMapping(n_all + k, results[k]))
        for j in range(k_out):
            fwd = out_dirs[j] == 0
            outputs.append(OutputMapping(n_all + n_state + j, results[n_state + j],
                                         axis=out_axes[j], start=0 if fwd else -1,
                                         end=-1 if fwd else 0, stride=1 if fwd else -1))
        sub = SubGraph("body", graph, tuple(inputs), tuple(outputs), tuple(back))
        return sub, list(bb.captures)

    def _scan8(self, b: _Builder, node, lname: str, body, m: int) -> None:
        """Scan-8: an outer TensorIterator over the batch (axis 0) around the Scan proper."""
        ins = list(node.input)
        if ins and ins[0]:
            raise ModelError(f"{b.where}Scan-8 node '{lname}' has a sequence_lens input; loopdbg "
                             f"supports Scan-8 only without it (every sequence at full length).")
        ins = ins[1:]
        n_state = len(ins) - m
        k_out = len(node.output) - n_state
        dirs = self._attr_ints(node, "directions") or [0] * m
        outer_name = f"{lname}_batch"
        ob = _Builder(f"{outer_name}/body", False, self, self._sub_where("scan", outer_name))
        per_batch = []
        used: set[str] = set()
        for k, t in enumerate(ins):
            name = t if t not in used else f"{t}#{len(used)}"
            used.add(name)
            tt = self.types.get(t)
            if tt is not None and tt.dims:
                tt = TensorType(tt.element_type, tt.dims[1:])
            ob.parameter(name, tt)
            # The Parameter shows the input's name, but the body's names are the outer graph's
            # (ONNX scoping): a body reading ``t`` by name reads the whole outer tensor, not this
            # batch's slice of it, so the slice is known here by a name no ONNX graph can hold.
            key = f"\0{lname}:batch:{k}"
            ob.source[key] = ob.source.pop(name)
            if tt is not None:
                self.types[key] = tt
            per_batch.append(key)
        sub, captures = self._scan_body(ob, lname, body, n_state, m, [0] * m, dirs, [0] * k_out,
                                        [0] * k_out, len(per_batch), per_batch)
        for c in captures:               # the inner body's outer values come through the batch loop
            ob.lookup(c)
        inner_outs = [f"{lname}:{j}" for j in range(len(node.output))]
        for j, t in enumerate(node.output):
            tt = self.types.get(t)
            if tt is not None and tt.dims:
                self.types[inner_outs[j]] = TensorType(tt.element_type, tt.dims[1:])
        fake = _NodeView(node.op_type, node.name)
        self._control_layer(ob, fake, lname, "TensorIterator", "opset1", per_batch + captures,
                            inner_outs, (sub,), self._open_scans(body, n_state))
        results = [ob.result(t or f"output_{j}", inner_outs[j]) for j, t in enumerate(node.output)]
        graph = ob.graph()
        p = graph.parameters
        outer_ins = ins + list(ob.captures)
        n_all = len(outer_ins)
        inputs = [InputMapping(k, p[k], axis=0) for k in range(len(ins))]
        inputs += [InputMapping(len(ins) + c, p[len(ins) + c]) for c in range(len(ob.captures))]
        outputs = [OutputMapping(n_all + j, r, axis=0) for j, r in enumerate(results)]
        osub = SubGraph("body", graph, tuple(inputs), tuple(outputs), ())
        extra = {"onnx_scan8_batch": "true"}
        open_ = [j for j, t in enumerate(node.output)
                 if (tt := self.types.get(t)) is None or tt.dims is None or -1 in tt.dims]
        if open_:           # a batch of 0: the element shapes come from the inner body's
            extra.update({BODY_PROTO: body.SerializeToString(), OPEN_OUTPUTS: tuple(open_),
                          OPSETS: dict(self.opsets), SCAN8_STATES: n_state})
        self._control_layer(b, node, outer_name, "TensorIterator", "opset1", outer_ins,
                            list(node.output), (osub,), extra)

    def _if(self, b: _Builder, node) -> None:
        lname = self.control_name(node)
        branches = []
        for attr, role in (("then_branch", "then_body"), ("else_branch", "else_body")):
            g = self._attr_graph(b, node, attr)
            where = f"{self.where}in the {attr} of if '{lname}', "
            if len(g.output) != len(node.output):
                raise ModelError(f"{where}the branch has {len(g.output)} outputs, the If node "
                                 f"{len(node.output)}.")
            bb = self.builder(g, f"{lname}/{role}", top=False, where=where, inputs=[])
            results = [bb.result(o.name, o.name) for o in g.output]
            branches.append((role, bb, results))
        captures: list[str] = []
        for _, bb, _ in branches:
            for c in bb.captures:
                if c not in captures:
                    captures.append(c)
        subs = []
        for role, bb, results in branches:
            graph = bb.graph()
            inputs = tuple(InputMapping(1 + captures.index(c), pid)
                           for c, pid in zip(bb.captures, graph.parameters))
            outputs = tuple(OutputMapping(j, r) for j, r in enumerate(results))
            subs.append(SubGraph(role, graph, inputs, outputs))
        self._control_layer(b, node, lname, "If", "opset8", [node.input[0]] + captures,
                            list(node.output), tuple(subs))


def _kind(vi) -> str | None:
    """A body input's kind when it is a sequence or an optional (``onnx_names.VALUE_KIND``)."""
    kind = value_kind(vi.type)[0] if vi.HasField("type") else None
    return kind if kind in (SEQUENCE, OPTIONAL, OPTIONAL_SEQUENCE) else None


@dataclass(frozen=True)
class _NodeView:
    op_type: str
    name: str
