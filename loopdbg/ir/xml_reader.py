"""Read an OpenVINO IR (``model.xml`` + ``model.bin``, IR version 10 or 11) into a ``Model``.

The reader follows OpenVINO's own IR deserializer where it matters to a debugger: port ids are
resolved by lookup (not position), Parameter/Result order is XML order, Loop/TensorIterator port
maps and back edges are read as written, duplicate port_map inputs keep the first entry. It is also
stricter than OpenVINO in one way: every structural problem becomes a one-sentence ``ModelError``
naming the file and the layer (and the enclosing loop for bodies), instead of a C++ exception.

Model files are untrusted input: ``safe_xml`` reads and parses them (no DTD, no entity, no
network); ``xml_context`` holds what every part of the reader shares and ``xml_port_maps`` the
port maps and back edges of bodies.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Callable

from loopdbg.errors import ModelError
from loopdbg.ir import elements
from loopdbg.ir.model import CANONICAL_TYPES, Edge, Graph, Layer, Model, Port, SubGraph
from loopdbg.ir.safe_xml import XML_LIMIT, parse_untrusted_xml, read_xml_bytes
from loopdbg.ir.shapes import parse_dim, parse_shape
from loopdbg.ir.xml_context import (FROM_LAYER, TO_LAYER, Context, Weights, attr_of,
                                    first_child, int_attr, layer_label, tagged_children)
from loopdbg.ir.xml_port_maps import (check_fed_inputs, check_output_count, read_back_edges,
                                      read_port_map)

__all__ = ["SUPPORTED_IR_VERSIONS", "XML_LIMIT", "parse_shape", "read_ir"]

SUPPORTED_IR_VERSIONS = (10, 11)

# Element tags with their synonyms (docs/semantics.md rule 15; the others in xml_context).
_LAYER_CONTAINERS = ("layers", "operations")
_LAYER_TAGS = ("layer", "operation")
_LAYER_PARTS = ("data", "input", "output")

_IF_BRANCHES = (("then_body", "then_port_map"), ("else_body", "else_port_map"))

_NAME_SPLIT = re.compile(r"(?<!\\),")


# ----------------------------------------------------------------------------------------------
# Public helpers


def read_ir(xml_path: str | Path, bin_path: str | Path | None = None) -> Model:
    """Read ``xml_path`` (and its weights, by default the same path with a ``.bin`` suffix).

    The .bin is read at most once, and only if some Const needs bytes from it; a missing .bin is
    therefore an error only for models that have weights.
    """
    xml_path = Path(xml_path)
    ctx = Context(file=str(xml_path),
                  weights=Weights(Path(bin_path) if bin_path is not None
                                  else xml_path.with_suffix(".bin")))
    root = parse_untrusted_xml(read_xml_bytes(xml_path), ctx.file)
    version = _check_root(root, ctx.file)
    graph = _read_graph(root, ctx, root.get("name", ""))
    return Model(graph=graph, path=str(xml_path),
                 weights_path=str(ctx.weights.path) if ctx.weights.exists else None,
                 ir_version=version, format="ir", warnings=tuple(ctx.warnings))


def _check_root(root, file: str) -> int:
    if root.tag != "net":
        raise ModelError(f"{file} is not an OpenVINO IR: its root element is <{root.tag}>, "
                         f"not <net>.")
    text = root.get("version")
    try:
        version = int(text)
    except (TypeError, ValueError):
        version = None
    if version not in SUPPORTED_IR_VERSIONS:
        raise ModelError(f"{file}: unsupported IR version {text!r} (loopdbg reads versions 10 "
                         f"and 11).")
    return version


# ----------------------------------------------------------------------------------------------
# Graphs


def _read_graph(el, ctx: Context, name: str) -> Graph:
    """Read a ``<net>`` or a ``<body>``: layers, edges, then check the edges form a DAG."""
    container = first_child(el, *_LAYER_CONTAINERS)
    if container is None:
        raise ctx.fail(f"the <{el.tag}> at line {el.sourceline}", "has no <layers> element")
    layers: dict[int, Layer] = {}
    for layer_el in tagged_children(container, _LAYER_TAGS):
        layer = _read_layer(layer_el, ctx)
        if layer.id in layers:
            other = layers[layer.id]
            raise ctx.fail(layer.describe(), f"at line {layer.line} reuses the id of "
                                             f"{other.describe()} at line {other.line}")
        layers[layer.id] = layer
    negative = next((layer for layer in layers.values() if layer.id < 0), None)
    if negative is not None:
        ctx.warnings.append(f"{ctx.file}: {negative.describe()}{ctx.scope} has a negative id; "
                            f"loopdbg runs the model, but OpenVINO refuses to read it (its layer "
                            f"ids are unsigned).")
    edges = _read_edges(el, layers, ctx)
    _check_acyclic(layers, edges, ctx)
    return Graph(name=name, layers=layers, edges=edges,
                 parameters=tuple(i for i, l in layers.items() if l.type == "Parameter"),
                 results=tuple(i for i, l in layers.items() if l.type == "Result"))


def _read_edges(el, layers: dict[int, Layer], ctx: Context) -> tuple[Edge, ...]:
    container = first_child(el, "edges")
    if container is None:
        return ()
    edges = []
    fed: dict[tuple[int, int], object] = {}     # -> the first edge element into it
    for edge_el in tagged_children(container, ("edge",)):
        edge = _read_edge(edge_el, layers, ctx)
        key = (edge.to_layer, edge.to_port)
        if key in fed:
            raise ctx.fail(layers[edge.to_layer].describe(),
                           f"has two edges into input port {edge.to_port} (lines "
                           f"{fed[key].sourceline} and {edge_el.sourceline})")
        fed[key] = edge_el
        edges.append(edge)
    return tuple(edges)


class _LazyFail:
    """``ctx.failer`` for an edge, its subject (with the line) made only when it fails."""

    __slots__ = ("ctx", "el")

    def __init__(self, ctx: Context, el):
        self.ctx, self.el = ctx, el

    def __call__(self, problem: str) -> ModelError:
        return self.ctx.fail(f"the edge at line {self.el.sourceline}", problem)


def _read_edge(edge_el, layers: dict[int, Layer], ctx: Context) -> Edge:
    """Resolve an edge's port ids to port indices by lookup (GenericLayerParams)."""
    texts = (attr_of(edge_el, FROM_LAYER), edge_el.get("from-port"), attr_of(edge_el, TO_LAYER),
             edge_el.get("to-port"))
    fail = _LazyFail(ctx, edge_el)
    try:
        from_id, from_port_id, to_id, to_port_id = (int(t) for t in texts)
    except (TypeError, ValueError):        # the checked path, failing with the attribute's name
        from_id, from_port_id, to_id, to_port_id = (
            int_attr(t, attr, fail) for t, attr in zip(texts, ("from-layer", "from-port",
                                                              "to-layer", "to-port")))
    src, dst = layers.get(from_id), layers.get(to_id)
    if src is None:
        raise fail(f"starts at layer {from_id}, which does not exist")
    if dst is None:
        raise fail(f"ends at layer {to_id}, which does not exist")
    from_port = _port_index(src.outputs, from_port_id)
    if from_port is None:
        raise fail(f"leaves {src.describe()} from port {from_port_id}, which is not one of its "
                   f"output ports")
    to_port = _port_index(dst.inputs, to_port_id)
    if to_port is None:
        raise fail(f"enters {dst.describe()} at port {to_port_id}, which is not one of its "
                   f"input ports")
    return Edge(from_id, from_port, to_id, to_port)


