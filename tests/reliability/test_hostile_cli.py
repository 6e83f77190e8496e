"""Hostile and broken files, end to end through the command line.

Every case runs ``loopdbg run MODEL INPUTS`` (in-process through ``loopdbg.cli.main``; a few as a
real ``python -m loopdbg`` process) and expects a non-zero exit and exactly one line on stderr,
``loopdbg: ...``, naming the file and the layer (id, name, type) or input at fault. No traceback,
no hang (conftest's alarm fails a test after 120 s).

tests/unit/test_ir_hostile.py checks the reader's messages in detail; here each family of damage
is checked through the face a user sees, with the models of the issue (a Loop with a sliced input,
a back edge, current_iteration and a scan; a TensorIterator; nested loops).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from relhelpers import accumulate_loop, assert_refused, subprocess_env

LOOP = "layer 4 'loop' (Loop)"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return accumulate_loop(tmp_path_factory.mktemp("base"))


def variant(base, tmp_path: Path, mutate=None, *, raw: bytes | None = None,
            weights: bytes | None = None, keep_bin: bool = True) -> Path:
    """A copy of the base model in ``tmp_path``, its XML changed by ``mutate(root)`` or ``raw``."""
    xml_src, _ = base
    xml = tmp_path / "model.xml"
    if raw is not None:
        xml.write_bytes(raw)
    else:
        tree = etree.parse(str(xml_src))
        if mutate is not None:
            mutate(tree.getroot())
        tree.write(str(xml), xml_declaration=True, encoding="UTF-8")
    if weights is not None:
        xml.with_suffix(".bin").write_bytes(weights)
    elif keep_bin:
        shutil.copy(xml_src.with_suffix(".bin"), xml.with_suffix(".bin"))
    return xml


def sets(xpath: str, **attrs):
    def mutate(root):
        found = root.xpath(xpath)
        assert found, xpath
        for key, value in attrs.items():
            found[0].set(key.replace("_", "-") if key in ("from_layer", "to_layer", "from_port",
                                                           "to_port") else key, str(value))
    return mutate


def drops(xpath: str, attr: str | None = None):
    def mutate(root):
        el = root.xpath(xpath)[0]
        if attr is None:
            el.getparent().remove(el)
        else:
            del el.attrib[attr]
    return mutate


def both(*mutations):
    def mutate(root):
        for m in mutations:
            m(root)
    return mutate


def adds(xpath: str, tag: str, **attrs):
    def mutate(root):
        etree.SubElement(root.xpath(xpath)[0], tag, {k: str(v) for k, v in attrs.items()})
    return mutate


BODY = "//layer[@name='loop']/body"
TOP_EDGES = "/net/edges/edge"


# ---------------------------------------------------------------------------------------------
# XML: not an IR at all


def _base_bytes(base) -> bytes:
    return base[0].read_bytes()


RAW_CASES = {
    "not XML": (lambda b: b"this is not xml at all\n", ["is not well-formed XML"]),
    "binary garbage": (lambda b: bytes(range(256)) * 4, ["is not well-formed XML"]),
    "empty": (lambda b: b"", ["is empty"]),
    "only whitespace": (lambda b: b" \n\t\n", ["is empty"]),
    "truncated early": (lambda b: b[:len(b) // 10], ["is not well-formed XML"]),
    "truncated in a body": (lambda b: b[:len(b) // 2], ["is not well-formed XML"]),
    "truncated before </net>": (lambda b: b[:b.rindex(b"</net>")], ["is not well-formed XML"]),
    "DOCTYPE": (lambda b: b.replace(b"<net ", b"<!DOCTYPE net>\n<net ", 1),
                ["DOCTYPE", "refuses"]),
    "DOCTYPE with an external entity": (
        lambda b: b.replace(b"<net ", b'<!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                                      b"\n<net ", 1).replace(b'name="seq"', b'name="&x;"', 1),
        ["DOCTYPE", "refuses"]),
    "billion laughs": (
        lambda b: b.replace(b"<net ", b'<!DOCTYPE net [<!ENTITY a "aaaaaaaaaa">'
                                      b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                                      b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n<net ', 1)
                   .replace(b'name="seq"', b'name="&c;"', 1),
        ["DOCTYPE", "refuses"]),
    "wrong root": (lambda b: b"<?xml version='1.0'?><html><body/></html>",
                   ["root element is <html>", "not <net>"]),
    "IR version 7": (lambda b: b.replace(b'version="11"', b'version="7"', 1),
                     ["unsupported IR version '7'"]),
    "IR version 12": (lambda b: b.replace(b'version="11"', b'version="12"', 1),
                      ["unsupported IR version '12'"]),
    "IR version not a number": (lambda b: b.replace(b'version="11"', b'version="eleven"', 1),
                                ["unsupported IR version 'eleven'"]),
    "no IR version": (lambda b: b.replace(b' version="11"', b"", 1),
                      ["unsupported IR version None"]),
    "UTF-16 with a DOCTYPE": (
        lambda b: b.replace(b"UTF-8", b"UTF-16").replace(b"<net ", b"<!DOCTYPE net>\n<net ", 1)
        .decode().encode("utf-16"), ["DOCTYPE"]),
}


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_xml_that_is_not_an_ir(base, tmp_path, cli, case):
    make, fragments = RAW_CASES[case]
    xml = variant(base, tmp_path, raw=make(_base_bytes(base)))
    assert_refused(cli("run", xml, base[1]), str(xml), *fragments)


def test_missing_model_file(base, tmp_path, cli):
    assert_refused(cli("run", tmp_path / "nope.xml", base[1]), "nope.xml", "no such file")


def test_model_path_is_a_folder_without_model_xml(base, tmp_path, cli):
    assert_refused(cli("run", tmp_path, base[1]), str(tmp_path), "without a model.xml")


def test_model_with_an_unknown_suffix(base, tmp_path, cli):
    path = tmp_path / "model.pb"
    path.write_bytes(b"\x08\x01")
    assert_refused(cli("run", path, base[1]), str(path), "'.pb'")


# ---------------------------------------------------------------------------------------------
# XML: structure of the graph

STRUCTURE_CASES = {
    "missing layer id": (drops("//layer[@name='acc0']", "id"),
                         ["'acc0' (Parameter)", "has no id"]),
    "non-integer layer id": (sets("//layer[@name='acc0']", id="one"),
                             ["'acc0' (Parameter)", "non-integer id 'one'"]),
    "duplicate layer id": (sets("//layer[@name='acc0']", id="0"),
                           ["layer 0 'acc0' (Parameter)", "reuses the id of layer 0 'seq'"]),
    "duplicate layer id in a body": (
        sets(f"{BODY}//layer[@name='acc']", id="0"),
        ["layer 0 'acc' (Parameter)", f"in the body of {LOOP}", "reuses the id"]),
    "layer without a type": (drops("//layer[@name='acc0']", "type"),
                             ["'acc0'", "has no type"]),
    "edge to a missing layer": (sets(f"{TOP_EDGES}[1]", to_layer=77),
                                ["ends at layer 77, which does not exist"]),
    "edge from a missing layer": (sets(f"{TOP_EDGES}[1]", from_layer=66),
                                  ["starts at layer 66, which does not exist"]),
    "edge to a missing port": (sets(f"{TOP_EDGES}[1]", to_port=9),
                               [LOOP, "at port 9, which is not one of its input ports"]),
    "edge from a missing port": (sets(f"{TOP_EDGES}[1]", from_port=3),
                                 ["layer 2 'loop/trip_count' (Constant)", "from port 3"]),
    "edge with a non-integer port": (sets(f"{TOP_EDGES}[1]", to_port="zero"),
                                     ["non-integer to-port 'zero'"]),
    "edge in a body to a missing layer": (
        sets(f"{BODY}/edges/edge[1]", to_layer=42),
        [f"in the body of {LOOP}", "ends at layer 42"]),
    "two edges into one port": (sets(f"{TOP_EDGES}[2]", to_port=0),
                                [LOOP, "two edges into input port 0"]),
    "two edges into one port in a body": (
        sets(f"{BODY}/edges/edge[2]", to_port=0),
        ["layer 3 'acc_new' (Add)", f"in the body of {LOOP}", "two edges into input port 0"]),
    "cycle in a body": (
        both(sets(f"{BODY}/edges/edge[1]", from_layer=6, from_port=2),
             sets(f"{BODY}/edges/edge[4]", from_layer=3, from_port=2)),
        [f"in the body of {LOOP}", "is part of a cycle", "3 -> 6 -> 3"]),
    "self loop": (sets(f"{BODY}/edges/edge[1]", from_layer=3, from_port=2),
                  ["layer 3 'acc_new' (Add)", "cycle (layers 3 -> 3)"]),
    "bad Parameter shape": (sets("//layer[@name='seq']/data", shape="4,x"),
                            ["layer 0 'seq' (Parameter)", "bad shape '4,x'"]),
    "bad Parameter shape in a body": (
        sets(f"{BODY}//layer[@name='x_t']/data", shape="1,,2"),
        ["layer 0 'x_t' (Parameter)", f"in the body of {LOOP}", "bad shape '1,,2'"]),
    "bad dim": (lambda r: setattr(r.xpath("//layer[@name='seq']/output/port/dim")[0], "text",
                                  "four"),
                ["layer 0 'seq' (Parameter)", "bad <dim> 'four'"]),
    "negative dim": (lambda r: setattr(r.xpath("//layer[@name='seq']/output/port/dim")[0],
                                       "text", "-7"),
                     ["layer 0 'seq' (Parameter)", "bad <dim> '-7'"]),
    "bad attribute string": (
        adds(f"{BODY}//layer[@name='acc_new']", "data", auto_broadcast="sideways"),
        ["layer 3 'acc_new' (Add)", "auto_broadcast='sideways'"]),
    "bad Const offset string": (
        sets(f"{BODY}//layer[@name='Constant_5']/data", offset="ten"),
        ["layer 5 'Constant_5' (Constant)", "non-integer offset 'ten'"]),
    "unknown element type": (sets("//layer[@name='seq']/data", element_type="f33"),
                             ["layer 0 'seq' (Parameter)", "unknown element_type 'f33'"]),
    "unknown Const element type": (
        sets(f"{BODY}//layer[@name='Constant_5']/data", element_type="zz"),
        ["layer 5 'Constant_5' (Constant)", f"in the body of {LOOP}", "'zz'"]),
    "unknown operation": (sets(f"{BODY}//layer[@name='acc_new']", type="Frobnicate"),
                          ["layer 3 'acc_new' (Frobnicate)", "in the body of loop 'loop'",
                           "cannot run"]),
    "unknown operation at the top": (
        both(sets("//layer[@name='acc0']", type="Frobnicate")),
        ["layer 1 'acc0' (Frobnicate)", "cannot run"]),
    "net without layers": (drops("/net/layers"), ["has no <layers> element"]),
}


@pytest.mark.parametrize("case", list(STRUCTURE_CASES))
def test_broken_graph_structure(base, tmp_path, cli, case):
    mutate, fragments = STRUCTURE_CASES[case]
    xml = variant(base, tmp_path, mutate)
    assert_refused(cli("run", xml, base[1]), str(xml), *fragments)


# ---------------------------------------------------------------------------------------------
# Loop and TensorIterator

PORT_MAP = "//layer[@name='loop']/port_map"

LOOP_CASES = {
    "port_map input names a missing layer": (
        sets(f"{PORT_MAP}/input[1]", internal_layer_id=99),
        [LOOP, "<port_map> input", "names body layer 99, which does not exist"]),
    "port_map output names a missing layer": (
        sets(f"{PORT_MAP}/output[1]", internal_layer_id=98),
        [LOOP, "<port_map> output", "names body layer 98, which does not exist"]),
    "port_map input names a Result": (
        sets(f"{PORT_MAP}/input[1]", internal_layer_id=4),
        [LOOP, "names body layer 4 'acc_new/result' (Result), which is not a Parameter"]),
    "port_map input beyond the layer's inputs": (
        sets(f"{PORT_MAP}/input[2]", external_port_id=9),
        [LOOP, "maps external input 9 but the layer has only 4 inputs"]),
    "sliced input with a negative external_port_id": (
        sets(f"{PORT_MAP}/input[1]", external_port_id=-5),
        [LOOP, "feeds body layer 0 'x_t' (Parameter) as a sliced input from external port -5"]),
    "merged input with external_port_id -1": (
        sets(f"{PORT_MAP}/input[2]", external_port_id=-1),
        [LOOP, "feeds body layer 1 'acc' (Parameter) as a merged input from external port -1"]),
    "port_map non-integer axis": (sets(f"{PORT_MAP}/input[1]", axis="first"),
                                  [LOOP, "non-integer axis 'first'"]),
    "negative sliced input axis": (sets(f"{PORT_MAP}/input[1]", axis=-1),
                                   [LOOP, "negative axis -1"]),
    "sliced input axis beyond the rank": (sets(f"{PORT_MAP}/input[1]", axis=5),
                                          [LOOP, "sliced input 'x_t'", "axis 5", "rank 2"]),
    "concatenation axis beyond the rank": (sets(f"{PORT_MAP}/output[2]", axis=7),
                                           [LOOP, "'acc_seq'", "axis 7"]),
    "stride that is not part_size": (sets(f"{PORT_MAP}/input[1]", stride=0),
                                     [LOOP, "sliced input 'x_t'", "stride=0"]),
    "missing execution_condition": (
        drops(f"{PORT_MAP}/output[@purpose='execution_condition']"),
        [LOOP, 'no port_map output with purpose="execution_condition"']),
    "no body": (drops(BODY), [LOOP, "has no <body>"]),
    "output ports and port_map disagree": (
        drops(f"{PORT_MAP}/output[2]"), [LOOP, "declares 2 output ports", "describes 1"]),
    "back edge from a Parameter": (sets("//back_edges/edge", from_layer=0),
                                   [LOOP, "back edge", "starts at body layer 0 'x_t' (Parameter)"]),
    "back edge from an Add": (sets("//back_edges/edge", from_layer=3),
                              [LOOP, "back edge", "layer 3 'acc_new' (Add)",
                               "from a Result to a Parameter"]),
    "back edge into a Result": (sets("//back_edges/edge", to_layer=7),
                                [LOOP, "back edge", "ends at body layer 7 'keep/result' (Result)"]),
    "back edge into a Const": (sets("//back_edges/edge", to_layer=5),
                               [LOOP, "back edge", "layer 5 'Constant_5' (Constant)"]),
    "back edge to a missing layer": (sets("//back_edges/edge", to_layer=55),
                                     [LOOP, "back edge", "body layer 55, which does not exist"]),
    # the trip count Const reads the 8-byte trip count and the next 8 bytes of the .bin
    "trip count with two elements": (
        sets("//layer[@name='loop/trip_count']/data", shape="2", size=16),
        [LOOP, "trip count must hold one element", "(2,)"]),
    "execution condition with two elements": (
        sets("//layer[@name='loop/exec_cond']/data", shape="2", size=2),
        [LOOP, "execution condition must hold one element", "(2,)"]),
    "body condition with two elements": (
        sets(f"{BODY}//layer[@name='Constant_5']/data", shape="2", offset=0, size=16),
        ["loop 'loop'", "iteration 0", "body condition of shape (2,)"]),
    "float trip count": (
        sets("//layer[@name='loop/trip_count']/data", element_type="f32", size=4),
        [LOOP, "trip count must be i32 or i64", "float32"]),
}


@pytest.mark.parametrize("case", list(LOOP_CASES))
def test_broken_loop(base, tmp_path, cli, case):
    mutate, fragments = LOOP_CASES[case]
    xml = variant(base, tmp_path, mutate)
    assert_refused(cli("run", xml, base[1]), str(xml), *fragments)


def _ti(tmp_path: Path, lengths=(3, 3), *, start=0, stride=1, part=1, out_start=0):
    """A TensorIterator summing two sequences sliced along axis 0."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("ti")
    xs = [b.parameter(f"x{k}", "f32", [n, 2]) for k, n in enumerate(lengths)]
    h0 = b.parameter("h0", "f32", [1, 2])
    ti = b.tensor_iterator("scan")
    pieces = [ti.sliced_input(x, f"x{k}_t", axis=0, start=start, stride=stride, part_size=part)
              for k, x in enumerate(xs)]
    h = ti.merged_input(h0, "h")
    new = ti.body.op("Add", [h, pieces[0]], name="h_next")
    for p in pieces[1:]:
        new = ti.body.op("Add", [new, p])
    ti.back_edge(new, h)
    b.result(ti.output_last(new, name="h_last"))
    b.result(ti.output_concat(new, axis=0, start=out_start, name="h_seq"))
    xml, _ = write_ir(b.build(), tmp_path / "ti.xml")
    inputs = tmp_path / "ti.npz"
    np.savez(inputs, h0=np.zeros((1, 2), np.float32),
             **{f"x{k}": np.ones((n, 2), np.float32) for k, n in enumerate(lengths)})
    return xml, inputs


