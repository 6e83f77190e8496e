"""Trace format versions: version 2 batches iterations; version 1 files still open and read.

``tests/data/trace_v1.ltrace`` was recorded by loopdbg's version 1 writer (one ITERATION frame per
iteration, one index entry per iteration) from the corpus model loop_while_iter.
"""

from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine
from loopdbg.engine.inputs import load_npz
from loopdbg.ir.load import read_model
from loopdbg.trace import TraceReader, record
from loopdbg.trace import format as fmt
from loopdbg.trace.diff import diff

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "data" / "trace_v1.ltrace"
CASE = ROOT / "tests" / "corpus" / "loop_while_iter"


def _recorded(tmp_path) -> Path:
    path = tmp_path / "v2.ltrace"
    inputs = load_npz(CASE / "inputs.npz")
    record(Engine(read_model(CASE / "model.xml")).run(inputs), path, inputs=inputs)
    return path


@pytest.mark.parametrize("scan", [False, True])
def test_a_version_1_trace_reads_as_the_same_run_does_today(tmp_path, scan):
    new = _recorded(tmp_path)
    with TraceReader(V1, scan=scan) as old, TraceReader(new) as now:
        assert old.version == (1, 0) and now.version == fmt.VERSION
        assert old.problems == []
        assert old.verify() == ([] if not scan else [old.truncation_text()])
        assert [(r.path, r.outer, r.recorded, r.iterations, r.reason) for r in old.loops()] == \
            [(r.path, r.outer, r.recorded, r.iterations, r.reason) for r in now.loops()]
        for loop in now.loops():
            for k in range(loop.recorded):
                a, b = old.frame(loop.path, k, loop.outer), now.frame(loop.path, k, loop.outer)
                assert (a.cond, a.continues, a.trip_count) == (b.cond, b.continues, b.trip_count)
                assert a.tensors().keys() == b.tensors().keys()
                for name, v in a.tensors().items():
                    np.testing.assert_array_equal(v, b.tensors()[name])
        for name, v in now.outputs().items():
            np.testing.assert_array_equal(old.outputs()[name], v)
    assert diff(str(V1), str(new)).identical


def test_a_long_scalar_loop_costs_a_few_bytes_per_iteration(tmp_path):
    """100,000 iterations of x + 1 on one float (issue 21): 8 bytes of tensors per iteration
    (the back edge and the scan slice); the file stays under 2x that plus 16 bytes."""
    import sys
    sys.path.insert(0, str(ROOT / "tests"))
    import benchmark_cases

    model, inputs, _, _ = benchmark_cases.load("loop_while_scalar_100k")
    path = tmp_path / "w.ltrace"
    record(Engine(model).run(inputs), path, inputs=inputs)
    n = 100_000
    outputs = 2 * 4 * n + 1024        # the run's outputs: x_scan (4 bytes per iteration) ...
    assert path.stat().st_size <= (2 * 8 + 16) * n + outputs
    assert path.stat().st_size < 4 << 20
    with TraceReader(path) as t:
        assert t.loops()[0].recorded == n
        for k in (0, 1, 127, 128, 129, 4095, 50_000, n - 1):
            f = t.frame("while_loop", k)
            assert f.back_edges["body_x"].tolist() == [k + 1.0]
            assert f.cond == (k < n - 1) and f.continues == (k < n - 1)
        assert t.verify() == []
        kinds = [kind for _, kind, _ in t._walk()]
        assert kinds.count(fmt.BATCH) >= 1 and kinds.count(fmt.ITERATION) <= 200


def test_strided_slices_are_batched_in_c_order(tmp_path):
    """A loop sliced along axis 1 feeds strided views; a batch stores each as its C-order bytes."""
    from loopdbg.builder import GraphBuilder

    b = GraphBuilder("strided")
    x = b.parameter("x", "f32", [2, 400])
    ti = b.tensor_iterator("cols")
    col = ti.sliced_input(x, "col", axis=1)
    body = ti.body
    doubled = body.op("Multiply", [col, np.array(2.0, np.float32)], name="doubled")
    b.result(ti.output_concat(doubled, axis=1, name="y"))
    model = b.build()
    inputs = {"x": np.arange(800, dtype=np.float32).reshape(2, 400)}
    events = list(Engine(model).run(inputs))
    path = tmp_path / "s.ltrace"
    record(iter(events), path, inputs=inputs)
    with TraceReader(path) as t:
        assert fmt.BATCH in [kind for _, kind, _ in t._walk()]
        for e in events:
            if type(e).__name__ == "IterationDone":
                f = t.frame(e.path, e.iteration, e.outer)
                np.testing.assert_array_equal(f.sliced_inputs["col"], e.body_in[0])
                np.testing.assert_array_equal(f.scan_slices["y"], e.body_out[0])
        assert t.verify() == []
