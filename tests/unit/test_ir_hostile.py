"""Malformed and malicious IR files: each is refused with one sentence naming the file and layer."""

from __future__ import annotations

import os
import struct
import threading
import time

import pytest

from loopdbg.errors import ModelError
from loopdbg.ir import read_ir


# ---------------------------------------------------------------------------------------------
# Small IR builders (same shapes as in test_ir_reader.py, kept local to keep files independent)


def port(pid, *dims):
    return f'<port id="{pid}" precision="FP32">' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"


def lay(lid, type_, name=None, *, data=None, ins=(), outs=(), inner="", version="opset1"):
    name = name if name is not None else f"n{lid}"
    data_xml = ("<data " + " ".join(f'{k}="{v}"' for k, v in data.items()) + "/>") if data else ""
    ins_xml = "<input>" + "".join(p if isinstance(p, str) else port(p) for p in ins) + "</input>" if ins else ""
    outs_xml = "<output>" + "".join(p if isinstance(p, str) else port(p) for p in outs) + "</output>" if outs else ""
    return (f'<layer id="{lid}" name="{name}" type="{type_}" version="{version}">'
            f"{data_xml}{ins_xml}{outs_xml}{inner}</layer>")


def edge(fl, fp, tl, tp):
    return f'<edge from-layer="{fl}" from-port="{fp}" to-layer="{tl}" to-port="{tp}"/>'


def graph(layers, edges):
    return f"<layers>{''.join(layers)}</layers><edges>{''.join(edges)}</edges>"


def net(layers, edges, version=11):
    return f'<?xml version="1.0"?>\n<net name="t" version="{version}">{graph(layers, edges)}</net>'


def param(lid, name=None, shape="1,2"):
    return lay(lid, "Parameter", name, data={"shape": shape, "element_type": "f32"}, outs=[0])


def result(lid, name=None):
    return lay(lid, "Result", name, ins=[0])


def const(lid, et="f32", shape="2", offset=0, size=8, name=None):
    return lay(lid, "Const", name, data={"element_type": et, "shape": shape, "offset": offset,
                                         "size": size}, outs=[0])


def chain(mid):
    """Parameter 0 -> mid (layer 1, input port 0, output port 1) -> Result 2."""
    return net([param(0), mid, result(2)], [edge(0, 0, 1, 0), edge(1, 1, 2, 0)])


def body_graph(extra_layers=(), extra_edges=()):
    """Body: Parameter 0 (x), Result 1 (x_out), Result 2 (cond_out)."""
    return graph([param(0, "x"), result(1, "x_out"), result(2, "cond_out"), *extra_layers],
                 [edge(0, 0, 1, 0), edge(0, 0, 2, 0), *extra_edges])


PORT_MAP = ('<input external_port_id="2" internal_layer_id="0"/>'
            '<output external_port_id="3" internal_layer_id="1"/>'
            '<output external_port_id="-1" internal_layer_id="2" purpose="execution_condition"/>')
BACK_EDGES = '<edge from-layer="1" to-layer="0"/>'


def loop_layer(lid=1, name="loop", type_="Loop", port_map=PORT_MAP, back_edges=BACK_EDGES,
               body=None, with_body=True):
    body = body_graph() if body is None else body
    inner = f"<port_map>{port_map}</port_map><back_edges>{back_edges}</back_edges>"
    if with_body:
        inner += f"<body>{body}</body>"
    return lay(lid, type_, name, ins=[0, 1, 2], outs=[3], inner=inner, version="opset5")


def loop_net(**kw):
    return net([param(0), loop_layer(**kw), result(2)], [edge(0, 0, 1, 2), edge(1, 3, 2, 0)])


LOOP = "layer 1 'loop' (Loop)"


def write(tmp_path, content, weights=None):
    path = tmp_path / "model.xml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    if weights is not None:
        path.with_suffix(".bin").write_bytes(weights)
    return path


def refused(tmp_path, content, *fragments, weights=None) -> str:
    """Read ``content``, expect a ModelError naming the file and every fragment; return it."""
    path = write(tmp_path, content, weights)
    with pytest.raises(ModelError) as info:
        read_ir(path)
    message = str(info.value)
    assert str(path) in message, message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert "\n" not in message and message.endswith("."), message
    return message


# ---------------------------------------------------------------------------------------------
# Not an IR at all


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        read_ir(tmp_path / "nope.xml")


def test_directory_instead_of_file(tmp_path):
    (tmp_path / "d.xml").mkdir()
    with pytest.raises(ModelError, match="directory"):
        read_ir(tmp_path / "d.xml")


