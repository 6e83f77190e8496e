"""``loopdbg MODEL [INPUTS]``: open the debugger (until the UI lands: a headless run)."""

from __future__ import annotations

from loopdbg.cli import common


def add_parser(sub) -> None:
    p = sub.add_parser("open", help="open the debugger on a model (the default command)",
                       description="Open the loop debugger on MODEL with INPUTS.")
    common.add_model_args(p)
    common.add_limit_args(p)
    p.set_defaults(handler=run)


def run(args) -> int:
    from loopdbg.cli import cmd_run

    args.output = None
    args.quiet = False
    return cmd_run.run(args)
