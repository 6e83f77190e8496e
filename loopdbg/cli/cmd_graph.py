"""``loopdbg graph``: draw a loop's body, port map and back edges as SVG, PNG or DOT."""

from __future__ import annotations

from loopdbg.cli import common

FORMATS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot"}


def add_parser(sub) -> None:
    p = sub.add_parser("graph", help="draw a loop's body and port map (SVG, PNG or DOT)",
                       description="Draw the body of a Loop or TensorIterator of MODEL with its "
                                   "inputs by role, its outputs and its back edges. The format "
                                   "follows the file name: .svg or .png (rendered with Graphviz's "
                                   "dot), .dot (the DOT source).")
    p.add_argument("model", help="model.xml (OpenVINO IR, with its .bin beside it)")
    p.add_argument("--loop", metavar="PATH",
                   help="the loop to draw (its path, e.g. outer/inner, or its name; default: "
                        "the outermost)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="FILE.svg, FILE.png or FILE.dot")
    p.add_argument("--fold-consts", action="store_true",
                   help="fold constants into the nodes that use them instead of drawing them")
    p.set_defaults(handler=run)


def run(args) -> int:
    from pathlib import Path

    from loopdbg.engine import Engine
    from loopdbg.errors import LoopdbgError
    from loopdbg.files import Output
    from loopdbg.ir.load import read_model
    from loopdbg.layout.export import graph_to_dot

    out = Path(args.output)
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise LoopdbgError(f"{out}: say which format to write with the file name: .svg, .png "
                           f"or .dot.")
    model = read_model(args.model)
    output = Output(args.output, common.model_reads(model), what="the drawing")
    engine = Engine(model, require_kernels=False)     # drawing needs no kernels
    spec = choose_loop(engine, args.loop)
    source = graph_to_dot(spec, consts="fold" if args.fold_consts else "show")
    output.write_bytes(source.encode() if fmt == "dot" else render(source, fmt))
    common.err(f"{spec.kind} '{common.safe(spec.path)}' drawn in {common.safe(output.path)}")
    return 0


def choose_loop(engine, name: str | None):
    """The loop called ``name`` (path, last part of the path, or layer name), or the only one."""
    from loopdbg.engine.paths import matches_loop
    from loopdbg.errors import LoopdbgError

    specs = list(engine.loops.values())
    paths = ", ".join(s.path for s in specs)
    if not specs:
        raise LoopdbgError(f"{engine.file}: the model has no Loop or TensorIterator to draw.")
    if name is None:                  # the outermost loop; the others are named
        outer = min(specs, key=lambda s: s.path.count("/"))
        if len(specs) > 1:
            common.err(f"{common.safe(engine.file)} has {len(specs)} loops "
                       f"({common.safe(paths)}): drawing '{common.safe(outer.path)}'; "
                       f"--loop chooses another")
        return outer
    for s in specs:
        if s.path == name:
            return s
    matches = [s for s in specs if matches_loop(s.path, name, s.layer.name)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LoopdbgError(f"{engine.file}: several loops are called '{name}' "
                           f"({', '.join(s.path for s in matches)}); give the full path.")
    raise LoopdbgError(f"{engine.file}: no loop named '{name}'; the loops are: {paths}.")


def render(source: str, fmt: str) -> bytes:
    """``source`` rendered by Graphviz's ``dot`` as ``fmt`` (svg or png)."""
    import shutil
    import subprocess

    from loopdbg.errors import LoopdbgError
    from loopdbg.layout.dot import DOT_TIMEOUT, INSTALL_HINT

    exe = shutil.which("dot")
    if exe is None:
        raise LoopdbgError(f"Graphviz's 'dot' program was not found; {INSTALL_HINT}; or write "
                           f"the DOT source with -o FILE.dot.")
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=source.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LoopdbgError(f"Graphviz's 'dot' could not draw the graph: {exc}.") from None
    if proc.returncode != 0 or not proc.stdout:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise LoopdbgError(f"Graphviz's 'dot' failed: {msg[0] if msg else proc.returncode}.")
    return proc.stdout

