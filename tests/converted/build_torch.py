"""PyTorch models with loops (TorchScript, and ONNX exported from TorchScript), converted by
``openvino.convert_model`` (see make_models.py).

Greedy decoders stop on a token or a stop flag that random weights would reach at an arbitrary
step, or never. So each decoder is first run without its stop condition, and the one bias that
decides stopping (the end token's logit, the stop projection's bias) is then set so the stop
comes at a chosen step with a clear margin; every step before it runs exactly as it did.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import openvino as ov
import torch
from build_keras import Built
from torch import nn

END = 1                        # the end-of-sequence token of the attention decoder
MIN_GAP = 0.1                  # least gap (logits) between the stop step and the steps before


def _gru(gates_in, gates_h, h):
    """One GRU step written out from its two gate projections (the PyTorch frontend has no
    aten::gru_cell)."""
    ir, iz, inn = gates_in.chunk(3, 1)
    hr, hz, hn = gates_h.chunk(3, 1)
    r = torch.sigmoid(ir + hr)
    z = torch.sigmoid(iz + hz)
    n = torch.tanh(inn + r * hn)
    return (1 - z) * n + z * h


def _lstm(gates, c):
    """One LSTM step written out from its summed gate projections (the PyTorch frontend has no
    aten::lstm_cell): gates i, f, g, o as nn.LSTMCell orders them."""
    i, f, g, o = gates.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


class AttentionDecoder(nn.Module):
    """Greedy attention decoder: embedding of the last token, dot-product attention over the
    encoded source, a GRU step, LayerNorm, logits, argmax; stops on END or after max_len."""

    def __init__(self, vocab=12, emb=8, hidden=16, feats=10):
        super().__init__()
        self.enc = nn.Linear(feats, hidden)
        self.emb = nn.Embedding(vocab, emb)
        self.wi = nn.Linear(emb + hidden, 3 * hidden)
        self.wh = nn.Linear(hidden, 3 * hidden)
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocab)
        self.end = END

    def forward(self, src: torch.Tensor, max_len: torch.Tensor):
        mem = torch.tanh(self.enc(src))                  # [T, H]
        h = mem.mean(0, keepdim=True)                     # [1, H]
        tok = torch.zeros(1, dtype=torch.long)            # start token 0
        tokens = torch.zeros(0, dtype=torch.long)
        step = torch.zeros((), dtype=torch.long)
        done = torch.zeros((), dtype=torch.bool)
        while bool(step < max_len) and not bool(done):
            att = torch.softmax(torch.matmul(h, mem.t()), dim=-1)
            ctx = torch.matmul(att, mem)
            h = _gru(self.wi(torch.cat([self.emb(tok), ctx], 1)), self.wh(h), h)
            logits = self.out(self.norm(h))
            tok = torch.argmax(logits, 1)
            tokens = torch.cat([tokens, tok])
            step = step + 1
            done = tok[0] == self.end
        return tokens

    def end_margins(self, src, steps: int) -> list[float]:
        """END's logit minus the best other logit at each step, END never chosen."""
        margins = []
        with torch.no_grad():
            mem = torch.tanh(self.enc(src))
            h = mem.mean(0, keepdim=True)
            tok = torch.zeros(1, dtype=torch.long)
            for _ in range(steps):
                att = torch.softmax(h @ mem.t(), -1)
                h = _gru(self.wi(torch.cat([self.emb(tok), att @ mem], 1)), self.wh(h), h)
                logits = self.out(self.norm(h))[0]
                others = torch.cat([logits[:END], logits[END + 1:]])
                margins.append(float(logits[END] - others.max()))
                best = int(torch.argmax(others))
                tok = torch.tensor([best if best < END else best + 1])
        return margins


def _stop_bias(margins: list[float], lo: int, hi: int) -> tuple[float, int]:
    """The shift that makes ``margins[t] + shift`` first positive at one step t in [lo, hi),
    the one with the widest margin on both sides."""
    best = None
    for t in range(lo, hi):
        before = max(margins[:t])
        if margins[t] > before:
            gap = margins[t] - before
            if best is None or gap > best[0]:
                best = (gap, t, -(margins[t] + before) / 2)
    if best is None or best[0] < MIN_GAP:
        raise SystemExit("no step can be made the stop step clearly; change the seed")
    return best[2], best[1]


def _input(model, old: str, new: str) -> None:
    for p in model.get_parameters():
        if old in p.output(0).get_names():
            p.set_friendly_name(new)
            p.output(0).get_tensor().set_names({new})
            return
    raise SystemExit(f"no input {old}")


