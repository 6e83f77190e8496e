"""A big body drawn by its groups: each closed group is one box (its name, its node count, the
values that leave it), an opened group shows its contents in place.

    gb = grouped_body(spec)                 # None for a small body: it is drawn flat, as always
    bg = gb.view({("blocks.4",)})           # the whole BodyGraph, blocks.4 opened (for an SVG)
    gb.level(("blocks.4",))                 # what blocks.4 shows open, laid out alone
    gb.way_to(node_id)                      # the groups to open so that the node has a box

A group's box has a negative id (``group_id``); the edges between boxes are the body's edges
between what the boxes hold, one per pair. Nothing here imports a UI toolkit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable

from loopdbg.layout.graph import BodyEdge, BodyGraph, Node, body_graph, fit_middle
from loopdbg.layout.groups import MIN_GROUPED, Group, Scope, group_tree, scopes_of
from loopdbg.text import safe

if TYPE_CHECKING:
    from loopdbg.engine.loopspec import LoopSpec
    from loopdbg.ir.model import Graph

GROUP = "group"                 # the kind of a group's box
_DECOMPRESS = ("Convert", "onnx.Cast")
FAN_OUT = 3                     # a box read by more closed groups than this: one edge drawn
STUB_KINDS = ("in", "out")      # the kinds of an open group's boxes for its outside
STUB_IN, STUB_OUT = 1 << 20, 1 << 21    # a stub's id: its group's id minus this


class GroupedBody:
    """A body's BodyGraph (every node a box) and its tree of groups."""

    def __init__(self, full: BodyGraph, root: Group, names: dict[int, str]):
        self.full = full
        self.root = root
        self.groups: dict[Scope, Group] = {g.path: g for g in root.walk() if g.path}
        self.ids: dict[Scope, int] = {p: -(k + 1) for k, p in enumerate(self.groups)}
        self.by_id: dict[int, Group] = {self.ids[p]: g for p, g in self.groups.items()}
        visible = {n.id for n in full.nodes}
        self.parent: dict[int, Scope] = {}          # box node → the group it sits in directly
        for g in root.walk():
            for i in g.nodes:
                if i in visible:
                    self.parent[i] = g.path
        self._names = names
        # decompression Converts of weights (an op fed by nothing but folded constants) fold
        # into what reads them, as the constants do: ``weights <144×48>`` in its reader's box
        fed = {e.dst for e in full.edges if not e.back}
        self.folded: dict[int, int] = {}            # folded Convert → the node reading it
        for n in full.nodes:
            if n.kind == "op" and n.type in _DECOMPRESS and n.id not in fed:
                reader = next((e.dst for e in full.edges if e.src == n.id and not e.back), None)
                if reader is not None:
                    self.folded[n.id] = reader
        self._views: dict[frozenset, BodyGraph] = {}
        self._levels: dict[Scope, BodyGraph] = {}
        # an open group's stub → the nodes outside it that it stands for (read, or reading)
        self.beyond: dict[int, dict[int, None]] = {}
        self._leaving: dict[Scope, tuple[int, ...]] = {}

    # -- what a group is ------------------------------------------------------------------------
    def leaving(self, path: Scope) -> tuple[int, ...]:
        """The nodes of group ``path`` whose values are read outside it, in body order."""
        hit = self._leaving.get(path)
        if hit is None:
            inside = set(self.groups[path].all_nodes())
            hit = tuple(dict.fromkeys(e.src for e in self.full.edges
                                      if not e.back and e.src in inside and e.dst not in inside))
            self._leaving[path] = hit
        return hit

    def group_of(self, node_id: int) -> Scope:
        """The innermost group a box node is in (``()``: the top level)."""
        return self.parent.get(node_id, ())

    def way_to(self, node_id: int) -> list[Scope]:
        """The groups to open, outermost first, for ``node_id`` (a node or a group id) to have a
        box of its own."""
        path = self.by_id[node_id].path[:-1] if node_id < 0 else self.group_of(node_id)
        return [g for g in self.chain(path)]

    def chain(self, path: Scope) -> list[Scope]:
        """The groups of the tree that hold ``path``, outermost first (merged groups such as
        ``lstm_1/while`` are one step)."""
        out = []
        for k in range(1, len(path) + 1):
            if path[:k] in self.groups:
                out.append(path[:k])
        return out

    def opened_for(self, expand=(), depth: int = 0) -> frozenset:
        """The groups to open for ``--expand SCOPE`` (a group's name, ``blocks.4/attn``; the
        groups on the way open too) and ``--depth N`` (every group N levels down). KeyError
        names a SCOPE that is no group."""
        out = {p for p in self.groups if len(self.chain(p)) <= depth}
        for name in expand:
            want = tuple(s for s in name.strip("/").split("/") if s)
            found = [p for p in self.groups if p == want or p[-len(want):] == want]
            if not found:
                raise KeyError(name)
            for p in found:
                out.update(self.chain(p))
        return frozenset(out)

    def box_of(self, node_id: int, opened: Iterable[Scope]) -> int:
        """The id of the box that shows ``node_id`` with ``opened`` open: the node's own, or the
        outermost closed group that holds it."""
        opened = set(opened)
        node_id = self.folded.get(node_id, node_id)
        for p in self.chain(self.group_of(node_id)):
            if p not in opened:
                return self.ids[p]
        return node_id

    # -- the graph to lay out -------------------------------------------------------------------
    def view(self, opened: Iterable[Scope] = ()) -> BodyGraph:
        """The BodyGraph with every group closed but those in ``opened`` (cached per set): the
        whole picture in one graph (what ``loopdbg graph`` gives Graphviz)."""
        key = frozenset(p for p in opened if p in self.groups)
        hit = self._views.get(key)
        if hit is None:
            rep = {n.id: self.box_of(n.id, key) for n in self.full.nodes}
            hit = self._views[key] = self._graph(rep, self.full.name)
        return hit

    def box_count(self, opened: Iterable[Scope]) -> int:
        """How many boxes the picture with ``opened`` open shows (``len(view(opened).nodes)``,
        counted from the groups' own pictures, without making the whole one)."""
        opened = set(opened)
        n = len(self.level(()).nodes)
        for p in opened:
            if p in self.groups and all(q in opened for q in self.chain(p)):
                n += sum(1 for x in self.level(p).nodes if x.kind not in STUB_KINDS) - 1
        return n

    def level(self, path: Scope) -> BodyGraph:
        """What group ``path`` (``()``: the top level) shows when open, laid out alone: the nodes
        directly in it, each inner group as one box, and two stubs for the outside (``IN``:
        what it reads from outside, ``OUT``: where what it computes goes); cached per group."""
        hit = self._levels.get(path)
        if hit is not None:
            return hit
        group = self.groups[path] if path else self.root
        rep: dict[int, int | None] = dict.fromkeys((n.id for n in self.full.nodes), None)
        for i in group.nodes:
            if i in rep:
                rep[i] = i
        for c in group.children:
            for i in c.all_nodes():
                if i in rep:
                    rep[i] = self.ids[c.path]
        for f, reader in self.folded.items():
            rep[f] = rep[reader]
        stubs = None if not path else (self.ids[path] - STUB_IN, self.ids[path] - STUB_OUT)
        hit = self._levels[path] = self._graph(rep, group.name or self.full.name, stubs)
        return hit

    def _graph(self, rep: dict, name: str, stubs: tuple[int, int] | None = None) -> BodyGraph:
        """The BodyGraph of boxes ``rep`` says (node id → the id of the box showing it; None:
        outside the picture, reached through the ``stubs`` ids when given)."""
        weights: dict[int, list[str]] = {}
        for f, reader in self.folded.items():
            if rep[reader] == reader:
                weights.setdefault(reader, []).extend(self.full.node(f).consts)
        nodes, shown = [], set()
        for n in self.full.nodes:
            r = rep[n.id]
            if n.id in self.folded or r is None:
                continue
            if r == n.id:
                w = weights.get(n.id)
                nodes.append(n if not w else replace(
                    n, lines=n.lines + (fit_middle("weights " + " ".join(w)),)))
            elif r not in shown:
                nodes.append(self._group_node(self.by_id[r], name if stubs else ""))
            shown.add(r)
        # a value many closed groups read (a shape, the position ids) is one edge to the first
        # and a line in its box: fifty lines from one box would make the picture unreadable
        fans: dict[int, list[int]] = {}
        for e in self.full.edges:
            a, b = rep[e.src], rep[e.dst]
            if e.src in self.folded or a is None or b is None:
                continue
            if not e.back and a != b and b in self.by_id and b not in fans.setdefault(a, []):
                fans[a].append(b)
        fans = {a: bs for a, bs in fans.items() if len(bs) > FAN_OUT}
        edges, seen = [], set()
        outside: tuple[dict[int, None], dict[int, None]] = ({}, {})   # sources in, sources out
        for e in self.full.edges:
            a, b = rep[e.src], rep[e.dst]
            if a == b or e.src in self.folded or (a in fans and b in fans[a][1:] and not e.back):
                continue
            if a is None or b is None:
                if stubs is None or e.back or (a is None and b is None):
                    continue
                (outside[0] if a is None else outside[1])[e.src] = None
                self.beyond.setdefault(stubs[0] if a is None else stubs[1], {})[
                    e.src if a is None else e.dst] = None
                a, b = (stubs[0], b) if a is None else (a, stubs[1])
            item = BodyEdge(a, b, 0 if a < 0 else e.src_port, 0 if b < 0 else e.dst_port, e.back)
            pair = (a, b, e.back) if a < 0 or b < 0 else item
            if pair not in seen:
                seen.add(pair)
                edges.append(item)
        nodes = [n if n.id not in fans else
                 replace(n, lines=n.lines + (f"→ {len(fans[n.id])} groups read it",))
                 for n in nodes]
        if stubs is not None:
            for sid, kind, srcs in ((stubs[0], STUB_KINDS[0], outside[0]),
                                    (stubs[1], STUB_KINDS[1], outside[1])):
                if srcs:
                    nodes.insert(0 if kind == STUB_KINDS[0] else len(nodes),
                                 self._stub_node(sid, kind, list(srcs)))
        return BodyGraph(name, tuple(nodes), tuple(edges))

    def _stub_node(self, sid: int, kind: str, sources: list[int]) -> Node:
        """The box standing for the outside of an open group: the values read from it (``in``)
        or those it hands out (``out``)."""
        shown = ", ".join(fit_middle(self._names.get(i, ""), 20) for i in sources[:2])
        more = f" +{len(sources) - 2}" if len(sources) > 2 else ""
        title = "from outside" if kind == STUB_KINDS[0] else "to outside"
        return Node(sid, kind, kind, title, (title, safe(shown) + more))

    def _group_node(self, g: Group, within: str = "") -> Node:
        """A closed group's box; inside open group ``within``'s frame, named without it
        (``fc1`` in ``blocks.4``)."""
        out = self.leaving(g.path)
        shown = ", ".join(fit_middle(self._names.get(i, ""), 20) for i in out[:2])
        more = f" +{len(out) - 2}" if len(out) > 2 else ""
        label = g.name[len(within) + 1:] if within and g.name.startswith(within + "/") else g.name
        lines = (f"▸ {safe(fit_middle(label, 30))}", f"{g.size} nodes",
                 f"out: {safe(shown)}{more}" if out else "no output")
        return Node(self.ids[g.path], GROUP, GROUP, g.name, lines)


