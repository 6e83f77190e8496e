"""Small ONNX models built with onnx.helper, each with inputs and the outputs ONNX defines.

Used by test_onnx_reader.py (loopdbg alone) and test_onnx_oracle.py (the same models through
onnxruntime). The expected outputs are written from ONNX's specification by hand, never taken
from onnx.reference (whose Loop joins scan outputs with vstack, loop_semantics.md §7.4).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, opset=17, inits=(), name="m"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    # IR version 8: what onnxruntime reads (helper's default follows the newest onnx package).
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def const(name, value):
    value = np.asarray(value)
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_t", helper.np_dtype_to_tensor_dtype(value.dtype), value.shape,
        value.reshape(-1).tolist()))


def loop_running_sum(m_value=None, cond_value=True, limit=100):
    """for i < M while acc < limit: acc += x (an outer value); scans acc (a [2,3] matrix)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["acc_scan"])],
        "body",
        [vi("iteration_num", I64, []), vi("cond_in", B, []), vi("acc_in", F, [2, 3])],
        [vi("cond_out", B, []), vi("acc_out", F, [2, 3]), vi("acc_scan", F, [2, 3])])
    ins = [vi("x", F, [2, 3]), vi("acc0", F, [2, 3])]
    nodes = [helper.make_node("Constant", [], ["limit"],
                              value=helper.make_tensor("l", F, [], [float(limit)]))]
    loop_in = ["", "", "acc0"]
    feeds = {}
    if m_value is not None:
        ins.append(vi("M", I64, []))
        loop_in[0] = "M"
        feeds["M"] = np.array(m_value, np.int64)
    if cond_value is not True:
        ins.append(vi("cond", B, []))
        loop_in[1] = "cond"
        feeds["cond"] = np.array(cond_value)
    nodes.append(helper.make_node("Loop", loop_in, ["acc_final", "acc_all"], body=body))
    m = model(nodes, ins, [vi("acc_final", F, [2, 3]), vi("acc_all", F, None)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    feeds.update(x=x, acc0=np.zeros((2, 3), np.float32))
    return m, feeds


def expected_running_sum(feeds, limit=100):
    x, acc = feeds["x"], feeds["acc0"].copy()
    m = int(feeds["M"]) if "M" in feeds else None
    go = bool(feeds.get("cond", True))
    scans, i = [], 0
    while go and (m is None or i < m):
        acc = acc + x
        scans.append(acc)
        go = bool(acc.sum() < limit)
        i += 1
    stacked = np.stack(scans) if scans else np.zeros((0, 2, 3), np.float32)
    return {"acc_final": acc, "acc_all": stacked}


def scan_with_axes_and_directions():
    """Scan-11: x [2, 4] scanned on axis 1 backward; outputs stacked on axis 1, one reversed."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "col"], ["s_out"]),
         helper.make_node("Mul", ["col", "w"], ["scaled"]),
         helper.make_node("Identity", ["s_out"], ["seen"])],
        "scan_body",
        [vi("s_in", F, [2]), vi("col", F, [2])],
        [vi("s_out", F, [2]), vi("seen", F, [2]), vi("scaled", F, [2])])
    node = helper.make_node("Scan", ["s0", "x"], ["s_final", "seen_all", "scaled_all"],
                            body=body, num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=[1], scan_output_axes=[1, -1],
                            scan_output_directions=[0, 1])
    m = model([const("w", np.float32(10.0)), node], [vi("s0", F, [2]), vi("x", F, [2, 4])],
              [vi("s_final", F, [2]), vi("seen_all", F, [2, 4]), vi("scaled_all", F, [2, 4])],
              opset=11)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    feeds = {"s0": np.zeros(2, np.float32), "x": x}
    cols = [x[:, k] for k in (3, 2, 1, 0)]        # backward along axis 1
    s, seen, scaled = np.zeros(2, np.float32), [], []
    for c in cols:
        s = s + c
        seen.append(s)
        scaled.append(c * 10)
    want = {"s_final": s, "seen_all": np.stack(seen, axis=1),
            "scaled_all": np.stack(scaled[::-1], axis=-1)}
    return m, feeds, want


def nested_with_if_and_outer_values():
    """Loop over i < n: an inner Loop (j < i+1) adds `step` (read two scopes out); an If in the
    outer body picks +1 or -1 by the parity of i, reading `one` from the model's scope."""
    inner = helper.make_graph(
        [helper.make_node("Add", ["t_in", "step"], ["t_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "inner", [vi("j", I64, []), vi("c_in", B, []), vi("t_in", F, [])],
        [vi("c_out", B, []), vi("t_out", F, [])])
    then_g = helper.make_graph([helper.make_node("Identity", ["one"], ["sgn_t"])], "then", [],
                               [vi("sgn_t", F, [])])
    else_g = helper.make_graph([helper.make_node("Neg", ["one"], ["sgn_e"])], "else", [],
                               [vi("sgn_e", F, [])])
    outer = helper.make_graph(
        [const("one_i", np.int64(1)), const("two", np.int64(2)), const("zero", np.int64(0)),
         helper.make_node("Add", ["i", "one_i"], ["reps"]),
         helper.make_node("Loop", ["reps", "", "acc_in"], ["acc_inner"], body=inner),
         helper.make_node("Mod", ["i", "two"], ["parity"]),
         helper.make_node("Equal", ["parity", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["sgn"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Mul", ["acc_inner", "sgn"], ["acc_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "outer", [vi("i", I64, []), vi("cond", B, []), vi("acc_in", F, [])],
        [vi("cond_out", B, []), vi("acc_out", F, []), vi("sgn", F, [])])
    m = model([const("one", np.float32(1.0)),
               helper.make_node("Loop", ["n", "", "acc0"], ["acc", "signs"], body=outer)],
              [vi("n", I64, []), vi("acc0", F, []), vi("step", F, [])],
              [vi("acc", F, []), vi("signs", F, None)])
    feeds = {"n": np.array(4, np.int64), "acc0": np.array(0.0, np.float32),
             "step": np.array(0.5, np.float32)}
    acc, signs = 0.0, []
    for i in range(4):
        acc = acc + 0.5 * (i + 1)
        sgn = 1.0 if i % 2 == 0 else -1.0
        acc *= sgn
        signs.append(sgn)
    return m, feeds, {"acc": np.float32(acc), "signs": np.array(signs, np.float32)}


def scan8_batch():
    """Scan-8: a batch of 2 running sums over a sequence of 3 (the sequence on axis 1)."""
    body = helper.make_graph([helper.make_node("Add", ["s_in", "v"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["o"])],
                             "b", [vi("s_in", F, [2]), vi("v", F, [2])],
                             [vi("s_out", F, [2]), vi("o", F, [2])])
    node = helper.make_node("Scan", ["", "init", "x"], ["y", "z"], body=body, num_scan_inputs=1,
                            directions=[1])
    m = model([node], [vi("init", F, [2, 2]), vi("x", F, [2, 3, 2])],
              [vi("y", F, [2, 2]), vi("z", F, [2, 3, 2])], opset=8)
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    init = np.ones((2, 2), np.float32)
    ys, zs = [], []
    for b in range(2):
        s, outs = init[b], []
        for t in (2, 1, 0):
            s = s + x[b, t]
            outs.append(s)
        ys.append(s)
        zs.append(np.stack(outs))
    return m, {"init": init, "x": x}, {"y": np.stack(ys), "z": np.stack(zs)}