def test_ti_sliced_inputs_that_disagree_on_the_iteration_count(tmp_path, cli):
    xml, inputs = _ti(tmp_path, (3, 4))
    assert_refused(cli("run", xml, inputs), str(xml), "layer", "'scan' (TensorIterator)",
                   "disagree on the number of iterations", "'x0_t' gives 3", "'x1_t' gives 4")


def test_ti_stride_and_part_size_that_differ(tmp_path, cli):
    xml, inputs = _ti(tmp_path, (4, 4), stride=2, part=1)
    assert_refused(cli("run", xml, inputs), str(xml), "'scan' (TensorIterator)",
                   "stride=2 and part_size=1")


def test_ti_slicing_outside_the_axis(tmp_path, cli):
    xml, inputs = _ti(tmp_path, (3, 3), start=5)
    assert_refused(cli("run", xml, inputs), str(xml), "'scan' (TensorIterator)",
                   "outside the axis of length 3")


def test_ti_output_with_a_non_canonical_start(tmp_path, cli):
    xml, inputs = _ti(tmp_path, (3, 3), out_start=1)
    assert_refused(cli("run", xml, inputs), str(xml), "'scan' (TensorIterator)", "'h_seq'")


def test_loop_with_more_iterations_than_slices(base, tmp_path, cli):
    xml = variant(base, tmp_path, sets("//layer[@name='loop/trip_count']/data", offset=9))
    # the trip count now reads the body's Const 5: five iterations over four slices
    assert_refused(cli("run", xml, base[1]), str(xml), "loop 'loop'", "iteration 4",
                   "sliced input 'x_t'", "only 4 slices")