def _port_index(ports: tuple[Port, ...], port_id: int) -> int | None:
    """Edges name ports by id; the real index is the port's position (get_real_*_port_id)."""
    for port in ports:
        if port.id == port_id:
            return port.index
    return None


def _check_acyclic(layers: dict[int, Layer], edges: tuple[Edge, ...], ctx: Context) -> None:
    """Iterative three-colour DFS; reaching a node still on the stack closes a cycle."""
    succ: dict[int, list[int]] = {i: [] for i in layers}
    for e in edges:
        succ[e.from_layer].append(e.to_layer)
    state = dict.fromkeys(layers, 0)          # 0 unseen, 1 on the stack, 2 done
    for start in layers:
        if state[start]:
            continue
        state[start] = 1
        stack, path = [iter(succ[start])], [start]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise ctx.fail(layers[nxt].describe(),
                               "is part of a cycle (layers " + " -> ".join(map(str, cycle)) + ")")
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append(iter(succ[nxt]))
                path.append(nxt)


# ----------------------------------------------------------------------------------------------
# Layers


def _read_layer(el, ctx: Context) -> Layer:
    ir_type = el.get("type")
    name = el.get("name", "")
    layer_id = _layer_id(el, name, ir_type, ctx)
    if not ir_type:
        raise ctx.fail(layer_label(layer_id, name, "?"), "has no type")
    type_ = CANONICAL_TYPES.get(ir_type, ir_type)
    label = layer_label(layer_id, name, type_)
    parts = {}                              # the first <data>, <input>, <output> (one pass)
    for child in el:
        tag = child.tag
        if tag in _LAYER_PARTS and tag not in parts:
            parts[tag] = child
    data_el = parts.get("data")
    data = dict(data_el.attrib) if data_el is not None else {}
    inputs = _read_ports(parts.get("input"), label, ctx)
    outputs = _read_ports(parts.get("output"), label, ctx)
    if len(inputs) > 1 or len(outputs) > 1:
        _check_unique_port_ids(inputs, outputs, label, ctx)
    if type_ == "Constant":                 # made once, with its value
        return Layer(id=layer_id, name=name, type=type_, version=el.get("version", ""),
                     data=data, inputs=inputs, outputs=outputs, ir_type=ir_type,
                     line=el.sourceline, value=_const_value(label, data, ctx))
    layer = Layer(id=layer_id, name=name, type=type_, version=el.get("version", ""),
                  data=data, inputs=inputs, outputs=outputs, ir_type=ir_type,
                  line=el.sourceline)
    reader = _TYPE_READERS.get(type_)
    return reader(el, layer, ctx) if reader else layer


