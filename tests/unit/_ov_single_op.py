"""One operation against OpenVINO: build it with ``openvino.opset*`` factories, save it as IR, run
it in OpenVINO's child process (CPU plugin in f32, or the reference implementations through
``Node.evaluate``), and compare with loopdbg's kernel built from the IR OpenVINO wrote.

    from _ov_single_op import C, P, check
    check(tmp_path, lambda x, k: opset8.max_pool(x, ...), [P(x), C(k)])

Inputs marked ``P`` become Parameters fed at run time; ``C`` inputs become Constants, as the
structural inputs (axes, shapes, k) usually are in real IRs. Floats compare at rtol = atol = 1e-5
unless told otherwise, integers and booleans exactly, shapes and dtypes identically. Nothing is
compiled or evaluated in the test process: a crash of OpenVINO skips the case with the reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

import openvino.opset1 as o1  # noqa: E402

from loopdbg.ir.model import CANONICAL_TYPES, Layer, Port  # noqa: E402
from loopdbg.ops.registry import make_kernel  # noqa: E402
from loopdbg.oracle import testing as ovt  # noqa: E402


class P:
    """An input fed through a Parameter."""

    def __init__(self, value):
        self.value = np.asarray(value)


class C(P):
    """An input baked in as a Constant."""


def ov_type(a: np.ndarray):
    return ov.Type.boolean if a.dtype == np.bool_ else ov.Type(a.dtype)


def layer_from_ir(path) -> Layer:
    """The single non-Parameter/Const/Result layer of the IR at ``path`` as OpenVINO wrote it."""
    found = [el for el in ET.parse(path).getroot().find("layers")
             if el.get("type") not in ("Parameter", "Const", "Result")]
    assert len(found) == 1, [el.get("type") for el in found]
    el = found[0]
    data = el.find("data")
    n_in = len(el.find("input")) if el.find("input") is not None else 0
    n_out = len(el.find("output")) if el.find("output") is not None else 0
    return Layer(id=int(el.get("id")), name=el.get("name"),
                 type=CANONICAL_TYPES.get(el.get("type"), el.get("type")),
                 version=el.get("version"), data=dict(data.attrib) if data is not None else {},
                 inputs=tuple(Port(i, i) for i in range(n_in)),
                 outputs=tuple(Port(n_in + j, j) for j in range(n_out)))


def run_openvino(build, inputs, backend: str, path) -> list[np.ndarray] | None:
    """Build the one-op model here, save it at ``path``, run it in OpenVINO's child process
    (None while recording for a batch, ``_ov_batch``)."""
    params, nodes = [], []
    for x in inputs:
        if type(x) is C:
            nodes.append(o1.constant(x.value) if x.value.size else
                         ov.op.Constant(ov_type(x.value), ov.Shape(list(x.value.shape)), []))
        else:
            p = o1.parameter(list(x.value.shape), ov_type(x.value))
            params.append(p)
            nodes.append(p)
    node = build(*nodes)
    outputs = node.outputs() if hasattr(node, "outputs") else [node]
    ov.save_model(ov.Model(outputs, params), str(path), compress_to_fp16=False)
    feeds = [x.value for x in inputs if type(x) is P]
    if backend == "cpu":
        return ovt.run(path, feeds)
    return ovt.evaluate(path, feeds)


def check(tmp_path, build, inputs, backend="cpu", version=None, rtol=1e-5, atol=1e-5,
          only=None):
    """loopdbg's kernel agrees with OpenVINO on this op (``only``: the output indices to
    compare, when an output is undefined by the specification)."""
    path = tmp_path / "op.xml"
    expected = run_openvino(build, inputs, backend, path)
    if expected is None:                 # recorded for a batch (_ov_batch): nothing to compare
        return None
    layer = layer_from_ir(path)
    if version is not None:
        assert layer.version == version
    kernel, n_out = make_kernel(layer)
    got = kernel(*(x.value for x in inputs))
    got = list(got) if isinstance(got, tuple) else [got]
    feeds = [x.value for x in inputs if type(x) is P]
    agree(got, n_out, expected, path, feeds, backend, rtol, atol, only)
    return got


def agree(got, n_out, expected, path, feeds, backend, rtol, atol, only=None):
    """``got`` (the kernel's ``n_out`` outputs) is OpenVINO's ``expected``. An answer from a
    batch (``_ov_batch``) that disagrees is asked again of the model alone, and that answer
    decides (OpenVINO compiling a model with others may fill what the specification leaves
    undefined otherwise)."""
    try:
        _compare(got, n_out, expected, rtol, atol, only)
    except AssertionError:
        if not ovt.from_batch(path):
            raise
        alone = ovt.run if backend == "cpu" else ovt.evaluate
        _compare(got, n_out, alone(path, feeds, alone=True), rtol, atol, only)


def _compare(got, n_out, expected, rtol, atol, only):
    assert n_out == len(expected) == len(got)
    for k, (g, e) in enumerate(zip(got, expected)):
        if only is not None and k not in only:
            continue
        g = np.asarray(g)
        assert g.shape == e.shape and g.dtype == e.dtype, (k, g.shape, g.dtype, e.shape, e.dtype)
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"output {k}")
