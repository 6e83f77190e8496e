"""A converter-style loop body of about 100 nodes: stacked LSTM cells written out as ops.

Keras LSTMs exported through ONNX to OpenVINO arrive as a Loop whose body spells every gate out
(MatMul, Add, Split, Sigmoid, Tanh, Multiply) instead of one LSTMCell; such bodies have 30-200
nodes. This one stacks ``layers`` cells (15 nodes each) around a counter, for the UI's tests and
benchmark (what the graph, its layout and its navigation must stay usable on).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def big_body_model(folder: Path, layers: int = 6, hidden: int = 8, steps: int = 6,
                   name: str = "model") -> tuple[Path, Path]:
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    rng = np.random.default_rng(7)
    b = GraphBuilder("stacked_lstm_as_ops")
    seq = b.parameter("x", "f32", [steps, 1, hidden])
    loop = b.loop("lstm_stack", trip=steps, cond=True)
    x_t = loop.sliced_input(seq, "x_t", axis=0)
    states = []
    for k in range(layers):
        h0 = b.parameter(f"h0_{k}", "f32", [1, hidden])
        c0 = b.parameter(f"c0_{k}", "f32", [1, hidden])
        states.append((loop.merged_input(h0, f"h_{k}"), loop.merged_input(c0, f"c_{k}")))
    body = loop.body
    inp = body.op("Squeeze", [x_t, np.array([0], np.int64)], name="x_row")
    outs = []
    for k, (h, c) in enumerate(states):
        w = rng.standard_normal((hidden, 4 * hidden)).astype(np.float32) * 0.3
        r = rng.standard_normal((hidden, 4 * hidden)).astype(np.float32) * 0.3
        bias = np.zeros((1, 4 * hidden), np.float32)
        xw = body.op("MatMul", [inp, w], name=f"l{k}/x_W")
        hr = body.op("MatMul", [h, r], name=f"l{k}/h_R")
        s = body.op("Add", [xw, hr], name=f"l{k}/xW_plus_hR")
        gates = body.op("Add", [s, bias], name=f"l{k}/gates")
        i, f, g, o = body.op("Split", [gates, np.array(1, np.int64)], name=f"l{k}/split",
                             num_splits=4, outputs=4)
        i = body.op("Sigmoid", [i], name=f"l{k}/input_gate")
        f = body.op("Sigmoid", [f], name=f"l{k}/forget_gate")
        g = body.op("Tanh", [g], name=f"l{k}/cell_candidate")
        o = body.op("Sigmoid", [o], name=f"l{k}/output_gate")
        fc = body.op("Multiply", [f, c], name=f"l{k}/f_times_c")
        ig = body.op("Multiply", [i, g], name=f"l{k}/i_times_g")
        c_new = body.op("Add", [fc, ig], name=f"l{k}/c_next")
        tc = body.op("Tanh", [c_new], name=f"l{k}/tanh_c")
        h_new = body.op("Multiply", [o, tc], name=f"l{k}/h_next")
        loop.back_edge(h_new, h)
        loop.back_edge(c_new, c)
        inp = h_new
        outs.append(h_new)
    b.result(loop.output_last(outs[-1], name="h_last"))
    b.result(loop.output_concat(body.op("Unsqueeze", [outs[-1], np.array([0], np.int64)],
                                        name="h_row"), axis=0, name="h_seq"))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / f"{name}.xml")
    inputs = {"x": rng.standard_normal((steps, 1, hidden)).astype(np.float32)}
    for k in range(layers):
        inputs[f"h0_{k}"] = np.zeros((1, hidden), np.float32)
        inputs[f"c0_{k}"] = np.zeros((1, hidden), np.float32)
    npz = folder / "inputs.npz"
    np.savez(npz, **inputs)
    return Path(xml), npz


def decoder_model(folder: Path, blocks: int = 30, d: int = 4, steps: int = 3,
                  name: str = "model", extra: int = 0) -> tuple[Path, Path]:
    """A decoder-like loop body as OpenVINO's PyTorch frontend names it: operations are called
    ``aten::linear/MatMul_7``, only the weights say their module (``self.blocks.3.fc1.weight``),
    shape plumbing (ShapeOf → Reshape) sits inside every block. ``blocks`` blocks of 8 nodes
    and 11 layers, plus ``extra`` elementwise nodes each (an attention's worth: 40 makes a
    block of ~90 layers)."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    rng = np.random.default_rng(3)
    b = GraphBuilder("decoder_as_ops")
    x0 = b.parameter("x0", "f32", [1, d])
    loop = b.loop("aten::generate/Loop", trip=steps, cond=True)
    x = loop.merged_input(x0, "x")
    body, n = loop.body, 0

    def weight(module: str, shape) -> object:
        return body.const(f"self.{module}.weight",
                          (rng.standard_normal(shape) * 0.3).astype(np.float32))

    h = x
    for k in range(blocks):
        n += 1
        a = body.op("MatMul", [h, weight(f"blocks.{k}.fc1", (d, d))],
                    name=f"aten::linear/MatMul_{n}")
        a = body.op("Add", [a, np.full((1, d), 0.1, np.float32)], name=f"aten::linear/Add_{n}")
        a = body.op("Relu", [a], name=f"aten::relu/Relu_{n}")
        for j in range(extra):
            a = body.op("Multiply", [a, np.float32(0.9)], name=f"aten::mul/Multiply_{n}_{j}") \
                if j % 2 else body.op("Tanh", [a], name=f"aten::tanh/Tanh_{n}_{j}")
        n += 1
        a = body.op("MatMul", [a, weight(f"blocks.{k}.fc2", (d, d))],
                    name=f"aten::linear/MatMul_{n}")
        a = body.op("Add", [a, np.zeros((1, d), np.float32)], name=f"aten::linear/Add_{n}")
        shape = body.op("ShapeOf", [h], name=f"aten::size/ShapeOf_{k}")
        a = body.op("Reshape", [a, shape], name=f"aten::view/Reshape_{k}", special_zero=False)
        h = body.op("Add", [h, a], name=f"aten::add/Add_{k}")
    out = body.op("MatMul", [h, weight("head", (d, d))], name="aten::linear/MatMul_head")
    out = body.op("Tanh", [out], name="aten::tanh/Tanh")
    loop.back_edge(out, x)
    b.result(loop.output_last(out, name="y"))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / f"{name}.xml")
    npz = folder / "inputs.npz"
    np.savez(npz, x0=rng.standard_normal((1, d)).astype(np.float32))
    return Path(xml), npz


if __name__ == "__main__":
    import sys

    xml, npz = big_body_model(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/bigbody"))
    print(xml, npz)
