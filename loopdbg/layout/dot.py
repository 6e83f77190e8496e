"""Graphviz's ``dot`` asked where the boxes of a loop body go, once per body.

``layout_body`` writes the body as DOT with fixed-size boxes (``layout_dot_source``), runs
``dot -Tjson`` on it (results are cached in-process, keyed by the graph's structure) and hands
the answer to ``routing.build_layout``, which fits it to the character grid. Nothing here imports
a UI toolkit.
"""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Union

from loopdbg import programs
from loopdbg.errors import LoopdbgError
from loopdbg.layout.boxes import BOX_GAP, VALUE_WIDTH, XS, YS, Layout, box_size
from loopdbg.layout.graph import BodyGraph, body_graph
from loopdbg.layout.routing import build_layout

if TYPE_CHECKING:
    from loopdbg.engine.loopspec import LoopSpec

DOT_TIMEOUT = 60.0
MAX_DOT = 300           # no graph of more boxes than this is given to ``dot``

INSTALL_HINT = ("install Graphviz so that 'dot' is on PATH: apt-get install graphviz (Debian, "
                "Ubuntu), brew install graphviz (macOS) or conda install graphviz")


class LayoutUnavailable(LoopdbgError):
    """Graphviz's ``dot`` is missing (or failed), so a body cannot be laid out."""


# -- public entry points -------------------------------------------------------------------------
_DOT_CACHE: dict[str, dict] = {}
_LAYOUT_CACHE: dict[tuple, Layout] = {}


_CLEARED: list = []              # more caches of layouts, emptied with these (layout.compound)


def also_clear(clear) -> None:
    """Have ``clear_cache`` call ``clear`` too (a cache of layouts kept elsewhere)."""
    _CLEARED.append(clear)


def clear_cache() -> None:
    """Forget every cached ``dot`` result and layout."""
    _DOT_CACHE.clear()
    _LAYOUT_CACHE.clear()
    _GRAPHS.clear()
    for clear in _CLEARED:
        clear()


def layout_body(body: Union["LoopSpec", BodyGraph], *, value_width: int = VALUE_WIDTH,
                consts: str = "fold", cached_only: bool = False) -> Layout | None:
    """Lay out a loop body (a LoopSpec or a BodyGraph); cached, so ``dot`` runs once per body.

    Anything else with a ``lay_out(value_width, cached_only)`` (a big body's open groups,
    ``layout.compound.OpenGroups``) lays itself out. ``cached_only``: None instead of running
    ``dot`` when this layout is not cached yet (a UI then lays it out in the background). Raises
    LayoutUnavailable when Graphviz is not installed.
    """
    if hasattr(body, "lay_out"):
        return body.lay_out(value_width, cached_only)
    bg = body if isinstance(body, BodyGraph) else _body_graph(body, consts)
    return layout_graph(bg, {n.id: box_size(n, value_width) for n in bg.nodes}, value_width,
                        cached_only=cached_only)


def layout_graph(bg: BodyGraph, sizes: dict[int, tuple[int, int]], value_width: int, *,
                 cached_only: bool = False, quantum: int = 1,
                 splines: str = "true") -> Layout | None:
    """Lay out ``bg`` with boxes of ``sizes`` (cached). A graph of more than MAX_DOT boxes is
    not given to ``dot`` (it takes minutes on a thousand): its boxes stand in one column in
    body order, joined where one feeds the next (``list_layout``). ``quantum`` and ``splines``:
    see ``layout_dot_source``."""
    key = (bg.key(), value_width, quantum, splines, tuple(sorted(
        (i, wh) for i, wh in sizes.items() if wh != box_size(bg.node(i), value_width))))
    hit = _LAYOUT_CACHE.get(key)
    if hit is not None or cached_only and len(bg.nodes) <= MAX_DOT:
        return hit
    if len(bg.nodes) > MAX_DOT:
        layout = list_layout(bg, sizes, value_width)
    else:
        src = layout_dot_source(bg, sizes, quantum, splines)
        result = _DOT_CACHE.get(src)
        if result is None:
            result = _run_dot(src)
            _DOT_CACHE[src] = result
        layout = build_layout(bg, sizes, result, value_width)
    _LAYOUT_CACHE[key] = layout
    return layout


def list_layout(bg: BodyGraph, sizes: dict[int, tuple[int, int]], value_width: int) -> Layout:
    """``bg``'s boxes one under the other in its order, without ``dot``: an edge is drawn only
    from a box to the one right under it (a list of a thousand boxes, every node reachable)."""
    ids = [n.id for n in bg.nodes]
    objects = [{"name": f"n{k}", "pos": f"0,{(len(ids) - k) * 100}", "_gvid": k}
               for k in range(len(ids))]
    nxt = {a: b for a, b in zip(ids, ids[1:])}
    kept = BodyGraph(bg.name, bg.nodes, tuple(e for e in bg.edges
                                             if not e.back and nxt.get(e.src) == e.dst))
    return build_layout(kept, sizes, {"objects": objects, "edges": []}, value_width)


_GRAPHS: dict[tuple[int, str], tuple[object, BodyGraph]] = {}


def _body_graph(spec, consts: str) -> BodyGraph:
    """``body_graph(spec)``, kept per spec: asking for a layout again costs no graph building."""
    hit = _GRAPHS.get((id(spec), consts))
    if hit is not None and hit[0] is spec:
        return hit[1]
    bg = body_graph(spec, consts=consts)
    _GRAPHS[(id(spec), consts)] = (spec, bg)
    return bg


