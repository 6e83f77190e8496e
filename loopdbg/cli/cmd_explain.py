"""``loopdbg explain``: every Loop and TensorIterator of a model explained in plain words."""

from __future__ import annotations

import sys

from loopdbg.cli.common import memory_size


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="explain every loop of a model: mode, pseudo-code, pitfalls",
                       description="For every Loop and TensorIterator of MODEL (nested ones too): "
                                   "its mode (for, while, do-while, ...), C-like pseudo-code with "
                                   "the model's names, each input by role, each output, and the "
                                   "pitfalls found. Give INPUTS to decide modes that depend on "
                                   "the model's inputs (the model is run to find out). A model "
                                   "with operations loopdbg cannot run is explained from its "
                                   "structure.")
    p.add_argument("model", help="model.xml (OpenVINO IR, with its .bin beside it)")
    p.add_argument("inputs", nargs="?",
                   help="inputs.npz: run the model on them to decide input-dependent modes "
                        "(default: inputs.npz beside the model, as `run` reads)")
    p.add_argument("--loop", metavar="PATH",
                   help="explain only this loop (its path, e.g. outer/inner, or its name)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or json (the same facts as a dictionary)")
    p.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                   help="what running the model on INPUTS may add to loopdbg's memory, e.g. "
                        "512M or 4G, as for `run` (default: a quarter of the machine's memory)")
    p.add_argument("--code", action="store_true",
                   help="print the Python loopdbg generated for the model instead: each loop's "
                        "iteration code with its body inlined, one commented line per layer "
                        "(tracebacks and debuggers show these lines)")
    p.set_defaults(handler=run)


def print_code(engine) -> int:
    """``explain --code``: every generated source, each under its file name."""
    from loopdbg.engine.interp import COMPILE_LIMIT
    from loopdbg.text import safe_lines

    parts = []
    for what, filename, source in engine.generated_code():
        if source is None:
            parts.append(f"# {what}: interpreted, not compiled (more than {COMPILE_LIMIT} "
                         f"layers)\n")
        else:
            parts.append(f"# {what}: {filename}\n{source}")
    sys.stdout.write(safe_lines("\n".join(parts)))
    return 0


def run(args) -> int:
    import json

    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.ir.load import read_model
    from loopdbg.teach.explain import explain
    from loopdbg.teach.explain_text import format_text, to_json_ready
    from loopdbg.text import safe_lines

    from pathlib import Path

    from loopdbg.cli.common import default_memory_budget, err, safe

    model = read_model(args.model, getattr(args, "max_memory", None))
    if args.code:                    # the code it runs: only a model loopdbg can run has it
        return print_code(Engine(model))
    engine = Engine(model, require_kernels=False)   # explains any model
    source = args.inputs
    if source is None:               # as `run` does: the inputs.npz beside the model
        beside = Path(model.path or args.model).with_name("inputs.npz")
        if beside.exists():
            err(f"inputs: {safe(beside)}")
            source = beside
    budget = args.max_memory or default_memory_budget()
    inputs = load_npz(source, args.max_memory, model) if source else None
    facts = explain(engine, inputs, loop=args.loop, max_memory=budget)
    if args.format == "json":        # json escapes every control character itself
        json.dump(to_json_ready(facts), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(safe_lines(format_text(facts)))
    return 0
