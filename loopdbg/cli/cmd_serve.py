"""``loopdbg serve``: the debugger in a browser, for a classroom or a machine without a terminal.

The same Textual UI as ``loopdbg MODEL``, served by textual-serve (Textual's own web server, the
``serve`` extra): each browser tab that opens the page starts its own ``loopdbg open`` process,
so every student steps through their own session. It listens on 127.0.0.1 unless ``--host``
says otherwise, and says where.

The command each tab runs is built here from absolute paths and started isolated like every
child of loopdbg (``programs.python_argv``: ``python -I``, loopdbg's own module path, nothing
from the folder the server was started in), every argument quoted for the shell textual-serve
hands it to.
"""

from __future__ import annotations

import os
import shlex

from loopdbg import programs
from loopdbg.cli import common

LOCAL = ("127.0.0.1", "localhost", "::1")


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve the debugger to web browsers (each tab its own session)",
                       description="Serve the loop debugger's UI over HTTP with textual-serve: "
                                   "open the address it prints in a browser; every tab gets its "
                                   "own debugging session of MODEL (or of a bundled demo).")
    p.add_argument("model", nargs="?", help="model.xml, model.onnx or FILE.ltrace to debug")
    p.add_argument("inputs", nargs="?", help="inputs.npz (default: inputs.npz beside the model)")
    p.add_argument("--demo", nargs="?", const="for_loop", metavar="NAME",
                   help="serve a bundled demo instead of a model (default: for_loop, the first "
                        "lesson; `loopdbg demo` lists them)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 "
                        "lets every machine that reaches this one in)")
    p.add_argument("--port", type=_port, default=8000, help="port to listen on (default 8000)")
    p.add_argument("--max-iterations", type=common.positive_int, metavar="N",
                   help="cap every loop execution at N iterations (each session)")
    p.add_argument("--max-memory", type=common.memory_size, metavar="SIZE",
                   help="memory each session may add (default: a quarter of the machine's "
                        "memory, for each session: set it lower when many people connect)")
    p.set_defaults(handler=run)


def _port(text: str) -> int:
    import argparse
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r} (1 to 65535)")
    return port


def session_command(args) -> tuple[list[str], str]:
    """The argv each browser tab runs (``python -I -m loopdbg open ABSOLUTE-PATHS ... --web``),
    and what the page is called."""
    from loopdbg.errors import LoopdbgError

    if args.demo and args.model:
        raise LoopdbgError("give a MODEL or --demo, not both.")
    if args.demo:
        from loopdbg.cli.cmd_demo import model_file
        model = model_file(args.demo)
        inputs = model.parent / "inputs.npz"
        files = [str(model)] + ([str(inputs)] if inputs.is_file() else [])
        label = f"demo {args.demo}"
    elif args.model:
        files = [args.model] + ([args.inputs] if args.inputs else [])
        for f in files:
            if not os.path.isfile(f):
                raise LoopdbgError(f"{f}: no such file (loopdbg serve needs the model and "
                                   f"inputs to exist when it starts).")
        files = [programs.absolute(f) for f in files]
        label = args.model
    else:
        raise LoopdbgError("say what to serve: a MODEL, or --demo [NAME] for a bundled demo.")
    argv = programs.python_argv("loopdbg", "open", *files, "--title", label, "--web")
    if args.max_iterations:
        argv += ["--max-iterations", str(args.max_iterations)]
    if args.max_memory:
        argv += ["--max-memory", str(args.max_memory)]
    return argv, label


def run(args) -> int:
    from loopdbg.errors import LoopdbgError

    argv, label = session_command(args)
    try:
        from textual_serve.server import Server
    except ImportError:
        raise LoopdbgError("loopdbg serve needs textual-serve: pip install 'loopdbg[serve]'.") \
            from None
    host = args.host
    url_host = f"[{host}]" if ":" in host else host
    who = ("only this machine can connect" if host in LOCAL else
           "every machine that can reach this one can connect and run the model")
    common.err(f"serving the debugger at http://{url_host}:{args.port}/ ({who}); each browser "
               f"tab gets its own session; Ctrl+C stops the server.")
    server = Server(shlex.join(argv), host=host, port=args.port, title=f"loopdbg — {label}")
    try:
        server.serve()
    except OSError as exc:
        raise LoopdbgError(f"cannot listen on {host}:{args.port}: {exc.strerror or exc}.") \
            from None
    return 0
