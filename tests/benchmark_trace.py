"""The trace-file targets of tests/benchmark.py (recording cost, write speed, memory, O(1) reads)."""

from __future__ import annotations

import os
import tempfile
import time
import tracemalloc

import numpy as np

from loopdbg.engine import Engine
from loopdbg.trace import TraceReader, record


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def trace_rows(engine, inputs, iters, t_plain, state_case, rows, repeat) -> None:
    tmp = tempfile.mkdtemp(prefix="loopdbg-bench-")
    path = os.path.join(tmp, "while.ltrace")

    def rec():
        record(engine.run(inputs), path)
    t_rec = _best(rec, repeat)
    ratio = t_rec / t_plain
    rows.append((f"recording the {iters}-iteration loop", f"{t_rec * 1e3:.0f} ms",
                 f"{t_plain * 1e3:.0f} ms (run)", f"{ratio:.2f}x", "<= 2x", ratio <= 2.0))

    tracemalloc.start()
    rec()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append((f"peak memory recording {iters} iterations", f"{peak / 2**20:.1f} MiB", "", "",
                 "< 200 MB", peak < 200e6))

    def open_and_read_last():
        with TraceReader(path) as t:
            t.frame("count", iters - 1)
    t_read = _best(open_and_read_last, 5)
    rows.append((f"open the trace, read iteration {iters - 1}", f"{t_read * 1e3:.1f} ms", "", "",
                 "< 50 ms", t_read < 0.05))

    model, state_inputs, _ = state_case
    state_engine = Engine(model)
    spath = os.path.join(tmp, "state.ltrace")

    def rec_state():
        record(state_engine.run(state_inputs), spath)
    t_state = _best(rec_state, repeat)
    t_run = _best(lambda: state_engine.run_to_end(state_inputs), repeat)
    written = os.path.getsize(spath)
    chunk = np.ones(262144, np.float32).tobytes()
    n_chunks = max(written // len(chunk), 1)
    ppath = os.path.join(tmp, "plain.bin")

    def plain_write():
        with open(ppath, "wb") as f:
            for _ in range(n_chunks):
                f.write(chunk)
    t_write = _best(plain_write, repeat)
    ours = written / max(t_state - t_run, 1e-9)
    plain = n_chunks * len(chunk) / t_write
    rows.append(("recording the 1 MiB-state loop: write speed", f"{ours / 2**20:.0f} MiB/s",
                 f"{plain / 2**20:.0f} MiB/s (plain)", f"{ours / plain:.2f}x", ">= 0.5x",
                 ours >= 0.5 * plain))
