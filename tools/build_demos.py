"""Build every demo of ``loopdbg/demos/`` with loopdbg's GraphBuilder, byte for byte reproducibly.

    python tools/build_demos.py                 # rebuild every demo in loopdbg/demos/<name>/
    python tools/build_demos.py --out DIR       # build into DIR/<name>/ instead
    python tools/build_demos.py for_loop        # only the named demos

Each demo is one small model teaching one idea about Loop-5 or TensorIterator-1, written as
``<name>/model.xml``, ``<name>/model.bin`` and ``<name>/inputs.npz`` (the inputs loopdbg picks up
beside the model). The same script always writes the same bytes: the IR writer is deterministic,
random weights come from fixed seeds, and the ``.npz`` is written with fixed zip timestamps.
``<name>/README.md`` (the lesson) is written by hand and left alone by this script.
"""

from __future__ import annotations

import argparse
import io
import sys
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "loopdbg" / "demos"       # where the demos live (and ship in the package)
sys.path.insert(0, str(ROOT))

from loopdbg.builder import GraphBuilder  # noqa: E402
from loopdbg.ir.xml_writer import write_ir  # noqa: E402

F32, I64 = np.float32, np.int64
DEMOS: dict[str, Callable] = {}


def demo(fn: Callable) -> Callable:
    """Register a demo under its function name; it returns ``(model, inputs)``."""
    DEMOS[fn.__name__] = fn
    return fn


def _i64(*values) -> np.ndarray:
    return np.array(values, I64)


def _f32(*values) -> np.ndarray:
    return np.array(values, F32)


# ----------------------------------------------------------------------------------------------
# Loop-5: the five modes


@demo
def for_loop():
    """for (i = 0; i < 5; i++) total += i * i;   trip count 5, no body condition."""
    b = GraphBuilder("for_loop")
    total0 = b.parameter("total0", "f32", [1])
    loop = b.loop("sum_of_squares", trip=5, cond=True)
    total = loop.merged_input(total0, "total")
    i = loop.current_iteration("i", "i64", [1])
    body = loop.body
    i_f = body.op("Convert", [i], name="i_as_float", destination_type="f32")
    square = body.op("Multiply", [i_f, i_f], name="square")
    total_next = body.op("Add", [total, square], name="total_next")
    loop.back_edge(total_next, total)
    b.result(loop.output_last(total_next, name="total_final"))
    return b.build(), {"total0": _f32(0)}


@demo
def for_break():
    """A for-loop that may stop early: at most 10 years, until the balance reaches the target."""
    b = GraphBuilder("for_break")
    balance0 = b.parameter("balance0", "f32", [1])
    target = b.parameter("target", "f32", [1])
    loop = b.loop("savings", trip=10, cond=True)
    balance = loop.merged_input(balance0, "balance")
    goal = loop.invariant_input(target, "goal")
    year = loop.current_iteration("year", "i64", [1])
    body = loop.body
    rate = body.const("interest", _f32(1.1))
    balance_next = body.op("Multiply", [balance, rate], name="balance_next")
    keep_going = body.op("Less", [balance_next, goal], name="keep_going")
    loop.back_edge(balance_next, balance)
    loop.condition(keep_going)
    b.result(loop.output_last(balance_next, name="balance_final"))
    b.result(loop.output_last(year, name="last_year"))
    return b.build(), {"balance0": _f32(100), "target": _f32(150)}


@demo
def while_loop():
    """while (x < limit) x = x * 2;   no trip count; the execution condition is computed."""
    b = GraphBuilder("while_loop")
    x0 = b.parameter("x0", "f32", [1])
    limit = b.parameter("limit", "f32", [1])
    first_test = b.op("Less", [x0, limit], name="x0_below_limit")
    loop = b.loop("doubling", trip=-1, cond=first_test)
    x = loop.merged_input(x0, "x")
    lim = loop.invariant_input(limit, "lim")
    body = loop.body
    x_next = body.op("Multiply", [x, body.const("two", _f32(2))], name="x_next")
    keep_going = body.op("Less", [x_next, lim], name="keep_going")
    loop.back_edge(x_next, x)
    loop.condition(keep_going)
    b.result(loop.output_last(x_next, name="x_final"))
    b.result(loop.output_concat(x_next, axis=0, name="x_trace"))
    return b.build(), {"x0": _f32(1), "limit": _f32(100)}


