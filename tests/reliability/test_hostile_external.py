"""ONNX external data (issue 26, class 4): mapped, not read whole; one array per file region; only
regular files inside the model's folder.

``onnx.load`` used to read every external file into the protobuf once per tensor naming it (200
initializers pointing into one 4 MiB file cost 800 MiB and more), read a sparse file of many GiB
whole, and wait for ever on a location that is a FIFO.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from relhelpers import assert_refused, subprocess_env

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper  # noqa: E402


def external(name, dims, location, offset=0, length=None, dtype=T.FLOAT):
    t = onnx.TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    t.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
    return t


def model(folder, inits, output="w0"):
    y = helper.make_tensor_value_info("y", T.FLOAT, None)
    g = helper.make_graph([helper.make_node("Identity", [output], ["y"])], "g", [], [y],
                          initializer=inits)
    path = folder / "model.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_two_hundred_initializers_of_one_region_are_one_array(tmp_path, cli):
    weights = np.arange(1 << 20, dtype=np.float32)                  # 4 MiB
    (tmp_path / "w.bin").write_bytes(weights.tobytes())
    path = model(tmp_path, [external(f"w{k}", [1 << 20], "w.bin") for k in range(200)], "w7")
    from loopdbg.ir.load import read_model

    m = read_model(path)
    consts = [layer.value for layer in m.graph.layers.values() if layer.type == "Constant"]
    assert len(consts) == 200
    assert all(c is consts[0] for c in consts)                       # one array, made once
    assert not consts[0].flags.owndata and not consts[0].flags.writeable  # a view of the map
    r = cli("run", path, "-o", tmp_path / "out.npz")
    assert r.code == 0, r.err
    with np.load(tmp_path / "out.npz") as out:
        assert np.array_equal(out["y"], weights)


def test_a_sparse_gigabyte_is_mapped_not_read(tmp_path):
    from loopdbg.ir.load import read_model
    from loopdbg.ops.budget import rss

    with open(tmp_path / "big.bin", "wb") as f:                      # 1 GiB, no block written
        f.truncate(1 << 30)
    path = model(tmp_path, [external("w0", [1 << 28], "big.bin", length=1 << 30)])
    before = rss()
    value = read_model(path).graph.layers[0].value
    assert rss() - before < 128 << 20
    assert value.shape == (1 << 28,) and value[12345] == 0


@pytest.mark.parametrize("location, said", [
    ("../outside.bin", "outside the model's folder"), ("/etc/passwd", "not a path relative"),
    ("missing.bin", "cannot be read"), ("short.bin", "needs 16 bytes")])
def test_a_location_loopdbg_does_not_follow(tmp_path, cli, location, said):
    (tmp_path.parent / "outside.bin").write_bytes(b"\0" * 16)
    (tmp_path / "short.bin").write_bytes(b"\0" * 8)
    path = model(tmp_path, [external("w0", [4], location)])
    assert_refused(cli("run", path), "model.onnx", "initializer 'w0'", said)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_external_data_that_is_not_a_regular_file(tmp_path, kind):
    if kind == "fifo":
        os.mkfifo(tmp_path / "w.bin")
    else:
        (tmp_path / "w.bin").symlink_to("/dev/zero")
    path = model(tmp_path, [external("w0", [4], "w.bin", length=16)])
    try:
        proc = subprocess.run([sys.executable, "-m", "loopdbg", "run", str(path)],
                              capture_output=True, text=True, env=subprocess_env(), timeout=30,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("loopdbg waited on external data that is not a regular file")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "w.bin" in lines[-1], proc.stderr
    assert "not a regular file" in lines[-1] or "outside the model's folder" in lines[-1]


def test_check_per_iteration_copies_bodies_without_reading_the_weights(tmp_path):
    """``check --per-iteration`` reads the .onnx again to copy each loop body out for the
    runtime: without the external data (a sparse GiB of weights beside the model was read
    whole, past --max-memory), the body's own external tensors filled in from loopdbg's map."""
    pytest.importorskip("onnxruntime")
    from test_memory_budget import run_measured

    vi = helper.make_tensor_value_info
    (tmp_path / "one.bin").write_bytes(np.ones(2, np.float32).tobytes())
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "one"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, [2])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2])],
        initializer=[external("one", [2], "one.bin")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body),
         helper.make_node("Shape", ["big"], ["big_shape"])], "g",
        [vi("M", T.INT64, []), vi("acc0", T.FLOAT, [2])],
        [vi("acc", T.FLOAT, [2]), vi("big_shape", T.INT64, [1])],
        initializer=[external("big", [1 << 28], "weights.bin")])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    with open(tmp_path / "weights.bin", "wb") as f:
        f.truncate(1 << 30)                                  # 1 GiB, sparse
    np.savez(tmp_path / "in.npz", M=np.int64(3), acc0=np.zeros(2, np.float32))
    code, err, peak = run_measured("check", path, tmp_path / "in.npz", "--per-iteration",
                                   "--max-memory", "128M")
    assert code == 0 and "Traceback" not in err, err
    assert peak < (128 + 192) << 20, f"peak RSS {peak >> 20} MiB"
