"""``loopdbg run``: run a model headless, print what every loop did and the outputs."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading

from loopdbg.cli import common
from loopdbg.text import safe


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a model headless and print its loops and outputs",
                       description="Run MODEL on INPUTS without the UI. Prints, per loop, the "
                                   "iterations run and why it stopped, then every output.")
    common.add_model_args(p)
    p.add_argument("-o", "--output", metavar="OUT.npz", help="save the outputs, keyed by output name")
    common.add_limit_args(p)
    p.add_argument("--trace", metavar="FILE.ltrace",
                   help="record every iteration to a trace file (see `loopdbg trace --help`)")
    p.add_argument("--trace-all", action="store_true",
                   help="with --trace: also record every body node's value")
    common.add_trace_size_arg(p)
    g = p.add_argument_group("breakpoints (run until the first stop and print the stop report)")
    g.add_argument("--break", dest="breaks", action="append", default=[], metavar="EXPR",
                   help="stop after the first iteration where EXPR holds, e.g. 'i == 3', "
                        "'not cond', 'isnan(h).any()' (repeatable). i is the iteration of the "
                        "loop being checked (a model value named i is t[\"i\"]); "
                        "'outer: i == 2' checks loop outer only")
    g.add_argument("--loop", metavar="NAME", help="apply the breakpoints and watches to this loop only")
    g.add_argument("--watch", action="append", default=[], metavar="EXPR",
                   help="an expression to show in the stop report (repeatable)")
    g.add_argument("--on-nan", action="store_true",
                   help="stop at the first iteration where a back edge or scan slice holds NaN/Inf")
    g.add_argument("--history", type=common.positive_int, default=1000, metavar="N",
                   help=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.set_defaults(handler=run)


def run(args) -> int:
    from loopdbg.errors import RunError

    try:
        return _run(args)
    except RunError as exc:       # errors inside a loop name the loop, not the file: add it
        file = getattr(args, "model_file", None) or args.model
        if not str(exc).startswith(f"{file}:"):
            exc.args = (f"{file}: {exc}",)
        made_up = getattr(args, "random_inputs", None)
        if made_up is not None:
            from loopdbg.debug.report import random_failure_hint

            exc.args = (f"{exc.args[0]} Hint: {random_failure_hint(made_up, str(args.model))}.",)
        raise


def _run(args) -> int:
    from loopdbg.engine import Engine
    from loopdbg.cli.progress import Progress
    from loopdbg.files import Output, distinct_outputs

    say = (lambda text: None) if args.quiet else common.err
    with common.kept():             # the model and its plans live as long as the run
        model, inputs, source = common.load_model_and_inputs(args, say=say)
        args.model_file = model.path
        reads = common.model_reads(model, getattr(args, "inputs_file", None))
        output = None
        if args.output is not None:      # checked before the run, written after it
            output = Output(args.output, reads, npz=True, what="the outputs (-o)")
            distinct_outputs(("-o", output.path), ("--trace", args.trace))
        engine = Engine(model)
    budget = args.max_memory or common.default_memory_budget()
    if args.breaks or args.watch or args.on_nan:
        return run_to_stop(args, engine, inputs, source, budget, model, reads)
    if args.trace_all and not args.trace:
        say("--trace-all has no effect without --trace FILE")
    events = engine.run(inputs, max_iterations=args.max_iterations, max_memory=budget,
                        record_nodes=bool(args.trace and args.trace_all), source=source)
    recorder = None
    if args.trace:
        from loopdbg.trace.record import recording
        options = {"trace_all": args.trace_all, "max_iterations": args.max_iterations}
        recorder = events = recording(events, args.trace, model=model, inputs=inputs,
                                      options=options, source=source, reads=reads,
                                      max_bytes=common.trace_size_cap(args))
    progress = Progress(enabled=not args.quiet)
    final = None
    try:
        with _interrupt_between_events() as pending:
            for event in events:
                progress.update(event)
                final = event
                if pending:               # Ctrl+C: stop where the trace and the summary agree
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        progress.close()
        if recorder is not None:
            recorder.close("interrupted", "interrupted (Ctrl+C)")
            say(f"trace closed: {common.safe(args.trace)} holds what was computed")
        state = progress.state()
        if state and not args.quiet:
            common.out(state)
        common.err(f"loopdbg: interrupted; {progress.summary()}.")
        return 130
    finally:
        progress.close()
        if recorder is not None:
            recorder.close()
    if recorder is not None:
        say(f"trace written to {common.safe(args.trace)}")
    if not args.quiet:
        common.out(report(final))
    if output is not None:
        from loopdbg.engine.npz import entries

        output.write_npz(entries(final.outputs))     # sequences as name[0], name[1] ...
        say(f"outputs saved to {common.safe(output.path)}{common.safe(output.note)}")
    return 0


@contextlib.contextmanager
def _interrupt_between_events():
    """Hold a first Ctrl+C until the current event has been recorded and counted; a second one
    interrupts at once (a long kernel). Python's default SIGINT handling is restored after."""
    pending: list[int] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield pending
        return

    def hold(signum, frame):
        if pending:
            raise KeyboardInterrupt
        pending.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield pending
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def report(final) -> str:
    """The summary of a finished run: loops (aggregated per path), notices, outputs."""
    lines = []
    per_path: dict[str, list] = {}
    for loop in final.loops:
        per_path.setdefault(loop.path, []).append(loop)
    if per_path:
        lines.append("loops:")
    for path, runs in per_path.items():
        if len(runs) == 1:
            r = runs[0]
            plural = "s" if r.iterations != 1 else ""
            lines.append(f"  {safe(path)}: {r.iterations} iteration{plural}, "
                         f"stopped because {safe(r.reason_text)}")
        else:
            total = sum(r.iterations for r in runs)
            reasons = sorted({safe(r.reason_text) for r in runs})
            lines.append(f"  {safe(path)}: ran {len(runs)} times, {total} iterations in all, "
                         f"stopped because {' / '.join(reasons)}")
    if final.notices:
        lines.append("notices:")
        lines.extend(f"  {safe(n.message)}" for n in final.notices)
    from loopdbg.debug.report import fmt_value

    lines.append("outputs:")
    names = {name: safe(name) for name in final.outputs}
    width = max((len(n) for n in names.values()), default=0)
    for name, value in final.outputs.items():
        lines.append(f"  {names[name]:<{width}}  {fmt_value(value)}")
    return "\n".join(map(safe, lines))      # each line one line, whatever a name holds