def _layer_id(el, name: str, ir_type: str | None, ctx: Context) -> int:
    text = el.get("id")
    try:
        return int(text)
    except (TypeError, ValueError):
        fail = ctx.failer(f"the <{el.tag}> '{name}' ({ir_type or '?'}) at line {el.sourceline}")
        return int_attr(text, "id", fail)


def _read_ports(el, label: str, ctx: Context) -> tuple[Port, ...]:
    if el is None:
        return ()
    ports = []
    index = -1
    for port_el in el:                      # (plain iteration is cheaper than iterchildren)
        if port_el.tag != "port":
            continue
        index += 1
        # the usual case first (a plain integer id and dims); anything else takes the checked
        # path, which fails naming the port
        get = port_el.get
        text = get("id")
        try:
            port_id = int(text)
        except (TypeError, ValueError):
            port_id = int_attr(text, "id", _port_failer(port_el, label, ctx))
        dims = []
        for d in port_el:
            if d.tag != "dim":
                continue
            text = d.text
            dims.append(int(text) if text is not None and text.isdigit() else
                        _dim(text, _port_failer(port_el, label, ctx)))
        names = get("names")
        ports.append(Port(port_id, index, get("precision"), tuple(dims),
                          _split_names(names) if names else ()))
    return tuple(ports)


def _port_failer(port_el, label: str, ctx: Context) -> Callable[[str], ModelError]:
    return ctx.part_failer(label, f"its port at line {port_el.sourceline}")


def _dim(text: str | None, fail: Callable[[str], ModelError]) -> int:
    try:
        return parse_dim(text or "")
    except ValueError:
        raise fail(f"has a bad <dim> '{(text or '').strip()}'") from None


def _split_names(text: str | None) -> tuple[str, ...]:
    """Tensor names are comma separated; the serializer escapes a comma inside a name as ``\\,``."""
    if not text:
        return ()
    parts = (p.strip().replace("\\,", ",") for p in _NAME_SPLIT.split(text))
    return tuple(p for p in parts if p)


def _check_unique_port_ids(inputs: tuple[Port, ...], outputs: tuple[Port, ...], label: str,
                           ctx: Context) -> None:
    """Edges find ports by id, so an id declared twice would make an edge ambiguous."""
    for ports, kind in ((inputs, "input"), (outputs, "output")):
        seen: set[int] = set()
        for port in ports:
            if port.id in seen:
                raise ctx.fail(label, f"declares {kind} port id {port.id} twice")
            seen.add(port.id)


# ----------------------------------------------------------------------------------------------
# Parameter and Const


def _read_parameter(el, layer: Layer, ctx: Context) -> Layer:
    """Check the declared shape and element type now, so the engine can trust them later."""
    if "shape" in layer.data:
        _shape_of(layer, ctx)
    et = layer.data.get("element_type")
    if et is not None and (not elements.is_known(et) or elements.onnx_only(et)):
        raise ctx.fail(layer.describe(), f"has an unknown element_type '{et}'")
    return layer


def _shape_of(layer: Layer, ctx: Context) -> tuple[int, ...] | None:
    text = layer.data["shape"]
    try:
        return parse_shape(text)
    except ValueError as err:
        raise ctx.fail(layer.describe(), f"has a bad shape '{text}' ({err})") from None


