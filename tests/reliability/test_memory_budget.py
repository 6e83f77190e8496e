"""One memory budget for the whole run (loopdbg.ops.budget): every class of allocation the
hostile-input review found stays within ``--max-memory``, with one sentence naming what stopped.

Each run is a real ``loopdbg run`` process whose peak RSS is measured (the test process's own
size must not count), and must stay far below what the model asks for: before the budget,
these runs reached 1.4 to 40 GB.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relhelpers import subprocess_env

from loopdbg.builder import GraphBuilder
from loopdbg.ir.xml_writer import write_ir

# What `loopdbg run` may peak at with --max-memory 64M: the interpreter, numpy and loopdbg
# (~80 MB), the budget, its RSS slack (32 MiB) and one iteration's overshoot.
PEAK = 400 << 20

# The child's own peak: /proc's VmHWM, the high-water mark of this program's memory since exec.
# (ru_maxrss also keeps the RSS the process had before exec, as the copy of its parent: a test
# worker grown to 560 MiB by earlier tests made every child "peak" there.)
_MEASURE = """
import resource, runpy, sys
sys.argv = ["loopdbg"] + sys.argv[1:]

def peak_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

try:
    runpy.run_module("loopdbg", run_name="__main__")
finally:
    sys.stderr.write("\\npeak-rss-kib %d\\n" % peak_kib())
"""


def run_measured(*argv, timeout: float = 120) -> tuple[int, str, int]:
    """``loopdbg ARGV`` in a child process: its exit code, stderr and peak RSS in bytes."""
    p = subprocess.run([sys.executable, "-c", _MEASURE, *map(str, argv)], capture_output=True,
                       text=True, timeout=timeout, env=subprocess_env())
    lines = p.stderr.splitlines()
    peak = int(lines[-1].split()[1]) * 1024
    return p.returncode, "\n".join(line for line in lines[:-1] if line.strip()), peak


def save(b: GraphBuilder, folder: Path, **inputs) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    np.savez(folder / "in.npz", **inputs)
    return xml, folder / "in.npz"


def assert_stopped(code: int, err: str, peak: int, *fragments: str) -> None:
    assert code != 0, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("loopdbg:")]
    assert lines, err
    for f in fragments:
        assert f in lines[-1], lines[-1]
    assert peak < PEAK, f"peak RSS {peak >> 20} MiB"


def _one_op_in_a_loop(folder: Path, op: str, extra_inputs: dict, **attrs) -> tuple[Path, Path]:
    """A loop of 3 iterations whose body applies ``op`` to x and the other inputs (invariant)."""
    b = GraphBuilder(op.lower())
    x0 = b.parameter("x0", "f32", [1])
    params = {k: b.parameter(k, dtype, list(v.shape))
              for k, (dtype, v) in extra_inputs.items()}
    loop = b.loop("grow", trip=3)
    x = loop.invariant_input(x0, "x")
    ins = [x] + [loop.invariant_input(p, f"{k}_in") for k, p in params.items()]
    y = loop.body.op(op, ins, name="big", **attrs)
    b.result(loop.output_last(y, name="y"))
    return save(b, folder, x0=np.ones(1, np.float32),
                **{k: v for k, (_, v) in extra_inputs.items()})


@pytest.mark.parametrize("op, extra, attrs", [
    ("Broadcast", {"target": ("i64", np.array([100_000, 100_000], np.int64))}, {}),
    ("Tile", {"repeats": ("i64", np.array([10**10], np.int64))}, {}),
])
def test_a_kernel_sized_by_its_inputs_values_is_refused_before_it_allocates(
        tmp_path, op, extra, attrs):
    xml, inputs = _one_op_in_a_loop(tmp_path, op, extra, **attrs)
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "loop 'grow', iteration 0", "'big'", op,
                   "would need", "GiB", "--max-memory")


def test_range_to_a_huge_stop_is_refused(tmp_path):
    b = GraphBuilder("range")
    stop = b.parameter("stop", "f32", [])
    r = b.op("Range", [np.float32(0), stop, np.float32(1)], name="numbers", output_type="f32")
    b.result(r, name="r")
    xml, inputs = save(b, tmp_path, stop=np.float32(1e11))
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "'numbers'", "Range", "would need", "--max-memory")


def test_onnx_constant_of_shape_is_refused(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="zeros")
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", shape=np.array([10_000, 10_000, 100], np.int64))
    code, err, peak = run_measured("run", tmp_path / "m.onnx", tmp_path / "in.npz",
                                   "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "'y'", "ConstantOfShape", "would need", "--max-memory")



def test_onnx_upsample_by_huge_attribute_scales_is_refused(tmp_path):
    """Upsample-7's scales are an attribute, which no input-sized estimate sees: the kernel
    reserves its output itself."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Upsample", ["x"], ["y"], name="grow", scales=[1.0, 1.0, 3e4, 3e4])
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=np.ones((1, 1, 2, 2), np.float32))
    code, err, peak = run_measured("run", tmp_path / "m.onnx", tmp_path / "in.npz",
                                   "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "'y'", "Upsample", "would need", "--max-memory")

def test_a_back_edge_that_doubles_every_iteration_stops_at_the_budget(tmp_path):
    b = GraphBuilder("doubling")
    x0 = b.parameter("x0", "f32", [1])
    loop = b.loop("double", trip=-1, cond=True)
    x = loop.merged_input(x0, "x")
    x2 = loop.body.op("Concat", [x, x], name="twice", axis=0)
    loop.back_edge(x2, x)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(x2, name="x_final"))
    xml, inputs = save(b, tmp_path, x0=np.ones(1, np.float32))
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "loop 'double'", "after iteration", "memory budget",
                   "--max-memory")


def test_a_tensor_iterator_slices_lazily(tmp_path):
    """10 million slices of a 10 MB input: made one per iteration, not all up front."""
    b = GraphBuilder("ti")
    xs = b.parameter("xs", "i8", [10_000_000, 1])
    ti = b.tensor_iterator("walk")
    x = ti.sliced_input(xs, "x", axis=0)
    y = ti.body.op("Negative", [x], name="neg")
    b.result(ti.output_last(y, name="y"))
    xml, inputs = save(b, tmp_path, xs=np.zeros((10_000_000, 1), np.int8))
    code, err, peak = run_measured("run", xml, inputs, "--max-iterations", "5", "-q")
    assert code == 0, err
    assert peak < 250 << 20, f"peak RSS {peak >> 20} MiB"


def test_many_small_scan_pieces_count_what_they_cost(tmp_path):
    """2 million one-element pieces hold 8 MB of data but ~250 MB of Python objects."""
    b = GraphBuilder("pieces")
    x0 = b.parameter("x0", "f32", [1])
    loop = b.loop("count", trip=2_000_000)
    x = loop.merged_input(x0, "x")
    x2 = loop.body.op("Add", [x, np.ones(1, np.float32)], name="x_next")
    loop.back_edge(x2, x)
    b.result(loop.output_concat(x2, axis=0, name="xs"))
    xml, inputs = save(b, tmp_path, x0=np.zeros(1, np.float32))
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q")
    assert_stopped(code, err, peak, "loop 'count'", "memory budget", "--max-memory")