@pytest.mark.parametrize("content", ["", "   \n\t"])
def test_empty_file(tmp_path, content):
    refused(tmp_path, content, "is empty")


def test_not_xml(tmp_path):
    refused(tmp_path, "this is not xml", "is not well-formed XML", "(line 1)")


def test_truncated_xml(tmp_path):
    text = chain(lay(1, "Relu", ins=[0], outs=[1]))
    msg = refused(tmp_path, text[: len(text) // 2], "is not well-formed XML", "(line ")
    assert msg.count("line") >= 1


def test_binary_garbage(tmp_path):
    refused(tmp_path, bytes(range(256)) * 4, "is not well-formed XML")


def test_wrong_root(tmp_path):
    refused(tmp_path, '<?xml version="1.0"?><model version="11"/>', "root element is <model>")


@pytest.mark.parametrize("version", ["9", "12", "abc", None])
def test_unsupported_version(tmp_path, version):
    attr = f' version="{version}"' if version is not None else ""
    refused(tmp_path, f'<net name="x"{attr}><layers/></net>', "unsupported IR version")


def test_net_without_layers(tmp_path):
    refused(tmp_path, '<net name="x" version="11"><edges/></net>', "has no <layers>")


# ---------------------------------------------------------------------------------------------
# Layers and ports


def test_missing_layer_id(tmp_path):
    refused(tmp_path, chain(lay(1, "Relu", "r", ins=[0], outs=[1]).replace('id="1" ', "", 1)),
            "'r' (Relu)", "has no id")


def test_non_integer_layer_id(tmp_path):
    refused(tmp_path, chain(lay("x1", "Relu", "r", ins=[0], outs=[1])), "'r' (Relu)",
            "non-integer id 'x1'")


def test_duplicate_layer_id(tmp_path):
    xml = net([param(0, "a"), param(0, "b"), result(2)], [edge(0, 0, 2, 0)])
    refused(tmp_path, xml, "layer 0 'b' (Parameter)", "reuses the id of layer 0 'a' (Parameter)")


def test_layer_without_type(tmp_path):
    refused(tmp_path, chain(lay(1, "Relu", "r", ins=[0], outs=[1]).replace(' type="Relu"', "")),
            "layer 1 'r' (?)", "has no type")


def test_non_integer_port_id(tmp_path):
    refused(tmp_path, chain(lay(1, "Relu", "r", ins=[port("a")], outs=[1])),
            "layer 1 'r' (Relu)", "non-integer id")


def test_bad_dim(tmp_path):
    refused(tmp_path, chain(lay(1, "Relu", "r", ins=[0], outs=[port(1, "x")])),
            "layer 1 'r' (Relu)", "bad <dim> 'x'")


def test_duplicate_port_id(tmp_path):
    refused(tmp_path, chain(lay(1, "Add", "r", ins=[0, 0], outs=[1])),
            "layer 1 'r' (Add)", "input port id 0 twice")


# ---------------------------------------------------------------------------------------------
# Edges and cycles


def test_edge_from_missing_layer(tmp_path):
    xml = net([param(0), result(2)], [edge(7, 0, 2, 0)])
    refused(tmp_path, xml, "starts at layer 7, which does not exist")


def test_edge_to_missing_layer(tmp_path):
    xml = net([param(0), result(2)], [edge(0, 0, 9, 0)])
    refused(tmp_path, xml, "ends at layer 9, which does not exist")


def test_edge_from_missing_port(tmp_path):
    xml = net([param(0, "p"), result(2)], [edge(0, 3, 2, 0)])
    refused(tmp_path, xml, "layer 0 'p' (Parameter)", "port 3", "not one of its output ports")


def test_edge_to_missing_port(tmp_path):
    xml = net([param(0), result(2, "out")], [edge(0, 0, 2, 1)])
    refused(tmp_path, xml, "layer 2 'out' (Result)", "port 1", "not one of its input ports")


def test_edge_with_non_integer_attribute(tmp_path):
    xml = net([param(0), result(2)], ['<edge from-layer="0" from-port="zero" to-layer="2" to-port="0"/>'])
    refused(tmp_path, xml, "the edge at line", "non-integer from-port 'zero'")


def test_edge_missing_attribute(tmp_path):
    xml = net([param(0), result(2)], ['<edge from-layer="0" from-port="0" to-layer="2"/>'])
    refused(tmp_path, xml, "has no to-port attribute")


def test_two_edges_into_one_input(tmp_path):
    xml = net([param(0), param(1), result(2, "r")], [edge(0, 0, 2, 0), edge(1, 0, 2, 0)])
    refused(tmp_path, xml, "layer 2 'r' (Result)", "two edges into input port 0")


def test_cycle(tmp_path):
    a = lay(1, "Add", "a", ins=[0, 1], outs=[2])
    b = lay(3, "Relu", "b", ins=[0], outs=[1])
    xml = net([param(0), a, b, result(2)],
              [edge(0, 0, 1, 0), edge(3, 1, 1, 1), edge(1, 2, 3, 0), edge(1, 2, 2, 0)])
    msg = refused(tmp_path, xml, "is part of a cycle")
    assert "layer 1 'a' (Add)" in msg or "layer 3 'b' (Relu)" in msg


def test_self_loop(tmp_path):
    a = lay(1, "Add", "a", ins=[0, 1], outs=[2])
    xml = net([param(0), a, result(2)], [edge(0, 0, 1, 0), edge(1, 2, 1, 1), edge(1, 2, 2, 0)])
    refused(tmp_path, xml, "layer 1 'a' (Add)", "cycle")


def test_cycle_inside_a_body_names_the_loop(tmp_path):
    cyc = [lay(5, "Add", "a", ins=[0, 1], outs=[2]), lay(6, "Relu", "b", ins=[0], outs=[1])]
    body = body_graph(cyc, [edge(6, 1, 5, 0), edge(5, 2, 6, 0)])
    refused(tmp_path, loop_net(body=body), "cycle", f"in the body of {LOOP}")


# ---------------------------------------------------------------------------------------------
# Parameter and Const


def test_const_without_bin(tmp_path):
    xml = net([const(0, name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", "needs weights but",
            str(tmp_path / "model.bin"), "does not exist")


def test_const_in_body_without_bin_names_the_loop(tmp_path):
    body = body_graph([const(5, name="w")], [])
    refused(tmp_path, loop_net(body=body), "layer 5 'w' (Constant)", f"in the body of {LOOP}",
            "needs weights")


def test_const_beyond_end_of_bin(tmp_path):
    xml = net([const(0, offset=4, size=8, name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", "has only 8 bytes", weights=b"\0" * 8)


def test_const_size_too_small(tmp_path):
    xml = net([const(0, size=4, name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", "does not match shape × element type",
            weights=b"\0" * 16)


def test_const_size_too_large(tmp_path):
    xml = net([const(0, size=12, name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "does not match shape × element type", "(8 bytes)", weights=b"\0" * 16)


@pytest.mark.parametrize("attr", ["element_type", "shape", "offset", "size"])
def test_const_missing_data_attribute(tmp_path, attr):
    xml = net([const(0, name="w").replace(f'{attr}="', 'x_' + attr + '="'), result(1)],
              [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", f"no '{attr}'", weights=b"\0" * 8)


@pytest.mark.parametrize("et, fragment", [("f31", "unknown element type"),
                                          ("string", "not supported"),
                                          ("dynamic", "no values")])
def test_const_bad_element_type(tmp_path, et, fragment):
    xml = net([const(0, et=et, name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", fragment, weights=b"\0" * 8)


@pytest.mark.parametrize("shape", ["?", "...", "1..4", "x"])
def test_const_shape_must_be_static(tmp_path, shape):
    xml = net([const(0, shape=shape, name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", shape, weights=b"\0" * 8)


def test_const_non_integer_offset(tmp_path):
    xml = net([const(0, offset="0x10", name="w"), result(1)], [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", "non-integer offset '0x10'", weights=b"\0" * 8)


def test_bad_parameter_shape_in_body_names_the_loop(tmp_path):
    body = body_graph([param(5, "bad", shape="1,,2")], [])
    refused(tmp_path, loop_net(body=body), "layer 5 'bad' (Parameter)", f"in the body of {LOOP}",
            "bad shape")


# ---------------------------------------------------------------------------------------------
# Loop / TensorIterator structure


def test_loop_without_body(tmp_path):
    refused(tmp_path, loop_net(with_body=False), LOOP, "has no <body>")


def test_tensor_iterator_without_body(tmp_path):
    refused(tmp_path, loop_net(type_="TensorIterator", with_body=False),
            "layer 1 'loop' (TensorIterator)", "has no <body>")


def test_loop_without_execution_condition(tmp_path):
    pm = PORT_MAP.split('<output external_port_id="-1"')[0]
    refused(tmp_path, loop_net(port_map=pm), LOOP, "execution_condition")


def test_loop_body_without_parameters_or_results(tmp_path):
    body = graph([lay(5, "Relu", "r", ins=[0], outs=[1])], [])
    refused(tmp_path, loop_net(body=body, port_map="", back_edges=""), LOOP,
            "no Parameter and no Result")


def test_loop_output_ports_must_match_port_map_outputs(tmp_path):
    pm = PORT_MAP.replace('<output external_port_id="3" internal_layer_id="1"/>', "")
    refused(tmp_path, loop_net(port_map=pm), LOOP, "declares 1 output ports",
            "describes 0 outputs")


def test_port_map_input_to_missing_layer(tmp_path):
    pm = PORT_MAP.replace('internal_layer_id="0"', 'internal_layer_id="42"')
    refused(tmp_path, loop_net(port_map=pm, back_edges=""), LOOP, "port_map> input at line",
            "body layer 42, which does not exist")


def test_port_map_input_must_name_a_parameter(tmp_path):
    pm = PORT_MAP.replace('<input external_port_id="2" internal_layer_id="0"/>',
                          '<input external_port_id="2" internal_layer_id="1"/>')
    refused(tmp_path, loop_net(port_map=pm), LOOP, "layer 1 'x_out' (Result)", "not a Parameter")


def test_port_map_output_must_name_a_result(tmp_path):
    pm = PORT_MAP.replace('<output external_port_id="3" internal_layer_id="1"/>',
                          '<output external_port_id="3" internal_layer_id="0"/>')
    refused(tmp_path, loop_net(port_map=pm), LOOP, "layer 0 'x' (Parameter)", "not a Result")


def test_port_map_output_to_missing_layer(tmp_path):
    pm = PORT_MAP.replace('internal_layer_id="2"', 'internal_layer_id="77"')
    refused(tmp_path, loop_net(port_map=pm), LOOP, "body layer 77")


@pytest.mark.parametrize("attr", ["external_port_id", "internal_layer_id", "axis", "start", "end",
                                  "stride", "part_size"])
def test_port_map_non_integer_attribute(tmp_path, attr):
    pm = PORT_MAP.replace('<input external_port_id="2" internal_layer_id="0"/>',
                          '<input external_port_id="2" internal_layer_id="0" axis="0" start="0"'
                          ' end="-1" stride="1" part_size="1"/>')
    pm = pm.replace(f' {attr}="', f' {attr}="x', 1)
    refused(tmp_path, loop_net(port_map=pm), LOOP, f"non-integer {attr}")


def test_port_map_missing_external_port_id(tmp_path):
    pm = PORT_MAP.replace('<input external_port_id="2" ', "<input ")
    refused(tmp_path, loop_net(port_map=pm), LOOP, "has no external_port_id attribute")


def test_negative_input_axis(tmp_path):
    pm = PORT_MAP.replace('internal_layer_id="0"/>', 'internal_layer_id="0" axis="-1"/>', 1)
    refused(tmp_path, loop_net(port_map=pm), LOOP, "negative axis -1")


def test_negative_output_axis_is_allowed(tmp_path):
    pm = PORT_MAP.replace('internal_layer_id="1"/>', 'internal_layer_id="1" axis="-1"/>')
    sub = read_ir(write(tmp_path, loop_net(port_map=pm))).graph.layers[1].body
    assert sub.outputs[0].axis == -1


def test_port_map_input_beyond_layer_inputs(tmp_path):
    pm = PORT_MAP.replace('<input external_port_id="2"', '<input external_port_id="5"')
    refused(tmp_path, loop_net(port_map=pm), LOOP, "external input 5", "only 3 inputs")


def test_back_edge_must_start_at_a_result(tmp_path):
    refused(tmp_path, loop_net(back_edges='<edge from-layer="0" to-layer="0"/>'), LOOP,
            "back edge at line", "starts at body layer 0 'x' (Parameter)", "Result to a Parameter")


def test_back_edge_must_end_at_a_parameter(tmp_path):
    refused(tmp_path, loop_net(back_edges='<edge from-layer="1" to-layer="2"/>'), LOOP,
            "ends at body layer 2 'cond_out' (Result)")


def test_back_edge_to_missing_layer(tmp_path):
    refused(tmp_path, loop_net(back_edges='<edge from-layer="1" to-layer="99"/>'), LOOP,
            "body layer 99, which does not exist")


def test_back_edge_non_integer(tmp_path):
    refused(tmp_path, loop_net(back_edges='<edge from-layer="one" to-layer="0"/>'), LOOP,
            "non-integer from-layer 'one'")


def test_error_in_a_nested_body_names_every_enclosing_loop(tmp_path):
    inner = loop_layer(lid=7, name="inner", with_body=False)
    body = body_graph([inner], [])
    msg = refused(tmp_path, loop_net(body=body), "layer 7 'inner' (Loop)",
                  f"in the body of {LOOP}", "has no <body>")
    assert msg.index("inner") < msg.index(LOOP)


def test_error_two_levels_deep(tmp_path):
    innermost_body = body_graph([const(9, name="w")], [])
    inner = loop_layer(lid=7, name="inner", body=innermost_body)
    body = body_graph([inner], [])
    refused(tmp_path, loop_net(body=body),
            f"layer 9 'w' (Constant) in the body of layer 7 'inner' (Loop) in the body of {LOOP}")


# ---------------------------------------------------------------------------------------------
# Malicious XML: DOCTYPE, external entities, entity bombs, deep nesting


def test_doctype_with_external_entity_is_refused_without_reading_the_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    xml = (f'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
           '<net name="&xxe;" version="11"><layers/></net>')
    msg = refused(tmp_path, xml, "DOCTYPE")
    assert "TOP-SECRET" not in msg


def test_external_entity_pointing_at_a_fifo_is_never_opened(tmp_path):
    # Opening a FIFO for reading blocks until a writer appears: a reader that tried to resolve the
    # entity would hang, so finishing promptly proves the file was never opened.
    fifo = tmp_path / "trap"
    os.mkfifo(fifo)
    xml = (f'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY xxe SYSTEM "{fifo}">]>\n'
           '<net name="x" version="11"><layers>&xxe;</layers></net>')
    path = write(tmp_path, xml)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(_capture(path)), daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():          # unblock the reader before failing
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("read_ir opened the external entity")
    assert isinstance(outcome[0], ModelError) and "DOCTYPE" in str(outcome[0])


def _capture(path):
    try:
        read_ir(path)
    except Exception as err:      # noqa: BLE001 - the test inspects whatever was raised
        return err
    return None


def test_billion_laughs_is_refused_quickly(tmp_path):
    entities = ['<!ENTITY lol "lol">']
    for i in range(1, 10):
        prev = "lol" if i == 1 else f"lol{i - 1}"
        entities.append(f'<!ENTITY lol{i} "' + f"&{prev};" * 10 + '">')
    xml = ('<?xml version="1.0"?>\n<!DOCTYPE net [' + "".join(entities) + "]>\n"
           '<net name="&lol9;" version="11"><layers/></net>')
    start = time.perf_counter()
    refused(tmp_path, xml, "DOCTYPE")
    assert time.perf_counter() - start < 1.0


def test_parameter_entity_is_refused(tmp_path):
    xml = ('<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY % p SYSTEM "http://example.invalid/x">'
           ' %p;]>\n<net version="11"><layers/></net>')
    refused(tmp_path, xml, "DOCTYPE")


def test_plain_doctype_is_refused(tmp_path):
    refused(tmp_path, '<?xml version="1.0"?>\n<!DOCTYPE net>\n<net version="11"><layers/></net>',
            "DOCTYPE")


def test_lowercase_doctype_is_refused(tmp_path):
    refused(tmp_path, '<!doctype net>\n<net version="11"><layers/></net>')


def test_utf16_doctype_is_refused(tmp_path):
    xml = ('<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE net [<!ENTITY a "b">]>\n'
           '<net name="&a;" version="11"><layers/></net>')
    refused(tmp_path, xml.encode("utf-16"), "DOCTYPE")


def test_doctype_is_refused_after_parsing_too(tmp_path, monkeypatch):
    # Second line of defence: even if the byte scan missed it, the parsed docinfo is checked,
    # and the parser itself never expands entities or loads DTDs.
    from loopdbg.ir import safe_xml
    monkeypatch.setattr(safe_xml, "refuse_doctype", lambda raw, file: None)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    xml = (f'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
           '<net name="x" version="11"><layers/>&xxe;</net>')
    msg = refused(tmp_path, xml, "DOCTYPE")
    assert "TOP-SECRET" not in msg


def test_deeply_nested_xml_is_refused_not_a_crash(tmp_path):
    depth = 20000
    xml = '<net version="11">' + "<a>" * depth + "</a>" * depth + "</net>"
    refused(tmp_path, xml, "is not well-formed XML")


def test_processing_instructions_and_comments_are_ignored(tmp_path):
    xml = net([param(0), "<!-- a comment -->", "<?pi data?>", result(1)], [edge(0, 0, 1, 0)])
    assert len(read_ir(write(tmp_path, xml)).graph.layers) == 2


def test_huge_const_size_does_not_allocate(tmp_path):
    xml = net([const(0, shape="1000000000000", size=4000000000000, name="w"), result(1)],
              [edge(0, 0, 1, 0)])
    refused(tmp_path, xml, "layer 0 'w' (Constant)", "has only 8 bytes", weights=struct.pack("<2f", 1, 2))