@demo
def do_while():
    """do { n = floor(n / 10); digits++; } while (n > 0);   counts the digits of n."""
    b = GraphBuilder("do_while")
    n0 = b.parameter("n", "f32", [1])
    digits0 = b.const("no_digits_yet", _i64(0))
    loop = b.loop("count_digits", trip=-1, cond=True)
    n = loop.merged_input(n0, "n_in")
    digits = loop.merged_input(digits0, "digits")
    body = loop.body
    tenth = body.op("Divide", [n, body.const("ten", _f32(10))], name="n_div_10")
    n_next = body.op("Floor", [tenth], name="n_next")
    digits_next = body.op("Add", [digits, body.const("one", _i64(1))], name="digits_next")
    keep_going = body.op("Greater", [n_next, body.const("zero", _f32(0))], name="keep_going")
    loop.back_edge(n_next, n)
    loop.back_edge(digits_next, digits)
    loop.condition(keep_going)
    b.result(loop.output_last(digits_next, name="digit_count"))
    return b.build(), {"n": _f32(2026)}


@demo
def infinite_loop():
    """for (;;) hour = (hour + 1) % 12;   nothing ever stops it: run it with --max-iterations."""
    b = GraphBuilder("infinite_loop")
    hour0 = b.parameter("hour0", "i64", [1])
    loop = b.loop("clock", trip=-1, cond=True)
    hour = loop.merged_input(hour0, "hour")
    tick = loop.current_iteration("tick", "i64", [1])
    body = loop.body
    plus_one = body.op("Add", [hour, body.const("one", _i64(1))], name="hour_plus_one")
    hour_next = body.op("FloorMod", [plus_one, body.const("twelve", _i64(12))], name="hour_next")
    loop.back_edge(hour_next, hour)
    b.result(loop.output_last(hour_next, name="hour_final"))
    b.result(loop.output_last(tick, name="ticks"))
    return b.build(), {"hour0": _i64(0)}


# ----------------------------------------------------------------------------------------------
# Zero iterations, both ways


@demo
def zero_trip():
    """for (i = 0; i < 0; i++) ...   the body never runs: what do the outputs hold?"""
    b = GraphBuilder("zero_trip")
    acc0 = b.parameter("acc0", "f32", [2])
    loop = b.loop("never", trip=0, cond=True)
    acc = loop.merged_input(acc0, "acc")
    body = loop.body
    acc_next = body.op("Add", [acc, body.const("one", _f32(1))], name="acc_next")
    doubled = body.op("Multiply", [acc_next, body.const("two", _f32(2))], name="doubled")
    row = body.op("Unsqueeze", [acc_next, body.const("axis0", _i64(0))], name="acc_row")
    loop.back_edge(acc_next, acc)
    b.result(loop.output_last(acc_next, name="acc_final"))       # fed back: the initial value
    b.result(loop.output_last(doubled, name="doubled_final"))     # not fed back: undefined
    b.result(loop.output_concat(row, axis=0, name="acc_rows"))    # empty along axis 0
    return b.build(), {"acc0": _f32(10, 20)}


@demo
def never_runs():
    """if (enabled) for (i = 0; i < 4; i++) x = x + 1;   with enabled = false."""
    b = GraphBuilder("never_runs")
    x0 = b.parameter("x0", "f32", [1])
    enabled = b.parameter("enabled", "boolean", [])
    loop = b.loop("guarded", trip=4, cond=enabled)
    x = loop.merged_input(x0, "x")
    i = loop.current_iteration("i", "i64", [1])
    body = loop.body
    x_next = body.op("Add", [x, body.const("one", _f32(1))], name="x_next")
    loop.back_edge(x_next, x)
    b.result(loop.output_last(x_next, name="x_final"))
    b.result(loop.output_concat(i, axis=0, name="iterations_run"))
    return b.build(), {"x0": _f32(5), "enabled": np.array(False)}


# ----------------------------------------------------------------------------------------------
# Inputs and outputs of the body


@demo
def fibonacci():
    """(a, b) = (b, a + b), 10 times; no current_iteration: the body never needs i."""
    b = GraphBuilder("fibonacci")
    a0 = b.parameter("a0", "i64", [1])
    b0 = b.parameter("b0", "i64", [1])
    loop = b.loop("fib", trip=10, cond=True)
    a = loop.merged_input(a0, "a")
    bb = loop.merged_input(b0, "b")
    body = loop.body
    a_plus_b = body.op("Add", [a, bb], name="a_plus_b")
    loop.back_edge(bb, a)               # a <- b   (a back edge straight from a Parameter)
    loop.back_edge(a_plus_b, bb)        # b <- a + b
    b.result(loop.output_concat(a, axis=0, name="fib_numbers"))
    b.result(loop.output_last(a_plus_b, name="b_final"))
    return b.build(), {"a0": _i64(0), "b0": _i64(1)}


