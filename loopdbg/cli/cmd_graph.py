"""``loopdbg graph``: draw a loop's body, port map and back edges as SVG, PNG or DOT."""

from __future__ import annotations

from loopdbg.cli import common

FORMATS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot"}
MAX_DRAWN = 400         # boxes of a grouped drawing dot lays out in seconds, not minutes


def add_parser(sub) -> None:
    p = sub.add_parser("graph", help="draw a loop's body and port map (SVG, PNG or DOT)",
                       description="Draw the body of a Loop or TensorIterator of MODEL with its "
                                   "inputs by role, its outputs and its back edges. The format "
                                   "follows the file name: .svg or .png (rendered with Graphviz's "
                                   "dot), .dot (the DOT source).")
    p.add_argument("model", help="model.xml (OpenVINO IR, with its .bin beside it), model.onnx, "
                                 "or a recorded FILE.ltrace")
    p.add_argument("inputs", nargs="?",
                   help="with --iteration: inputs.npz to run the model on (default: inputs.npz "
                        "beside the model, else random inputs)")
    p.add_argument("--iteration", type=int, metavar="K",
                   help="draw each node's value at iteration K of the loop (-1: the last), the "
                        "values that changed since K-1 marked in red")
    p.add_argument("--outer", metavar="I,J",
                   help="with --iteration: the iterations of the enclosing loops (default: the "
                        "first execution)")
    p.add_argument("--loop", metavar="PATH",
                   help="the loop to draw (its path, e.g. outer/inner, or its name; default: "
                        "the outermost)")
    p.add_argument("--max-memory", type=common.memory_size, metavar="SIZE",
                   help="with --iteration: what running the model may add to loopdbg's memory, "
                        "e.g. 512M or 4G (default: a quarter of the machine's memory)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="FILE.svg, FILE.png or FILE.dot")
    p.add_argument("--fold-consts", action="store_true",
                   help="fold constants into the nodes that use them instead of drawing them")
    p.add_argument("--flat", action="store_true",
                   help="draw every node of a big body (by default a body of more than "
                        "a hundred-odd nodes is drawn by its groups: blocks.4, head, ...)")
    p.add_argument("--expand", action="append", default=[], metavar="SCOPE",
                   help="open group SCOPE (e.g. blocks.4 or blocks.4/attn) and those on the way "
                        "to it; may be given more than once")
    p.add_argument("--depth", type=int, default=0, metavar="N",
                   help="open every group down to N levels (1: the top-level groups)")
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
    if args.outer is not None and args.iteration is None:
        raise LoopdbgError("--outer says which execution --iteration draws; give --iteration K.")
    if args.max_memory is not None and args.iteration is None:
        raise LoopdbgError("--max-memory bounds the run --iteration makes; give --iteration K.")
    if str(args.model).endswith(".ltrace"):
        from loopdbg.trace.replay import open_trace
        timeline = open_trace(args.model)
        engine = timeline.engine                # replaying reads the model the trace names
        reads = [("the trace", args.model), *common.model_reads(engine.model)]
    else:
        timeline = None
        model = read_model(args.model, args.max_memory)
        reads = common.model_reads(model, getattr(args, "inputs", None))
        engine = Engine(model, require_kernels=args.iteration is not None)
    output = Output(args.output, reads, what="the drawing")
    spec = choose_loop(engine, args.loop)
    values, changed, title = {}, set(), ""
    if args.iteration is not None:
        values, changed, title = node_values_at(args, engine, timeline, spec)
    consts = "fold" if args.fold_consts else "show"
    graph = grouped_view(spec, consts, args, values, changed)
    if graph is not None:
        graph, values, changed = graph
        if fmt != "dot" and len(graph.nodes) > MAX_DRAWN:
            raise LoopdbgError(f"the groups opened make {len(graph.nodes)} boxes; Graphviz takes "
                               f"minutes on more than {MAX_DRAWN}: open fewer (--expand "
                               f"blocks.4 rather than --depth), fold the constants "
                               f"(--fold-consts), or write the DOT source (-o FILE.dot).")
    source = graph_to_dot(spec, consts=consts, values=values, changed=changed, title=title,
                          graph=graph)
    from loopdbg.layout.dot import render
    output.write_bytes(source.encode() if fmt == "dot" else render(source, fmt))
    common.err(f"{spec.kind} '{common.safe(spec.path)}' drawn in {common.safe(output.path)}")
    return 0


def node_values_at(args, engine, timeline, spec):
    """Each body layer's value at ``args.iteration`` of ``spec``'s loop (a line of text per
    layer id), the ids whose value changed since the iteration before, and a title."""
    from loopdbg.debug import Session
    from loopdbg.debug.jump import Target
    from loopdbg.errors import LoopdbgError

    depth = sum(1 for p in engine.loops if spec.path.startswith(p + "/"))
    outer = (0,) * depth
    if args.outer is not None:
        try:
            outer = tuple(int(k) for k in args.outer.replace(",", " ").split())
        except ValueError:
            raise LoopdbgError(f"--outer {args.outer[:40]!r}: give iteration numbers, e.g. "
                               f"--outer 2 or --outer 1,0.") from None
        if len(outer) != depth or any(k < 0 for k in outer):
            raise LoopdbgError(f"--outer: loop '{spec.path}' is inside {depth} loop"
                               f"{'s' * (depth != 1)}; give {depth} iteration number"
                               f"{'s' * (depth != 1)} from 0.")
    budget = args.max_memory or common.default_memory_budget()
    if timeline is not None:
        common.replay_budget(budget)
        session = Session(engine, timeline.inputs, timeline=timeline, source=timeline.source)
    else:
        _, inputs, source = common.load_model_and_inputs(args)
        session = Session(engine, inputs, source=source, max_memory=budget)
    stop = session.jump(Target(spec.path, args.iteration, outer))
    e = stop.event
    if e is None or e.path != spec.path or tuple(e.outer) != outer or \
            (args.iteration >= 0 and e.iteration != args.iteration):
        raise LoopdbgError(f"loop '{spec.path}' did not reach iteration {args.iteration}"
                           + (f" in outer iterations {list(outer)}" if outer else "")
                           + f" ({stop.reason}).")
    from loopdbg.view.picture import body_values
    values, changed, before = body_values(session, e, spec)
    values = {k: common.safe(v) for k, v in values.items()}
    where = f", outer {list(outer)}" if outer else ""
    session.close()
    note = f"; red: changed since iteration {e.iteration - 1}" if before else ""
    return values, changed, f" at iteration {e.iteration}{where}{note}"


def grouped_view(spec, consts: str, args, values=None, changed=None):
    """The BodyGraph of a big body by its groups (those --expand and --depth name opened), and
    the values and changes of the groups' boxes (those of the first value leaving each); None
    for a small body or with --flat."""
    from loopdbg.errors import LoopdbgError
    from loopdbg.layout.grouped import grouped_body

    if args.depth < 0:
        raise LoopdbgError(f"--depth {args.depth}: give a number of levels from 0.")
    if args.flat or grouped_body(spec) is None:
        if args.expand and not args.flat:
            raise LoopdbgError(f"--expand: the body of '{spec.path}' is small enough to be "
                               f"drawn whole; it has no groups.")
        return None
    gb = grouped_body(spec, consts, always=True)
    if gb is None:
        return None
    try:
        opened = gb.opened_for(args.expand, args.depth)
    except KeyError as exc:
        tops = ", ".join(g.name for g in gb.root.children)
        raise LoopdbgError(f"--expand {common.safe(exc.args[0])}: no such group in the body of "
                           f"'{common.safe(spec.path)}'; its groups are {common.safe(tops)}."
                           ) from None
    from loopdbg.view.picture import with_groups
    return with_groups(spec, values or {}, set(changed or ()), consts, opened, gb=gb)


def choose_loop(engine, name: str | None):
    """The loop called ``name`` (path, last part of the path, or layer name), or the only one."""
    from loopdbg.engine.paths import matches_loop
    from loopdbg.errors import LoopdbgError
    from loopdbg.text import listing

    specs = list(engine.loops.values())
    paths = listing(s.path for s in specs)
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
                           f"({listing(s.path for s in matches)}); give the full path.")
    raise LoopdbgError(f"{engine.file}: no loop named '{name}'; the loops are: {paths}.")
