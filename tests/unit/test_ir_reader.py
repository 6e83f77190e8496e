"""read_ir on the spec examples, the corpus (when present) and small hand-written IRs."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from loopdbg.errors import ModelError
from loopdbg.ir import read_ir
from loopdbg.ir.model import (CONCAT, CURRENT_ITERATION, EXECUTION_CONDITION, LAST_VALUE, MERGED, SLICED, classify_inputs, classify_outputs)
from loopdbg.ir.xml_reader import parse_shape

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"


# ---------------------------------------------------------------------------------------------
# Small IR builders (kept inline so each test shows the XML it reads)


def port(pid, *dims, precision="FP32", names=None):
    names_attr = f' names="{names}"' if names is not None else ""
    body = "".join(f"<dim>{d}</dim>" for d in dims)
    return f'<port id="{pid}" precision="{precision}"{names_attr}>{body}</port>'


def lay(lid, type_, name=None, *, data=None, ins=(), outs=(), inner="", tag="layer",
        version="opset1"):
    name = name if name is not None else f"n{lid}"
    data_xml = ""
    if data is not None:
        data_xml = "<data " + " ".join(f'{k}="{v}"' for k, v in data.items()) + "/>"
    ins_xml = "<input>" + "".join(p if isinstance(p, str) else port(p) for p in ins) + "</input>" if ins else ""
    outs_xml = "<output>" + "".join(p if isinstance(p, str) else port(p) for p in outs) + "</output>" if outs else ""
    return (f'<{tag} id="{lid}" name="{name}" type="{type_}" version="{version}">'
            f"{data_xml}{ins_xml}{outs_xml}{inner}</{tag}>")


def edge(fl, fp, tl, tp, kind="layer"):
    return f'<edge from-{kind}="{fl}" from-port="{fp}" to-{kind}="{tl}" to-port="{tp}"/>'


def graph(layers, edges, container="layers"):
    return f"<{container}>{''.join(layers)}</{container}><edges>{''.join(edges)}</edges>"


def net(layers, edges, version=11, container="layers"):
    return f'<?xml version="1.0"?>\n<net name="t" version="{version}">{graph(layers, edges, container)}</net>'


def write(tmp_path, xml, weights=None, name="model"):
    path = tmp_path / f"{name}.xml"
    path.write_text(xml)
    if weights is not None:
        (tmp_path / f"{name}.bin").write_bytes(weights)
    return path


def param(lid, shape="1,2", et="f32", name=None):
    return lay(lid, "Parameter", name, data={"shape": shape, "element_type": et}, outs=[0])


def result(lid, name=None):
    return lay(lid, "Result", name, ins=[0])


def const(lid, et, shape, offset, size, name=None, out_id=0, type_="Const"):
    return lay(lid, type_, name, data={"element_type": et, "shape": shape, "offset": offset,
                                       "size": size}, outs=[out_id])


def simple_chain(type_="Relu"):
    """Parameter 0 -> <type_> 1 -> Result 2."""
    return net([param(0), lay(1, type_, ins=[0], outs=[1]), result(2)],
               [edge(0, 0, 1, 0), edge(1, 1, 2, 0)])


def loop_body():
    """Body: Parameter 0 (x), Result 1 (x_out), Result 2 (cond_out)."""
    return graph([param(0, name="x"), result(1, "x_out"), result(2, "cond_out")],
                 [edge(0, 0, 1, 0), edge(0, 0, 2, 0)])


DEFAULT_PORT_MAP = ('<input external_port_id="2" internal_layer_id="0"/>'
                    '<output external_port_id="3" internal_layer_id="1"/>'
                    '<output external_port_id="-1" internal_layer_id="2" purpose="execution_condition"/>')
DEFAULT_BACK_EDGES = '<edge from-layer="1" to-layer="0"/>'


def loop_layer(lid=1, name="loop", type_="Loop", port_map=DEFAULT_PORT_MAP,
               back_edges=DEFAULT_BACK_EDGES, body=None, n_in=3, version="opset5"):
    body = loop_body() if body is None else body
    inner = (f"<port_map>{port_map}</port_map><back_edges>{back_edges}</back_edges>"
             f"<body>{body}</body>")
    return lay(lid, type_, name, ins=list(range(n_in)), outs=[n_in], inner=inner,
               version=version)


def loop_net(**kw):
    """Parameter 0 -> Loop 1 (input port 2) -> Result 2; trip count and condition unconnected."""
    return net([param(0), loop_layer(**kw), result(2)], [edge(0, 0, 1, 2), edge(1, 3, 2, 0)])


# ---------------------------------------------------------------------------------------------
# The spec examples


def test_loop_example_structure():
    model = read_ir(DATA / "loop_example.xml")
    g = model.graph
    assert model.format == "ir" and model.ir_version == 11
    assert model.path == str(DATA / "loop_example.xml")
    assert model.weights_path == str(DATA / "loop_example.bin")
    assert model.warnings == ()
    assert g.name == "loop_example"
    assert list(g.layers) == [0, 1, 2, 3, 4, 5, 6]
    assert g.parameters == (0, 1) and g.results == (5, 6)
    loop = g.layers[4]
    assert loop.type == "Loop" and loop.version == "opset5"
    assert [p.id for p in loop.inputs] == [0, 1, 2, 3]
    assert [(p.id, p.index, p.names, p.dims) for p in loop.outputs] == [
        (4, 0, ("acc_final",), (1, 2)), (5, 1, ("acc_seq",), (-1, 2))]
    # Loop output port ids 4 and 5 resolve to output indices 0 and 1.
    assert g.producer(5, 0) == (4, 0) and g.producer(6, 0) == (4, 1)
    assert g.producer(4, 0) == (2, 0) and g.producer(4, 3) == (1, 0)
    assert g.n_inputs(4) == 4


def test_loop_example_consts_and_types():
    g = read_ir(DATA / "loop_example.xml").graph
    trip, cond = g.layers[2], g.layers[3]
    assert trip.type == "Constant" and trip.ir_type == "Const"
    assert trip.value.dtype == np.int64 and trip.value.shape == () and trip.value == -1
    assert cond.value.dtype == np.bool_ and bool(cond.value) is True
    assert not trip.value.flags.writeable
    assert g.layers[0].line == 4


def test_loop_example_body_and_port_map():
    loop = read_ir(DATA / "loop_example.xml").graph.layers[4]
    body = loop.body
    assert body is not None and body.role == "body" and len(loop.subgraphs) == 1
    bg = body.graph
    assert bg.parameters == (0, 1, 2) and bg.results == (6, 7, 8)
    # Add's output port id 2 is output index 0; Less's likewise.
    assert bg.producer(6, 0) == (3, 0) and bg.producer(7, 0) == (5, 0)
    assert bg.producer(3, 1) == (0, 0)
    np.testing.assert_array_equal(bg.layers[4].value, [2])
    assert [(r, m.internal_layer_id) for r, m in classify_inputs(body)] == [
        (CURRENT_ITERATION, 2), (SLICED, 0), (MERGED, 1)]
    assert [(r, m.internal_layer_id) for r, m in classify_outputs(body)] == [
        (EXECUTION_CONDITION, 7), (LAST_VALUE, 6), (CONCAT, 8)]
    assert body.back_edges[0].from_layer == 6 and body.back_edges[0].to_layer == 1
    sliced = body.inputs[0]
    assert (sliced.axis, sliced.start, sliced.end, sliced.stride, sliced.part_size) == (0, 0, -1, 1, 1)


def test_ti_example():
    g = read_ir(DATA / "ti_example.xml").graph
    ti = g.layers[2]
    assert ti.type == "TensorIterator" and g.parameters == (0, 1) and g.results == (3, 4)
    body = ti.body
    x = body.inputs[0]
    assert (x.external_port_id, x.internal_layer_id, x.axis, x.start, x.end, x.stride,
            x.part_size) == (0, 0, 1, -1, 0, -1, 1)
    assert [r for r, _ in classify_inputs(body)] == [SLICED, MERGED]
    out = body.outputs[1]
    assert (out.axis, out.start, out.end, out.stride) == (1, -1, 0, -1)
    bg = body.graph
    assert bg.layers[4].value.dtype == np.float32 and float(bg.layers[4].value) == 0.5
    np.testing.assert_array_equal(bg.layers[2].value, [1])
    # Squeeze: input ports 0,1 and output port id 2 -> index 0.
    assert bg.producer(3, 1) == (2, 0) and bg.producer(6, 0) == (5, 0)


# ---------------------------------------------------------------------------------------------
# The corpus (copied to tests/corpus by the corpus owner; skipped until it is there)


CORPUS_CASES = sorted(p.parent.name for p in CORPUS.glob("*/model.xml")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS_CASES, reason="tests/corpus not populated yet")
@pytest.mark.parametrize("case", CORPUS_CASES)
def test_corpus_model_reads(case):
    model = read_ir(CORPUS / case / "model.xml")
    g = model.graph
    manifest_path = CORPUS / case / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        assert [g.layers[i].name for i in g.parameters] == [i["name"] for i in manifest["inputs"]]
        by_index = sorted(manifest["outputs"], key=lambda o: o["output_index"])
        assert list(g.results) == [o["result_layer_id"] for o in by_index]
        assert model.ir_version == manifest.get("ir_version", 11)
    loops = [l for l in g.layers.values() if l.type in ("Loop", "TensorIterator")]
    assert loops and all(l.body is not None for l in loops)


# ---------------------------------------------------------------------------------------------
# Ports, edges, names, types


def test_ports_are_resolved_by_id_not_position(tmp_path):
    # Old MO style: a Const with no inputs has output port id 1; Add's inputs are listed 5, 3.
    xml = net([param(0), const(1, "f32", "2", 0, 8, out_id=1),
               lay(2, "Add", ins=[port(5), port(3)], outs=[port(9)]), result(3)],
              [edge(0, 0, 2, 3), edge(1, 1, 2, 5), edge(2, 9, 3, 0)])
    g = read_ir(write(tmp_path, xml, struct.pack("<2f", 1.0, 2.0))).graph
    assert g.producer(2, 0) == (1, 0)        # port id 5 is the first input
    assert g.producer(2, 1) == (0, 0)        # port id 3 is the second input
    assert g.producer(3, 0) == (2, 0)
    np.testing.assert_array_equal(g.layers[1].value, [1.0, 2.0])


def test_edges_keep_file_order(tmp_path):
    g = read_ir(write(tmp_path, simple_chain())).graph
    assert [(e.from_layer, e.to_layer) for e in g.edges] == [(0, 1), (1, 2)]


def test_port_names_dims_and_precision(tmp_path):
    out = port(1, 2, -1, "?", precision="FP16", names=r"a, b,c\,d,")
    xml = net([param(0), lay(1, "Relu", ins=[0], outs=[out]), result(2)],
              [edge(0, 0, 1, 0), edge(1, 1, 2, 0)])
    p = read_ir(write(tmp_path, xml)).graph.layers[1].outputs[0]
    assert p.names == ("a", "b", "c,d")
    assert p.dims == (2, -1, -1) and p.precision == "FP16" and p.index == 0


@pytest.mark.parametrize("ir_type, canonical", [
    ("Const", "Constant"), ("ReLU", "Relu"), ("PReLU", "PRelu"), ("SoftMax", "Softmax"),
    ("Relu", "Relu"), ("Softmax", "Softmax"),
])
def test_type_names_are_canonical_and_file_spelling_is_kept(tmp_path, ir_type, canonical):
    if ir_type == "Const":
        xml = net([const(0, "f32", "", 0, 4, type_="Const"), result(1)], [edge(0, 0, 1, 0)])
        layer = read_ir(write(tmp_path, xml, b"\0\0\x80\x3f")).graph.layers[0]
    else:
        layer = read_ir(write(tmp_path, simple_chain(ir_type))).graph.layers[1]
    assert layer.type == canonical and layer.ir_type == ir_type


def test_constant_spelling_is_read_as_const(tmp_path):
    xml = net([const(0, "i32", "2", 0, 8, type_="Constant"), result(1)], [edge(0, 0, 1, 0)])
    layer = read_ir(write(tmp_path, xml, struct.pack("<2i", 7, -3))).graph.layers[0]
    np.testing.assert_array_equal(layer.value, [7, -3])
    assert layer.value.dtype == np.int32


def test_data_is_a_dict_of_strings(tmp_path):
    xml = net([param(0), lay(1, "Add", data={"auto_broadcast": "numpy", "x": "1, 2"},
                             ins=[0, 1], outs=[2]), result(2)],
              [edge(0, 0, 1, 0), edge(0, 0, 1, 1), edge(1, 2, 2, 0)])
    layer = read_ir(write(tmp_path, xml)).graph.layers[1]
    assert dict(layer.data) == {"auto_broadcast": "numpy", "x": "1, 2"}
    assert layer.version == "opset1"


def test_parameters_and_results_follow_xml_order_not_ids(tmp_path):
    xml = net([result(9, "r9"), param(5, name="p5"), lay(1, "Add", ins=[0, 1], outs=[2]),
               param(2, name="p2"), result(0, "r0")],
              [edge(5, 0, 1, 0), edge(2, 0, 1, 1), edge(1, 2, 9, 0), edge(1, 2, 0, 0)])
    g = read_ir(write(tmp_path, xml)).graph
    assert g.parameters == (5, 2) and g.results == (9, 0)
    assert list(g.layers) == [9, 5, 1, 2, 0]


def test_ir_version_10_is_accepted(tmp_path):
    assert read_ir(write(tmp_path, net([param(0), result(1)], [edge(0, 0, 1, 0)],
                                       version=10))).ir_version == 10


def test_rt_info_and_unknown_children_are_ignored(tmp_path):
    xml = net([param(0), lay(1, "Relu", ins=[0], outs=[1],
                             inner='<rt_info><attribute name="x" version="0"/></rt_info>'),
               result(2)], [edge(0, 0, 1, 0), edge(1, 1, 2, 0)])
    xml = xml.replace("</net>", "<rt_info><info name='a' value='b'/></rt_info></net>")
    assert len(read_ir(write(tmp_path, xml)).graph.layers) == 3


# ---------------------------------------------------------------------------------------------
# Shapes


@pytest.mark.parametrize("text, shape", [
    ("", ()), ("  ", ()), ("2,3", (2, 3)), ("3, 3", (3, 3)), ("?,2", (-1, 2)), ("-1,2", (-1, 2)),
    ("1..10,3", (-1, 3)), ("..5", (-1,)), ("2..", (-1,)), ("...", None), ("0", (0,)),
])
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text", ["a", "2,,3", "-2", "1.5", "2;3", "1..x"])
def test_parse_shape_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_shape(text)


def test_parameter_shapes_are_accepted(tmp_path):
    for shape in ("", "2,3", "?,2", "-1,2", "1..10,3", "..."):
        xml = net([param(0, shape=shape), result(1)], [edge(0, 0, 1, 0)])
        g = read_ir(write(tmp_path, xml)).graph
        assert g.layers[0].data["shape"] == shape


def test_bad_parameter_shape_names_the_layer(tmp_path):
    path = write(tmp_path, net([param(0, shape="2,x", name="inp"), result(1)],
                               [edge(0, 0, 1, 0)]))
    with pytest.raises(ModelError) as err:
        read_ir(path)
    assert str(path) in str(err.value) and "layer 0 'inp' (Parameter)" in str(err.value)
    assert "2,x" in str(err.value)


def test_bad_parameter_element_type_names_the_layer(tmp_path):
    path = write(tmp_path, net([param(0, et="f31"), result(1)], [edge(0, 0, 1, 0)]))
    with pytest.raises(ModelError, match=r"layer 0 'n0' \(Parameter\).*f31"):
        read_ir(path)


# ---------------------------------------------------------------------------------------------
# Const and the .bin


def test_bin_path_defaults_to_xml_with_bin_suffix_and_can_be_given(tmp_path):
    xml = net([const(0, "i64", "", 8, 8), result(1)], [edge(0, 0, 1, 0)])
    path = write(tmp_path, xml, struct.pack("<2q", 1, 42))
    assert read_ir(path).graph.layers[0].value == 42
    other = tmp_path / "weights.data"
    other.write_bytes(struct.pack("<2q", 5, 6))
    model = read_ir(path, bin_path=other)
    assert model.graph.layers[0].value == 6 and model.weights_path == str(other)


def test_missing_bin_is_fine_without_consts(tmp_path):
    model = read_ir(write(tmp_path, simple_chain()))
    assert model.weights_path is None


def test_shared_offsets_are_allowed(tmp_path):
    # The serializer deduplicates identical blobs; odd offsets are legal.
    xml = net([const(0, "f32", "", 1, 4), const(1, "f32", "", 1, 4), lay(2, "Add", ins=[0, 1], outs=[2]),
               result(3)], [edge(0, 0, 2, 0), edge(1, 0, 2, 1), edge(2, 2, 3, 0)])
    g = read_ir(write(tmp_path, xml, b"\xff" + struct.pack("<f", 2.5))).graph
    assert g.layers[0].value == 2.5 and g.layers[1].value == 2.5


@pytest.mark.parametrize("et, shape, raw, expected", [
    ("u1", "9", bytes([0xB0, 0x80]), [1, 0, 1, 1, 0, 0, 0, 0, 1]),
    ("u4", "3", bytes([0x21, 0x03]), [1, 2, 3]),
    ("i4", "3", bytes([0x7F, 0x08]), [-1, 7, -8]),
    ("boolean", "2", b"\x01\x00", [True, False]),
    ("f16", "2", np.array([1.5, -2.0], "<f2").tobytes(), [1.5, -2.0]),
    ("bf16", "1", np.array([0x3FC0], "<u2").tobytes(), [1.5]),
])
def test_const_sub_byte_and_special_types(tmp_path, et, shape, raw, expected):
    xml = net([const(0, et, shape, 0, len(raw)), result(1)], [edge(0, 0, 1, 0)])
    value = read_ir(write(tmp_path, xml, raw)).graph.layers[0].value
    np.testing.assert_array_equal(value, expected)


def test_const_zero_elements_needs_no_bin(tmp_path):
    xml = net([const(0, "f32", "0,3", 0, 0), result(1)], [edge(0, 0, 1, 0)])
    value = read_ir(write(tmp_path, xml)).graph.layers[0].value
    assert value.shape == (0, 3)


def test_consts_in_nested_bodies_share_the_bin(tmp_path):
    body = graph([param(0, name="x"), const(5, "f32", "", 4, 4, name="k"), result(1, "x_out"),
                  result(2, "cond_out")], [edge(0, 0, 1, 0), edge(5, 0, 2, 0)])
    xml = loop_net(body=body)
    g = read_ir(write(tmp_path, xml, struct.pack("<2f", 1.0, 9.0))).graph
    assert g.layers[1].body.graph.layers[5].value == 9.0


# ---------------------------------------------------------------------------------------------
# Loop, TensorIterator, If


def test_minimal_loop_with_unconnected_trip_count_and_condition(tmp_path):
    g = read_ir(write(tmp_path, loop_net())).graph
    loop = g.layers[1]
    assert g.n_inputs(1) == 1 and g.producer(1, 2) == (0, 0) and g.producer(1, 0) is None
    body = loop.body
    assert [r for r, _ in classify_inputs(body)] == [MERGED]
    assert [r for r, _ in classify_outputs(body)] == [EXECUTION_CONDITION, LAST_VALUE]


def test_port_map_defaults_and_all_attributes(tmp_path):
    pm = ('<input external_port_id="2" internal_layer_id="0" axis="1" start="-1" end="0" '
          'stride="-2" part_size="2"/>'
          '<output external_port_id="3" internal_layer_id="1" axis="-1"/>'
          '<output external_port_id="-1" internal_layer_id="2" purpose="execution_condition"/>')
    body = loop_layer(port_map=pm, back_edges="")
    g = read_ir(write(tmp_path, net([param(0), body, result(2)],
                                    [edge(0, 0, 1, 2), edge(1, 3, 2, 0)]))).graph
    sub = g.layers[1].body
    i = sub.inputs[0]
    assert (i.axis, i.start, i.end, i.stride, i.part_size, i.purpose) == (1, -1, 0, -2, 2, None)
    o = sub.outputs[0]
    assert (o.axis, o.start, o.end, o.stride, o.part_size) == (-1, 0, -1, 1, 1)
    assert sub.outputs[1].axis is None and sub.back_edges == ()


def test_tensor_iterator_does_not_need_execution_condition(tmp_path):
    pm = ('<input external_port_id="0" internal_layer_id="0" axis="0"/>'
          '<output external_port_id="1" internal_layer_id="1" axis="0"/>')
    xml = net([param(0), loop_layer(type_="TensorIterator", port_map=pm, back_edges="", n_in=1,
                                    version="opset1"), result(2)],
              [edge(0, 0, 1, 0), edge(1, 1, 2, 0)])
    sub = read_ir(write(tmp_path, xml)).graph.layers[1].body
    assert [r for r, _ in classify_outputs(sub)] == [CONCAT]


def test_nested_loop_bodies_any_depth(tmp_path):
    inner = loop_layer(lid=7, name="inner", n_in=3)
    mid_body = graph([param(0, name="x"), inner, result(1, "x_out"), result(2, "cond_out")],
                     [edge(0, 0, 7, 2), edge(7, 3, 1, 0), edge(0, 0, 2, 0)])
    mid = loop_layer(lid=8, name="mid", body=mid_body)
    outer_body = graph([param(0, name="x"), mid, result(1, "x_out"), result(2, "cond_out")],
                       [edge(0, 0, 8, 2), edge(8, 3, 1, 0), edge(0, 0, 2, 0)])
    g = read_ir(write(tmp_path, loop_net(body=outer_body))).graph
    mid_layer = g.layers[1].body.graph.layers[8]
    inner_layer = mid_layer.body.graph.layers[7]
    assert inner_layer.name == "inner" and inner_layer.body.graph.parameters == (0,)


def test_if_branches(tmp_path):
    then_body = graph([param(0, name="a"), lay(1, "Relu", ins=[0], outs=[1]), result(2)],
                      [edge(0, 0, 1, 0), edge(1, 1, 2, 0)])
    else_body = graph([param(0, name="b"), result(1)], [edge(0, 0, 1, 0)])
    inner = (f'<then_port_map><input external_port_id="1" internal_layer_id="0"/>'
             f'<output external_port_id="0" internal_layer_id="2"/></then_port_map>'
             f'<else_port_map><input external_port_id="1" internal_layer_id="0"/>'
             f'<output external_port_id="0" internal_layer_id="1"/></else_port_map>'
             f"<then_body>{then_body}</then_body><else_body>{else_body}</else_body>")
    xml = net([param(0, et="boolean", shape=""), param(1), lay(2, "If", ins=[0, 1], outs=[2],
                                                             inner=inner, version="opset8"),
               result(3)], [edge(0, 0, 2, 0), edge(1, 0, 2, 1), edge(2, 2, 3, 0)])
    layer = read_ir(write(tmp_path, xml)).graph.layers[2]
    assert [s.role for s in layer.subgraphs] == ["then_body", "else_body"]
    assert layer.body is None
    then_sub, else_sub = layer.subgraphs
    assert then_sub.inputs[0].internal_layer_id == 0 and then_sub.outputs[0].internal_layer_id == 2
    assert else_sub.outputs[0].internal_layer_id == 1 and else_sub.back_edges == ()


def test_duplicate_external_port_id_keeps_first_and_warns(tmp_path):
    body = graph([param(0, name="x"), param(3, name="y"), result(1, "x_out"), result(2, "c")],
                 [edge(0, 0, 1, 0), edge(3, 0, 2, 0)])
    pm = ('<input external_port_id="2" internal_layer_id="0"/>'
          '<input external_port_id="2" internal_layer_id="3"/>'
          '<output external_port_id="3" internal_layer_id="1"/>'
          '<output external_port_id="-1" internal_layer_id="2" purpose="execution_condition"/>')
    path = write(tmp_path, loop_net(port_map=pm, body=body))
    model = read_ir(path)
    sub = model.graph.layers[1].body
    assert [m.internal_layer_id for m in sub.inputs] == [0]
    assert len(model.warnings) == 1
    assert str(path) in model.warnings[0] and "layer 1 'loop' (Loop)" in model.warnings[0]
    assert "external input 2" in model.warnings[0]


# ---------------------------------------------------------------------------------------------
# Synonyms (docs/semantics.md rule 15)


def test_operation_and_operations_synonyms(tmp_path):
    layers = [param(0, name="a").replace("<layer", "<operation").replace("</layer>", "</operation>"),
              lay(1, "Relu", ins=[0], outs=[1], tag="operation"), result(2)]
    xml = net(layers, [edge(0, 0, 1, 0), edge(1, 1, 2, 0)], container="operations")
    g = read_ir(write(tmp_path, xml)).graph
    assert list(g.layers) == [0, 1, 2] and g.producer(2, 0) == (1, 0)


def test_from_operation_to_operation_synonyms(tmp_path):
    xml = net([param(0), lay(1, "Relu", ins=[0], outs=[1]), result(2)],
              [edge(0, 0, 1, 0, kind="operation"), edge(1, 1, 2, 0, kind="operation")])
    g = read_ir(write(tmp_path, xml)).graph
    assert g.producer(1, 0) == (0, 0) and g.producer(2, 0) == (1, 0)


def test_internal_operation_id_and_back_edge_operation_synonyms(tmp_path):
    pm = DEFAULT_PORT_MAP.replace("internal_layer_id", "internal_operation_id")
    be = '<edge from-operation="1" to-operation="0"/>'
    sub = read_ir(write(tmp_path, loop_net(port_map=pm, back_edges=be))).graph.layers[1].body
    assert [m.internal_layer_id for m in sub.inputs] == [0]
    assert [m.internal_layer_id for m in sub.outputs] == [1, 2]
    assert sub.back_edges[0].from_layer == 1 and sub.back_edges[0].to_layer == 0


@pytest.mark.parametrize("flag", ["True", "true"])
def test_condition_true_marks_a_condition_input(tmp_path, flag):
    body = graph([param(0, name="x"), param(3, name="cond_in", et="boolean", shape=""),
                  result(1, "x_out"), result(2, "cond_out")],
                 [edge(0, 0, 1, 0), edge(3, 0, 2, 0)])
    pm = (DEFAULT_PORT_MAP
          + f'<input external_port_id="1" internal_layer_id="3" condition="{flag}"/>')
    sub = read_ir(write(tmp_path, loop_net(port_map=pm, body=body))).graph.layers[1].body
    cond = [m for m in sub.inputs if m.internal_layer_id == 3][0]
    assert cond.purpose == "condition"
    assert ("condition", cond) in classify_inputs(sub)


# ---------------------------------------------------------------------------------------------
# Package surface


def test_import_loopdbg_ir_is_lazy():
    import subprocess
    import sys
    # lxml is only needed once a file is actually parsed.
    code = ("import sys, loopdbg.ir; assert 'lxml' not in sys.modules; "
            "assert 'loopdbg.ir.xml_reader' not in sys.modules; "
            "from loopdbg.ir import read_ir, parse_shape; assert 'lxml' not in sys.modules; "
            "assert parse_shape('2,3') == (2, 3)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reading_is_fast():
    import time
    read_ir(DATA / "loop_example.xml")
    start = time.perf_counter()
    for _ in range(10):
        read_ir(DATA / "loop_example.xml")
    assert (time.perf_counter() - start) / 10 < 0.05
