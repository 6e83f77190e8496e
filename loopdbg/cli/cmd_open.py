"""``loopdbg MODEL [INPUTS]``: open the debugger's terminal UI on a model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loopdbg.cli import common


def add_parser(sub) -> None:
    p = sub.add_parser("open", help="open the debugger on a model or a trace (the default command)",
                       description="Open the loop debugger's terminal UI on MODEL with INPUTS, or "
                                   "replay a recorded FILE.ltrace (any iteration, forward and back).")
    common.add_model_args(p)
    add_session_args(p)
    # `loopdbg serve` runs one `open` per browser tab: what the title says, and that the
    # terminal is textual-serve's web driver, not a tty
    p.add_argument("--title", help=argparse.SUPPRESS)
    p.add_argument("--web", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(handler=run)


def add_session_args(p) -> None:
    """The options of a debugging session (also those of ``loopdbg demo NAME``)."""
    common.add_limit_args(p)
    p.add_argument("--on-nan", action="store_true",
                   help="stop at the first iteration where a back edge or scan slice holds NaN/Inf")
    p.add_argument("--break", dest="breaks", action="append", default=[], metavar="EXPR",
                   help="start with this breakpoint (repeatable); i is the iteration of the "
                        "loop being checked (a model value named i is t[\"i\"]), and "
                        "'outer: i == 2' checks loop outer only")
    p.add_argument("--history", type=common.positive_int, default=1000, metavar="N",
                   help="iterations kept in memory for stepping back (default 1000)")
    p.add_argument("--trace", metavar="FILE.ltrace",
                   help="record the run to a trace file as it goes (replay it later with "
                        "`loopdbg FILE.ltrace`)")
    common.add_trace_size_arg(p)
    p.add_argument("--no-restore", action="store_true",
                   help="start without the breakpoints and watches saved for this model (they "
                        "are saved on leaving, per model, in $XDG_STATE_HOME/loopdbg)")


def run(args) -> int:
    from loopdbg.debug import Session
    from loopdbg.engine import Engine

    if not sys.stdout.isatty() and not getattr(args, "web", False):
        print("loopdbg: the debugger needs a terminal; use `loopdbg run` for a headless run.",
              file=sys.stderr)
        return 2
    title = getattr(args, "title", None) or args.model
    if str(args.model).endswith(".ltrace"):
        from loopdbg.trace.replay import open_trace
        timeline = open_trace(args.model)
        common.replay_budget(args.max_memory or common.default_memory_budget())
        session = Session(timeline.engine, timeline.inputs, timeline=timeline,
                          source=timeline.source, on_nan=args.on_nan)
    else:
        model, inputs, source = common.load_model_and_inputs(args)
        title = getattr(args, "title", None) or model.path
        record = None
        if args.trace:
            from loopdbg.trace.record import recording

            def record(events):
                return recording(events, args.trace, model=model, inputs=inputs, source=source,
                                 options={"max_iterations": args.max_iterations},
                                 max_bytes=common.trace_size_cap(args))
        session = Session(Engine(model), inputs, history=args.history,
                          max_iterations=args.max_iterations,
                          max_memory=args.max_memory or common.default_memory_budget(),
                          on_nan=args.on_nan, source=source, record=record)
    for text in args.breaks:
        session.breakpoints.add(text)
    notes, on_leave = [], None
    if not str(args.model).endswith(".ltrace"):
        from loopdbg.debug import saved
        files = [f for _, f in common.model_reads(model) if f and Path(f).is_file()]
        refused = saved.unusable()
        if refused:
            notes.append(refused)
        elif not args.no_restore:
            note = saved.restore(files, session.breakpoints)
            if note:
                notes.append(note)

        def on_leave():
            saved.save(files, session.breakpoints)       # (not when the folder is unusable)
    from loopdbg.tui.app import LoopdbgApp, model_title
    try:
        LoopdbgApp(session, title=model_title(title), notes=tuple(notes),
                   on_leave=on_leave).run()
    finally:
        session.close()
    if getattr(args, "trace", None):
        common.err(f"trace written to {common.safe(args.trace)}")
    return 0
