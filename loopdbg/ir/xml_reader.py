"""Read an OpenVINO IR (``model.xml`` + ``model.bin``, IR version 10 or 11) into a ``Model``.

The reader follows OpenVINO's own IR deserializer where it matters to a debugger: port ids are
resolved by lookup (not position), Parameter/Result order is XML order, Loop/TensorIterator port
maps and back edges are read as written, duplicate port_map inputs keep the first entry. It is also
stricter than OpenVINO in one way: every structural problem becomes a one-sentence ``ModelError``
naming the file and the layer (and the enclosing loop for bodies), instead of a C++ exception.

Model files are untrusted input: parsing never expands entities, never loads a DTD and never
touches the network, and any DOCTYPE is refused outright.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator

from loopdbg.errors import ModelError
from loopdbg.ir import elements
from loopdbg.files.read import map_regular, read_regular
from loopdbg.ir.model import (CANONICAL_TYPES, BackEdge, Edge, Graph, InputMapping, Layer, Model,
                              OutputMapping,
                              Port, SubGraph)
from loopdbg.ir.shapes import parse_dim, parse_shape

SUPPORTED_IR_VERSIONS = (10, 11)

# IR spellings of type names that differ from the opset's (DESER translate_type_name).

# Element tags and attributes with their synonyms (docs/semantics.md rule 15).
_LAYER_CONTAINERS = ("layers", "operations")
_LAYER_TAGS = ("layer", "operation")
_FROM_LAYER = ("from-layer", "from-operation")
_TO_LAYER = ("to-layer", "to-operation")
_LAYER_PARTS = ("data", "input", "output")
_INTERNAL_ID = ("internal_layer_id", "internal_operation_id")

_LOOP_TYPES = ("Loop", "TensorIterator")
_IF_BRANCHES = (("then_body", "then_port_map"), ("else_body", "else_port_map"))

_NAME_SPLIT = re.compile(r"(?<!\\),")
_LXML_POSITION = re.compile(r",\s*line \d+,\s*column \d+\s*$")


# ----------------------------------------------------------------------------------------------
# Public helpers


def read_ir(xml_path: str | Path, bin_path: str | Path | None = None) -> Model:
    """Read ``xml_path`` (and its weights, by default the same path with a ``.bin`` suffix).

    The .bin is read at most once, and only if some Const needs bytes from it; a missing .bin is
    therefore an error only for models that have weights.
    """
    xml_path = Path(xml_path)
    ctx = _Context(file=str(xml_path),
                   weights=_Weights(Path(bin_path) if bin_path is not None
                                    else xml_path.with_suffix(".bin")))
    root = _parse_xml(_read_bytes(xml_path), ctx.file)
    version = _check_root(root, ctx.file)
    graph = _read_graph(root, ctx, root.get("name", ""))
    return Model(graph=graph, path=str(xml_path),
                 weights_path=str(ctx.weights.path) if ctx.weights.exists else None,
                 ir_version=version, format="ir", warnings=tuple(ctx.warnings))


# ----------------------------------------------------------------------------------------------
# Reading context


class _Weights:
    """The .bin file, mapped (not read) on first use and shared by the top graph and every body."""

    def __init__(self, path: Path):
        self.path = path
        self._data: memoryview | None = None

    @property
    def exists(self) -> bool:
        return self._data is not None or os.path.lexists(self.path)

    def get(self, who: str, file: str) -> memoryview:
        if self._data is None:
            if not os.path.lexists(self.path):
                raise ModelError(f"{file}: {who} needs weights but {self.path} does not exist.")
            try:
                self._data = map_regular(self.path, ModelError)
            except ModelError as err:
                raise ModelError(f"{file}: {who} needs weights, but {err}") from None
        return self._data


@dataclass
class _Context:
    """What every nested reader needs: the file name for messages, the weights, the warnings.

    ``scope`` is appended to layer descriptions inside bodies ("in the body of layer 4 'loop'
    (Loop)"), so that an error deep in a nested body still says where it is.
    """

    file: str
    weights: _Weights
    warnings: list[str] = field(default_factory=list)
    scope: str = ""

    def inside(self, loop_label: str, role: str = "body") -> "_Context":
        where = "body" if role == "body" else role.replace("_", " ")
        return _Context(self.file, self.weights, self.warnings,
                        f" in the {where} of {loop_label}{self.scope}")

    def fail(self, subject: str, problem: str) -> ModelError:
        """A one-sentence ModelError: ``<file>: <subject><scope> <problem>.``"""
        return ModelError(f"{self.file}: {subject}{self.scope} {problem}.")

    def failer(self, subject: str) -> Callable[[str], ModelError]:
        """``fail`` with the subject bound, for helpers that only know the problem."""
        return lambda problem: self.fail(subject, problem)

    def part_failer(self, label: str, part: str) -> Callable[[str], ModelError]:
        """Errors about one part of a layer: ``<file>: <label><scope>: <part> <problem>.``"""
        return lambda problem: ModelError(f"{self.file}: {label}{self.scope}: {part} {problem}.")


def _label(layer_id: object, name: str, type_: str) -> str:
    """The same wording as ``Layer.describe()``, usable before the Layer exists."""
    return f"layer {layer_id} '{name}' ({type_})"


# ----------------------------------------------------------------------------------------------
# XML parsing


XML_LIMIT = 1 << 30        # an IR .xml past 1 GiB is not a model loopdbg can show


def _read_bytes(xml_path: Path) -> bytes:
    raw = read_regular(xml_path, ModelError, "the model", XML_LIMIT)
    if not raw.strip():
        raise ModelError(f"{xml_path} is empty.")
    return raw


_FORBIDDEN_MARKERS = tuple(m.encode(enc) for m in ("<!DOCTYPE", "<!ENTITY")
                           for enc in ("ascii", "utf-16-le", "utf-16-be"))


def _refuse_doctype(raw: bytes, file: str) -> None:
    """A DOCTYPE is never needed by IR and is how XXE and entity bombs get in: refuse it early.

    The raw bytes are checked before lxml sees them (ASCII and UTF-16 spellings); the parsed tree's
    docinfo is checked again afterwards in case some other encoding hid the marker.
    """
    upper = raw.upper()
    if any(marker in upper for marker in _FORBIDDEN_MARKERS):
        raise ModelError(_DOCTYPE_REFUSED.format(file=file))


_DOCTYPE_REFUSED = ("{file} contains a DOCTYPE or entity declaration, which loopdbg refuses to "
                    "read for safety.")


def _parse_xml(raw: bytes, file: str):
    from lxml import etree

    _refuse_doctype(raw, file)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             dtd_validation=False, huge_tree=False, remove_comments=True,
                             remove_pis=True)
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as err:
        reason = _LXML_POSITION.sub("", str(err.msg or err)).strip().rstrip(".")
        line = f" (line {err.lineno})" if err.lineno else ""
        raise ModelError(f"{file} is not well-formed XML: {reason}{line}.") from None
    except ValueError as err:          # e.g. an encoding declaration lxml cannot honour
        raise ModelError(f"{file} is not well-formed XML: {err}.") from None
    if root is None:
        raise ModelError(f"{file} is not well-formed XML: no root element.")
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise ModelError(_DOCTYPE_REFUSED.format(file=file))
    return root


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


def _children(el, tags: tuple[str, ...]) -> Iterator:
    for child in el:
        if child.tag in tags:
            yield child


def _child(el, *tags: str):
    for child in el:
        if child.tag in tags:
            return child
    return None


def _attr(el, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = el.get(name)
        if value is not None:
            return value
    return None


def _int(text: str | None, attr: str, fail: Callable[[str], ModelError]) -> int:
    """Parse an integer attribute, or fail naming the attribute."""
    if text is None:
        raise fail(f"has no {attr} attribute")
    try:
        return int(text.strip())
    except ValueError:
        raise fail(f"has a non-integer {attr} '{text}'") from None


# ----------------------------------------------------------------------------------------------
# Graphs


def _read_graph(el, ctx: _Context, name: str) -> Graph:
    """Read a ``<net>`` or a ``<body>``: layers, edges, then check the edges form a DAG."""
    container = _child(el, *_LAYER_CONTAINERS)
    if container is None:
        raise ctx.fail(f"the <{el.tag}> at line {el.sourceline}", "has no <layers> element")
    layers: dict[int, Layer] = {}
    for layer_el in _children(container, _LAYER_TAGS):
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


def _read_edges(el, layers: dict[int, Layer], ctx: _Context) -> tuple[Edge, ...]:
    container = _child(el, "edges")
    if container is None:
        return ()
    edges = []
    fed: dict[tuple[int, int], object] = {}     # -> the first edge element into it
    for edge_el in _children(container, ("edge",)):
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

    def __init__(self, ctx: _Context, el):
        self.ctx, self.el = ctx, el

    def __call__(self, problem: str) -> ModelError:
        return self.ctx.fail(f"the edge at line {self.el.sourceline}", problem)


def _read_edge(edge_el, layers: dict[int, Layer], ctx: _Context) -> Edge:
    """Resolve an edge's port ids to port indices by lookup (GenericLayerParams)."""
    texts = (_attr(edge_el, _FROM_LAYER), edge_el.get("from-port"), _attr(edge_el, _TO_LAYER),
             edge_el.get("to-port"))
    fail = _LazyFail(ctx, edge_el)
    try:
        from_id, from_port_id, to_id, to_port_id = (int(t) for t in texts)
    except (TypeError, ValueError):        # the checked path, failing with the attribute's name
        from_id, from_port_id, to_id, to_port_id = (
            _int(t, attr, fail) for t, attr in zip(texts, ("from-layer", "from-port",
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


def _check_acyclic(layers: dict[int, Layer], edges: tuple[Edge, ...], ctx: _Context) -> None:
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


def _read_layer(el, ctx: _Context) -> Layer:
    ir_type = el.get("type")
    name = el.get("name", "")
    layer_id = _layer_id(el, name, ir_type, ctx)
    if not ir_type:
        raise ctx.fail(_label(layer_id, name, "?"), "has no type")
    type_ = CANONICAL_TYPES.get(ir_type, ir_type)
    label = _label(layer_id, name, type_)
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


def _layer_id(el, name: str, ir_type: str | None, ctx: _Context) -> int:
    text = el.get("id")
    try:
        return int(text)
    except (TypeError, ValueError):
        fail = ctx.failer(f"the <{el.tag}> '{name}' ({ir_type or '?'}) at line {el.sourceline}")
        return _int(text, "id", fail)


def _read_ports(el, label: str, ctx: _Context) -> tuple[Port, ...]:
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
            port_id = _int(text, "id", _port_failer(port_el, label, ctx))
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


def _port_failer(port_el, label: str, ctx: _Context) -> Callable[[str], ModelError]:
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
                           ctx: _Context) -> None:
    """Edges find ports by id, so an id declared twice would make an edge ambiguous."""
    for ports, kind in ((inputs, "input"), (outputs, "output")):
        seen: set[int] = set()
        for port in ports:
            if port.id in seen:
                raise ctx.fail(label, f"declares {kind} port id {port.id} twice")
            seen.add(port.id)


# ----------------------------------------------------------------------------------------------
# Parameter and Const


def _read_parameter(el, layer: Layer, ctx: _Context) -> Layer:
    """Check the declared shape and element type now, so the engine can trust them later."""
    if "shape" in layer.data:
        _shape_of(layer, ctx)
    et = layer.data.get("element_type")
    if et is not None and (not elements.is_known(et) or elements.onnx_only(et)):
        raise ctx.fail(layer.describe(), f"has an unknown element_type '{et}'")
    return layer


def _shape_of(layer: Layer, ctx: _Context) -> tuple[int, ...] | None:
    text = layer.data["shape"]
    try:
        return parse_shape(text)
    except ValueError as err:
        raise ctx.fail(layer.describe(), f"has a bad shape '{text}' ({err})") from None


def _read_const(el, layer: Layer, ctx: _Context) -> Layer:
    """Decode the Const's bytes (with DESER on_adapter's checks) into a read-only ``value``."""
    value = _const_value(layer.describe(), layer.data, ctx)
    return Layer(id=layer.id, name=layer.name, type=layer.type, version=layer.version,
                 data=layer.data, inputs=layer.inputs, outputs=layer.outputs,
                 subgraphs=layer.subgraphs, value=value, ir_type=layer.ir_type, line=layer.line)


def _const_value(label: str, data: dict, ctx: _Context):
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
    offset = _int(data["offset"], "offset", fail)
    size = _int(data["size"], "size", fail)
    if offset < 0 or size < 0:
        raise fail(f"has a negative offset or size ({offset}, {size})")
    raw = _const_bytes(label, offset, size, (math.prod(shape) * bits + 7) // 8, ctx)
    value = elements.decode(raw, et, shape)
    value.flags.writeable = False
    return value


def _const_bytes(label: str, offset: int, size: int, expected: int, ctx: _Context
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


def _read_loop(el, layer: Layer, ctx: _Context) -> Layer:
    label = layer.describe()
    body_el = _child(el, "body")
    if body_el is None:
        raise ctx.fail(label, "has no <body>")
    body = _read_graph(body_el, ctx.inside(label), f"{layer.name}/body")
    inputs, outputs = _read_port_map(_child(el, "port_map"), layer, body, ctx, "port_map")
    back_edges = _read_back_edges(_child(el, "back_edges"), layer, body, ctx)
    _check_fed_inputs(inputs, back_edges, layer, body, ctx)
    if not body.parameters and not body.results:
        raise ctx.fail(label, "has a body with no Parameter and no Result")
    if layer.type == "Loop" and not any(m.purpose == "execution_condition" for m in outputs):
        raise ctx.fail(label, 'has no port_map output with purpose="execution_condition"')
    _check_output_count(layer, outputs, ctx)
    sub = SubGraph(role="body", graph=body, inputs=inputs, outputs=outputs,
                   back_edges=back_edges)
    return replace(layer, subgraphs=(sub,))


def _check_fed_inputs(inputs: tuple[InputMapping, ...], back_edges: tuple[BackEdge, ...],
                      layer: Layer, body: Graph, ctx: _Context) -> None:
    """A sliced or merged input reads an outer input, so its external id must not be negative
    (only the special entries, current_iteration and condition, have none)."""
    targets = {be.to_layer for be in back_edges}
    for m in inputs:
        if m.external_port_id < 0 and m.purpose is None and (
                m.axis is not None or m.internal_layer_id in targets):
            role = "sliced" if m.axis is not None else "merged"
            target = body.layers[m.internal_layer_id].describe()
            raise ctx.fail(layer.describe(), f"feeds body {target} as a {role} input from "
                                             f"external port {m.external_port_id}, which does "
                                             f"not exist")


def _check_output_count(layer: Layer, outputs: tuple[OutputMapping, ...], ctx: _Context) -> None:
    """Output k is the k-th smallest non-negative external id, so the counts must agree.

    OpenVINO: "Number of outputs must be the same as number of output descriptions".
    """
    described = sum(1 for m in outputs if m.external_port_id >= 0)
    if described != len(layer.outputs):
        raise ctx.fail(layer.describe(), f"declares {len(layer.outputs)} output ports but its "
                                         f"port_map describes {described} outputs")


def _read_if(el, layer: Layer, ctx: _Context) -> Layer:
    """If-8: two branches, each with its own port map (no slicing, no back edges)."""
    label = layer.describe()
    subs = []
    for role, map_tag in _IF_BRANCHES:
        body_el = _child(el, role)
        if body_el is None:
            raise ctx.fail(label, f"has no <{role}>")
        body = _read_graph(body_el, ctx.inside(label, role), f"{layer.name}/{role}")
        inputs, outputs = _read_port_map(_child(el, map_tag), layer, body, ctx, map_tag)
        subs.append(SubGraph(role=role, graph=body, inputs=inputs, outputs=outputs))
    return replace(layer, subgraphs=tuple(subs))


def _read_port_map(el, layer: Layer, body: Graph, ctx: _Context, tag: str
                   ) -> tuple[tuple[InputMapping, ...], tuple[OutputMapping, ...]]:
    """Read port_map entries in file order; a repeated external id keeps the first (as OpenVINO).

    Only non-negative external ids are de-duplicated: negative ones are the special entries
    (current_iteration, execution_condition, condition), which OpenVINO reads by purpose.
    """
    if el is None:
        return (), ()
    inputs: list[InputMapping] = []
    outputs: list[OutputMapping] = []
    first_line: dict[tuple[str, int], int] = {}
    for entry in _children(el, ("input", "output")):
        mapping = _read_mapping(entry, layer, body, ctx, tag)
        key = (entry.tag, mapping.external_port_id)
        if mapping.external_port_id >= 0 and key in first_line:
            ctx.warnings.append(
                f"{ctx.file}: {layer.describe()}{ctx.scope} maps external {entry.tag} "
                f"{mapping.external_port_id} twice in <{tag}> (lines {first_line[key]} and "
                f"{entry.sourceline}); the later entry is ignored, as OpenVINO does.")
            continue
        first_line[key] = entry.sourceline
        (inputs if entry.tag == "input" else outputs).append(mapping)
    return tuple(inputs), tuple(outputs)


_MAPPING_INTS = ("axis", "start", "end", "stride", "part_size")


def _read_mapping(entry, layer: Layer, body: Graph, ctx: _Context, tag: str
                  ) -> InputMapping | OutputMapping:
    is_input = entry.tag == "input"
    bad = ctx.part_failer(layer.describe(), f"its <{tag}> {entry.tag} at line {entry.sourceline}")
    external = _int(entry.get("external_port_id"), "external_port_id", bad)
    internal = _int(_attr(entry, _INTERNAL_ID), "internal_layer_id", bad)
    values = {k: _int(entry.get(k), k, bad) for k in _MAPPING_INTS if entry.get(k) is not None}
    purpose = entry.get("purpose")
    if is_input and (entry.get("condition") or "").strip().lower() == "true":
        purpose = "condition"
    _check_mapping_target(body, internal, is_input, bad)
    if not is_input:
        return OutputMapping(external, internal, purpose=purpose, **values)
    if values.get("axis", 0) < 0:
        raise bad(f"has a negative axis {values['axis']}, which OpenVINO refuses for inputs")
    if layer.inputs and external >= len(layer.inputs):
        raise bad(f"maps external input {external} but the layer has only "
                  f"{len(layer.inputs)} inputs")
    return InputMapping(external, internal, purpose=purpose, **values)


def _check_mapping_target(body: Graph, internal: int, is_input: bool,
                          bad: Callable[[str], ModelError]) -> None:
    """Inputs feed a body Parameter, outputs read a body Result (up_io_map.at() in OpenVINO)."""
    wanted = "Parameter" if is_input else "Result"
    target = body.layers.get(internal)
    if target is None:
        raise bad(f"names body layer {internal}, which does not exist")
    if target.type != wanted:
        raise bad(f"names body {target.describe()}, which is not a {wanted}")


def _read_back_edges(el, layer: Layer, body: Graph, ctx: _Context) -> tuple[BackEdge, ...]:
    """Back edges carry a body Result's value to a body Parameter for the next iteration."""
    if el is None:
        return ()
    edges = []
    for edge_el in _children(el, ("edge",)):
        bad = ctx.part_failer(layer.describe(), f"its back edge at line {edge_el.sourceline}")
        src = _int(_attr(edge_el, _FROM_LAYER), "from-layer", bad)
        dst = _int(_attr(edge_el, _TO_LAYER), "to-layer", bad)
        for layer_id, wanted, end in ((src, "Result", "starts at"), (dst, "Parameter", "ends at")):
            target = body.layers.get(layer_id)
            if target is None:
                raise bad(f"{end} body layer {layer_id}, which does not exist")
            if target.type != wanted:
                raise bad(f"{end} body {target.describe()}, but back edges run from a Result "
                          f"to a Parameter")
        edges.append(BackEdge(src, dst))
    return tuple(edges)


_TYPE_READERS: dict[str, Callable] = {
    "Parameter": _read_parameter,
    "Constant": _read_const,
    "Loop": _read_loop,
    "TensorIterator": _read_loop,
    "If": _read_if,
}