def _read_const(el, layer: Layer, ctx: Context) -> Layer:
    """Decode the Const's bytes (with DESER on_adapter's checks) into a read-only ``value``."""
    value = _const_value(layer.describe(), layer.data, ctx)
    return Layer(id=layer.id, name=layer.name, type=layer.type, version=layer.version,
                 data=layer.data, inputs=layer.inputs, outputs=layer.outputs,
                 subgraphs=layer.subgraphs, value=value, ir_type=layer.ir_type, line=layer.line)


def _const_value(label: str, data: dict, ctx: Context):
    """A Const's value from its ``<data>`` and the .bin, checked as DESER's on_adapter does."""
    fail = ctx.failer(label)
    for attr in ("element_type", "shape", "offset", "size"):
        if attr not in data:
            raise fail(f"has no '{attr}' in its <data>")
    et = data["element_type"]
    if elements.onnx_only(et):
        raise fail(f"cannot be decoded: element type '{et}' is not supported by loopdbg in IR "
                   f"files")
    try:
        bits = elements.bit_width(et)
    except ValueError as err:
        raise fail(f"cannot be decoded: {err}") from None
    if bits == 0:
        raise fail(f"has element type '{et}', which has no values")
    text = data["shape"]
    try:
        shape = parse_shape(text)
    except ValueError as err:
        raise ctx.fail(label, f"has a bad shape '{text}' ({err})") from None
    if shape is None or any(d < 0 for d in shape):
        raise fail(f"has a non-static shape '{text}'")
    offset = int_attr(data["offset"], "offset", fail)
    size = int_attr(data["size"], "size", fail)
    if offset < 0 or size < 0:
        raise fail(f"has a negative offset or size ({offset}, {size})")
    raw = _const_bytes(label, offset, size, (math.prod(shape) * bits + 7) // 8, ctx)
    value = elements.decode(raw, et, shape)
    value.flags.writeable = False
    return value


def _const_bytes(label: str, offset: int, size: int, expected: int, ctx: Context
                 ) -> memoryview | bytes:
    if expected == 0:          # no elements: OpenVINO's own writer gives such a Const size="1"
        return b""
    data = ctx.weights.get(label + ctx.scope, ctx.file)
    if offset + size > len(data):
        raise ctx.fail(label, f"reads bytes {offset}..{offset + size} but {ctx.weights.path} "
                              f"has only {len(data)} bytes")
    if size != expected:
        raise ctx.fail(label, f"has size {size}, which does not match shape × element type "
                              f"({expected} bytes)")
    return memoryview(data)[offset:offset + size]


# ----------------------------------------------------------------------------------------------
# Loop, TensorIterator, If


def _read_loop(el, layer: Layer, ctx: Context) -> Layer:
    label = layer.describe()
    body_el = first_child(el, "body")
    if body_el is None:
        raise ctx.fail(label, "has no <body>")
    body = _read_graph(body_el, ctx.inside(label), f"{layer.name}/body")
    inputs, outputs = read_port_map(first_child(el, "port_map"), layer, body, ctx, "port_map")
    back_edges = read_back_edges(first_child(el, "back_edges"), layer, body, ctx)
    check_fed_inputs(inputs, back_edges, layer, body, ctx)
    if not body.parameters and not body.results:
        raise ctx.fail(label, "has a body with no Parameter and no Result")
    if layer.type == "Loop" and not any(m.purpose == "execution_condition" for m in outputs):
        raise ctx.fail(label, 'has no port_map output with purpose="execution_condition"')
    check_output_count(layer, outputs, ctx)
    sub = SubGraph(role="body", graph=body, inputs=inputs, outputs=outputs,
                   back_edges=back_edges)
    return replace(layer, subgraphs=(sub,))


def _read_if(el, layer: Layer, ctx: Context) -> Layer:
    """If-8: two branches, each with its own port map (no slicing, no back edges)."""
    label = layer.describe()
    subs = []
    for role, map_tag in _IF_BRANCHES:
        body_el = first_child(el, role)
        if body_el is None:
            raise ctx.fail(label, f"has no <{role}>")
        body = _read_graph(body_el, ctx.inside(label, role), f"{layer.name}/{role}")
        inputs, outputs = read_port_map(first_child(el, map_tag), layer, body, ctx, map_tag)
        subs.append(SubGraph(role=role, graph=body, inputs=inputs, outputs=outputs))
    return replace(layer, subgraphs=tuple(subs))


_TYPE_READERS: dict[str, Callable] = {
    "Parameter": _read_parameter,
    "Constant": _read_const,
    "Loop": _read_loop,
    "TensorIterator": _read_loop,
    "If": _read_if,
}
