"""Shape rules agree with their kernels: the declared output of a layer is what running it gives.

Each case runs the kernel (``make_kernel``) on concrete arrays, then asks the op's shape rule
(``shape_rules.infer``) about the same inputs, seeing the values of the inputs marked constant, as
the builder would. A rule may say less than the kernel (a -1 dim, an unknown rank) but never
something else. The cases cover the rules written with the op table and the traps of the kernels
(Squeeze keeping a listed axis that is not 1, TopK clamping k, Range-4 truncating its bounds).
"""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir import elements
from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

F32, I32, I64 = np.float32, np.int32, np.int64
RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(F32)


def c(value, dtype=I64):
    """A constant input."""
    return ("const", np.asarray(value, dtype))


def rnn_inputs(gates: int, lstm: bool, dirs: int = 2, n=2, t=3, i=4, h=5):
    states = [f32(n, dirs, h)] * (2 if lstm else 1)
    return [f32(n, t, i), *states, c([t, t - 1]), f32(dirs, gates * h, i),
            f32(dirs, gates * h, h), f32(dirs, gates * h)]


CASES = [
    ("Add", "opset1", {"auto_broadcast": "pdpd", "axis": "1"}, [f32(2, 3, 4), f32(3)]),
    ("Less", "opset1", {}, [f32(2, 1), f32(3)]),
    ("Select", "opset1", {}, [np.array([True, False]), f32(3, 2), f32(1)]),
    ("Asinh", "opset4", {}, [f32(2, 3)]),
    ("IsInf", "opset10", {}, [f32(4)]),
    ("MatMul", "opset1", {"transpose_b": "true"}, [f32(5, 2, 3), f32(4, 3)]),
    ("MatMul", "opset1", {}, [f32(3), f32(2, 3, 4)]),
    ("Convert", "opset1", {"destination_type": "i8"}, [f32(2)]),
    ("ConvertLike", "opset1", {}, [f32(2), np.zeros(1, I32)]),
    ("Concat", "opset1", {"axis": "-1"}, [f32(2, 3), f32(2, 1)]),
    ("Split", "opset1", {"num_splits": "3"}, [f32(2, 6), c(-1)]),
    ("VariadicSplit", "opset1", {}, [f32(2, 7), c(1), c([2, -1, 1])]),
    ("Reshape", "opset1", {"special_zero": "true"}, [f32(2, 3, 4), c([0, -1])]),
    ("Squeeze", "opset1", {}, [f32(1, 3, 1), c([0, 1])]),
    ("Squeeze", "opset15", {}, [f32(1, 3, 1)]),
    ("Unsqueeze", "opset1", {}, [f32(2, 3), c([0, 0, -1])]),
    ("ShapeOf", "opset1", {}, [f32(2, 3)]),
    ("ShapeOf", "opset3", {"output_type": "i32"}, [f32(2, 3)]),
    ("Broadcast", "opset3", {"mode": "bidirectional"}, [f32(3, 1), c([2, 1, 4])]),
    ("Broadcast", "opset1", {"mode": "explicit"}, [f32(3), c([2, 3]), c([1])]),
    ("Tile", "opset1", {}, [f32(2, 3), c([2, 1, 2])]),
    ("Transpose", "opset1", {}, [f32(2, 3, 4), c([], I64)]),
    ("Range", "opset1", {}, [c(1), c(10), c(3)]),
    ("Range", "opset4", {"output_type": "i64"}, [c(0.5, F32), c(5.2, F32), c(1.3, F32)]),
    ("Identity", "opset16", {}, [f32(2)]),
    ("ReduceMean", "opset1", {"keep_dims": "true"}, [f32(2, 3, 4), c([-1, 0])]),
    ("ReduceL2", "opset4", {}, [f32(2, 3), c([1])]),
    ("TopK", "opset11", {"axis": "1", "mode": "max", "index_element_type": "i64"},
     [f32(3, 2), c(5)]),
    ("NonZero", "opset3", {"output_type": "i32"}, [np.array([[1, 0], [2, 3]], I32)]),
    ("CumSum", "opset3", {}, [f32(2, 3), c(1)]),
    ("Gather", "opset8", {"batch_dims": "1"}, [f32(2, 3, 4), np.array([[0, 2], [1, 1]]), c(1)]),
    ("Gather", "opset1", {}, [f32(5, 6), np.zeros((2, 3), I64), c(-1)]),
    ("GatherND", "opset5", {"batch_dims": "2"}, [f32(2, 3, 4, 5), np.zeros((2, 3, 1, 1), I64)]),
    ("GatherND", "opset8", {"batch_dims": "1"}, [f32(2, 3, 4), np.zeros((2, 5, 2), I64)]),
    ("GatherElements", "opset6", {"axis": "1"}, [f32(2, 3), np.zeros((2, 5), I64)]),
    ("OneHot", "opset1", {"axis": "1"}, [np.array([[0, 2]]), c(4), c(1.0, F32), c(0.0, F32)]),
    ("StridedSlice", "opset1", {"begin_mask": "0,1,0", "end_mask": "0,1,0",
                                "shrink_axis_mask": "1", "new_axis_mask": "0,0,0,1"},
     [f32(4, 5, 6), c([1, 0, 0, 0]), c([2, 5, 6, 0]), c([1, 1, 2, 1])]),
    ("Slice", "opset8", {}, [f32(5, 6), c([1]), c([-1]), c([2]), c([1])]),
    ("ScatterUpdate", "opset3", {}, [f32(4, 2), c([1]), f32(1, 2), c(0)]),
    ("ScatterNDUpdate", "opset15", {"reduction": "sum"}, [f32(4), c([[1]]), f32(1)]),
    ("ScatterElementsUpdate", "opset12", {}, [f32(3, 3), np.zeros((1, 3), I64), f32(1, 3), c(0)]),
    ("Pad", "opset12", {"pad_mode": "edge"}, [f32(2, 3), c([1, 0]), c([0, -1])]),
    ("LSTMCell", "opset4", {"hidden_size": "5"},
     [f32(2, 3), f32(2, 5), f32(2, 5), f32(20, 3), f32(20, 5), f32(20)]),
    ("GRUCell", "opset3", {"hidden_size": "5"}, [f32(2, 3), f32(2, 5), f32(15, 3), f32(15, 5)]),
    ("RNNCell", "opset1", {"hidden_size": "5"}, [f32(2, 3), f32(2, 5), f32(5, 3), f32(5, 5)]),
    ("LSTMSequence", "opset5", {"hidden_size": "5", "direction": "bidirectional"},
     rnn_inputs(4, lstm=True)),
    ("GRUSequence", "opset5", {"hidden_size": "5", "direction": "forward"},
     rnn_inputs(3, lstm=False, dirs=1)),
    ("RNNSequence", "opset5", {"hidden_size": "5", "direction": "reverse"},
     rnn_inputs(1, lstm=False, dirs=1)),
]


