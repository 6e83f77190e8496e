"""loopdbg's speed, size and memory targets, measured in one run (not part of the test suite).

    python tests/benchmark.py            # every measurement, a table, exit 1 if a target is missed
    python tests/benchmark.py --quick    # short runs, to check the script itself
    python tests/benchmark.py --only loop_rnn_onnx_5k converted_gru   # some cases only

The engine cases are measured as a debugger drives the engine: in one process, the hand-written
numpy loop (the floor), loopdbg, and loopdbg recording a trace run alternately, best of 7 each;
loopdbg's time includes planning (``Engine(model)``) and pulls every event to the end; reading the
model is excluded. The four models of tests/perf (written by OpenVINO) and a converter-style body
of ~130 layers (``benchmark_converter``) are measured so. Then: reading and planning a
50,000-layer model, the size of the 100,000-iteration trace, breakpoints, history, the trace
reader and writer, the UI and start-up; last, loopdbg against the runtimes' own scripts
(``benchmark_runtimes``: the scale decoders LOOPDBG_SCALE_DIR names, a convolution loop), also
alone with ``--only runtimes``.

numpy's BLAS matters to the absolute times (not much to the ratios): on processors where this
workplace sets OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE), run the benchmark with both unset, in
that command alone: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python tests/benchmark.py``.
The first line printed says which were set.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import benchmark_cases  # noqa: E402
import benchmark_converter  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402

RATIO_TARGET = 1.5          # loopdbg / numpy floor, every engine case (the goal is 1.2)
TRACE_SIZE_TARGET = 4 << 20  # the 100,000-iteration while loop's trace


def machine() -> str:
    blas = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    return (f"{time.strftime('%Y-%m-%d')}, {cpu}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, numpy {np.__version__}, "
            f"OpenBLAS variables: {blas or 'none set'}")


def alternate(fns: dict, repeat: int) -> dict:
    """Best time of each function, the functions run in turn ``repeat`` times."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def engine_case(name, title, model, inputs, floor, rows, repeat, tmp):
    from loopdbg.trace import record

    path = os.path.join(tmp, f"{name}.ltrace")

    def run():
        for _ in Engine(model).run(inputs):
            pass

    def traced():
        record(Engine(model).run(inputs), path, model=model, inputs=inputs)

    last = Engine(model).run_to_end(inputs).outputs
    want = floor()
    for key, value in want.items():                 # the floor does the same work
        np.testing.assert_allclose(last[key], value, rtol=1e-4, atol=1e-4)
    best = alternate({"numpy": floor, "loopdbg": run, "traced": traced}, repeat)
    ratio = best["loopdbg"] / best["numpy"]
    rows.append((title, f"{best['loopdbg'] * 1e3:.1f} ms", f"{best['numpy'] * 1e3:.1f} ms (numpy)",
                 f"{ratio:.2f}x", f"<= {RATIO_TARGET}x", ratio <= RATIO_TARGET))
    trace_ratio = best["traced"] / best["loopdbg"]
    rows.append((f"  recording it to a trace ({os.path.getsize(path) / 2**20:.1f} MiB)",
                 f"{best['traced'] * 1e3:.1f} ms", f"{best['loopdbg'] * 1e3:.1f} ms (untraced)",
                 f"{trace_ratio:.2f}x", "", True))
    return path


