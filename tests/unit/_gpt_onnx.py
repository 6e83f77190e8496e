"""A small GPT decoder's greedy loop as ``torch.onnx.export`` writes one (the shape of the
exported GPT decoders issue 29 measures, at a size for tests), built with onnx.helper: no KV cache, so each iteration
re-runs the growing sequence and every shape changes; each block takes ``Shape`` of its input
three times, ``Gather``s batch, length and width, divides the width by the number of heads (an
outer value: an invariant input) and ``Cast``s it twice, and ``Unsqueeze``s and ``Concat``s the
target shapes of its ``Reshape``s again for each; the causal mask is a ``ConstantOfShape`` of the
length made upper-triangular by ``Trilu``; the weights are outer values of the top graph.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def gpt_loop(blocks: int = 2, d: int = 8, heads: int = 2, vocab: int = 11, new: int = 5,
             seed: int = 0):
    """(ModelProto, inputs): a decoder of ``blocks`` blocks generating ``new`` tokens."""
    rng = np.random.default_rng(seed)
    inits = []

    def weight(name, *shape, scale=0.5):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    nodes = []

    def const(name, value):             # a Constant of the body, as the exporter writes them
        nodes.append(helper.make_node("Constant", [], [name], name=name,
                                      value=numpy_helper.from_array(np.asarray(value), name)))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def unsqueezed(x, tag):
        return node("Unsqueeze", [x, const(f"{tag}_axes", np.array([0], np.int64))], tag)

    def layer_norm(x, tag):
        return node("LayerNormalization", [x, weight(f"{tag}_g", d, scale=1.0),
                                           weight(f"{tag}_b", d)], tag, axis=-1, epsilon=1e-5)

    weight("tok", vocab, d)
    weight("pos", 64, d)
    inits.append(numpy_helper.from_array(np.array(heads, np.int64), "n_heads"))
    length = node("Gather", [node("Shape", ["seq"], "shape_seq"),
                             const("one", np.array(1, np.int64))], "length")
    steps = node("Range", [const("zero", np.array(0, np.int64)),
                           node("Cast", [length], "length_i64", to=I64),
                           const("step", np.array(1, np.int64))], "positions")
    x = node("Add", [node("Gather", ["tok", "seq"], "tok_emb"),
                     node("Unsqueeze", [node("Gather", ["pos", steps], "pos_emb"),
                                        const("pos_axes", np.array([0], np.int64))], "pos_emb3")],
             "embedded")
    square = node("Concat", [unsqueezed(length, "mask_rows"), unsqueezed(length, "mask_cols")],
                  "mask_shape", axis=0)
    mask = node("Trilu", [node("ConstantOfShape", [square], "mask_fill", value=helper.make_tensor(
        "fill", F, [1], [-1e9])), const("diag", np.array(1, np.int64))], "mask", upper=1)
    for b in range(blocks):
        p = f"b{b}"
        dims = [node("Gather", [node("Shape", [x], f"{p}_shape{j}"),
                                const(f"{p}_dim{j}", np.array(j, np.int64))], f"{p}_d{j}")
                for j in range(3)]
        batch, seq_len, width = dims
        qkv = node("Add", [weight(f"{p}_bqkv", 3 * d), node(
            "MatMul", [layer_norm(x, f"{p}_ln1"), weight(f"{p}_wqkv", d, 3 * d)], f"{p}_qkv_mm")],
            f"{p}_qkv")
        parts = node("SplitToSequence", [qkv, width], f"{p}_parts", axis=2)
        head = node("Cast", [node("Cast", [node("Div", [width, "n_heads"], f"{p}_div")],
                                  f"{p}_cast0", to=I64)], f"{p}_cast1", to=I64)
        views = []
        for j, perm in enumerate(((0, 2, 1, 3), (0, 2, 3, 1), (0, 2, 1, 3))):
            shape = node("Concat", [unsqueezed(batch, f"{p}_u{j}b"),
                                    unsqueezed(seq_len, f"{p}_u{j}t"),
                                    unsqueezed("n_heads", f"{p}_u{j}h"),
                                    unsqueezed(head, f"{p}_u{j}d")], f"{p}_shape4_{j}", axis=0)
            part = node("SequenceAt", [parts, const(f"{p}_at{j}", np.array(j, np.int64))],
                        f"{p}_part{j}")
            views.append(node("Transpose", [node("Reshape", [part, shape], f"{p}_split{j}")],
                              f"{p}_heads{j}", perm=list(perm)))
        q, k, v = views
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"{p}_qk"), const(
            f"{p}_scale", np.array(1 / np.sqrt(d // heads), np.float32))], f"{p}_scaled"), mask],
            f"{p}_masked")
        att = node("MatMul", [node("Softmax", [scores], f"{p}_att", axis=-1), v], f"{p}_av")
        back = node("Concat", [unsqueezed(batch, f"{p}_u3b"), unsqueezed(seq_len, f"{p}_u3t"),
                               unsqueezed(width, f"{p}_u3d")], f"{p}_shape3", axis=0)
        merged = node("Reshape", [node("Transpose", [att], f"{p}_att_t", perm=[0, 2, 1, 3]),
                                  back], f"{p}_merged")
        x = node("Add", [x, node("Add", [weight(f"{p}_bo", d), node(
            "MatMul", [merged, weight(f"{p}_wo", d, d)], f"{p}_proj_mm")], f"{p}_proj")],
            f"{p}_res1")
        f = node("Add", [weight(f"{p}_b1", 2 * d), node(
            "MatMul", [layer_norm(x, f"{p}_ln2"), weight(f"{p}_w1", d, 2 * d)], f"{p}_fc1_mm")],
            f"{p}_fc1")
        erf = node("Erf", [node("Div", [f, const(f"{p}_sqrt2", np.array(np.sqrt(2), np.float32))],
                                f"{p}_div1")], f"{p}_erf")
        gelu = node("Mul", [node("Mul", [f, node("Add", [erf, const(
            f"{p}_one", np.array(1, np.float32))], f"{p}_erf1")], f"{p}_gelu0"),
            const(f"{p}_half", np.array(0.5, np.float32))], f"{p}_gelu")
        x = node("Add", [x, node("Add", [weight(f"{p}_b2", d), node(
            "MatMul", [gelu, weight(f"{p}_w2", 2 * d, d)], f"{p}_fc2_mm")], f"{p}_fc2")],
            f"{p}_res2")
    logits = node("MatMul", [layer_norm(x, "ln_f"), weight("head", d, vocab)], "logits_all")
    last = node("Gather", [logits, const("last", np.array(-1, np.int64))], "logits", axis=1)
    nodes.append(helper.make_node("ArgMax", [last], ["next"], name="next", axis=-1, keepdims=1))
    nodes.append(helper.make_node("Concat", ["seq", "next"], ["seq_out"], name="seq_out",
                                  axis=1))
    nodes.append(helper.make_node("Identity", ["cond"], ["cond_out"], name="cond_out"))
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond", B, []),
         helper.make_tensor_value_info("seq", I64, [1, None])],
        [helper.make_tensor_value_info("cond_out", B, []),
         helper.make_tensor_value_info("seq_out", I64, [1, None]),
         helper.make_tensor_value_info("logits", F, [1, vocab])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["max_new", "go", "prompt"], ["seq", "logits"], body=body,
                          name="generate")],
        "gpt",
        [helper.make_tensor_value_info("prompt", I64, [1, None]),
         helper.make_tensor_value_info("max_new", I64, [])],
        [helper.make_tensor_value_info("seq", I64, [1, None]),
         helper.make_tensor_value_info("logits", F, [None, 1, vocab])],
        initializer=inits + [numpy_helper.from_array(np.array(True), "go")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    inputs = {"prompt": np.array([[1, 4, 2]], np.int64), "max_new": np.array(new, np.int64)}
    return model, inputs