@demo
def prefix_sum():
    """A sliced input: iteration i sees row i of the matrix and adds it to a running sum."""
    b = GraphBuilder("prefix_sum")
    rows = b.parameter("rows", "f32", [4, 3])
    loop = b.loop("running_sum", trip=4, cond=True)
    row = loop.sliced_input(rows, "row", axis=0)
    acc = loop.merged_input(b.const("zeros", np.zeros((1, 3), F32)), "acc")
    body = loop.body
    acc_next = body.op("Add", [acc, row], name="acc_next")
    loop.back_edge(acc_next, acc)
    b.result(loop.output_concat(acc_next, axis=0, name="sums"))
    b.result(loop.output_last(acc_next, name="total"))
    rows_value = np.arange(1, 13, dtype=F32).reshape(4, 3)
    return b.build(), {"rows": rows_value}


@demo
def vandermonde():
    """A scan on axis 1: iteration i makes the column x**i; the columns form the matrix."""
    b = GraphBuilder("vandermonde")
    x = b.parameter("x", "f32", [3, 1])
    loop = b.loop("powers", trip=4, cond=True)
    xs = loop.invariant_input(x, "x_col")
    col = loop.merged_input(b.const("ones", np.ones((3, 1), F32)), "column")
    i = loop.current_iteration("i", "i64", [1])
    body = loop.body
    col_next = body.op("Multiply", [col, xs], name="next_column")
    loop.back_edge(col_next, col)
    b.result(loop.output_concat(col, axis=1, name="V"))
    b.result(loop.output_concat(i, axis=0, name="exponents"))
    return b.build(), {"x": _f32(1, 2, 3).reshape(3, 1)}


# ----------------------------------------------------------------------------------------------
# TensorIterator-1


def _lstm_weights(inp: int, hidden: int, seed: int):
    rng = np.random.default_rng(seed)
    W = (rng.standard_normal((4 * hidden, inp)) * 0.5).astype(F32)
    R = (rng.standard_normal((4 * hidden, hidden)) * 0.5).astype(F32)
    B = (rng.standard_normal(4 * hidden) * 0.1).astype(F32)
    return W, R, B


@demo
def ti_lstm():
    """TensorIterator forward over time (axis 1) with an LSTMCell; h collected on axis 1."""
    batch, steps, inp, hidden = 1, 6, 3, 4
    W, R, B = _lstm_weights(inp, hidden, seed=5)
    b = GraphBuilder("ti_lstm")
    X = b.parameter("X", "f32", [batch, steps, inp])
    H0 = b.parameter("H0", "f32", [batch, hidden])
    C0 = b.parameter("C0", "f32", [batch, hidden])
    ti = b.tensor_iterator("lstm_over_time")
    x_t = ti.sliced_input(X, "x_t", axis=1)
    h = ti.merged_input(H0, "h")
    c = ti.merged_input(C0, "c")
    body = ti.body
    x = body.op("Squeeze", [x_t, body.const("time_axis", _i64(1))], name="x")
    h_next, c_next = body.op("LSTMCell", [x, h, c, body.const("W", W), body.const("R", R),
                                          body.const("B", B)],
                             name="cell", out_names=["h_next", "c_next"], hidden_size=hidden)
    h_step = body.op("Unsqueeze", [h_next, body.const("time_axis_again", _i64(1))],
                     name="h_step")
    ti.back_edge(h_next, h)
    ti.back_edge(c_next, c)
    b.result(ti.output_concat(h_step, axis=1, name="H_seq"))
    b.result(ti.output_last(h_next, name="H_last"))
    b.result(ti.output_last(c_next, name="C_last"))
    rng = np.random.default_rng(6)
    inputs = {"X": rng.standard_normal((batch, steps, inp)).astype(F32),
              "H0": np.zeros((batch, hidden), F32), "C0": np.zeros((batch, hidden), F32)}
    return b.build(), inputs


@demo
def ti_reverse():
    """TensorIterator backward (stride -1): suffix sums, concatenated in reverse order."""
    b = GraphBuilder("ti_reverse")
    x = b.parameter("x", "f32", [5])
    ti = b.tensor_iterator("suffix_sum")
    x_t = ti.sliced_input(x, "x_t", axis=0, start=-1, end=0, stride=-1)
    acc = ti.merged_input(b.const("zero", _f32(0)), "acc")
    body = ti.body
    acc_next = body.op("Add", [acc, x_t], name="acc_next")
    ti.back_edge(acc_next, acc)
    b.result(ti.output_concat(acc_next, axis=0, name="suffix_sums", start=-1, end=0, stride=-1))
    b.result(ti.output_concat(x_t, axis=0, name="visit_order"))
    return b.build(), {"x": _f32(1, 2, 3, 4, 5)}