def construction(rows, layers: int, tmp) -> None:
    """Read and plan a model of ``layers`` layers (a chain of Multiply/Add with Constants)."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.load import read_model
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("chain")
    x = b.parameter("x", "f32", [1, 8])
    for k in range((layers - 2) // 2):
        x = b.op("Add" if k % 2 else "Multiply", [x, np.full((1, 8), 1.0, np.float32)])
    b.result(x, "y")
    path = os.path.join(tmp, "chain.xml")
    write_ir(b.build(), path)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        engine = Engine(read_model(path))
        best = min(best, time.perf_counter() - t0)
        del engine                    # freeing the model is not loading it: outside the clock
    rows.append((f"read and plan a {layers:,}-layer model", f"{best:.2f} s", "", "",
                 "< 3 s" if layers >= 50_000 else "", best < 3.0))


def trace_size(rows, path: str, iterations: int) -> None:
    size = os.path.getsize(path)
    ok = size < TRACE_SIZE_TARGET if iterations >= 100_000 else True
    rows.append((f"trace of the {iterations:,}-iteration while loop", f"{size / 2**20:.2f} MiB",
                 f"{size / iterations:.1f} bytes/iteration", "", "< 4 MiB", ok))


def breakpoint_cost(engine, inputs, iters, repeat, rows):
    from loopdbg.debug import Session

    def with_break():
        s = Session(engine, inputs, history=1000)
        s.breakpoints.add(f"i == {iters - 1}")
        stop = s.continue_()
        assert stop.kind == "breakpoint", stop.reason
    # The same run with a condition on a value (never true): the general path of a condition,
    # where ``i == K`` is one comparison of the iteration (debug/frontier.py).
    spec = next(iter(engine.loops.values()))
    name = spec.param_names[0]
    value_condition = f't["{name}"][0] < -1e30'

    def with_value_break():
        s = Session(engine, inputs, history=1000)
        s.breakpoints.add(value_condition)
        stop = s.continue_()
        assert stop.kind == "end", stop.reason
    best = alternate({"break": with_break, "value": with_value_break,
                      "run": lambda: engine.run_to_end(inputs)}, repeat)
    ratio = best["break"] / best["run"]
    rows.append((f"breakpoint i == {iters - 1}", f"{best['break'] * 1e3:.1f} ms",
                 f"{best['run'] * 1e3:.1f} ms (run)", f"+{(ratio - 1) * 100:.0f}%", "<= +50%",
                 ratio <= 1.5))
    ratio = best["value"] / best["run"]
    rows.append((f"  a breakpoint on a value, {value_condition}", f"{best['value'] * 1e3:.1f} ms",
                 f"{best['run'] * 1e3:.1f} ms (run)", f"+{(ratio - 1) * 100:.0f}%", "", True))


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
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="short runs: check the script, not targets")
    p.add_argument("--only", nargs="*", help="engine cases to measure (default: all, and the rest)")
    p.add_argument("--repeat", type=int, default=None, help="runs of each (default 7)")
    args = p.parse_args(argv)
    scale = 0.02 if args.quick else 1.0
    repeat = args.repeat or (1 if args.quick else 7)
    print(machine(), flush=True)
    from loopdbg.ops import threads
    print(f"loopdbg runs with {threads.settle().describe()}", flush=True)
    rows: list[tuple] = []
    tmp = tempfile.mkdtemp(prefix="loopdbg-bench-")
    try:
        measure(args, rows, tmp, scale, repeat)
    finally:                          # the traces of a run take hundreds of MiB
        shutil.rmtree(tmp, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'loopdbg':>14}  {'reference':>24}  {'ratio':>7}  {'target':>10}  ok")
    for name, a, b, ratio, target, ok in rows:
        print(f"{name:<{width}}  {a:>14}  {b:>24}  {ratio:>7}  {target:>10}  "
              f"{'yes' if ok else 'NO'}")
    return 0 if all(r[-1] for r in rows) else 1


def measure(args, rows: list, tmp: str, scale: float, repeat: int) -> None:
    wanted = set(args.only) if args.only else None
    traces = {}
    for name, case in benchmark_cases.CASES.items():
        if wanted is None or name in wanted:
            model, inputs, weights, floor = benchmark_cases.load(name, scale)
            traces[name] = engine_case(name, case.title, model, inputs,
                                       lambda f=floor, i=inputs, w=weights: f(i, w), rows,
                                       repeat, tmp)
    if wanted is None or "converted_gru" in wanted:
        steps = max(int(benchmark_converter.STEPS * scale), 2)
        model, inputs, weights = benchmark_converter.build(steps)
        engine_case("converted_gru", f"converter-style GRU body "
                    f"({benchmark_converter.body_layers(model)} layers), {steps:,} steps", model,
                    inputs, lambda: benchmark_converter.floor(inputs, weights), rows, repeat, tmp)
    if wanted is None:
        construction(rows, 2_000 if args.quick else 50_000, tmp)
        iters = max(int(100_000 * scale), 2)
        trace_size(rows, traces["loop_while_scalar_100k"], iters)
        model, inputs, _, _ = benchmark_cases.load("loop_while_scalar_100k", scale)
        engine = Engine(model)
        breakpoint_cost(engine, inputs, iters, repeat, rows)
        history_memory(engine, inputs, rows)
        from benchmark_trace import trace_rows
        big = benchmark_cases.load("loop_big_state_200", scale)
        trace_rows(engine, inputs, iters, big[0], big[1], rows, repeat, tmp)
        try:
            from benchmark_ui import grouped_rows, ui_rows
            ui_rows(rows)
            grouped_rows(rows)
        except ImportError:           # the UI extra is not installed
            pass
        startup(rows)
    if wanted is None or "runtimes" in wanted:
        from benchmark_runtimes import runtime_rows
        runtime_rows(rows, repeat, tmp, args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