def dot_available() -> bool:
    return programs.find("dot") is not None


def _run_dot(source: str) -> dict:
    """Run ``dot -Tjson`` on ``source``; LayoutUnavailable if it is missing or fails."""
    exe = programs.find("dot")
    if exe is None:
        raise LayoutUnavailable(f"Graphviz's 'dot' program was not found; {INSTALL_HINT}.")
    try:
        proc = subprocess.run([exe, "-Tjson"], input=source.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT, check=False, cwd=programs.NEUTRAL)
    except FileNotFoundError:
        raise LayoutUnavailable(f"Graphviz's 'dot' could not be started; {INSTALL_HINT}.") from None
    except subprocess.TimeoutExpired:
        raise LayoutUnavailable(f"Graphviz's 'dot' took more than {DOT_TIMEOUT:.0f} s to lay "
                                f"out the body.") from None
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise LayoutUnavailable(f"Graphviz's 'dot' failed: {msg[0] if msg else proc.returncode}.")
    return json.loads(proc.stdout)


# -- DOT sources ---------------------------------------------------------------------------------
def quote(text: str) -> str:
    """``text`` as a DOT string literal."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def node_ref(node_id: int) -> str:
    """The DOT name of the box of body layer ``node_id``."""
    return quote(f"n{node_id}")


def output_ports(bg: BodyGraph) -> dict[int, list[int]]:
    """For each node, the output ports that data edges leave from, in index order."""
    ports: dict[int, set[int]] = {}
    for e in bg.edges:
        if not e.back:
            ports.setdefault(e.src, set()).add(e.src_port)
    return {nid: sorted(p) for nid, p in ports.items()}


def layout_dot_source(bg: BodyGraph, sizes: dict[int, tuple[int, int]], quantum: int = 1,
                      splines: str = "true") -> str:
    """The DOT text given to ``dot`` for layout: fixed-size boxes, no labels, each box named by
    its place in ``bg.nodes`` (``n0``, ``n1``, ...; ``routing`` maps them back), not by its layer
    id. ``quantum``: widths rounded up to a multiple of it (the boxes are drawn as wide as they
    are, a little more room around them). So two groups of one shape (a decoder's blocks, whose
    names differ in a digit: ``Relu_9``, ``Relu_19``) are mostly one text, and ``dot`` runs for
    the first alone: the others come from the cache. ``splines``: how ``dot`` draws edges
    (``routing`` only reads where a long edge crosses a rank: ``polyline`` says nearly the same
    in half the time on a group of a hundred boxes)."""
    place = {n.id: k for k, n in enumerate(bg.nodes)}

    def ref(node_id: int) -> str:
        return f"n{place[node_id]}"

    out = ["digraph body {",
           f"  graph [rankdir=TB, nodesep={BOX_GAP * XS / 72:.4f}, ranksep={3 * YS / 72:.4f}, "
           f"splines={splines}];",
           '  node [shape=box, fixedsize=true, label=""];',
           "  edge [arrowhead=none];"]
    # an open group's picture (it has stubs for its outside) starts at what it reads from
    # outside; a Parameter there is a weight read from outside the loop, kept by its reader
    ends = (("in",), ("out",)) if any(n.kind in ("in", "out") for n in bg.nodes) else \
        (("parameter",), ("result",))
    params = [n.id for n in bg.nodes if n.kind in ends[0]]
    results = [n.id for n in bg.nodes if n.kind in ends[1]]
    if params:
        out.append("  {rank=source; " + " ".join(ref(i) for i in params) + ";}")
    if results:
        out.append("  {rank=sink; " + " ".join(ref(i) for i in results) + ";}")
    ports = output_ports(bg)
    for n in bg.nodes:
        w, h = sizes[n.id]
        w = -(-w // quantum) * quantum
        shape = ""
        if len(ports.get(n.id, ())) > 1:     # a record, so that dot orders edges by output
            shape = ', shape=record, label="' + "|".join(f"<p{p}>" for p in ports[n.id]) + '"'
        out.append(f"  {ref(n.id)} [width={w * XS / 72:.4f}, "
                   f"height={h * YS / 72:.4f}{shape}];")
    for k, e in enumerate(bg.edges):
        if e.back:
            out.append(f'  {ref(e.src)} -> {ref(e.dst)} [id="b{k}", constraint=false];')
        else:
            tail = f':"p{e.src_port}":s' if len(ports.get(e.src, ())) > 1 else ""
            out.append(f'  {ref(e.src)}{tail} -> {ref(e.dst)} [id="e{k}"];')
    out.append("}")
    return "\n".join(out) + "\n"


def render(source: str, fmt: str) -> bytes:
    """``source`` rendered by Graphviz's ``dot`` as ``fmt`` (svg or png)."""
    exe = programs.find("dot")
    if exe is None:
        raise LoopdbgError(f"Graphviz's 'dot' program was not found; {INSTALL_HINT}; or write "
                           f"the DOT source with -o FILE.dot.")
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=source.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT, check=False, cwd=programs.NEUTRAL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LoopdbgError(f"Graphviz's 'dot' could not draw the graph: {exc}.") from None
    if proc.returncode != 0 or not proc.stdout:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise LoopdbgError(f"Graphviz's 'dot' failed: {msg[0] if msg else proc.returncode}.")
    return proc.stdout