def attention_decoder(rng):
    torch.manual_seed(5)
    net = AttentionDecoder().eval()
    src = torch.from_numpy(rng.standard_normal((7, 10)).astype(np.float32))
    shift, stop = _stop_bias(net.end_margins(src, 12), 3, 12)
    with torch.no_grad():
        net.out.bias[END] += shift
        assert len(net(src, torch.tensor(12))) == stop + 1
    scripted = torch.jit.script(net)
    om = ov.convert_model(scripted, input=[("src.1", [7, 10], ov.Type.f32),
                                           ("max_len.1", [], ov.Type.i64)])
    _input(om, "src.1", "src")
    _input(om, "max_len.1", "max_len")
    inputs = {"src": src.numpy(), "max_len": np.array(12, np.int64)}
    with torch.no_grad():
        got = {"tokens": scripted(src, torch.tensor(12)).numpy()}
    about = (f"TorchScript while loop: Embedding, dot-product attention (softmax), GRU step, "
             f"LayerNorm, Linear, argmax; stops on token {END} (at step {stop + 1}) or "
             f"max_len=12")
    return Built(om, inputs, ["tokens"], about, got)


class Tacotron(nn.Module):
    """Tacotron-like decoder: prenet on the last frame, attention LSTM, additive (Bahdanau)
    attention over the encoder memory, decoder LSTM, mel frame and stop-token projections;
    stops when sigmoid(stop) > 0.5 or after max_steps."""

    def __init__(self, n_mel=8, enc=16, pre=16, hid=24, att=12):
        super().__init__()
        self.n_mel = n_mel
        self.pre1 = nn.Linear(n_mel, pre)
        self.pre2 = nn.Linear(pre, pre)
        self.hid = hid
        self.att_in = nn.Linear(pre + enc, 4 * hid)
        self.att_h = nn.Linear(hid, 4 * hid, bias=False)
        self.query = nn.Linear(hid, att, bias=False)
        self.keys = nn.Linear(enc, att, bias=False)
        self.v = nn.Linear(att, 1, bias=False)
        self.dec_in = nn.Linear(hid + enc, 4 * hid)
        self.dec_h = nn.Linear(hid, 4 * hid, bias=False)
        self.mel = nn.Linear(hid + enc, n_mel)
        self.stop = nn.Linear(hid + enc, 1)

    def forward(self, memory: torch.Tensor, max_steps: torch.Tensor):
        keys = self.keys(memory)                           # [T, A]
        frame = torch.zeros(1, self.n_mel)
        h1 = torch.zeros(1, self.hid)
        c1 = torch.zeros(1, self.hid)
        h2 = torch.zeros(1, self.hid)
        c2 = torch.zeros(1, self.hid)
        ctx = torch.zeros(1, memory.shape[1])
        mels = torch.zeros(0, self.n_mel)
        stops = torch.zeros(0)
        step = torch.zeros((), dtype=torch.long)
        done = torch.zeros((), dtype=torch.bool)
        while bool(step < max_steps) and not bool(done):
            p = torch.relu(self.pre2(torch.relu(self.pre1(frame))))
            h1, c1 = _lstm(self.att_in(torch.cat([p, ctx], 1)) + self.att_h(h1), c1)
            energy = self.v(torch.tanh(self.query(h1) + keys))     # [T, 1]
            weights = torch.softmax(energy.t(), dim=-1)            # [1, T]
            ctx = torch.matmul(weights, memory)
            h2, c2 = _lstm(self.dec_in(torch.cat([h1, ctx], 1)) + self.dec_h(h2), c2)
            out = torch.cat([h2, ctx], 1)
            frame = self.mel(out)
            stop = self.stop(out)[:, 0]
            mels = torch.cat([mels, frame])
            stops = torch.cat([stops, stop])
            step = step + 1
            done = torch.sigmoid(stop[0]) > 0.5
        return mels, stops


def tacotron_decoder(rng):
    torch.manual_seed(24)          # a seed whose stop logit has one clear peak (see _stop_bias)
    net = Tacotron().eval()
    with torch.no_grad():            # weights of a trained model's size: PyTorch's initial ones
        for p in net.parameters():   # are so small that every step is nearly the same
            p.mul_(4)
    memory = torch.from_numpy(rng.standard_normal((6, 16)).astype(np.float32))
    with torch.no_grad():            # the stop bias moves only the stop: run without stopping
        net.stop.bias -= 100
        _, logits = net(memory, torch.tensor(16))
        net.stop.bias += 100
    shift, stop = _stop_bias([float(v) + 100 for v in logits], 4, 16)
    with torch.no_grad():
        net.stop.bias += shift
        assert len(net(memory, torch.tensor(16))[1]) == stop + 1
    scripted = torch.jit.script(net)
    om = ov.convert_model(scripted, input=[("memory.1", [6, 16], ov.Type.f32),
                                           ("max_steps.1", [], ov.Type.i64)])
    _input(om, "memory.1", "memory")
    _input(om, "max_steps.1", "max_steps")
    inputs = {"memory": memory.numpy(), "max_steps": np.array(16, np.int64)}
    with torch.no_grad():
        mel, stops = scripted(memory, torch.tensor(16))
    about = (f"TorchScript while loop: prenet, attention LSTM step, additive attention, decoder "
             f"LSTM step, mel + stop projections; stops when sigmoid(stop) > 0.5 (at step "
             f"{stop + 1}) or max_steps=16")
    return Built(om, inputs, ["mel", "stop_logits"], about,
                 {"mel": mel.numpy(), "stop_logits": stops.numpy()})


