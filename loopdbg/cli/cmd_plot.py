"""``loopdbg plot``: expressions of the breakpoint language drawn against a loop's iterations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EPILOG = """examples:
  loopdbg plot ti_lstm/model.xml "mean(h)" "norm(c)" -o lstm.png
  loopdbg plot run.ltrace "h[0, 3]" --loop inner --outer 2 -o h03.svg
  loopdbg plot model.xml inputs.npz "abs(x).max()" --max-iterations 500 -o x.png

Each expression must give one number per iteration: reduce tensors with mean, norm, sum, min,
max, or pick an element. With a model the run is made first (a progress line on a terminal,
Ctrl+C stops it and plots what ran); with a trace the recorded iterations are read.
Needs matplotlib: pip install 'loopdbg[plot]'"""

FORMATS = (".png", ".svg", ".pdf")


def add_parser(sub) -> None:
    p = sub.add_parser("plot", help="plot expressions (mean(h), h[0, 3]) over a loop's iterations",
                       description="Evaluate each EXPR (the breakpoint language) at every "
                                   "iteration of a loop and draw it against the iteration, one "
                                   "panel per expression, to a PNG, SVG or PDF file.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", metavar="MODEL|TRACE",
                   help="model.xml / model.onnx (run now) or a .ltrace file (read)")
    p.add_argument("words", nargs="+", metavar="[INPUTS] EXPR",
                   help="an inputs.npz (for a model), then one or more expressions")
    p.add_argument("--loop", metavar="PATH", help="the loop (needed when the model has several)")
    p.add_argument("--outer", metavar="K[,K...]",
                   help="a nested loop: only the execution at these outer iterations")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="FILE.png, FILE.svg or FILE.pdf")
    p.add_argument("--seed", type=_seed, default=0, help="seed for random inputs (default 0)")
    p.add_argument("--max-iterations", type=_positive, metavar="N",
                   help="stop every loop after N iterations")
    p.add_argument("--max-memory", type=_memory, metavar="SIZE",
                   help="budget for concatenated outputs, e.g. 512M or 4G")
    p.set_defaults(handler=run)


def _seed(text):
    from loopdbg.cli.common import seed
    return seed(text)


def _positive(text):
    from loopdbg.cli.common import positive_int
    return positive_int(text)


def _memory(text):
    from loopdbg.cli.common import memory_size
    return memory_size(text)


def run(args) -> int:
    from loopdbg.errors import LoopdbgError
    from loopdbg.text import safe

    out = Path(args.output)
    if out.suffix.lower() not in FORMATS:
        raise LoopdbgError(f"{out}: say which format to write with the file name: "
                           f"{', '.join(FORMATS)}.")
    pyplot = _matplotlib()
    outer = _outer(args.outer)
    is_trace = Path(args.source).suffix.lower() == ".ltrace"
    words = list(args.words)
    inputs = None
    if not is_trace and words and words[0].lower().endswith(".npz"):
        inputs = words.pop(0)
    if not words:
        raise LoopdbgError("give at least one expression to plot, e.g. \"mean(h)\".")
    from loopdbg.cli.common import model_reads
    from loopdbg.files import Output

    reads = model_reads(args.source, inputs)
    if is_trace:
        reads.append(("the trace", args.source))
    output = Output(out, reads, what="the plot")        # checked before the run, written after
    series, title = (_from_trace(args, words, outer, output) if is_trace
                     else _from_model(args, inputs, words, outer, output))
    if not series.x:
        raise LoopdbgError(f"loop '{series.loop}' ran no iteration"
                           + (f" at outer iterations {list(outer)}" if outer else "")
                           + ", so there is nothing to plot.")
    _draw(pyplot, series, title, output)
    print(f"{len(series.x)} iterations of loop '{safe(series.loop)}' plotted in "
          f"{safe(output.path)}", file=sys.stderr)
    return 0


def _matplotlib():
    from loopdbg import programs
    from loopdbg.errors import LoopdbgError
    try:        # matplotlib reads ./matplotlibrc and may run fc-list: not the model folder's
        with programs.neutral():
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as pyplot
    except ImportError:
        raise LoopdbgError("loopdbg plot draws with matplotlib, which is not installed; install "
                           "it with: pip install 'loopdbg[plot]'.") from None
    return pyplot


def _outer(text: str | None) -> tuple | None:
    from loopdbg.errors import LoopdbgError
    if text is None:
        return None
    try:
        return tuple(int(k) for k in text.split(","))
    except ValueError:
        raise LoopdbgError(f"--outer {text!r}: give the outer iterations as whole numbers, "
                           f"e.g. 2 or 2,0.") from None


def _from_trace(args, words, outer, output):
    from loopdbg.cli.common import model_reads
    from loopdbg.debug.series import choose_loop, collect
    from loopdbg.trace.replay import open_trace

    timeline = open_trace(args.source)
    output.also_reads(model_reads(timeline.engine.model))      # the replayed model's files
    try:
        paths = list(timeline.engine.loops)
        loop = choose_loop(paths, args.loop, args.source)
        events = (timeline.at(n) for n in range(len(timeline)))
        return collect(events, words, loop, outer), f"{Path(args.source).name}: loop '{loop}'"
    finally:
        timeline.reader.close()


def _from_model(args, inputs, words, outer, output):
    from loopdbg.cli import common
    from loopdbg.cli.progress import Progress
    from loopdbg.debug.series import choose_loop, collect
    from loopdbg.engine import Engine

    args.model, args.inputs = args.source, inputs
    model, values, source = common.load_model_and_inputs(args)
    output.also_reads(common.model_reads(model, getattr(args, "inputs_file", None)))
    engine = Engine(model)
    loop = choose_loop(list(engine.loops), args.loop, args.source)
    progress = Progress()
    events = engine.run(values, max_iterations=args.max_iterations,
                        max_memory=args.max_memory or common.default_memory_budget(),
                        source=source)

    def watched():
        try:
            for e in events:
                progress.update(e)
                yield e
        except KeyboardInterrupt:
            print(f"\nloopdbg: interrupted; plotting what ran ({progress.summary()}).",
                  file=sys.stderr)
        finally:
            progress.close()
    return collect(watched(), words, loop, outer), f"{Path(args.source).name}: loop '{loop}'"


def _plain(text: str) -> str:
    """Text as matplotlib shows it literally: no mathtext ($), no control characters."""
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text.replace("$", r"\$")


def _draw(pyplot, series, title: str, output) -> None:
    n = len(series.expressions)
    fig, axes = pyplot.subplots(n, 1, sharex=True, figsize=(8, 1.2 + 2.2 * n), squeeze=False)
    several = series.executions > 1
    x = list(range(len(series.x))) if several else series.x
    bounds = series.starts[1:] + [len(x)]
    for ax, text in zip(axes[:, 0], series.expressions):
        ys = series.values[text]
        for lo, hi in zip(series.starts, bounds):       # one line per execution of the loop
            ax.plot(x[lo:hi], ys[lo:hi], color="C0", linewidth=1,
                    marker="." if len(x) <= 200 else None)
        ax.set_ylabel(_plain(text))
        ax.grid(True, alpha=0.3)
        if several:
            for start in series.starts[1:]:
                ax.axvline(start - 0.5, color="grey", linestyle=":", linewidth=0.8)
    axes[-1, 0].set_xlabel("iteration" if not several else
                           f"iterations of all {series.executions} executions, in run order "
                           f"(dotted lines: a new execution)")
    fig.suptitle(_plain(title))
    fig.tight_layout()
    fmt = Path(output.path).suffix.lower().lstrip(".")
    try:
        output.write(lambda f: fig.savefig(f, format=fmt))
    finally:
        pyplot.close(fig)
