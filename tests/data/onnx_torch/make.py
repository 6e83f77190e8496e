"""Write the PyTorch-exported ONNX models of this folder, their inputs and onnxruntime's outputs.

Run with a Python that has torch, onnx and onnxruntime (not loopdbg's test environment, which
has no torch):

    python -m venv /work/torchvenv && /work/torchvenv/bin/pip install torch onnx onnxruntime
    /work/torchvenv/bin/python tests/data/onnx_torch/make.py

For each model NAME it writes NAME.onnx, NAME.inputs.npz and NAME.expected.npz (the outputs of
onnxruntime on those inputs); tests/unit/test_onnx_torch.py checks that loopdbg gives the same.
The exports use the TorchScript exporter (``dynamo=False``), the one that writes a scripted loop
appending to a Python list as SequenceEmpty, a Loop whose body calls SequenceInsert, and
ConcatFromSequence, and nn.LSTM / nn.GRU as ONNX's LSTM and GRU operators.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
OPSET = 17


class ListLoop(nn.Module):
    """A for loop appending each step's state to a list, stacked at the end."""

    def forward(self, x, n: int):
        out = []
        h = x
        for i in range(n):
            h = torch.tanh(h * 0.5 + i)
            out.append(h)
        return torch.stack(out)


class ListWhile(nn.Module):
    """A while loop that appends while the state's sum is small, then concatenates the list."""

    def forward(self, x, limit):
        out = [x]
        h = x
        i = 0
        while bool(h.sum() < limit) and i < 20:
            h = h * 1.5 + 1.0
            out.append(h)
            i += 1
        return torch.cat(out, 0), torch.tensor(len(out))


class Lstm(nn.Module):
    """Two stacked bidirectional LSTM layers, batch first, and a linear head."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return self.head(y), h, c


class Gru(nn.Module):
    """A GRU layer (sequence first) and the mean of its outputs."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(5, 7, num_layers=1)

    def forward(self, x):
        y, h = self.rnn(x)
        return y.mean(dim=0), h


def export(name: str, module, args, inputs: dict, outputs: list[str], dynamic=None) -> None:
    path = HERE / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=OPSET,
                          input_names=list(inputs), output_names=outputs,
                          dynamic_axes=dynamic)
    np.savez(HERE / f"{name}.inputs.npz", **inputs)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {i.name: inputs[i.name] for i in sess.get_inputs()})
    np.savez(HERE / f"{name}.expected.npz", **dict(zip(outputs, got)))
    print(f"{name}: {[n.op_type for n in onnx.load(str(path)).graph.node]}")


def main() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    export("list_loop", torch.jit.script(ListLoop()), (torch.from_numpy(x), 5),
           {"x": x, "n": np.array(5, np.int64)}, ["y"])
    x1 = rng.standard_normal((1, 3)).astype(np.float32)
    export("list_while", torch.jit.script(ListWhile()),
           (torch.from_numpy(x1), torch.tensor(40.0)),
           {"x": x1, "limit": np.array(40.0, np.float32)}, ["y", "count"])
    xs = rng.standard_normal((2, 5, 4)).astype(np.float32)
    h0 = rng.standard_normal((4, 2, 6)).astype(np.float32)
    c0 = rng.standard_normal((4, 2, 6)).astype(np.float32)
    export("lstm", Lstm().eval(), tuple(torch.from_numpy(v) for v in (xs, h0, c0)),
           {"x": xs, "h0": h0, "c0": c0}, ["y", "h", "c"],
           dynamic={"x": {0: "batch", 1: "steps"}, "h0": {1: "batch"}, "c0": {1: "batch"}})
    xg = rng.standard_normal((6, 3, 5)).astype(np.float32)
    export("gru", Gru().eval(), (torch.from_numpy(xg),), {"x": xg}, ["y", "h"],
           dynamic={"x": {0: "steps", 1: "batch"}})


if __name__ == "__main__":
    main()
