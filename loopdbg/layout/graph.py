"""A loop body as the nodes and edges a picture shows, independent of how it is drawn.

One node per body layer that is worth a box: Parameters, operations, Results, and (on request)
Constants. By default Constants are *folded*: a Constant becomes a short line inside the box of
each layer it feeds (``const [1]``, ``consts <64×8> <64>``), because weights drawn as boxes bury
the few edges that carry the loop's state. Parameters and Results carry the role the port map gives
them, and the back edges (Result → Parameter, the state handed to the next iteration) are edges
marked ``back``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from loopdbg.ir.model import Graph, Layer
from loopdbg.text import safe

if TYPE_CHECKING:
    from loopdbg.engine.loopspec import LoopSpec

# Role tags (the canonical names a UI can style by).
CURRENT_ITERATION = "current_iteration"
CONDITION = "condition"
SLICED = "sliced"
MERGED = "merged"
INVARIANT = "invariant"
CONCATENATED = "concatenated"
LAST_VALUE = "last value"
EXECUTION_CONDITION = "execution condition"

_ROLE_TEXT = {
    CURRENT_ITERATION: "iteration",
    CONDITION: "condition",
    SLICED: "sliced",
    MERGED: "merged",
    INVARIANT: "invariant",
    CONCATENATED: "concat",
    LAST_VALUE: "last value",
    EXECUTION_CONDITION: "body condition",
}

CONST_MODES = ("fold", "small", "show")
_KINDS = {"Parameter": "parameter", "Result": "result", "Constant": "const"}
SMALL_CONST = 4            # a Constant of at most this many elements is "small"
MAX_LABEL = 28             # label lines longer than this are shortened with "…"


@dataclass(frozen=True)
class Node:
    """One box: ``lines`` are its label (type, name, folded constants), ``roles`` its role tags.

    ``kind`` is ``parameter``, ``result``, ``const`` or ``op``. ``role_text`` is the short text
    shown in the box's top border (``merged``, ``sliced axis 0``, ``last value · concat axis 1``).
    """

    id: int
    kind: str
    type: str
    name: str
    lines: tuple[str, ...]
    roles: tuple[str, ...] = ()
    role_text: str = ""
    consts: tuple[str, ...] = ()


@dataclass(frozen=True)
class BodyEdge:
    """A data edge (producer output ``src_port`` → consumer input ``dst_port``) or a back edge."""

    src: int
    dst: int
    src_port: int = 0
    dst_port: int = 0
    back: bool = False


@dataclass(frozen=True, eq=False)
class BodyGraph:
    """The nodes and edges of one body, ready to lay out (see module docstring)."""

    name: str
    nodes: tuple[Node, ...]
    edges: tuple[BodyEdge, ...]

    def node(self, node_id: int) -> Node:
        return self._by_id[node_id]

    @property
    def _by_id(self) -> dict[int, Node]:
        cache = self.__dict__.get("_id_cache")
        if cache is None:
            cache = {n.id: n for n in self.nodes}
            object.__setattr__(self, "_id_cache", cache)
        return cache

    @property
    def back_edges(self) -> tuple[BodyEdge, ...]:
        return tuple(e for e in self.edges if e.back)

    def key(self) -> tuple:
        """Everything a layout depends on, hashable: equal keys give equal layouts."""
        return (tuple((n.id, n.kind, n.lines, n.role_text) for n in self.nodes), self.edges)


# -- from a LoopSpec ---------------------------------------------------------------------------
def body_graph(spec: "LoopSpec", *, consts: str = "fold") -> BodyGraph:
    """The BodyGraph of a Loop/TensorIterator body, roles and back edges taken from ``spec``."""
    body = spec.body
    sliced_axis = {f.pos: f for f in spec.sliced}
    param_roles: dict[int, list[tuple[str, str]]] = {}
    for pos, role in spec.roles.items():
        text = _ROLE_TEXT.get(role, role)
        if role == SLICED and pos in sliced_axis:
            feed = sliced_axis[pos]
            text = f"sliced axis {feed.axis}" + (" rev" if feed.stride < 0 else "")
        param_roles.setdefault(body.param_ids[pos], []).append((role, text))
    result_roles: dict[int, list[tuple[str, str]]] = {}
    for form in spec.outputs:
        if form.kind == "concat":
            # ONNX stacks the pieces on a new axis; OpenVINO concatenates on an existing one.
            how = "stack new axis" if getattr(spec, "onnx", False) else "concat axis"
            item = (CONCATENATED, f"{how} {form.axis}" + (" rev" if form.stride < 0 else ""))
        else:
            item = (LAST_VALUE, _ROLE_TEXT[LAST_VALUE])
        result_roles.setdefault(body.result_ids[form.result_pos], []).append(item)
    if spec.cond_result is not None:
        result_roles.setdefault(body.result_ids[spec.cond_result], []).append(
            (EXECUTION_CONDITION, _ROLE_TEXT[EXECUTION_CONDITION]))
    back = [(body.result_ids[r], body.param_ids[p]) for p, r in spec.back_edges]
    return graph_from_parts(body.graph, param_roles, result_roles, back, consts=consts,
                            name=spec.path, loop_name=spec.layer.name)


# -- from a Graph and roles ----------------------------------------------------------------------
def graph_from_parts(graph: Graph,
                     param_roles: Mapping[int, Sequence[str | tuple[str, str]]] | None = None,
                     result_roles: Mapping[int, Sequence[str | tuple[str, str]]] | None = None,
                     back_edges: Iterable[tuple[int, int]] = (), *, consts: str = "fold",
                     name: str | None = None, loop_name: str = "") -> BodyGraph:
    """A BodyGraph from a Graph; roles map a layer id to tags (or ``(tag, text)`` pairs).

    ``back_edges`` are ``(result layer id, parameter layer id)`` pairs. ``consts`` is ``fold``
    (every Constant becomes a line in its consumers' boxes), ``small`` (only Constants of at most
    four elements are folded) or ``show`` (every Constant is a box). A box shows its layer's
    name without what every name says (``loop_name/``, or a prefix the whole body shares), cut
    in the middle when it must be; ``Node.name`` keeps the full name.
    """
    if consts not in CONST_MODES:
        raise ValueError(f"consts must be one of {', '.join(CONST_MODES)}, not {consts!r}")
    roles_of = {**_norm_roles(param_roles), **_norm_roles(result_roles)}
    folded: set[int] = set()
    for lid, layer in graph.layers.items():
        small = consts == "small" and _const_size(layer) <= SMALL_CONST
        if layer.type == "Constant" and (consts == "fold" or small):
            folded.add(lid)
    const_inputs: dict[int, list[tuple[int, str]]] = {}
    for e in graph.edges:
        if e.from_layer in folded and e.to_layer in graph.layers:
            const_inputs.setdefault(e.to_layer, []).append(
                (e.to_port, const_summary(graph.layers[e.from_layer])))
    drop = shared_prefix([layer.name for lid, layer in graph.layers.items()
                          if lid not in folded and layer.type not in ("Parameter", "Result")],
                         loop_name)
    nodes = []
    for lid, layer in graph.layers.items():
        if lid in folded:
            continue
        kind = _KINDS.get(layer.type, "op")
        # an ONNX node by its ONNX type (Add, not onnx.Add), as the pseudo-code writes it
        shown = layer.ir_type if layer.type.startswith("onnx.") and layer.ir_type else layer.type
        shown_name = layer.name[len(drop):] if layer.name.startswith(drop) and \
            len(layer.name) > len(drop) else layer.name
        lines = [_fit(safe(shown)), fit_middle(safe(shown_name))]
        if kind == "const":
            lines.append(_fit(const_summary(layer)))
        cin = tuple(t for _, t in sorted(const_inputs.get(lid, ())))
        if cin:
            lines.append(_fit(("const " if len(cin) == 1 else "consts ") + " ".join(cin)))
        tags = roles_of.get(lid, [])
        role_tags = tuple(dict.fromkeys(t for t, _ in tags))
        role_text = " · ".join(dict.fromkeys(x for _, x in tags))
        nodes.append(Node(lid, kind, layer.type, layer.name, tuple(lines), role_tags,
                          _fit(safe(role_text), MAX_LABEL + 16), cin))
    visible = {n.id for n in nodes}
    edges = [BodyEdge(e.from_layer, e.to_layer, e.from_port, e.to_port)
             for e in graph.edges if e.from_layer in visible and e.to_layer in visible]
    edges += [BodyEdge(r, p, back=True) for r, p in back_edges if r in visible and p in visible]
    return BodyGraph(name or graph.name, tuple(nodes), tuple(edges))


def _norm_roles(roles) -> dict[int, list[tuple[str, str]]]:
    """Roles given as a tag, a ``(tag, text)`` pair, or a list of either → lists of pairs."""
    out: dict[int, list[tuple[str, str]]] = {}
    for lid, tags in (roles or {}).items():
        if isinstance(tags, str) or (isinstance(tags, tuple) and len(tags) == 2
                                     and all(isinstance(t, str) for t in tags)):
            tags = [tags]
        for t in tags:
            out.setdefault(lid, []).append(t if isinstance(t, tuple) else (t, _ROLE_TEXT.get(t, t)))
    return out


# -- text helpers --------------------------------------------------------------------------------
def _fit(text: str, width: int = MAX_LABEL, keep_end: bool = False) -> str:
    """Shorten ``text`` to ``width`` characters with an ellipsis (keeping its end for names)."""
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1):] if keep_end else text[:width - 1] + "…"


def fit_middle(text: str, width: int = MAX_LABEL) -> str:
    """``text`` cut in the middle to ``width`` characters (both ends of a converter's name say
    the most: ``aten::linear/MatMul_97`` → ``aten::lin…/MatMul_97``)."""
    if len(text) <= width:
        return text
    tail = (width - 1) * 3 // 5
    return text[:width - 1 - tail] + "…" + text[-tail:]


def shared_prefix(names: Sequence[str], loop_name: str = "") -> str:
    """What every name of a body starts with, up to a ``/``: the loop's own name
    (``while/body/...``), or a scope all of them share; "" when nothing is shared or dropping
    it would leave a name empty."""
    names = [n for n in names if n]
    if len(names) < 2:
        return ""
    if loop_name and all(n.startswith(loop_name + "/") for n in names):
        head = loop_name + "/"
    else:
        head = ""
    first = names[0]
    cut = len(head)
    while True:
        k = first.find("/", cut)
        if k < 0:
            break
        piece = first[:k + 1]
        if not all(n.startswith(piece) and len(n) > len(piece) for n in names):
            break
        cut = k + 1
    return first[:cut]


def _const_size(layer: Layer) -> int:
    if layer.value is not None:
        return int(np.size(layer.value))
    dims = layer.outputs[0].dims if layer.outputs else ()
    return int(np.prod([max(d, 0) for d in dims])) if dims else 1


def const_summary(layer: Layer) -> str:
    """A Constant in a few characters: its values when small (``1``, ``[0 2]``), else ``<64×8>``."""
    value = layer.value
    if value is not None and np.size(value) <= SMALL_CONST:
        arr = np.asarray(value)
        items = [_scalar(v) for v in arr.reshape(-1)]
        return items[0] if arr.ndim == 0 else "[" + " ".join(items) + "]"
    if value is not None:
        dims = np.shape(value)
    else:
        dims = layer.outputs[0].dims if layer.outputs else ()
    return "<" + "×".join(str(d) for d in dims) + ">"


def _scalar(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)
