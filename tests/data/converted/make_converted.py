"""Build the ONNX models of tests/data/converted, convert each with OpenVINO's ONNX frontend, and
make the broken conversions. Run once, by hand (it needs onnx and openvino); the tests use the
files it wrote and never convert anything themselves:

    python tests/data/converted/make_converted.py

Each model gets a folder with ``model.onnx`` (built with onnx.helper), ``model.xml``/``model.bin``
(``openvino.convert_model`` + ``openvino.save_model``, weights kept in f32) and ``inputs.npz``:

* ``nested_loops``: a Loop (3 iterations) whose body holds a Loop (4 iterations) that reads a
  value of the outer body and one of the top graph by name; both scan their states.
* ``while_loop``: a Loop without a trip count: doubles a vector while its sum stays below a limit
  (a constant inside the body), scanning every value.
* ``attention_decoder``: a decoding loop of 6 steps: the state attends over keys and values read
  from the top graph (MatMul, Softmax, MatMul), is projected and squashed (MatMul, Add, Tanh),
  and gives the step's logits (scanned).
* ``fused_attention``: the same decoder with a batch axis (``[1, 1, 4]`` states), as PyTorch
  exports it. Besides the ONNX frontend's conversion, ``fused.xml`` is that model as OpenVINO's
  PyTorch frontend writes an attention: built here with ``openvino.opset13`` factories, the
  MatMul-Softmax-MatMul chain fused into one ScaledDotProductAttention-13 named ``context``, the
  other tensors named as in the ONNX model (the ONNX frontend itself does not fuse; the CPU
  plugin does, when it compiles).

And two broken conversions, each an edited copy of a converted IR (``broken.xml``/``broken.bin``
beside the source): in ``while_loop`` the body's limit constant is 60 instead of 100, so the loop
stops one iteration early (the first departure is the condition, at iteration 4); in
``attention_decoder`` one weight of the output projection inside the body is changed, so the
first departure is the projection ``proj`` at iteration 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from lxml import etree
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

HERE = Path(__file__).resolve().parent
F, I64, B = TP.FLOAT, TP.INT64, TP.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def save(name: str, graph, inputs: dict) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    onnx.save(model, folder / "model.onnx")
    np.savez(folder / "inputs.npz", **inputs)
    import openvino as ov
    converted = ov.convert_model(str(folder / "model.onnx"))
    ov.save_model(converted, str(folder / "model.xml"), compress_to_fp16=False)
    return folder


def nested_loops() -> None:
    inner = helper.make_graph(
        [helper.make_node("Mul", ["h_in", "half"], ["h_half"]),
         helper.make_node("Add", ["h_half", "acc_in"], ["h_mix"]),
         helper.make_node("Add", ["h_mix", "x"], ["h_out"]),
         helper.make_node("Identity", ["inner_cond_in"], ["inner_cond_out"]),
         helper.make_node("Identity", ["h_out"], ["h_scan"])],
        "inner_body",
        [vi("j", I64, []), vi("inner_cond_in", B, []), vi("h_in", F, [2, 3])],
        [vi("inner_cond_out", B, []), vi("h_out", F, [2, 3]), vi("h_scan", F, [2, 3])],
        initializer=[init("half", np.float32(0.5))])
    outer = helper.make_graph(
        [helper.make_node("Loop", ["inner_trips", "", "acc_in"], ["h_last", "h_all"],
                          body=inner, name="inner"),
         helper.make_node("ReduceSum", ["h_all", "axis0"], ["h_sum"], keepdims=0),
         helper.make_node("Sub", ["h_sum", "h_last"], ["acc_out"]),
         helper.make_node("Identity", ["outer_cond_in"], ["outer_cond_out"])],
        "outer_body",
        [vi("i", I64, []), vi("outer_cond_in", B, []), vi("acc_in", F, [2, 3])],
        [vi("outer_cond_out", B, []), vi("acc_out", F, [2, 3]), vi("h_all", F, [4, 2, 3])],
        initializer=[init("inner_trips", np.int64(4)), init("axis0", np.array([0], np.int64))])
    g = helper.make_graph(
        [helper.make_node("Loop", ["outer_trips", "", "acc0"], ["acc_final", "all_inner"],
                          body=outer, name="outer")],
        "nested_loops", [vi("x", F, [2, 3]), vi("acc0", F, [2, 3])],
        [vi("acc_final", F, [2, 3]), vi("all_inner", F, [3, 4, 2, 3])],
        initializer=[init("outer_trips", np.int64(3))])
    rng = np.random.default_rng(20)
    save("nested_loops", g, {"x": rng.standard_normal((2, 3)).astype(np.float32),
                             "acc0": rng.standard_normal((2, 3)).astype(np.float32) * 0.1})


def while_loop() -> None:
    body = helper.make_graph(
        [helper.make_node("Mul", ["v_in", "two"], ["v_out"]),
         helper.make_node("ReduceSum", ["v_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["keep_going"]),
         helper.make_node("Identity", ["v_out"], ["v_scan"])],
        "while_body",
        [vi("k", I64, []), vi("cond_in", B, []), vi("v_in", F, [2])],
        [vi("keep_going", B, []), vi("v_out", F, [2]), vi("v_scan", F, [2])],
        initializer=[init("two", np.float32(2.0)), init("limit", np.float32(100.0))])
    g = helper.make_graph(
        [helper.make_node("Loop", ["", "go", "v0"], ["v_final", "v_all"], body=body,
                          name="doubling")],
        "while_loop", [vi("go", B, []), vi("v0", F, [2])],
        [vi("v_final", F, [2]), vi("v_all", F, [None, 2])])
    folder = save("while_loop", g, {"go": np.array(True), "v0": np.ones(2, np.float32)})
    broken(folder, lambda layer: layer.get("name") == "limit", np.float32, lambda v: v * 0 + 60)


def decoder(name: str, seed: int, batch: bool, scan_attention: bool) -> tuple[Path, tuple]:
    """The attention decoder (6 steps, states of 4, 5 keys); ``batch`` adds a leading axis of 1
    to every tensor, as a PyTorch export has; ``scan_attention`` scans the attention weights too.
    Returns the folder and (wq, wo, wout, d, s, t), what ``fused_ir`` needs."""
    d, s, t = 4, 5, 6
    lead = [1] if batch else []
    rng = np.random.default_rng(seed)
    wq, wo = (rng.standard_normal((d, d)).astype(np.float32) * 0.5 for _ in range(2))
    wout = rng.standard_normal((d, 3)).astype(np.float32) * 0.5
    outs = [vi("cond_out", B, []), vi("h_out", F, lead + [1, d]), vi("logits", F, lead + [1, 3])]
    loop_outs = ["h_final", "all_logits"]
    graph_outs = [vi("h_final", F, lead + [1, d]), vi("all_logits", F, [t] + lead + [1, 3])]
    if scan_attention:
        outs.append(vi("attn", F, lead + [1, s]))
        loop_outs.append("all_attn")
        graph_outs.append(vi("all_attn", F, [t] + lead + [1, s]))
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "Wq"], ["q"]),
         helper.make_node("Transpose", ["keys"], ["keys_t"], perm=[0, 2, 1] if batch else [1, 0]),
         helper.make_node("MatMul", ["q", "keys_t"], ["scores"]),
         helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
         helper.make_node("Softmax", ["scaled"], ["attn"], axis=-1),
         helper.make_node("MatMul", ["attn", "values"], ["context"]),
         helper.make_node("MatMul", ["context", "Wo"], ["proj"]),
         helper.make_node("Add", ["proj", "h_in"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("MatMul", ["h_out", "Wout"], ["logits"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "decoder_body", [vi("step", I64, []), vi("cond_in", B, []), vi("h_in", F, lead + [1, d])],
        outs)
    g = helper.make_graph(
        [helper.make_node("Loop", ["steps", "", "h0"], loop_outs, body=body, name="decoder")],
        name, [vi("keys", F, lead + [s, d]), vi("values", F, lead + [s, d]),
               vi("h0", F, lead + [1, d])], graph_outs,
        initializer=[init("Wq", wq), init("Wo", wo), init("Wout", wout),
                     init("steps", np.int64(t)), init("scale", np.float32(1 / np.sqrt(d)))])
    folder = save(name, g, {"keys": rng.standard_normal(lead + [s, d]).astype(np.float32),
                            "values": rng.standard_normal(lead + [s, d]).astype(np.float32),
                            "h0": rng.standard_normal(lead + [1, d]).astype(np.float32)})
    return folder, (wq, wo, wout, d, s, t)


def attention_decoder() -> None:
    folder, _ = decoder("attention_decoder", 7, batch=False, scan_attention=True)

    def feeds_proj(layer) -> bool:          # the weight constant of the MatMul named proj
        return layer.get("type") == "Const" and layer.get("id") in _sources(layer, "proj")
    broken(folder, feeds_proj, np.float32, lambda v: v + np.eye(*v.shape, dtype=v.dtype) * 0.25)


def fused_attention() -> None:
    folder, weights = decoder("fused_attention", 11, batch=True, scan_attention=False)
    fused_ir(folder / "fused.xml", *weights)


def fused_ir(path: Path, wq, wo, wout, d: int, s: int, t: int) -> None:
    """The decoder as OpenVINO's PyTorch frontend writes it: attention as one SDPA-13."""
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset5 as o5
    import openvino.opset13 as o13

    def named(node, name):
        node.set_friendly_name(name)
        node.output(0).set_names({name})
        return node

    keys = named(o1.parameter([1, s, d], np.float32), "keys")
    values = named(o1.parameter([1, s, d], np.float32), "values")
    h0 = named(o1.parameter([1, 1, d], np.float32), "h0")
    b_step = named(o1.parameter([], np.int64), "step")
    b_h = named(o1.parameter([1, 1, d], np.float32), "h_in")
    b_k = named(o1.parameter([1, s, d], np.float32), "keys_1")
    b_v = named(o1.parameter([1, s, d], np.float32), "values_1")
    q = named(o1.matmul(b_h, o1.constant(wq), False, False), "q")
    context = named(o13.scaled_dot_product_attention(q, b_k, b_v), "context")
    proj = named(o1.matmul(context, o1.constant(wo), False, False), "proj")
    h_out = named(o1.tanh(named(o1.add(proj, b_h), "pre")), "h_out")
    logits = named(o1.matmul(h_out, o1.constant(wout), False, False), "logits")
    res_cond, res_h = o1.result(o1.constant(np.array(True))), o1.result(h_out)
    res_logits = o1.result(o1.unsqueeze(logits, o1.constant(np.array([0], np.int64))))
    body = ov.Model([res_cond, res_h, res_logits], [b_step, b_h, b_k, b_v], "decoder_body")
    loop = o5.loop(o1.constant(np.array(t, np.int64)), o1.constant(np.array(True)))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(b_h, h0.output(0), res_h.output(0))
    loop.set_invariant_input(b_k, keys.output(0))
    loop.set_invariant_input(b_v, values.output(0))
    h_final = loop.get_iter_value(res_h.output(0), -1)
    all_logits = loop.get_concatenated_slices(res_logits.output(0), 0, 1, 1, -1, 0)
    loop.set_friendly_name("decoder")
    h_final.set_names({"h_final"})
    all_logits.set_names({"all_logits"})
    model = ov.Model([h_final, all_logits], [keys, values, h0], "fused_attention")
    ov.save_model(model, str(path), compress_to_fp16=False)


