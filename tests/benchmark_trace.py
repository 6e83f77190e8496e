"""The trace-file targets of tests/benchmark.py (recording cost, write speed, memory, O(1) reads)."""

from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np

from loopdbg.engine import Engine
from loopdbg.trace import TraceReader, record


def _best_pair(a, b, repeat):
    """Best times of ``a`` and ``b``, run alternately."""
    ta = tb = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        a()
        ta = min(ta, time.perf_counter() - t0)
        t0 = time.perf_counter()
        b()
        tb = min(tb, time.perf_counter() - t0)
    return ta, tb


def trace_rows(engine, inputs, iters, state_model, state_inputs, rows, repeat, tmp) -> None:
    """The trace rows; ``tmp`` is a folder for the files (the caller removes it)."""
    path = os.path.join(tmp, "while.ltrace")
    loop = next(iter(engine.loops))

    def rec():
        record(engine.run(inputs), path)
    t_rec, t_plain = _best_pair(rec, lambda: engine.run_to_end(inputs), repeat)
    ratio = t_rec / t_plain
    rows.append((f"recording the {iters}-iteration loop", f"{t_rec * 1e3:.0f} ms",
                 f"{t_plain * 1e3:.0f} ms (run)", f"{ratio:.2f}x", "<= 1.3x", ratio <= 1.3))

    tracemalloc.start()
    rec()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append((f"peak memory recording {iters} iterations", f"{peak / 2**20:.1f} MiB", "", "",
                 "< 200 MB", peak < 200e6))

    def open_and_read_last():
        with TraceReader(path) as t:
            t.frame(loop, iters - 1)
    t_read = min(_best_pair(open_and_read_last, open_and_read_last, 3))
    rows.append((f"open the trace, read iteration {iters - 1}", f"{t_read * 1e3:.1f} ms", "", "",
                 "< 50 ms", t_read < 0.05))

    # Each run writes a new file (the last one removed before the clock starts): rewriting the
    # same 200 MiB file makes either side pay, at random, for the file system dropping the old
    # one's pages (truncating a just-written file here costs 40-90 ms, as much as the writing).
    state_engine = Engine(state_model)
    runs = iter(range(10 ** 6))

    def fresh(stem: str) -> str:
        for name in os.listdir(tmp):
            if name.startswith(stem):
                os.unlink(os.path.join(tmp, name))
        return os.path.join(tmp, f"{stem}{next(runs)}")

    spath = ""

    def rec_state():
        nonlocal spath
        spath = fresh("state")
        t0 = time.perf_counter()
        record(state_engine.run(state_inputs), spath)
        return time.perf_counter() - t0

    def run_state():
        t0 = time.perf_counter()
        state_engine.run_to_end(state_inputs)
        return time.perf_counter() - t0

    t_state = t_run = float("inf")
    for _ in range(repeat):
        t_state, t_run = min(t_state, rec_state()), min(t_run, run_state())
    written = os.path.getsize(spath)
    chunk = np.ones(262144, np.float32).tobytes()
    n_chunks = max(written // len(chunk), 1)

    def plain_write():
        ppath = fresh("plain")
        t0 = time.perf_counter()
        with open(ppath, "wb") as f:
            for _ in range(n_chunks):
                f.write(chunk)
        return time.perf_counter() - t0
    t_write = min(plain_write() for _ in range(repeat))
    ours = written / max(t_state - t_run, 1e-9)
    plain = n_chunks * len(chunk) / t_write
    rows.append(("recording the 1 MiB-state loop: write speed", f"{ours / 2**20:.0f} MiB/s",
                 f"{plain / 2**20:.0f} MiB/s (plain)", f"{ours / plain:.2f}x", ">= 0.5x",
                 ours >= 0.5 * plain))