# ---------------------------------------------------------------------------------------------
# .bin

CONST5 = f"{BODY}//layer[@name='Constant_5']/data"
BIN_CASES = {
    "missing .bin": (None, None, ["layer 2 'loop/trip_count' (Constant)", "needs weights",
                                  "does not exist"]),
    "empty .bin": (None, b"", ["layer 2 'loop/trip_count' (Constant)", "has only 0 bytes"]),
    "shorter than a Const needs": (None, b"\x03" + bytes(11),
                                   ["layer 5 'Constant_5' (Constant)", f"in the body of {LOOP}",
                                    "reads bytes 9..17", "has only 12 bytes"]),
    "offset out of range": (sets(CONST5, offset=4096), None,
                            ["layer 5 'Constant_5' (Constant)", "reads bytes 4096..4104",
                             "has only 17 bytes"]),
    "size out of range": (sets(CONST5, size=1 << 40), None,
                          ["layer 5 'Constant_5' (Constant)", "has only 17 bytes"]),
    "offset beyond 64 bits": (sets(CONST5, offset=10**30), None,
                              ["layer 5 'Constant_5' (Constant)", "has only 17 bytes"]),
    "negative offset": (sets(CONST5, offset=-8), None,
                        ["layer 5 'Constant_5' (Constant)", "negative offset or size (-8, 8)"]),
    "size smaller than shape x dtype": (sets(CONST5, size=4), None,
                                        ["layer 5 'Constant_5' (Constant)", "size 4",
                                         "shape × element type (8 bytes)"]),
    "size larger than shape x dtype": (sets(CONST5, offset=0, size=16), None,
                                       ["layer 5 'Constant_5' (Constant)", "size 16",
                                        "(8 bytes)"]),
    "Const without a size": (drops(CONST5, "size"), None,
                             ["layer 5 'Constant_5' (Constant)", "no 'size'"]),
    "Const with a dynamic shape": (sets(CONST5, shape="?"), None,
                                   ["layer 5 'Constant_5' (Constant)", "non-static shape '?'"]),
}


