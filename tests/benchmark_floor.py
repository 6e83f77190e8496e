"""The numpy floor of the scale decoders: the same GPT generation loop written by hand in numpy.

A row of tests/benchmark_runtimes.py puts it beside loopdbg's inference and the runtime's: how fast
a program that knows the network (no graph, no shape nodes, no per-node bookkeeping, the
weights already laid out for ``@``) runs the same arithmetic in numpy on this machine. loopdbg
interprets the converter's graph node by node and cannot beat it; what is left between the
floor and the runtime (onnxruntime's prepacked-weight GEMMs, fused kernels, C++ loop) is out of
reach of any numpy engine.

The weights are read from the ONNX file of the scale decoders (the ``*_onnx`` folders that
LOOPDBG_SCALE_DIR names; torch.onnx, opset 17), by the decoder's structure: the loop body's
MatMul weights in order (4 per block, then the head), its LayerNormalizations' scale and bias (2
per block, then the final one), the biases by their PyTorch names. ``floor_time`` compares the
generated tokens with the model's ``expected.npz``, so a floor that reads a model wrongly is
told, never timed.

The arithmetic is numpy's best plain form of each step: 2-D products (one GEMM each),
LayerNormalization with reductions and in-place steps, softmax over the causal mask, GELU's erf
form with loopdbg's erf (the one numpy-only erf at hand; scipy is not a dependency).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from loopdbg.ops.erf import erf


def _weights(model: Path) -> dict:
    """The decoder's weights from its ONNX file (see the module docstring)."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(model))
    init = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    alias = {n.output[0]: n.input[0] for n in proto.graph.node if n.op_type == "Identity"}
    loop = next(n for n in proto.graph.node if n.op_type == "Loop")
    body = next(a.g for a in loop.attribute if a.name == "body")
    mats = [init[n.input[1]] for n in body.node
            if n.op_type == "MatMul" and n.input[1] in init]
    norms = [(init[alias.get(n.input[1], n.input[1])], init[alias.get(n.input[2], n.input[2])])
             for n in body.node if n.op_type == "LayerNormalization"]
    eps = [a.f for n in body.node if n.op_type == "LayerNormalization"
           for a in n.attribute if a.name == "epsilon"]
    blocks = []
    for i in range((len(mats) - 1) // 4):
        blocks.append({"ln1": norms[2 * i], "ln2": norms[2 * i + 1],
                       **{k: (mats[4 * i + j], init[f"blocks.{i}.{k}.bias"])
                          for j, k in enumerate(("qkv", "proj", "fc1", "fc2"))}})
    return {"blocks": blocks, "head": mats[-1], "ln_f": norms[-1], "tok": init["tok.weight"],
            "pos": init["pos.weight"], "eps": np.float32(eps[0] if eps else 1e-5)}


def _norm(x: np.ndarray, scale_bias: tuple, eps: np.float32) -> np.ndarray:
    d = np.float32(x.shape[-1])
    mean = np.add.reduce(x, axis=-1, keepdims=True)
    mean /= d
    diff = x - mean
    var = np.add.reduce(diff * diff, axis=-1, keepdims=True)
    var /= d
    var += eps
    np.sqrt(var, out=var)
    diff /= var
    diff *= scale_bias[0]
    diff += scale_bias[1]
    return diff


def make_floor(model: Path, heads: int):
    """``generate(prompt, steps) -> (tokens, logits of each step)`` for the decoder in ``model``."""
    w = _weights(model)
    blocks, eps, tok, pos = w["blocks"], w["eps"], w["tok"], w["pos"]
    width = tok.shape[1]
    head_width = width // heads
    scale = np.float32(1 / np.sqrt(head_width))
    root2, one, half = np.float32(np.sqrt(2)), np.float32(1), np.float32(0.5)

    def linear(x, wb):
        out = x @ wb[0]
        out += wb[1]
        return out

    def step(seq: np.ndarray) -> np.ndarray:
        t = seq.shape[1]
        x = tok[seq[0]] + pos[:t]                       # (T, D)
        mask = np.triu(np.full((t, t), -np.inf, np.float32), 1)
        for b in blocks:
            qkv = linear(_norm(x, b["ln1"], eps), b["qkv"])
            q, k, v = (qkv[:, i * width:(i + 1) * width].reshape(t, heads, head_width)
                       .transpose(1, 0, 2) for i in range(3))
            s = q @ k.transpose(0, 2, 1)
            s *= scale
            s += mask
            s -= np.maximum.reduce(s, axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= np.add.reduce(s, axis=-1, keepdims=True)
            att = (s @ v).transpose(1, 0, 2).reshape(t, width)
            x = x + linear(att, b["proj"])
            f = linear(_norm(x, b["ln2"], eps), b["fc1"])
            g = erf(f / root2)
            g += one
            g *= f
            g *= half
            x = x + linear(g, b["fc2"])
        return _norm(x[-1:], w["ln_f"], eps) @ w["head"]

    def generate(prompt: np.ndarray, steps: int):
        seq, logits = prompt, []
        for _ in range(steps):
            last = step(seq)
            logits.append(last)
            seq = np.concatenate([seq, last.argmax(-1)[None].astype(seq.dtype)], axis=1)
        return seq, np.stack(logits, axis=1)

    return generate


def floor_time(folder: Path, repeat: int) -> tuple[float | None, str]:
    """The best of ``repeat`` runs of the floor of the decoder in ``folder`` (its model.onnx,
    inputs.npz, expected.npz, manifest.json), in seconds, or None and why not."""
    try:
        heads = json.loads((folder / "manifest.json").read_text())["config"]["H"]
        generate = make_floor(folder / "model.onnx", heads)
    except (OSError, KeyError, ValueError, StopIteration, IndexError, ImportError) as exc:
        return None, f"not written for this model ({type(exc).__name__}: {exc})"
    feed = dict(np.load(folder / "inputs.npz"))
    prompt, steps = feed["prompt"], int(feed["max_new"])
    seq, _ = generate(prompt, steps)
    expected = np.load(folder / "expected.npz")["seq"]
    if not np.array_equal(seq, expected):
        return None, "its tokens differ from expected.npz (it reads this model wrongly)"
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        generate(prompt, steps)
        best = min(best, time.perf_counter() - t0)
    return best, ""
