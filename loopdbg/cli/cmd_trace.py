"""``loopdbg trace info|show|export|diff``: look into trace files recorded with ``run --trace``."""

from __future__ import annotations

import sys
from typing import Mapping

from loopdbg.cli import common
from loopdbg.text import byte_size, listing, safe


def add_parser(sub) -> None:
    p = sub.add_parser("trace", help="inspect, export and compare trace files",
                       description="Inspect, export and compare trace files recorded with "
                                   "`loopdbg run MODEL INPUTS --trace FILE [--trace-all]`.")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    p.set_defaults(handler=lambda args: _usage(p))

    info = tsub.add_parser("info", help="what a trace holds: model, inputs, loops, size",
                           description="Print the model and inputs a trace was recorded from, "
                                       "every loop with its iteration count and why it stopped, "
                                       "the file size, and whether the file is truncated.")
    info.add_argument("file", help="the trace file")
    info.add_argument("--check", action="store_true",
                      help="also read every frame and verify its checksum")
    info.set_defaults(handler=run_info)

    show = tsub.add_parser("show", help="the tensors of one iteration of a loop",
                           description="Print one recorded iteration: trip count, condition, and "
                                       "every tensor (or just --tensor NAME, in full).")
    show.add_argument("file", help="the trace file")
    show.add_argument("--loop", metavar="PATH", help="loop path (default: the only loop)")
    show.add_argument("--iteration", "-i", type=int, required=True, metavar="K")
    show.add_argument("--outer", metavar="I,J", default="",
                      help="iterations of the enclosing loops, for a nested loop")
    show.add_argument("--tensor", "-t", metavar="NAME", help="print this tensor's values in full")
    show.set_defaults(handler=run_show)

    export = tsub.add_parser("export", help="write a trace as a plain .npz",
                             description="Write every recorded tensor to an .npz (keys like "
                                         "loop/iteration/name; loadable with allow_pickle=False).")
    export.add_argument("file", help="the trace file")
    export.add_argument("-o", "--output", required=True, metavar="OUT.npz")
    export.add_argument("--loop", action="append", metavar="PATH",
                        help="only this loop (repeatable)")
    export.add_argument("--compress", action="store_true", help="deflate the arrays")
    export.set_defaults(handler=run_export)

    d = tsub.add_parser("diff", help="the first divergence between two traces",
                        description="Compare two traces frame by frame. Prints `identical` "
                                    "(exit 0) or the first divergence: loop, iteration, tensor, "
                                    "max abs and rel error (exit 1).")
    d.add_argument("a", help="trace A")
    d.add_argument("b", help="trace B")
    d.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0)")
    d.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default 0)")
    d.set_defaults(handler=run_diff)


def _usage(p) -> int:
    p.print_help(sys.stderr)
    return 2


def run_info(args) -> int:
    from loopdbg.trace import TraceReader

    with TraceReader(args.file) as t:
        common.out(info_text(t))
        if args.check:
            problems = t.verify()
            if problems:
                common.out("check: " + "\n       ".join(safe(p) for p in problems))
                return 1
            common.out("check: every frame's checksum holds and every array is valid")
    return 0


def _dict(value) -> Mapping:
    """A part of a trace header that should be a JSON object (anything else reads as empty)."""
    return value if isinstance(value, Mapping) else {}


