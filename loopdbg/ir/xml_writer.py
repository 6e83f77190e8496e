"""Write a ``Model`` as an OpenVINO IR v11 pair (``model.xml`` + ``model.bin``).

The output is meant to be read back by both loopdbg's ``read_ir`` and ``openvino.Core.read_model``,
so it follows OpenVINO's serializer where the two could disagree: port ids as stored in the model
(the builder numbers inputs ``0..n-1`` and outputs from ``n``), Loop/TensorIterator children in the
order ``port_map, back_edges, input, output, body``, If branches with ``then_port_map`` /
``else_port_map``, a ``precision`` on every port (OpenVINO refuses a port without one), and Result
``output_names`` (v11) taken from the tensor names of the port that feeds it.

Const bytes go to the ``.bin`` in first-use order (top graph first, bodies where their layer
appears), identical blobs stored once. The tree is built with lxml, which escapes every name and
attribute; the same model always gives the same bytes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lxml import etree

from loopdbg.ir.bin_writer import BlobTable, encode
from loopdbg.ir.model import Graph, Layer, Model, Port, SubGraph

IR_VERSION = "11"

# Canonical type names that OpenVINO's serializer spells differently (SER translate_type_name).
IR_SPELLINGS = {"Constant": "Const", "Relu": "ReLU", "PRelu": "PReLU", "Softmax": "SoftMax"}

_LOOP_TYPES = ("Loop", "TensorIterator")
_MAPPING_INTS = ("axis", "start", "end", "stride", "part_size")


def write_ir(model: Model, xml_path: str | Path, bin_path: str | Path | None = None
             ) -> tuple[Path, Path]:
    """Write ``model`` to ``xml_path`` and its weights to ``bin_path`` (default: ``.bin`` beside).

    The ``.bin`` is always written, empty when the model has no Const bytes, so the pair travels
    together. Returns both paths.
    """
    xml_path = Path(xml_path)
    bin_path = Path(bin_path) if bin_path is not None else xml_path.with_suffix(".bin")
    xml_bytes, bin_bytes = to_bytes(model)
    xml_path.write_bytes(xml_bytes)
    bin_path.write_bytes(bin_bytes)
    return xml_path, bin_path


def to_bytes(model: Model) -> tuple[bytes, bytes]:
    """The ``.xml`` and ``.bin`` contents of ``model``, without touching the file system."""
    table = BlobTable()
    graph = place_consts(model.graph, table)
    root = etree.Element("net")
    root.set("name", model.graph.name or "model")
    root.set("version", IR_VERSION)
    _write_graph(root, graph)
    etree.indent(root, space="\t")
    xml = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    return xml, table.getvalue()


# ----------------------------------------------------------------------------------------------
# Const layout


def place_consts(graph: Graph, table: BlobTable) -> Graph:
    """``graph`` with every Const's ``offset``, ``size`` and ``shape`` set from ``table``.

    The builder calls this too (with a throw-away table), so a built model already carries the
    offsets that ``read_ir`` will find after a write.
    """
    layers = {}
    for lid, layer in graph.layers.items():
        if layer.type == "Constant":
            layer = _place_const(layer, table)
        elif layer.subgraphs:
            layer = replace(layer, subgraphs=tuple(
                replace(sub, graph=place_consts(sub.graph, table)) for sub in layer.subgraphs))
        layers[lid] = layer
    return replace(graph, layers=layers)


def _place_const(layer: Layer, table: BlobTable) -> Layer:
    if layer.value is None:
        raise ValueError(f"{layer.describe()} has no value to write")
    et = layer.data.get("element_type")
    if et is None:
        raise ValueError(f"{layer.describe()} has no element_type")
    offset, size = table.add(encode(layer.value, et))
    data = dict(layer.data)
    data.update(element_type=et, shape=format_const_shape(layer.value.shape),
                offset=str(offset), size=str(size))
    return replace(layer, data=data)


def format_shape(shape) -> str:
    """A Parameter shape as OpenVINO writes it: ``"4,2"``, ``""``, ``"?,2"``, ``"..."``."""
    if shape is None:
        return "..."
    return ",".join("?" if d is None or d < 0 else str(int(d)) for d in shape)


def format_const_shape(shape) -> str:
    """A Const shape as OpenVINO writes it (a static shape, as a list): ``"4, 2"``."""
    return ", ".join(str(int(d)) for d in shape)


# ----------------------------------------------------------------------------------------------
# Graphs and layers


def _write_graph(parent, graph: Graph) -> None:
    layers_el = etree.SubElement(parent, "layers")
    for layer in graph.layers.values():
        _write_layer(layers_el, layer, graph)
    edges_el = etree.SubElement(parent, "edges")
    for e in graph.edges:
        src, dst = graph.layers[e.from_layer], graph.layers[e.to_layer]
        _sub(edges_el, "edge", {"from-layer": e.from_layer,
                                "from-port": src.outputs[e.from_port].id,
                                "to-layer": e.to_layer,
                                "to-port": dst.inputs[e.to_port].id})


def _write_layer(parent, layer: Layer, graph: Graph) -> None:
    attrs = {"id": layer.id, "name": layer.name,
             "type": layer.ir_type or IR_SPELLINGS.get(layer.type, layer.type),
             "version": layer.version}
    if layer.type == "Result":
        names = _result_names(layer, graph)
        if names:
            attrs["output_names"] = names
    try:
        el = _sub(parent, "layer", attrs)
        if layer.type in _LOOP_TYPES and layer.body is not None:
            _write_data(el, layer)
            _write_loop_maps(el, layer.body)
            _write_ports(el, layer)
            _write_graph(etree.SubElement(el, "body"), layer.body.graph)
        elif layer.type == "If" and layer.subgraphs:
            _write_data(el, layer)
            for sub in layer.subgraphs:
                _write_port_map(el, sub, sub.role.replace("_body", "_port_map"))
            _write_ports(el, layer)
            for sub in layer.subgraphs:
                _write_graph(etree.SubElement(el, sub.role), sub.graph)
        else:
            _write_data(el, layer)
            _write_ports(el, layer)
    except ValueError as err:          # lxml refuses control characters in names and values
        raise ValueError(f"{layer.describe()} cannot be written as XML: {err}") from None


def _result_names(layer: Layer, graph: Graph) -> str:
    src = graph.producer(layer.id, 0)
    if src is None:
        return ""
    producer = graph.layers[src[0]]
    if src[1] >= len(producer.outputs):
        return ""
    return _join_names(producer.outputs[src[1]].names)


def _join_names(names) -> str:
    """Tensor names are comma separated; a comma inside a name is escaped as ``\\,``."""
    return ",".join(n.replace(",", "\\,") for n in names)


def _write_data(el, layer: Layer) -> None:
    if layer.data:
        _sub(el, "data", layer.data)


def _write_ports(el, layer: Layer) -> None:
    for tag, ports in (("input", layer.inputs), ("output", layer.outputs)):
        if ports:
            group = etree.SubElement(el, tag)
            for port in ports:
                _write_port(group, port)


def _write_port(parent, port: Port) -> None:
    attrs = {"id": port.id, "precision": port.precision or "UNSPECIFIED"}
    if port.names:
        attrs["names"] = _join_names(port.names)
    port_el = _sub(parent, "port", attrs)
    for d in port.dims:
        etree.SubElement(port_el, "dim").text = str(d)


# ----------------------------------------------------------------------------------------------
# Port maps


def _write_loop_maps(el, sub: SubGraph) -> None:
    _write_port_map(el, sub, "port_map")
    if sub.back_edges:
        edges_el = etree.SubElement(el, "back_edges")
        for be in sub.back_edges:
            _sub(edges_el, "edge", {"from-layer": be.from_layer, "to-layer": be.to_layer})


def _write_port_map(el, sub: SubGraph, tag: str) -> None:
    map_el = etree.SubElement(el, tag)
    for kind, mappings in (("input", sub.inputs), ("output", sub.outputs)):
        for m in mappings:
            attrs = {"external_port_id": m.external_port_id,
                     "internal_layer_id": m.internal_layer_id}
            if m.axis is not None:
                attrs.update((k, getattr(m, k)) for k in _MAPPING_INTS)
            if m.purpose is not None:
                attrs["purpose"] = m.purpose
            _sub(map_el, kind, attrs)


def _sub(parent, tag: str, attrs) -> etree._Element:
    """A child element with ``attrs`` (values turned to strings) set in the given order."""
    el = etree.SubElement(parent, tag)
    for key, value in attrs.items():
        el.set(key, str(value))
    return el
