"""The budget's backstop (issue 26, class 5): with ``--max-memory`` given, a kernel that no size
rule of ``ops.sizes`` foresees is still stopped below the budget, by the process's data-size cap
(``ops.budget.backstop``), with one sentence naming the layer and the budget.

Before the backstop, each of these ran to the end with a peak of 2.4 to 3.2 GB under a 64 MiB
budget: a MatMul whose output is an outer product of its operands' rows and columns (numpy's
matmul, no broadcasting to check) and an ONNX ConvTranspose to a given ``output_shape``.
"""

from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np
import pytest

from test_memory_budget import assert_stopped, run_measured, save

from loopdbg.builder import GraphBuilder

BUDGET = 64 << 20
# What the held-back set allows: the budget plus 192 MiB, the interpreter and loopdbg included.
ALLOWED = BUDGET + (192 << 20)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the data-size cap is Linux's RLIMIT_DATA")


def test_an_outer_product_matmul_is_stopped_below_the_budget(tmp_path):
    n = 20_000                                # a (20000, 20000) float32 output: 1.5 GiB
    b = GraphBuilder("outer_mm")
    x = b.parameter("x", "f32", [n, 2])
    y = b.parameter("y", "f32", [2, n])
    b.result(b.op("MatMul", [x, y], name="outer_mm"))
    xml, inputs = save(b, tmp_path, x=np.ones((n, 2), np.float32),
                       y=np.ones((2, n), np.float32))
    code, err, peak = run_measured("run", xml, inputs, "--max-memory", "64M", "-q",
                                   "-o", tmp_path / "out.npz")
    assert_stopped(code, err, peak, "'outer_mm' (MatMul)", "out of memory",
                   "memory budget is 64.0 MiB (--max-memory)")
    assert peak < ALLOWED, f"peak RSS {peak >> 20} MiB"
    assert not (tmp_path / "out.npz").exists()


def test_an_onnx_conv_transpose_to_a_huge_output_shape_is_stopped(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    vi = helper.make_tensor_value_info
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[20_000, 20_000],
                            strides=[10_000, 10_000])
    graph = helper.make_graph(
        [node], "g", [vi("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [vi("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.ones((1, 1, 2, 2), np.float32), "w")])
    model = tmp_path / "up.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    np.savez(tmp_path / "in.npz", x=np.ones((1, 1, 2, 2), np.float32))
    code, err, peak = run_measured("run", model, tmp_path / "in.npz", "--max-memory", "64M",
                                   "-q")
    assert_stopped(code, err, peak, "ConvTranspose", "out of memory", "(--max-memory)")
    assert peak < ALLOWED, f"peak RSS {peak >> 20} MiB"


def test_a_model_of_matrix_products_runs_under_a_tiny_budget(tmp_path):
    """The cap leaves room for what a run needs besides its values: BLAS's work buffers are
    made before the cap is measured (OpenBLAS ends the process when it cannot map them), so a
    run of small products under a 1 MiB budget finishes as it does without one."""
    b = GraphBuilder("products")
    x = b.parameter("x", "f32", [64, 64])
    h = x
    for k in range(8):
        h = b.op("MatMul", [h, x], name=f"mm{k}")
    b.result(b.op("Tanh", [h], name="t"))
    xml, inputs = save(b, tmp_path, x=np.full((64, 64), 0.01, np.float32))
    code, err, _ = run_measured("run", xml, inputs, "--max-memory", "1M", "-q",
                                "-o", tmp_path / "out.npz")
    assert code == 0, err
    assert (tmp_path / "out.npz").exists()


def test_the_cap_holds_during_a_run_and_python_children_start_without_it(tmp_path, monkeypatch):
    """Inside ``backstop`` a run's start caps RLIMIT_DATA; a runtime child (``python_argv``)
    starts with the limit loopdbg had before (its memory is watched on its own); the end of
    the backstop puts the limit back."""
    from loopdbg import programs
    from loopdbg.ops import budget

    (tmp_path / "print_data_limit.py").write_text(
        "import resource\nprint(resource.getrlimit(resource.RLIMIT_DATA)[0])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = resource.getrlimit(resource.RLIMIT_DATA)

    def child_limit() -> int:
        out = subprocess.run(programs.python_argv("print_data_limit"), capture_output=True,
                             text=True, check=True, cwd=programs.NEUTRAL).stdout
        return int(out)

    try:
        with budget.backstop():
            budget.start(8 << 20)
            soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
            now = budget.data_size()
            assert soft != resource.RLIM_INFINITY
            assert now < soft <= now + (8 << 20) + budget.MARGIN
            assert child_limit() == before[0]
    finally:
        budget.start(None)
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    assert child_limit() == before[0]
