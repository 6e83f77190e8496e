"""The ``loopdbg`` command: argument parsing and the one place errors become exit codes.

Each sub-command lives in its own module with ``add_parser(subparsers)`` and ``run(args) -> int``;
modules import heavy packages (numpy, lxml, textual) only inside ``run``, so that
``loopdbg --version`` and ``loopdbg --help`` start fast.

``loopdbg MODEL [INPUTS]`` without a sub-command opens the debugger on the model.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from loopdbg import __version__

COMMANDS = ("open", "demo", "serve", "run", "inputs", "trace", "explain", "graph", "plot", "check")
DESCRIPTION = "Watch the Loop and TensorIterator operations of a model run, step by step."
EPILOG = """examples:
  loopdbg demo                                  list the bundled demos; `loopdbg demo for_loop` opens one
  loopdbg model.xml                             open the debugger on a model (inputs.npz beside it)
  loopdbg run model.xml inputs.npz -o out.npz   run headless and save the outputs
  loopdbg run model.xml --break "i == 3"        run to a breakpoint and print the stop report
  loopdbg inputs model.xml -o inputs.npz        write a template of the inputs
"""


def _modules(names=COMMANDS):
    for name in names:
        try:
            yield name, importlib.import_module(f"loopdbg.cli.cmd_{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"loopdbg.cli.cmd_{name}":
                raise


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``loopdbg: ...``) like every other error, and
    a command's options may come between its positionals (``run model.xml --max-iterations 20
    inputs.npz``): a parser without sub-commands parses intermixed."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._subparsers is None and not self._intermixing:
            self._intermixing = True        # parse_known_intermixed_args calls back in here
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._intermixing = False
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        from loopdbg.text import safe

        command = self.prog.removeprefix("loopdbg").strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"loopdbg: {where}{safe(message)} (see `{self.prog} --help`)\n")


def build_parser(commands: tuple[str, ...] = COMMANDS) -> argparse.ArgumentParser:
    """The command line's parser with the sub-commands ``commands`` (every one by default)."""
    parser = _Parser(prog="loopdbg", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"loopdbg {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for _, module in _modules(commands):
        module.add_parser(sub)
    return parser


def _wanted(argv: list[str]) -> tuple[str, ...]:
    """The sub-commands whose parsers ``argv`` needs: the one it names (each command's module
    and parser cost a few milliseconds: 60-70 ms for all ten, more than the rest of starting
    `loopdbg run`); every one for ``--help``, a mistyped command or none."""
    return (argv[0],) if argv and argv[0] in COMMANDS else COMMANDS


# Whether the command runs as the process's own command line (``loopdbg ...``: set by main()),
# which ends with it, rather than as main(argv) called in a process that goes on.
PROGRAM = False


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's own command line, after which the
    process ends: see ``_ending``); return its exit code."""
    global PROGRAM
    if argv is None:
        import gc

        PROGRAM = True
        gc.disable()            # until the command starts (common.kept, common.collecting)
        code = main(sys.argv[1:])
        _ending()
        return code
    argv = list(argv)
    if argv == ["--version"]:                 # the fast path: no sub-command modules loaded
        print(f"loopdbg {__version__}")
        return 0
    if _opens_a_model(argv):
        argv.insert(0, "open")          # `loopdbg [OPTIONS] MODEL [INPUTS]` opens the debugger
    parser = build_parser(_wanted(argv))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return _call(args)


def _ending() -> None:
    """The process ends as main returns: every object it made is freed by its exit, so the
    collector's last pass over them is skipped (~45-70 ms after a run of a real model, a tenth of
    a whole ``loopdbg run``). Only that pass: atexit handlers, streams' flushing and modules'
    teardown happen as ever."""
    import gc

    gc.freeze()


def _opens_a_model(argv: list[str]) -> bool:
    """Whether argv names no sub-command: its first word that is not an option is a file."""
    if not argv or argv[0] in ("-h", "--help", "--version"):
        return False
    words = [a for a in argv if not a.startswith("-")]
    return bool(words) and words[0] not in COMMANDS and (
        not argv[0].startswith("-") or any(a.endswith((".xml", ".onnx", ".ltrace")) for a in words))


# The commands that run model code, each under its effective budget (--max-memory, else
# common.default_memory_budget()): the process's data size is capped at each run's start to the
# budget past what it holds then (ops.budget.backstop), so no kernel can outgrow it. The
# debugger (open, demo; serve's tabs are each an `open`) takes it too, with room for its UI
# (ops.budget.UI_MARGIN) past the cap's MARGIN. graph runs kernels only to draw values (--iteration); trace's
# sub-commands read recorded values and run none.
BACKSTOPPED = ("run", "explain", "check", "plot", "open", "demo", "graph")


def backstop_for(args):
    """The backstop (``ops.budget.backstop``) the command of ``args`` runs under, if any."""
    import contextlib

    command = getattr(args, "command", None)
    if command not in BACKSTOPPED or (command == "graph" and args.iteration is None):
        return contextlib.nullcontext()
    from loopdbg.ops import budget
    return budget.backstop(budget.MARGIN + (budget.UI_MARGIN if command in ("open", "demo")
                                            else 0))


# The commands that start the cyclic collector themselves, once their model is read and
# planned (common.kept); it runs again before every other command's handler.
KEEPING = ("run",)


def _handled(args) -> int:
    """The command's handler; a MemoryError (past the backstop's cap, outside any kernel) is
    told while the cap it ran under is still known."""
    if getattr(args, "command", None) not in KEEPING:
        from loopdbg.cli import common

        common.collecting()
    try:
        return int(args.handler(args) or 0)
    except MemoryError as exc:
        from loopdbg.errors import ResourceLimitError
        from loopdbg.ops.budget import out_of_memory

        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "MemoryError"
        raise ResourceLimitError(f"{out_of_memory(reason)}.") from None


def _call(args) -> int:
    from loopdbg.errors import LoopdbgError
    from loopdbg.text import safe, short

    try:
        with backstop_for(args):
            return _handled(args)
    except LoopdbgError as exc:       # one short line, whatever names from a file it holds
        print(f"loopdbg: {short(safe(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("loopdbg: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