def info_text(t) -> str:
    """What ``trace info`` prints; every name and header field from the file is escaped."""
    from loopdbg.trace import TraceError

    h = _dict(t.header)
    lines = [f"trace:   {safe(t.path)}  ({byte_size(t.size)}, {_state(t)})",
             f"format:  version {t.version[0]}.{t.version[1]}, recorded by loopdbg "
             f"{safe(h.get('loopdbg', '?'))} on {safe(h.get('created', '?'))}"]
    m = _dict(h.get("model"))
    if m:
        lines.append(f"model:   {safe(m.get('path'))}")
        if m.get("xml_sha256"):
            kind = "xml" if m.get("format") in (None, "ir", "xml") else m.get("format")
            lines.append(f"         sha256 {safe(m['xml_sha256'])} (.{safe(kind)})")
        if m.get("bin_sha256"):
            lines.append(f"         sha256 {safe(m['bin_sha256'])} (.bin)")
    inputs = _dict(h.get("inputs"))
    if inputs:
        given = inputs.get("arrays")
        arrays = ", ".join(f"{safe(a.get('name'))} {safe(a.get('dtype'))} {_shape(a.get('shape'))}"
                           for a in (given if isinstance(given, list) else []) if _dict(a))
        lines.append(f"inputs:  sha256 {safe(inputs.get('sha256'))}" +
                     (f" from {safe(inputs['source'])}" if inputs.get("source") else ""))
        if arrays:
            lines.append(f"         {arrays}")
    opts = {k: v for k, v in _dict(h.get("options")).items() if v not in (None, False)}
    lines.append("options: " + (", ".join(f"{safe(k)}={safe(v)}" for k, v in opts.items())
                                or "none"))
    loops = t.loops()
    lines.append("loops:" if loops else "loops:   none recorded")
    per_path: dict[str, list] = {}
    for rec in loops:
        per_path.setdefault(rec.path, []).append(rec)
    for path, runs in per_path.items():
        if len(runs) == 1:
            r = runs[0]
            n = r.iterations if r.iterations is not None else r.recorded
            text = f"  {safe(path)}: {n} iteration{'s' if n != 1 else ''}, "
            text += (f"stopped because {safe(r.reason_text)}" if r.reason else _unfinished(t))
            if r.iterations is not None and r.recorded != r.iterations:
                text += f" ({r.recorded} recorded)"
            if r.error:
                text += f": {safe(r.error)}"
        else:
            total = sum(r.recorded for r in runs)
            reasons = sorted({safe(r.reason_text) if r.reason else _unfinished(t) for r in runs})
            text = (f"  {safe(path)}: ran {len(runs)} times, {total} iterations in all, stopped "
                    f"because {' / '.join(reasons)}")
        lines.append(text)
    unreadable = []                 # frames that cannot be shown: said, not a traceback
    notices = t.index.notices
    if len(notices):
        lines.append(f"notices: {len(notices)}")
        try:
            for n in t.notices()[:10]:
                lines.append(f"  {safe(_dict(n).get('message'))}")
        except TraceError as exc:
            unreadable.append(str(exc))
    try:
        outs = t.outputs()
    except TraceError as exc:
        outs = None
        unreadable.append(str(exc))
    if outs is not None:
        lines.append("outputs:")
        names = {k: safe(k) for k in outs}
        width = max((len(k) for k in names.values()), default=0)
        lines.extend(f"  {names[k]:<{width}}  {describe_array(v)}" for k, v in outs.items())
    lines.append(f"frames:  {t.index.frames}, {t.index.iterations_recorded} iterations")
    for p in [*t.problems, *unreadable]:
        lines.append(f"problem: {safe(p)}")
    return "\n".join(map(safe, lines))      # each line one line, whatever a name holds


def _unfinished(t) -> str:
    """Why a loop execution has no end in the trace."""
    return {"interrupted": "the run was interrupted (Ctrl+C) before it finished",
            "error": "the run failed before it finished",
            "stopped": "the recording stopped before it finished"}.get(
        t.status, "the trace ends before it finished")


def _state(t) -> str:
    if t.truncated:
        return "TRUNCATED: " + t.truncation_text().split("; ", 1)[-1]
    end = t.end or {}
    status = end.get("status", "complete")
    if status == "complete":
        return "complete"
    if status == "interrupted":
        return "complete file, run interrupted (Ctrl+C)"
    if status == "error":
        return f"complete file, run failed: {safe(end.get('error'))}"
    return "complete file, recording stopped before the run ended"


def _shape(shape) -> str:
    if not isinstance(shape, list):
        return safe(shape)
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _outer(text: str) -> tuple:
    from loopdbg.trace import TraceError
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise TraceError(f"--outer takes whole numbers separated by commas, not {text!r}.") \
            from None