def _sources(layer, consumer: str) -> set[str]:
    """Ids of the layers feeding the layer named ``consumer`` in ``layer``'s graph."""
    graph = layer.getparent().getparent()
    ids = {el.get("id") for el in graph.iter("layer") if el.get("name") == consumer}
    return {e.get("from-layer") for e in graph.find("edges") if e.get("to-layer") in ids}


def broken(folder: Path, pick, dtype, change) -> None:
    """``broken.xml``/``broken.bin``: the converted IR with the one body constant ``pick`` finds
    rewritten in place by ``change`` (same size, same offset)."""
    tree = etree.parse(str(folder / "model.xml"))
    hits = [el for body in tree.iter("body") for el in body.iter("layer")
            if el.get("type") == "Const" and pick(el)]
    if len(hits) != 1:
        raise SystemExit(f"{folder.name}: {len(hits)} constants match, not one")
    data = hits[0].find("data")
    offset, size = int(data.get("offset")), int(data.get("size"))
    blob = bytearray((folder / "model.bin").read_bytes())
    value = np.frombuffer(bytes(blob[offset:offset + size]), dtype)
    shape = [int(x) for x in data.get("shape").replace(" ", "").split(",") if x]
    new = np.asarray(change(value.reshape(shape)), dtype)
    blob[offset:offset + size] = new.tobytes()
    shutil.copy(folder / "model.xml", folder / "broken.xml")
    (folder / "broken.bin").write_bytes(bytes(blob))


if __name__ == "__main__":
    nested_loops()
    while_loop()
    attention_decoder()
    fused_attention()