class Forecaster(nn.Module):
    """Conv1D forecaster: two convolutions over a 16-step window, a linear head for the next
    value; each prediction is written into the forecast and slid into the window."""

    def __init__(self, window=16, channels=8):
        super().__init__()
        self.conv1 = nn.Conv1d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv1d(channels, channels, 3, padding=1)
        self.head = nn.Linear(channels * window, 1)

    def forward(self, history: torch.Tensor, horizon: torch.Tensor):
        win = history
        n = int(horizon)
        preds = torch.zeros(history.shape[0], n)
        for i in range(n):
            y = torch.relu(self.conv2(torch.relu(self.conv1(win.unsqueeze(1)))))
            p = self.head(y.flatten(1))
            preds[:, i] = p[:, 0]
            win = torch.cat([win[:, 1:], p], 1)
        return preds


def conv1d_forecaster(rng):
    """Through ONNX: TorchScript -> torch.onnx.export (opset 17, a Loop) -> convert_model."""
    torch.manual_seed(7)
    net = torch.jit.script(Forecaster().eval())
    history = torch.from_numpy(rng.standard_normal((2, 16)).astype(np.float32))
    horizon = torch.tensor(6)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "forecaster.onnx")
        # The legacy (TorchScript) exporter: it writes data-dependent loops as ONNX Loop.
        torch.onnx.export(net, (history, horizon), path, input_names=["history", "horizon"],
                          output_names=["forecast"], dynamo=False, opset_version=17)
        om = ov.convert_model(path)
    inputs = {"history": history.numpy(), "horizon": np.array(6, np.int64)}
    with torch.no_grad():
        got = {"forecast": net(history, horizon).numpy()}
    return Built(om, inputs, None,
                 "TorchScript for loop -> ONNX Loop (opset 17): Conv1d x2 + ReLU, Linear head, "
                 "preds[:, i] = p (ScatterND), window slid with cat; horizon=6 steps", got)


class ScanTagger(nn.Module):
    """Bidirectional GRU sequence tagger written with ``torch._higher_order_ops.scan`` (one scan
    forwards, one with reverse=True), per-step tag log-probabilities from both directions."""

    def __init__(self, feats=6, hidden=10, tags=5):
        super().__init__()
        self.hidden = hidden
        self.fw_in, self.fw_h = nn.Linear(feats, 3 * hidden), nn.Linear(hidden, 3 * hidden)
        self.bw_in, self.bw_h = nn.Linear(feats, 3 * hidden), nn.Linear(hidden, 3 * hidden)
        self.head = nn.Linear(2 * hidden, tags)

    def forward(self, x):
        from torch._higher_order_ops.scan import scan

        h0 = torch.zeros(x.shape[1], self.hidden)

        def direction(w_in, w_h):
            def step(h, xt):
                h = _gru(w_in(xt), w_h(h), h)
                return h, h.clone()
            return step

        _, fw = scan(direction(self.fw_in, self.fw_h), h0, x)
        _, bw = scan(direction(self.bw_in, self.bw_h), h0, x, reverse=True)
        return torch.log_softmax(self.head(torch.cat([fw, bw], -1)), -1)


def scan_bigru_tagger(rng):
    """Through ONNX: torch.onnx.export(dynamo=True) writes each scan as an ONNX Scan, which
    OpenVINO's ONNX frontend turns into a TensorIterator."""
    torch.manual_seed(8)
    net = ScanTagger().eval()
    x = torch.from_numpy(rng.standard_normal((7, 2, 6)).astype(np.float32))
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "tagger.onnx")
        torch.onnx.export(net, (x,), path, dynamo=True, input_names=["x"],
                          output_names=["tag_log_probs"])
        om = ov.convert_model(path)
    with torch.no_grad():
        got = {"tag_log_probs": net(x).numpy()}
    return Built(om, {"x": x.numpy()}, None,
                 "torch scan (forward + reverse=True) of a GRU step -> ONNX Scan x2 (dynamo "
                 "exporter) -> TensorIterator x2; 7 steps, batch 2, Linear + log_softmax", got)


BUILDERS = {"attention_decoder": attention_decoder, "tacotron_decoder": tacotron_decoder,
            "conv1d_forecaster": conv1d_forecaster, "scan_bigru_tagger": scan_bigru_tagger}
