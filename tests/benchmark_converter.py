"""A Loop body as model converters write it (~100 layers), and the numpy loop doing its real work.

Converters (OpenVINO's ONNX and PyTorch frontends, tf2onnx) surround a cell's few MatMuls with
shape bookkeeping: ShapeOf, Gather of one dimension, Unsqueeze/Squeeze around scalars, Concat of
shape pieces into a Reshape target, Convert between i32 and i64 (and of the counter to float).
This body is a two-layer GRU with a normalised output projection, written that way: the trip count
is ShapeOf(X)[0] outside, ``x_t`` is Squeeze(Gather(X, Unsqueeze(iter))), every Reshape target is
built from ShapeOf pieces, the counter goes through Convert twice for the condition, and each gate
is split with VariadicSplit. The floor (``floor``) does the same arithmetic in plain numpy.
"""

from __future__ import annotations

import numpy as np

STEPS, BATCH, INP, HID = 2000, 4, 32, 48
I64 = np.int64


def _w(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)


def weights(seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    w = {}
    for layer, inp in ((1, INP), (2, HID)):
        w[f"W{layer}"] = _w(rng, 3 * HID, inp)          # z, r, n stacked (ONNX GRU layout)
        w[f"R{layer}"] = _w(rng, 2 * HID, HID)          # z, r
        w[f"Rn{layer}"] = _w(rng, HID, HID)
        w[f"B{layer}"] = (rng.standard_normal(3 * HID) * 0.1).astype(np.float32)
    w["Wo"] = _w(rng, HID, HID)
    w["bo"] = (rng.standard_normal(HID) * 0.1).astype(np.float32)
    return w


def _batch_reshape(body, value, like):
    """Reshape(value, Concat(Unsqueeze(Gather(ShapeOf(like), 0)), [-1])): a converter's no-op."""
    shape = body.op("ShapeOf", [like])
    dim0 = body.op("Gather", [shape, np.array(0, I64), np.array(0, I64)])
    dim0 = body.op("Unsqueeze", [dim0, np.array([0], I64)])
    target = body.op("Concat", [dim0, np.array([-1], I64)], axis="0")
    return body.op("Reshape", [value, target], special_zero="false")


def _gru(body, x, h, w, layer: int):
    gx = body.op("MatMul", [x, w[f"W{layer}"]], transpose_b="true")
    gx = body.op("Add", [gx, w[f"B{layer}"]])
    gx = _batch_reshape(body, gx, x)
    xz, xr, xn = body.op("VariadicSplit", [gx, np.array(-1, I64),
                                           np.array([HID, HID, HID], I64)], outputs=3)
    gh = body.op("MatMul", [h, w[f"R{layer}"]], transpose_b="true")
    hz, hr = body.op("VariadicSplit", [gh, np.array(1, I64), np.array([HID, -1], I64)],
                     outputs=2)
    z = body.op("Sigmoid", [body.op("Add", [xz, hz])])
    r = body.op("Sigmoid", [body.op("Add", [xr, hr])])
    rh = body.op("MatMul", [body.op("Multiply", [r, h]), w[f"Rn{layer}"]], transpose_b="true")
    n = body.op("Tanh", [body.op("Add", [xn, rh])])
    keep = body.op("Multiply", [z, h])
    new = body.op("Multiply", [body.op("Subtract", [np.array(1.0, np.float32), z]), n])
    out = body.op("Add", [new, keep])
    return _batch_reshape(body, out, h)


def build(steps: int = STEPS):
    """(model, inputs, weights) of the converter-style GRU Loop."""
    from loopdbg.builder import GraphBuilder

    w = weights()
    rng = np.random.default_rng(8)
    b = GraphBuilder("converted_gru")
    X = b.parameter("X", "f32", [-1, BATCH, INP])
    h0 = b.parameter("h0", "f32", [BATCH, HID])
    trip = b.op("Gather", [b.op("ShapeOf", [X]), np.array(0, I64), np.array(0, I64)])
    loop = b.loop("gru", trip=trip, cond=True)
    it = loop.current_iteration("iter", "i64", ())
    xs = loop.invariant_input(X, "X_body")
    h1 = loop.merged_input(h0, "h1")
    h2 = loop.merged_input(h0, "h2")
    limit = loop.invariant_input(trip, "limit")
    body = loop.body
    idx = body.op("Unsqueeze", [it, np.array([0], I64)])
    x = body.op("Squeeze", [body.op("Gather", [xs, idx, np.array(0, I64)]),
                            np.array([0], I64)])
    step = body.op("Convert", [it], destination_type="f32")
    x = body.op("Add", [x, body.op("Multiply", [step, np.array(0.0, np.float32)])])
    h1n = _gru(body, x, h1, w, 1)
    h2n = _gru(body, h1n, h2, w, 2)
    y = body.op("Add", [body.op("MatMul", [h2n, w["Wo"]], transpose_b="true"), w["bo"]])
    mean = body.op("ReduceMean", [y, np.array([-1], I64)], keep_dims="true")
    centred = body.op("Subtract", [y, mean])
    var = body.op("ReduceMean", [body.op("Multiply", [centred, centred]), np.array([-1], I64)],
                  keep_dims="true")
    std = body.op("Sqrt", [body.op("Add", [var, np.array(1e-5, np.float32)])])
    y = body.op("Divide", [centred, std])
    nxt = body.op("Convert", [body.op("Add", [body.op("Convert", [it], destination_type="i32"),
                                              np.array(1, np.int32)])], destination_type="i64")
    keep_going = body.op("Less", [nxt, limit])
    loop.condition(keep_going)
    loop.back_edge(h1n, h1)
    loop.back_edge(h2n, h2)
    b.result(loop.output_last(h2n, name="h_final"))
    b.result(loop.output_concat(body.op("Unsqueeze", [y, np.array([0], I64)]), axis=0,
                                name="Y"))
    inputs = {"X": rng.standard_normal((steps, BATCH, INP), dtype=np.float32),
              "h0": np.zeros((BATCH, HID), np.float32)}
    return b.build(), inputs, w


def body_layers(model) -> int:
    loop = next(la for la in model.graph.layers.values() if la.type == "Loop")
    return len(loop.body.graph.layers)


def _sigmoid(x):
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


def floor(inputs: dict, w: dict) -> dict:
    """The same arithmetic, written by hand: no shape bookkeeping."""
    x_all, h1 = inputs["X"], inputs["h0"]
    h2 = h1
    prepared = {}
    for layer in (1, 2):
        prepared[layer] = (np.ascontiguousarray(w[f"W{layer}"].T),
                           np.ascontiguousarray(w[f"R{layer}"].T),
                           np.ascontiguousarray(w[f"Rn{layer}"].T), w[f"B{layer}"])
    wo, bo = np.ascontiguousarray(w["Wo"].T), w["bo"]
    eps = np.float32(1e-5)

    def gru(x, h, layer):
        wt, rt, rnt, bias = prepared[layer]
        xz, xr, xn = np.split(x @ wt + bias, 3, axis=-1)
        hz, hr = np.split(h @ rt, 2, axis=-1)
        z, r = _sigmoid(xz + hz), _sigmoid(xr + hr)
        n = np.tanh(xn + (r * h) @ rnt)
        return (np.float32(1.0) - z) * n + z * h

    ys = []
    for t in range(x_all.shape[0]):
        h1 = gru(x_all[t], h1, 1)
        h2 = gru(h1, h2, 2)
        y = h2 @ wo + bo
        c = y - y.mean(axis=-1, keepdims=True)
        y = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps)
        ys.append(y[None])
    return {"h_final": h2, "Y": np.concatenate(ys, axis=0)}