@demo
def ti_pairs():
    """TensorIterator with part_size 2: each iteration sees two samples and averages them."""
    b = GraphBuilder("ti_pairs")
    signal = b.parameter("signal", "f32", [8])
    ti = b.tensor_iterator("pairwise_mean")
    pair = ti.sliced_input(signal, "pair", axis=0, stride=2, part_size=2)
    body = ti.body
    mean = body.op("ReduceMean", [pair, body.const("axis0", _i64(0))], name="pair_mean",
                   keep_dims=True)
    b.result(ti.output_concat(mean, axis=0, name="downsampled"))
    return b.build(), {"signal": _f32(1, 3, 2, 2, 5, 7, 0, -4)}


# ----------------------------------------------------------------------------------------------
# Nesting, and the ONNX example


@demo
def nested_loop():
    """for (i = 0; i < rows; i++) for (j = 0; j < cols; j++) table[i][j] = (i+1) * (j+1);"""
    b = GraphBuilder("nested_loop")
    rows = b.parameter("rows", "i64", [])
    cols = b.parameter("cols", "i64", [])
    outer = b.loop("rows_loop", trip=rows, cond=True)
    n_cols = outer.invariant_input(cols, "n_cols")
    i = outer.current_iteration("i", "i64", [1])
    ob = outer.body
    inner = ob.loop("cols_loop", trip=n_cols, cond=True)
    i_in = inner.invariant_input(i, "row_index")
    j = inner.current_iteration("j", "i64", [1])
    ib = inner.body
    one = ib.const("one", _i64(1))
    i1 = ib.op("Add", [i_in, one], name="i_plus_1")
    j1 = ib.op("Add", [j, one], name="j_plus_1")
    product = ib.op("Multiply", [i1, j1], name="product")
    row = inner.output_concat(product, axis=0, name="row")
    row_2d = ob.op("Unsqueeze", [row, ob.const("axis0", _i64(0))], name="table_row")
    b.result(outer.output_concat(row_2d, axis=0, name="table"))
    return b.build(), {"rows": np.array(3, I64), "cols": np.array(4, I64)}


@demo
def onnx_loop():
    """The Loop example of the ONNX specification, as OpenVINO converts it."""
    b = GraphBuilder("onnx_loop")
    b_in0 = b.parameter("b", "f32", [])
    loop = b.loop("loop", trip=b.const("max_trip_count", np.int64(10)),
                  cond=b.const("keepgoing", np.bool_(True)))
    b_in = loop.merged_input(b_in0, "b_in")
    loop.current_iteration("iteration_num", "i64", [])
    body = loop.body
    a = body.const("a", F32(3))
    my_local = body.op("Add", [a, b_in], name="my_local")
    b_out = body.op("Subtract", [a, b_in], name="b_out")
    keepgoing_out = body.op("Greater", [my_local, b_out], name="keepgoing_out")
    user_defined_val = body.op("Add", [b_in, b_in], name="user_defined_val")
    scan_piece = body.op("Unsqueeze", [user_defined_val, body.const("axis0", _i64(0))],
                         name="user_defined_val_1d")
    loop.back_edge(b_out, b_in)
    loop.condition(keepgoing_out)
    b.result(loop.output_last(b_out, name="b_final"))
    b.result(loop.output_concat(scan_piece, axis=0, name="user_defined_vals"))
    return b.build(), {"b": np.array(6, F32)}


# ----------------------------------------------------------------------------------------------
# Writing


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` like ``numpy.savez`` writes, but with fixed timestamps (reproducible bytes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, value in arrays.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, np.asarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, npy.getvalue())
    return buf.getvalue()


def build(name: str):
    """``(model, inputs)`` of demo ``name``."""
    return DEMOS[name]()


def write(name: str, out: Path) -> Path:
    """Write demo ``name`` into ``out/<name>/``; returns that folder."""
    model, inputs = build(name)
    folder = Path(out) / name
    folder.mkdir(parents=True, exist_ok=True)
    write_ir(model, folder / "model.xml")
    (folder / "inputs.npz").write_bytes(npz_bytes(inputs))
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"demos to build (default: all): {', '.join(DEMOS)}")
    p.add_argument("--out", default=str(HERE), help="folder to build into (default: loopdbg/demos/)")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in DEMOS]
    if unknown:
        p.error(f"no demo named {', '.join(unknown)}")
    for name in args.names or DEMOS:
        print(write(name, Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
