"""One operation against OpenVINO when ``openvino.opset*`` has no factory for it (Reverse-1,
for one): loopdbg's builder writes the one-op IR, OpenVINO's child process runs it (CPU plugin in
f32, or the reference implementations), and loopdbg's kernel, built from the layer as written,
runs the same inputs.

    from _ov_ir_op import check_ir
    check_ir(tmp_path, "Reverse", "opset1", [P(x), C(axes)], mode="index")

``P`` and ``C`` are those of ``_ov_single_op``: Parameters fed at run time, Constants baked in.
Comparison as there: floats at rtol = atol = 1e-5 unless told, the rest exactly, shapes and dtypes
identically.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openvino")

from _ov_single_op import C, P, agree  # noqa: E402

from loopdbg.builder import GraphBuilder  # noqa: E402
from loopdbg.ir import elements  # noqa: E402
from loopdbg.ir.xml_writer import write_ir  # noqa: E402
from loopdbg.ops.registry import make_kernel  # noqa: E402
from loopdbg.oracle import testing as ovt  # noqa: E402

__all__ = ["C", "P", "check_ir"]


def check_ir(tmp_path, type_: str, version: str, inputs, backend="cpu", rtol=1e-5, atol=1e-5,
             outputs: int = 1, out_shape=None, out_type=None, **attrs):
    b = GraphBuilder("one_op")
    nodes = []
    for k, x in enumerate(inputs):
        if type(x) is C:
            nodes.append(b.const(f"c{k}", x.value))
        else:
            nodes.append(b.parameter(f"p{k}", elements.from_numpy(x.value.dtype),
                                     list(x.value.shape)))
    out = b.op(type_, nodes, name="op", version=version, outputs=outputs, out_shape=out_shape,
               out_type=out_type, **attrs)
    outs = out if isinstance(out, tuple) else (out,)
    for k, o in enumerate(outs):
        b.result(o, f"out{k}")
    model = b.build()
    path = tmp_path / "op.xml"
    write_ir(model, path)
    feeds = [x.value for x in inputs if type(x) is not C]
    expected = ovt.run(path, feeds) if backend == "cpu" else ovt.evaluate(path, feeds)
    if expected is None:                 # recorded for a batch (_ov_batch): nothing to compare
        return None
    layer = next(layer for layer in model.graph.layers.values() if layer.name == "op")
    kernel, n_out = make_kernel(layer)
    got = kernel(*(x.value for x in inputs))
    got = list(got) if isinstance(got, tuple) else [got]
    agree(got, n_out, expected, path, feeds, backend, rtol, atol)
    return got
