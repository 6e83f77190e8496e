"""Shapes no array can have, in every file that declares one (issue 26, class 7): an ``.npz``
member with a negative dimension or an element type of zero bytes (``|V0``, ``<U0``), an IR Const
whose shape overflows int64 while holding no bytes (``0,100000000000000000000``), an ONNX input of
rank 65 with no inputs given; and random inputs, which share one budget instead of one each.
Each used to end in a ValueError traceback (or, for the random inputs, in one allocation per
input up to the cap)."""

from __future__ import annotations

import struct
import zipfile

import numpy as np
import pytest

from relhelpers import Outcome, accumulate_loop, assert_refused


def refused_after_notice(outcome: Outcome, *fragments: str) -> str:
    """``assert_refused`` for a command that says first that it makes up random inputs."""
    lines = outcome.err.strip("\n").split("\n")
    assert lines[0].startswith("inputs: none given"), outcome.err
    return assert_refused(Outcome(outcome.code, outcome.out, "\n".join(lines[1:])), *fragments)


def _npy(header: str) -> bytes:
    h = header.encode()
    h += b" " * (64 - (10 + len(h) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h


@pytest.mark.parametrize("descr, shape, said", [
    ("<f4", "(-1, 2)", "negative size"), ("<f4", "(-2, -4)", "negative size"),
    ("|V0", "(1000000000, 1000000)", "zero bytes"), ("<U0", "(3,)", "zero bytes")])
def test_an_npz_member_no_array_can_hold(tmp_path, cli, descr, shape, said):
    xml, _ = accumulate_loop(tmp_path / "m")
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("seq.npy", _npy(f"{{'descr': '{descr}', 'fortran_order': False, "
                                   f"'shape': {shape}, }}"))
    assert_refused(cli("run", xml, bad), "bad.npz", "'seq'", said)


def test_a_const_whose_shape_overflows(tmp_path, cli):
    xml, inputs = accumulate_loop(tmp_path / "m")
    text = xml.read_text()
    assert 'shape="1" offset="9" size="8"' in text          # the body's Const 5
    xml.write_text(text.replace('shape="1" offset="9" size="8"',
                                'shape="0,100000000000000000000" offset="9" size="0"'))
    for cmd in ("run", "explain"):
        assert_refused(cli(cmd, xml, inputs), "Constant_5", "100000000000000000000")


def test_an_onnx_input_of_rank_65_without_inputs(tmp_path, cli):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 65)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "rank65.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    refused_after_notice(cli("run", path), "rank65.onnx", "'x'", "rank 65")
    assert_refused(cli("inputs", path, "-o", tmp_path / "i.npz"), "'x'", "rank 65")


def test_random_inputs_share_one_budget(tmp_path, cli):
    """Three inputs of 2^24 floats each are each under what one input may take, but not
    together under --max-memory 64M: refused before any is made (they used to be made, and the
    run then measured its budget from after them)."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("three")
    xs = [b.parameter(f"x{k}", "f32", [1 << 24]) for k in range(3)]
    b.result(b.op("Add", [b.op("Add", xs[:2]), xs[2]], name="y"))
    xml, _ = write_ir(b.build(), tmp_path / "three.xml")
    line = refused_after_notice(cli("run", xml, "--max-memory", "64M"), "'x", "together")
    assert "64" in line
    from loopdbg.engine.inputs import random_inputs
    from loopdbg.ir.load import read_model

    small = random_inputs(read_model(xml), limit=1 << 30)         # within the budget: made
    assert [a.shape for a in small.values()] == [(1 << 24,)] * 3
    assert all(a.dtype == np.float32 for a in small.values())