# -- from a body ---------------------------------------------------------------------------------
def grouped_graph(graph: "Graph", full: BodyGraph, pinned: Iterable[int],
                  *, always: bool = False) -> GroupedBody | None:
    """The groups of a body (``graph`` with its constants, ``full`` its BodyGraph); None when the
    body is small (fewer than MIN_GROUPED boxes) or its names give no groups."""
    if not always and len(full.nodes) < MIN_GROUPED:
        return None
    names = {i: layer.name for i, layer in graph.layers.items()}
    types = {i: layer.type for i, layer in graph.layers.items()}
    scopes = scopes_of(names, types, ((e.from_layer, e.to_layer) for e in graph.edges), pinned)
    root = group_tree(scopes, [n.id for n in full.nodes])
    if not root.children:
        return None
    return GroupedBody(full, root, names)


_CACHE: dict[tuple[int, str], tuple[object, GroupedBody | None]] = {}


def grouped_known(spec: "LoopSpec", consts: str = "fold") -> bool:
    """Whether ``grouped_body(spec, consts)`` is known already (costs nothing)."""
    hit = _CACHE.get((id(spec), consts))
    return hit is not None and hit[0] is spec


def grouped_body(spec: "LoopSpec", consts: str = "fold", *, always: bool = False
                 ) -> GroupedBody | None:
    """The groups of a loop's body (kept per spec); None for a small body (see grouped_graph)."""
    key = (id(spec), consts + ("!" if always else ""))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is spec:
        return hit[1]
    body = spec.body
    pinned = list(body.result_ids) + [lid for pos, lid in enumerate(body.param_ids)
                                      if spec.roles.get(pos) != "invariant"]
    gb = grouped_graph(body.graph, body_graph(spec, consts=consts), pinned, always=always)
    _CACHE[key] = (spec, gb)
    return gb
