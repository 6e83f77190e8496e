"""The four long-loop models of tests/perf and the hand-written numpy loop each is measured against.

Each model was written by OpenVINO (its Python factories, or convert_model of an ONNX model); the
inputs are made here from a fixed seed, and the weights the numpy loops need are read from the
model itself, so only model.xml and model.bin are kept. A numpy loop ("the floor") mirrors the
model node by node, one iteration at a time, as any per-iteration interpreter must run it.

``load(name, scale)`` gives (model, inputs, weights, floor); ``scale`` < 1 shortens the while loop
(its limit is an input; the other models declare their input shapes, and loopdbg holds inputs to
them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

PERF = Path(__file__).resolve().parent / "perf"


@dataclass(frozen=True)
class Case:
    title: str
    inputs: Callable[[np.random.Generator, float], dict]
    weights: Callable[[object], dict]
    floor: Callable[[dict, dict], dict]


def _body(model):
    return next(layer for layer in model.graph.layers.values()
                if layer.type in ("Loop", "TensorIterator")).body.graph


def _const_inputs(graph, layer_type: str, name: str | None = None) -> list:
    """The Constant values feeding the first ``layer_type`` layer (named ``name``), by port."""
    layer = next(la for la in graph.layers.values()
                 if la.type == layer_type and (name is None or la.name == name))
    out = []
    for port in range(len(layer.inputs)):
        src = graph.producer(layer.id, port)
        producer = graph.layers[src[0]] if src else None
        out.append(np.asarray(producer.value) if producer is not None
                   and producer.type == "Constant" else None)
    return out


def _sigmoid(x):
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


# -- TensorIterator over an LSTMCell ------------------------------------------------------------
def _lstm_inputs(rng, scale):             # the model declares X [1, 2000, 64]
    return {"X": rng.standard_normal((1, 2000, 64), dtype=np.float32),
            "H0": rng.standard_normal((1, 128), dtype=np.float32) * np.float32(0.5),
            "C0": rng.standard_normal((1, 128), dtype=np.float32) * np.float32(0.5)}


def _lstm_weights(model):
    _, _, _, w, r, b = _const_inputs(_body(model), "LSTMCell")
    return {"WT": np.ascontiguousarray(w.T), "RT": np.ascontiguousarray(r.T), "B": b}


def _lstm_floor(inputs, w):
    x, h, c = inputs["X"], inputs["H0"], inputs["C0"]
    wt, rt, bias = w["WT"], w["RT"], w["B"]
    ys = []
    for t in range(x.shape[1]):
        g = x[:, t] @ wt + h @ rt + bias                 # sliced input + Squeeze, LSTMCell gates
        f, i, cc, o = np.split(g, 4, axis=-1)            # OpenVINO's gate order f, i, c, o
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
        h = _sigmoid(o) * np.tanh(c)
        ys.append(h[:, None])                            # Unsqueeze -> concatenated output
    return {"Y": np.concatenate(ys, axis=1), "Ho": h, "Co": c}


# -- ONNX RNN Loop, as OpenVINO's ONNX frontend converts it ---------------------------------------
def _rnn_inputs(rng, scale):              # the model declares X [5000, 4, 32]
    return {"X": rng.standard_normal((5000, 4, 32), dtype=np.float32),
            "h0": rng.standard_normal((4, 64), dtype=np.float32) * np.float32(0.5)}


def _rnn_weights(model):
    body = _body(model)
    w = _const_inputs(body, "MatMul", "xw")[1]          # stored transposed (transpose_b)
    r = _const_inputs(body, "MatMul", "hr")[1]
    bias = _const_inputs(body, "Add", "s1")[1]
    return {"W": np.ascontiguousarray(w.T), "R": np.ascontiguousarray(r.T), "bias": bias}


def _rnn_floor(inputs, w):
    x, h = inputs["X"], inputs["h0"]
    wm, rm, bias = w["W"], w["R"], w["bias"]
    hs = []
    for it in range(x.shape[0]):                         # trip count = Shape(X)[0]
        h = np.tanh(x[it] @ wm + h @ rm + bias)          # Gather(X, iter), MatMuls, Adds, Tanh
        hs.append(h[None])                               # Unsqueeze -> scan output
    return {"h_final": h, "H_all": np.concatenate(hs, axis=0)}


# -- a while loop on one float ------------------------------------------------------------------
def _while_inputs(rng, scale):
    return {"x0": np.zeros([1], np.float32),
            "limit": np.array([float(max(int(100_000 * scale), 2))], np.float32)}


def _while_floor(inputs, w):
    x, limit, one = inputs["x0"], inputs["limit"], np.ones([1], np.float32)
    scan = []
    while True:
        x = x + one                                      # Add
        cond = x < limit                                 # Less
        scan.append(x)                                   # scan output of unknown length
        if not cond[0]:
            break
    return {"x_final": x, "x_scan": np.concatenate(scan, axis=0)}


# -- 200 iterations on a 1 MiB state ------------------------------------------------------------
def _big_inputs(rng, scale):
    return {"h0": rng.uniform(0.0, 1.0, (256, 1024)).astype(np.float32),
            "c": rng.uniform(0.0, 1.0, (256, 1024)).astype(np.float32)}


def _big_floor(inputs, w):
    h, c, half = inputs["h0"], inputs["c"], np.float32(0.5)
    sums = []
    for _ in range(200):                                 # the model's trip count
        h = h * half + c                                 # Multiply, Add: a new 1 MiB array
        sums.append(h.sum(axis=(0, 1), keepdims=True))   # ReduceSum, keep_dims
    return {"h_final": h, "h_sums": np.concatenate(sums, axis=0)}


CASES = {
    "ti_lstm_long": Case("LSTMCell TensorIterator, 2,000 steps", _lstm_inputs, _lstm_weights,
                         _lstm_floor),
    "loop_rnn_onnx_5k": Case("RNN Loop converted from ONNX, 5,000 steps", _rnn_inputs,
                             _rnn_weights, _rnn_floor),
    "loop_while_scalar_100k": Case("scalar while loop, 100,000 iterations", _while_inputs,
                                   lambda model: {}, _while_floor),
    "loop_big_state_200": Case("1 MiB state, 200 iterations", _big_inputs, lambda model: {},
                               _big_floor),
}


def load(name: str, scale: float = 1.0):
    """(model, inputs, weights, floor) of perf case ``name``."""
    from loopdbg.ir.load import read_model

    case = CASES[name]
    model = read_model(str(PERF / name / "model.xml"))
    rng = np.random.default_rng(sum(name.encode()))
    return model, case.inputs(rng, scale), case.weights(model), case.floor