def _loop_path(paths: list[str], name: str, file) -> str:
    """The recorded loop ``name`` picks: its path, or its short name (as ``explain --loop``)."""
    from loopdbg.engine.paths import matches_loop
    from loopdbg.trace import TraceError

    if name in paths:
        return name
    found = [p for p in paths if matches_loop(p, name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise TraceError(f"several loops of {file} are called '{name}' ({listing(found)}); "
                         f"give the full path.")
    raise TraceError(f"{file} holds no loop '{name}'; it holds: {listing(paths) or 'none'}.")


def run_show(args) -> int:
    import numpy as np

    from loopdbg.trace import TraceError, TraceReader

    with TraceReader(args.file) as t:
        path = args.loop
        if path is None:
            paths = t.paths()
            if len(paths) != 1:
                raise TraceError(f"{args.file} holds {len(paths)} loops; choose one with --loop: "
                                 + (listing(paths) or "none") + ".")
            path = paths[0]
        else:
            path = _loop_path(t.paths(), path, args.file)
        outer = _outer(args.outer)
        if not outer and t.index.row(path, ()) is None and t.executions(path):
            raise TraceError(f"loop '{path}' is nested; give the iterations of its enclosing "
                             f"loops with --outer, e.g. --outer "
                             f"{','.join(map(str, t.executions(path)[0]))}.")
        f = t.frame(path, args.iteration, outer)
        if args.tensor:
            tensors = f.tensors()
            names = [k for k in tensors if k == args.tensor or k.split("/", 1)[1] == args.tensor]
            if not names:
                raise TraceError(f"iteration {f.iteration} of loop '{path}' has no tensor "
                                 f"'{args.tensor}'; it has: {listing(tensors)}.")
            with np.printoptions(threshold=sys.maxsize, linewidth=120):
                for name in names:          # body_x may be both a back edge and a node
                    common.out(f"{safe(name)}: {describe_array(tensors[name])}")
                    common.out(np.array2string(np.asarray(tensors[name]), separator=", "))
            return 0
        where = f"loop '{safe(path)}'" + (f" (outer iterations {safe(args.outer)})" if outer
                                          else "")
        trip = "none" if f.trip_count is None else f.trip_count
        common.out(f"{where}, iteration {f.iteration}: trip count {trip}, condition "
                   f"{str(f.cond).lower()}, " + ("continues" if f.continues else "last iteration"))
        tensors = f.tensors()
        names = {k: safe(k) for k in tensors}
        width = max((len(k) for k in names.values()), default=0)
        for name, value in tensors.items():
            common.out(f"  {names[name]:<{width}}  {describe_array(value)}")
    return 0


def run_export(args) -> int:
    from loopdbg.files import Output
    from loopdbg.trace import TraceError
    from loopdbg.trace.export import export

    out = Output(args.output, [("the trace", args.file)], npz=True, what="the export")
    skipped: list[str] = []
    n = export(args.file, out, loops=args.loop, compress=args.compress, skipped=skipped)
    if skipped:                 # the export is not the whole recording: say so, and fail
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        raise TraceError(f"{args.file}: {skipped[0]}{more}, so the export is incomplete: "
                         f"{n} arrays written to {out.path}{out.note}.")
    common.err(f"{n} arrays written to {safe(out.path)}{safe(out.note)}")
    return 0


def run_diff(args) -> int:
    from loopdbg.trace.diff import diff

    result = diff(args.a, args.b, rtol=args.rtol, atol=args.atol)
    for note in result.notes:
        common.out(f"note: {safe(note)}")
    if result.identical:
        tol = f" within rtol={args.rtol:g}, atol={args.atol:g}" if (args.rtol or args.atol) else ""
        common.out(f"identical{tol} ({result.compared} frames compared)")
        return 0
    common.out(result.divergence.text())
    return 1


def describe_array(a) -> str:
    """dtype, shape, and the values (up to 4) or the finite range."""
    import numpy as np
    a = np.asarray(a)
    shape = "(" + ", ".join(map(str, a.shape)) + ("," if a.ndim == 1 else "") + ")"
    if a.size == 0:
        return f"{a.dtype} {shape} (empty)"
    if a.dtype.kind not in "biuf":
        return f"{a.dtype} {shape}"
    if a.size <= 4:
        return f"{a.dtype} {shape} " + np.array2string(a.reshape(-1), precision=6, separator=", ")
    finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    if finite.size == 0:
        return f"{a.dtype} {shape} (no finite values)"
    extra = "" if finite.size == a.size else f", {a.size - finite.size} not finite"
    return f"{a.dtype} {shape} min {float(finite.min()):.6g} max {float(finite.max()):.6g}{extra}"
