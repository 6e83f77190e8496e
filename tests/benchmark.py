"""loopdbg's speed and memory targets, measured in one run (not part of the test suite).

    python tests/benchmark.py            # all measurements, a table, exit 1 if a target is missed
    python tests/benchmark.py --quick    # smaller sizes, to check the script itself

Each engine case is timed against a hand-written numpy loop doing the same operations, in the
same process, start-up excluded (model reading and plan compilation are not timed). The best of
several repeats is taken for both sides.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loopdbg.engine import Engine  # noqa: E402
from loopdbg.builder import GraphBuilder  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_pair(a, b, repeat: int) -> tuple[float, float]:
    """Best times of ``a`` and ``b`` run alternately, so both see the same machine (a VM's
    neighbours make consecutive seconds differ by more than the ratios being measured)."""
    ta, tb = [], []
    for _ in range(repeat):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return min(ta), min(tb)


# -- models -----------------------------------------------------------------------------------
def lstm_ti(steps: int, batch=4, inp=32, hidden=64):
    rng = np.random.default_rng(0)
    W = (rng.standard_normal((4 * hidden, inp)) * 0.1).astype(np.float32)
    R = (rng.standard_normal((4 * hidden, hidden)) * 0.1).astype(np.float32)
    B = (rng.standard_normal(4 * hidden) * 0.1).astype(np.float32)
    b = GraphBuilder("lstm_bench")
    X = b.parameter("X", "f32", [steps, batch, inp])
    H0 = b.parameter("H0", "f32", [batch, hidden])
    C0 = b.parameter("C0", "f32", [batch, hidden])
    ti = b.tensor_iterator("lstm")
    x = ti.sliced_input(X, "x_t", axis=0)
    h = ti.merged_input(H0, "h")
    c = ti.merged_input(C0, "c")
    body = ti.body
    xs = body.op("Squeeze", [x, np.array([0], np.int64)], name="x_sq")
    cell = body.op("LSTMCell", [xs, h, c, W, R, B], name="cell", hidden_size=hidden)
    h2, c2 = cell.output(0) if hasattr(cell, "output") else cell[0], cell[1]
    ti.back_edge(h2, h)
    ti.back_edge(c2, c)
    hu = body.op("Unsqueeze", [h2, np.array([0], np.int64)], name="h_unsq")
    b.result(ti.output_concat(hu, axis=0, name="Y"))
    b.result(ti.output_last(h2, name="Ho"))
    inputs = {"X": rng.standard_normal((steps, batch, inp)).astype(np.float32),
              "H0": np.zeros((batch, hidden), np.float32), "C0": np.zeros((batch, hidden), np.float32)}

    def sig(v):
        return 1.0 / (1.0 + np.exp(-v))

    def numpy_loop():
        Xv, h, c = inputs["X"], inputs["H0"], inputs["C0"]
        ys = []
        for t in range(steps):
            xt = np.squeeze(Xv[t:t + 1], 0)
            g = xt @ W.T + h @ R.T + B
            f, i, cc, o = np.split(g, 4, axis=-1)
            c = sig(f) * c + sig(i) * np.tanh(cc)
            h = sig(o) * np.tanh(c)
            ys.append(np.expand_dims(h, 0))
        return np.concatenate(ys, 0), h
    return b.build(), inputs, numpy_loop


def scalar_while(iters: int):
    b = GraphBuilder("while_bench")
    x0 = b.parameter("x0", "f32", [1])
    limit = b.parameter("limit", "i64", [1])
    loop = b.loop("count", trip=-1, cond=True)
    x = loop.merged_input(x0, "x")
    lim = loop.invariant_input(limit, "lim")
    it = loop.current_iteration("i", "i64", (1,))
    body = loop.body
    x2 = body.op("Add", [x, np.array([1.0], np.float32)], name="x_next")
    keep = body.op("Less", [it, lim], name="keep_going")
    loop.back_edge(x2, x)
    loop.condition(keep)
    b.result(loop.output_last(x2, name="x_final"))
    inputs = {"x0": np.zeros(1, np.float32), "limit": np.array([iters - 1], np.int64)}
    one = np.array([1.0], np.float32)

    def numpy_loop():
        x, lim = inputs["x0"], inputs["limit"]
        i = 0
        while True:
            it = np.array([i], np.int64)
            x = np.add(x, one)
            keep = np.less(it, lim)
            i += 1
            if not keep[0]:
                return x
    return b.build(), inputs, numpy_loop


def rnn_loop(steps: int, inp=32, hidden=64):
    rng = np.random.default_rng(1)
    W = (rng.standard_normal((inp, hidden)) * 0.1).astype(np.float32)
    R = (rng.standard_normal((hidden, hidden)) * 0.1).astype(np.float32)
    bias = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
    b = GraphBuilder("rnn_bench")
    seq = b.parameter("seq", "f32", [steps, inp])
    h0 = b.parameter("h0", "f32", [1, hidden])
    loop = b.loop("rnn", trip=steps, cond=True)
    x = loop.sliced_input(seq, "x_t", axis=0)
    h = loop.merged_input(h0, "h")
    body = loop.body
    a = body.op("MatMul", [x, W], name="xw")
    r = body.op("MatMul", [h, R], name="hr")
    s = body.op("Add", [a, r], name="pre")
    s2 = body.op("Add", [s, bias], name="pre_b")
    h2 = body.op("Tanh", [s2], name="h_next")
    loop.back_edge(h2, h)
    loop.condition(body.const("true", np.array(True)))
    b.result(loop.output_last(h2, name="h_final"))
    b.result(loop.output_concat(h2, axis=0, name="h_seq"))
    inputs = {"seq": rng.standard_normal((steps, inp)).astype(np.float32),
              "h0": np.zeros((1, hidden), np.float32)}

    def numpy_loop():
        s, h = inputs["seq"], inputs["h0"]
        hs = []
        for t in range(steps):
            h = np.tanh(s[t:t + 1] @ W + h @ R + bias)
            hs.append(h)
        return h, np.concatenate(hs, 0)
    return b.build(), inputs, numpy_loop


def big_state(iters: int, n=262144):
    b = GraphBuilder("state_bench")
    x0 = b.parameter("x0", "f32", [n])
    loop = b.loop("decay", trip=iters, cond=True)
    x = loop.merged_input(x0, "x")
    body = loop.body
    y = body.op("Multiply", [x, np.array(0.5, np.float32)], name="half")
    z = body.op("Add", [y, np.array(1.0, np.float32)], name="x_next")
    loop.back_edge(z, x)
    loop.condition(body.const("true", np.array(True)))
    b.result(loop.output_last(z, name="x_final"))
    inputs = {"x0": np.ones(n, np.float32)}
    half, one = np.float32(0.5), np.float32(1.0)

    def numpy_loop():
        x = inputs["x0"]
        for _ in range(iters):
            x = np.add(np.multiply(x, half), one)
        return x
    return b.build(), inputs, numpy_loop


# -- measurements -------------------------------------------------------------------------------
def engine_vs_numpy(name, made, limit, repeat, rows):
    model, inputs, numpy_loop = made
    engine = Engine(model)
    run = lambda: engine.run_to_end(inputs)  # noqa: E731
    run()
    t_engine, t_numpy = best_pair(run, numpy_loop, repeat)
    ratio = t_engine / t_numpy
    rows.append((name, f"{t_engine * 1e3:.1f} ms", f"{t_numpy * 1e3:.1f} ms", f"{ratio:.2f}x",
                 f"<= {limit}x", ratio <= limit))
    return engine, inputs, t_engine


def breakpoint_cost(engine, inputs, iters, t_plain, repeat, rows):
    from loopdbg.debug import Session

    def with_break():
        s = Session(engine, inputs, history=1000)
        s.breakpoints.add(f"i == {iters - 1}")
        stop = s.continue_()
        assert stop.kind == "breakpoint", stop.reason
    t, t_plain = best_pair(with_break, lambda: engine.run_to_end(inputs), repeat)
    ratio = t / t_plain
    rows.append((f"breakpoint i == {iters - 1}", f"{t * 1e3:.1f} ms", f"{t_plain * 1e3:.1f} ms (run)",
                 f"+{(ratio - 1) * 100:.0f}%", "<= +50%", ratio <= 1.5))


def history_memory(engine, inputs, rows):
    import tracemalloc

    from loopdbg.debug import Session
    tracemalloc.start()
    s = Session(engine, inputs, history=1000)
    s.continue_()
    s.back()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(("history bound (1000) over the run", f"{peak / 2**20:.1f} MiB peak", "", "",
                 "< 200 MiB", peak < 200 * 2**20))


def startup(rows):
    exe = Path(sys.executable).with_name("loopdbg")
    cmd = [str(exe), "--version"] if exe.exists() else [sys.executable, "-m", "loopdbg", "--version"]
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    t = min(times)
    rows.append(("start-up: loopdbg --version", f"{t * 1e3:.0f} ms", "", "", "< 200 ms", t < 0.2))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes: check the script, not the targets")
    args = p.parse_args(argv)
    q = args.quick
    repeat = 1 if q else 11
    rows: list[tuple] = []
    steps_lstm, iters_while, steps_rnn, iters_state = (
        (200, 5000, 500, 20) if q else (2000, 100_000, 5000, 200))
    engine_vs_numpy(f"LSTMCell TensorIterator, {steps_lstm} steps", lstm_ti(steps_lstm), 1.5,
                    repeat, rows)
    w_engine, w_inputs, t_while = engine_vs_numpy(
        f"scalar while-loop, {iters_while} iterations", scalar_while(iters_while), 3.0, repeat, rows)
    engine_vs_numpy(f"RNN Loop, {steps_rnn} steps", rnn_loop(steps_rnn), 1.5, repeat, rows)
    engine_vs_numpy(f"1 MiB state, {iters_state} iterations", big_state(iters_state), 1.5, repeat, rows)
    breakpoint_cost(w_engine, w_inputs, iters_while, t_while, repeat, rows)
    history_memory(w_engine, w_inputs, rows)
    try:
        from benchmark_trace import trace_rows  # the trace targets, when the trace package exists
        trace_rows(w_engine, w_inputs, iters_while, t_while, big_state(iters_state), rows, repeat)
    except ImportError:
        pass
    try:
        from benchmark_ui import ui_rows
        ui_rows(rows)
    except ImportError:
        pass
    startup(rows)
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'loopdbg':>14}  {'reference':>18}  {'ratio':>7}  {'target':>10}  ok")
    for name, a, b, ratio, target, ok in rows:
        print(f"{name:<{width}}  {a:>14}  {b:>18}  {ratio:>7}  {target:>10}  {'yes' if ok else 'NO'}")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