def run_to_stop(args, engine, inputs, source, budget, model, reads) -> int:
    """`run --break/--watch/--on-nan`: run to the first stop, print its report (exit 0); with
    --trace, what ran up to the stop is recorded."""
    from loopdbg.debug import Session

    record = None
    if args.trace:
        from loopdbg.trace.record import recording

        def record(events):
            return recording(events, args.trace, model=model, inputs=inputs, source=source,
                             options={"max_iterations": args.max_iterations}, reads=reads,
                             max_bytes=common.trace_size_cap(args))
    session = Session(engine, inputs, max_iterations=args.max_iterations, max_memory=budget,
                      on_nan=args.on_nan, source=source, history=args.history, record=record)
    try:
        return _stop_report(args, session)
    finally:
        session.close()


def _stop_report(args, session) -> int:
    from loopdbg.debug import format_stop
    from loopdbg.debug.report import format_watches
    from loopdbg.debug.session import END, ERROR

    exprs = [session.breakpoints.add(text, loop=args.loop).condition for text in args.breaks]
    exprs += [session.breakpoints.watch(text, loop=args.loop).expression for text in args.watch]
    for expr in exprs:
        for name, loops in session.breakpoints.shadowed(expr).items():
            common.err(f"note: in '{common.safe(expr.text)}', {name} is the iteration of the "
                       f"loop being checked; the model's own {name} (in "
                       f"{common.safe(', '.join(loops))}) is t[\"{name}\"]")
    stop = session.continue_()
    if stop.kind == ERROR:
        raise stop.error
    if stop.kind == END:
        if args.breaks or args.on_nan:
            common.out("no breakpoint was hit; the run finished." if args.breaks else
                       "no NaN or Inf appeared; the run finished.")
        common.out(report(stop.finished))
        if stop.watches:
            common.out(format_watches(stop))
        return 0
    common.out(format_stop(stop, session))
    return 0