def agrees(rule: TensorInfo, actual: TensorInfo) -> bool:
    if rule.type != actual.type or rule.shape is None:
        return rule.type == actual.type
    return len(rule.shape) == len(actual.shape) and all(
        d in (-1, a) for d, a in zip(rule.shape, actual.shape))


@pytest.mark.parametrize("type_, version, data, inputs", CASES,
                         ids=[f"{t}-{v}" for t, v, *_ in CASES])
def test_the_shape_rule_declares_what_the_kernel_returns(type_, version, data, inputs):
    consts = [x[1] if isinstance(x, tuple) else None for x in inputs]
    values = [x[1] if isinstance(x, tuple) else x for x in inputs]
    n_declared = int(data.get("num_splits", 1))
    if type_ == "VariadicSplit":          # as many outputs as the split gives
        n_declared = len(make_kernel(Layer(1, "x", type_, version))[0](*values))
    layer = Layer(1, "x", type_, version, data=data,
                  inputs=tuple(Port(k, k) for k in range(len(values))),
                  outputs=tuple(Port(len(values) + k, k) for k in range(n_declared)))
    kernel, n_out = make_kernel(layer)
    outs = kernel(*values)
    outs = outs if isinstance(outs, tuple) else (outs,)
    assert len(outs) == n_out
    actual = [TensorInfo(elements.from_numpy(o.dtype), np.shape(o)) for o in outs]
    infos = [TensorInfo(elements.from_numpy(v.dtype), v.shape) for v in values]
    declared = infer(type_, infos, data, consts, n_out, version)
    assert all(agrees(d, a) for d, a in zip(declared, actual)), (declared, actual)
    assert any(d.shape is not None and -1 not in d.shape for d in declared) or type_ in (
        "NonZero",), f"the rule of {type_} said nothing: {declared}"