@pytest.mark.parametrize("case", list(BIN_CASES))
def test_broken_weights(base, tmp_path, cli, case):
    mutate, weights, fragments = BIN_CASES[case]
    xml = variant(base, tmp_path, mutate, weights=weights, keep_bin=case != "missing .bin")
    assert_refused(cli("run", xml, base[1]), str(xml), *fragments)


def test_bin_that_is_a_folder(base, tmp_path, cli):
    xml = variant(base, tmp_path, keep_bin=False)
    xml.with_suffix(".bin").mkdir()
    assert_refused(cli("run", xml, base[1]), str(xml), "layer 2 'loop/trip_count' (Constant)",
                   "model.bin")


# ---------------------------------------------------------------------------------------------
# Inputs


class Evil:
    """Unpickling this would create a file: loopdbg must refuse before it ever unpickles."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _npz(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


SEQ = np.zeros((4, 2), np.float32)
ACC = np.zeros((1, 2), np.float32)

INPUT_CASES = {
    "missing input": (dict(seq=SEQ), ["has no input 'acc0'",
                                      "the model expects seq float32 (4, 2)"]),
    "no inputs at all": (dict(), ["has no input 'seq'"]),
    "extra input": (dict(seq=SEQ, acc0=ACC, bogus=ACC), ["does not take: bogus"]),
    "wrong shape": (dict(seq=np.zeros((4, 3), np.float32), acc0=ACC),
                    ["input 'seq' has shape (4, 3)", "expects (4, 2)"]),
    "wrong rank": (dict(seq=SEQ, acc0=np.zeros(2, np.float32)),
                   ["input 'acc0' has shape (2,)", "expects (1, 2)"]),
    "scalar for a tensor": (dict(seq=np.float32(1), acc0=ACC), ["input 'seq' has shape ()"]),
    "wider dtype": (dict(seq=SEQ.astype(np.float64), acc0=ACC),
                    ["input 'seq' has dtype float64", "expects float32"]),
    "integer dtype": (dict(seq=SEQ, acc0=ACC.astype(np.int64)),
                      ["input 'acc0' has dtype int64", "expects float32"]),
    "strings": (dict(seq=np.full((4, 2), "a"), acc0=ACC), ["input 'seq' has dtype <U1",
                                                           "not numeric"]),
    "complex": (dict(seq=SEQ.astype(np.complex64), acc0=ACC), ["input 'seq'", "complex64",
                                                              "not numeric"]),
    "datetimes": (dict(seq=np.zeros((4, 2), "datetime64[s]"), acc0=ACC),
                  ["input 'seq'", "datetime64", "not numeric"]),
    "structured": (dict(seq=np.zeros((4, 2), [("a", "f4")]), acc0=ACC),
                   ["input 'seq'", "not numeric"]),
    "raw bytes": (dict(seq=np.zeros((4, 2), "V4"), acc0=ACC), ["input 'seq'", "not numeric"]),
}


@pytest.mark.parametrize("case", list(INPUT_CASES))
def test_inputs_that_do_not_match(base, tmp_path, cli, case):
    arrays, fragments = INPUT_CASES[case]
    inputs = _npz(tmp_path / "bad.npz", **arrays)
    assert_refused(cli("run", base[0], inputs), str(inputs), *fragments)


def test_no_inputs_and_a_huge_declared_shape_is_refused_not_allocated(base, tmp_path, cli):
    """Random inputs for `seq` declared with 2**31 rows would take 16 GiB: refused up front."""
    xml = variant(base, tmp_path, sets("//layer[@name='seq']/data", shape="2147483648,2"))
    assert_refused(cli("run", xml, "-q"), str(xml), "input 'seq'", "(2147483648, 2)",
                   "too many to make up random data")


def test_no_inputs_and_a_dynamic_rank(base, tmp_path, cli):
    xml = variant(base, tmp_path, sets("//layer[@name='seq']/data", shape="..."))
    assert_refused(cli("run", xml, "-q"), str(xml), "input 'seq' has a dynamic rank",
                   "--shape seq=")


def test_inputs_holding_pickled_objects_are_refused_without_unpickling(base, tmp_path, cli):
    marker = tmp_path / "unpickled"
    inputs = tmp_path / "evil.npz"
    np.savez(inputs, seq=np.array([Evil(marker)], dtype=object), acc0=ACC)
    assert_refused(cli("run", base[0], inputs), str(inputs), "pickled Python objects", "refuses")
    assert not marker.exists()
    # the same through the other commands that read inputs
    assert_refused(cli("explain", base[0], inputs), str(inputs), "pickled")
    assert not marker.exists()


@pytest.mark.parametrize("content, fragments", [
    (b"not a zip at all", ["is not an .npz file"]),
    (b"", ["is not an .npz file"]),
    (b"PK\x03\x04" + bytes(40), ["is not an .npz file"]),
])
def test_inputs_that_are_not_an_npz(base, tmp_path, cli, content, fragments):
    inputs = tmp_path / "in.npz"
    inputs.write_bytes(content)
    assert_refused(cli("run", base[0], inputs), str(inputs), *fragments)


def test_inputs_given_as_a_plain_npy(base, tmp_path, cli):
    inputs = tmp_path / "seq.npy"
    np.save(inputs, SEQ)
    assert_refused(cli("run", base[0], inputs), str(inputs), "is not an .npz file")


def test_inputs_file_missing_or_a_folder(base, tmp_path, cli):
    assert_refused(cli("run", base[0], tmp_path / "gone.npz"), "gone.npz", "does not exist")
    assert_refused(cli("run", base[0], tmp_path), str(tmp_path), "is a directory, not a")


def test_npz_with_a_damaged_member(base, tmp_path, cli):
    inputs = tmp_path / "damaged.npz"
    with zipfile.ZipFile(inputs, "w") as z:
        z.writestr("seq.npy", b"\x93NUMPY\x01\x00garbage")
        z.writestr("acc0.npy", b"")
    assert_refused(cli("run", base[0], inputs), str(inputs), "cannot be read")


def test_npz_whose_header_claims_a_huge_array(base, tmp_path, cli):
    """The header says 10**12 floats, the member holds 8: an error, not a 4 TB allocation."""
    inputs = tmp_path / "huge.npz"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
    header += " " * (118 - len(header)) + "\n"
    with zipfile.ZipFile(inputs, "w") as z:
        z.writestr("seq.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
                   header.encode() + bytes(32))
        z.writestr("acc0.npy", b"")
    assert_refused(cli("run", base[0], inputs), str(inputs), "past the memory budget")


def test_npz_with_a_member_crc_error(base, tmp_path, cli):
    inputs = _npz(tmp_path / "crc.npz", seq=np.arange(8, dtype=np.float32).reshape(4, 2), acc0=ACC)
    data = bytearray(inputs.read_bytes())
    pos = data.index(b"\x00\x00\x80\x3f")          # the float 1.0 inside seq, stored uncompressed
    data[pos + 3] ^= 0x01
    inputs.write_bytes(bytes(data))
    assert_refused(cli("run", base[0], inputs), str(inputs), "Bad CRC-32")


# ---------------------------------------------------------------------------------------------
# At run time


def test_kernel_error_names_the_file_loop_iteration_and_layer(cli):
    from relhelpers import ROOT
    data = ROOT / "tests" / "data" / "failing_loop"
    assert_refused(cli("run", data / "model.xml", data / "inputs.npz"), "model.xml",
                   "loop 'grow'", "iteration 2", "layer 8 'widen' (Add)", "failed")


def test_kernel_error_in_a_nested_loop_names_the_whole_path(tmp_path, cli):
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("nested")
    x0 = b.parameter("x0", "f32", [2])
    outer = b.loop("outer", trip=3)
    x = outer.merged_input(x0, "x")
    inner = outer.body.loop("inner", trip=2)
    y = inner.merged_input(x, "y")
    k = inner.current_iteration("k", "i64", ())
    # Range(0, k + 1) grows with k; adding it to y fails on the inner loop's iteration 1
    ramp = inner.body.op("Range", [np.float32(0), inner.body.op(
        "Convert", [inner.body.op("Add", [k, np.int64(2)])], destination_type="f32"),
        np.float32(1)], output_type="f32", name="ramp")
    y2 = inner.body.op("Add", [y, ramp], name="bump", out_shape=[2])
    inner.back_edge(y2, y)
    x2 = inner.output_last(y2)
    outer.back_edge(x2, x)
    b.result(outer.output_last(x2, name="x_final"))
    xml, _ = write_ir(b.build(), tmp_path / "model.xml")
    inputs = _npz(tmp_path / "in.npz", x0=np.zeros(2, np.float32))
    assert_refused(cli("run", xml, inputs), str(xml), "loop 'outer/inner'", "iteration 1",
                   "'bump' (Add)", "failed")


def test_concatenation_whose_shapes_vary_names_the_iteration(tmp_path, cli):
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("grow")
    s0 = b.parameter("s0", "f32", [1])
    loop = b.loop("grow", trip=3)
    s = loop.merged_input(s0, "s")
    grown = loop.body.op("Concat", [s, np.ones(1, np.float32)], axis=0, name="grown")
    loop.back_edge(grown, s)
    row = loop.body.op("Unsqueeze", [grown, np.array([0], np.int64)], name="row")
    b.result(loop.output_concat(row, axis=0, name="rows"))
    xml, _ = write_ir(b.build(), tmp_path / "model.xml")
    inputs = _npz(tmp_path / "in.npz", s0=np.zeros(1, np.float32))
    assert_refused(cli("run", xml, inputs), str(xml), "loop 'grow'", "iteration 1",
                   "'rows'", "(1, 3)", "(1, 2)")


def test_back_edge_that_changes_dtype_names_the_edge(tmp_path, cli):
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("cast")
    x0 = b.parameter("x0", "i32", [1])
    loop = b.loop("cast", trip=3)
    x = loop.merged_input(x0, "x")
    as_float = loop.body.op("Convert", [x], destination_type="f32", name="as_float")
    loop.back_edge(as_float, x)
    b.result(loop.output_last(as_float, name="x_final"))
    xml, _ = write_ir(b.build(), tmp_path / "model.xml")
    inputs = _npz(tmp_path / "in.npz", x0=np.array([1], np.int32))
    assert_refused(cli("run", xml, inputs), str(xml), "loop 'cast'", "back edge",
                   "Result 'as_float/result'", "Parameter 'x'", "int32 to float32",
                   "iteration 0")


def test_back_edge_into_current_iteration_that_changes_dtype(base, tmp_path, cli):
    xml = variant(base, tmp_path, sets("//back_edges/edge", to_layer=2))
    assert_refused(cli("run", xml, base[1]), str(xml), "back edge", "Parameter 'iter'",
                   "int64 to float32")


def test_runtime_errors_with_breakpoints_and_traces_too(tmp_path, cli):
    """The same one line from `run --break` (the debugger session) and `run --trace`."""
    from relhelpers import ROOT
    data = ROOT / "tests" / "data" / "failing_loop"
    fragments = ("loop 'grow'", "iteration 2", "layer 8 'widen' (Add)")
    assert_refused(cli("run", data / "model.xml", data / "inputs.npz", "--break", "i == 99"),
                   "model.xml", *fragments)
    trace = tmp_path / "t.ltrace"
    outcome = cli("run", data / "model.xml", data / "inputs.npz", "--trace", trace, "-q")
    assert_refused(outcome, "model.xml", *fragments)
    from loopdbg.trace import TraceReader
    with TraceReader(trace) as t:
        assert t.status == "error" and not t.truncated


# ---------------------------------------------------------------------------------------------
# Other commands and a real process


@pytest.mark.parametrize("command", ["explain", "graph", "inputs"])
@pytest.mark.parametrize("damage, fragment", [
    (sets(f"{PORT_MAP}/input[1]", internal_layer_id=99), "names body layer 99"),
    (sets(f"{PORT_MAP}/input[1]", external_port_id=-2), "from external port -2"),
])
def test_other_commands_refuse_the_same_files(base, tmp_path, cli, command, damage, fragment):
    xml = variant(base, tmp_path, damage)
    extra = {"graph": ["-o", tmp_path / "g.dot"], "inputs": ["-o", tmp_path / "i.npz"]}
    assert_refused(cli(command, xml, *extra.get(command, [])), str(xml), LOOP, fragment)


@pytest.mark.parametrize("what", ["not xml", "missing bin", "pickled inputs", "kernel error"])
def test_a_real_process_exits_non_zero_with_one_line(base, tmp_path, what):
    from relhelpers import ROOT
    xml, inputs = base
    if what == "not xml":
        xml = variant(base, tmp_path, raw=b"{}")
    elif what == "missing bin":
        xml = variant(base, tmp_path, keep_bin=False)
    elif what == "pickled inputs":
        inputs = tmp_path / "p.npz"
        np.savez(inputs, seq=np.array([Evil(tmp_path / "marker")], dtype=object), acc0=ACC)
    else:
        xml = ROOT / "tests" / "data" / "failing_loop" / "model.xml"
        inputs = xml.with_name("inputs.npz")
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "run", str(xml), str(inputs)],
                          capture_output=True, text=True, timeout=60, env=subprocess_env())
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loopdbg: "), proc.stderr
    assert str(inputs if what == "pickled inputs" else xml) in lines[0], lines[0]
    assert not (tmp_path / "marker").exists()


def _renumber_acc_new(new_id: str):
    """Body layer 3 'acc_new' (Add) and the body edges at it get the id ``new_id``."""
    def mutate(root):
        body = root.xpath(BODY)[0]
        body.xpath("layers/layer[@name='acc_new']")[0].set("id", new_id)
        for edge in body.xpath("edges/edge"):
            for end in ("from-layer", "to-layer"):
                if edge.get(end) == "3":
                    edge.set(end, new_id)
    return mutate


@pytest.mark.parametrize("new_id", ["-5", str(10 ** 20), str(2 ** 64 + 3)])
def test_a_body_layer_with_a_negative_or_huge_id_runs(base, tmp_path, cli, new_id):
    """Layer ids are labels: a valid graph runs whatever they are (OpenVINO refuses negative ones,
    which loopdbg says in a notice, one line)."""
    xml, inputs = base
    expected = cli("run", xml, inputs)
    assert expected.code == 0, expected.err
    changed = variant(base, tmp_path, _renumber_acc_new(new_id))
    got = cli("run", changed, inputs)
    assert got.code == 0 and got.err == "", got.err
    assert "Traceback" not in got.out
    tail = expected.out[expected.out.index("outputs:"):]
    assert got.out.endswith(tail), got.out
    negative = [line for line in got.out.splitlines() if "has a negative id" in line]
    if new_id.startswith("-"):
        assert len(negative) == 1 and f"layer {new_id} 'acc_new' (Add)" in negative[0]
    else:
        assert negative == []


def test_a_real_process_runs_a_body_layer_with_a_negative_id(base, tmp_path):
    xml = variant(base, tmp_path, _renumber_acc_new("-5"))
    proc = subprocess.run([sys.executable, "-m", "loopdbg", "run", str(xml), str(base[1])],
                          capture_output=True, text=True, timeout=60, env=subprocess_env())
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "acc_final" in proc.stdout and "acc_seq" in proc.stdout


def test_a_bad_option_value_is_one_line_too(capsys):
    import pytest as _pytest
    from loopdbg.cli import main as _main
    with _pytest.raises(SystemExit) as exit_info:
        _main(["run", "model.xml", "--max-iterations", "abc"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("loopdbg: run: argument --max-iterations")


def test_an_opset_newer_than_openvino_has_is_refused(tmp_path, capsys):
    from loopdbg.cli import main as _main
    src = Path(__file__).resolve().parents[1] / "corpus" / "loop_while_iter"
    xml = (src / "model.xml").read_text().replace('type="Add" version="opset1"',
                                                  'type="Add" version="opset99"', 1)
    (tmp_path / "model.xml").write_text(xml)
    (tmp_path / "model.bin").write_bytes((src / "model.bin").read_bytes())
    assert _main(["run", str(tmp_path / "model.xml"), "-q"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "opset99" in err[0] and "Add" in err[0]


# ---------------------------------------------------------------------------------------------
# Files that are not regular files, and bounded reads (issue 15)


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
@pytest.mark.parametrize("role", ["model", "bin", "inputs"])
def test_only_regular_files_are_read(base, tmp_path, cli, kind, role):
    """A FIFO would hang the read, /dev/zero feed it without end: refused before a byte is read."""
    import os

    xml = variant(base, tmp_path, keep_bin=True)
    inputs = base[1]
    target = {"model": xml, "bin": xml.with_suffix(".bin"), "inputs": tmp_path / "in.npz"}[role]
    if target.exists():
        target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        target.symlink_to("/dev/zero")
    else:
        target.mkdir()
    if role == "inputs":
        inputs = target
    what = {"fifo": "FIFO", "device": "character device",
            "folder": "folder without a model.xml" if role == "model" else "directory"}[kind]
    assert_refused(cli("run", xml, inputs), str(target), what)


def test_an_npz_bomb_is_stopped_at_the_memory_budget(base, tmp_path, cli):
    inputs = tmp_path / "bomb.npz"
    np.savez_compressed(inputs, seq=np.zeros((64, 2**20), np.float32), acc0=ACC)   # 256 MiB
    assert inputs.stat().st_size < 2**20
    assert_refused(cli("run", base[0], inputs, "--max-memory", "64M"), str(inputs),
                   "past the memory budget")


@pytest.mark.parametrize("damage", ["encrypted", "method", "deflate"])
def test_npz_members_that_cannot_be_decompressed(base, tmp_path, cli, damage):
    import io
    import struct

    inputs = tmp_path / "bad.npz"
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(8, dtype=np.float32).reshape(4, 2))
    with zipfile.ZipFile(inputs, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("seq.npy", buf.getvalue())
        z.writestr("acc0.npy", b"")
    data = bytearray(inputs.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    if damage == "encrypted":
        for at, off in ((local, 6), (central, 8)):
            data[at + off] |= 1
    elif damage == "method":
        for at, off in ((local, 8), (central, 10)):
            data[at + off:at + off + 2] = struct.pack("<H", 99)
    else:
        start = local + 30 + struct.unpack("<H", data[local + 26:local + 28])[0]
        data[start:start + 6] = b"\xff" * 6
    inputs.write_bytes(bytes(data))
    assert_refused(cli("run", base[0], inputs), str(inputs))


def test_hostile_shapes_and_seeds(base, tmp_path, cli):
    text = (base[0]).read_text()
    many = ",".join(["1"] * 65)
    xml = tmp_path / "rank65.xml"
    xml.write_text(text.replace('<data shape="', f'<data shape="{many},', 1))
    (tmp_path / "rank65.bin").write_bytes(base[0].with_suffix(".bin").read_bytes())
    assert_refused(cli("run", xml), "more than the 64 dimensions numpy supports")
    assert_refused(cli("run", base[0], "--seed", "-1"), "--seed")
