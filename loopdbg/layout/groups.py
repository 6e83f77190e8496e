"""A loop body's nodes grouped by the scope their names carry (``blocks.4 > attn``), for pictures
of bodies too big to read node by node.

Where a converter writes scopes into operation names, they are read from there:

- ``/blocks.4/attn/MatMul`` (torch.onnx.export), ``functional_1/lstm_1/while/MatMul`` (Keras, TF),
- ``__module.blocks.0.attn/aten::matmul/MatMul`` (traced PyTorch through OpenVINO).

Where operation names carry none (OpenVINO's PyTorch frontend on TorchScript names operations
``aten::linear/MatMul_97`` and only the weights ``self.blocks.0.qkv.weight``), the scope is
inferred: an operation takes the scope of the weights it reads; an operation between scoped
operations takes what they have in common (or, when that is nothing, the one scope everything it
feeds is in, else the one its inputs share, else the scope most of its neighbours are in); shape
plumbing (ShapeOf and what is computed from shapes only, decompression Converts of weights) takes
the scope of what it feeds.

Pure: names, types and edges in, a tree of groups out (``group_tree``); ``scopes_of`` is the
assignment alone. No UI toolkit, no engine.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping

Scope = tuple[str, ...]

MIN_GROUPED = 120          # bodies with fewer boxes than this are drawn flat, as always
MIN_GROUP = 2              # a scope with fewer nodes than this is not a group

_CONST = {"Constant", "Const", "onnx.Constant"}
_ENDS = {"Parameter", "Result"}
# types that compute from shapes when everything they read does (plus ShapeOf itself)
_SHAPE_SOURCES = {"ShapeOf", "onnx.Shape", "onnx.Size"}
_SHAPE_OPS = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Range", "Convert", "ReduceProd",
              "Slice", "StridedSlice", "Add", "Subtract", "Multiply", "Divide", "Floor",
              "FloorMod", "Maximum", "Minimum", "Equal", "Select", "Reshape", "Broadcast",
              "Less", "Greater", "Cast", "Sub", "Mul", "Div", "Where", "Max", "Min",
              "ConstantOfShape", "Expand", "Mod", "Not", "And", "Or", "Identity", "Sqrt",
              "ReduceMax", "ReduceMin", "GatherElements", "Tile"}
_NUMERIC = re.compile(r"^\d+$")
_WEIGHT_LEAF = re.compile(r"^(weight|bias|scale|gamma|beta|kernel|running_mean|running_var|"
                          r"in_proj_weight|in_proj_bias|embeddings?)$")


# -- scopes from names -------------------------------------------------------------------------
def _dotted(path: str) -> Scope:
    """``blocks.0.attn`` → ``("blocks.0", "attn")``: a number stays with the name before it."""
    out: list[str] = []
    for piece in path.split("."):
        if not piece:
            continue
        if _NUMERIC.match(piece) and out:
            out[-1] += "." + piece
        else:
            out.append(piece)
    return tuple(out)


def name_scope(name: str) -> Scope:
    """The scope an operation's name says it is in (``()`` when it says none)."""
    if name.startswith("__module."):                    # traced PyTorch through OpenVINO
        head = name.split("/", 1)[0][len("__module."):]
        return _dotted(head)
    parts = name.split("/")
    if len(parts) < 2:
        return ()
    out: list[str] = []
    for part in parts[:-1]:                              # the last piece is the op itself
        if not part:
            continue
        if "::" in part or part.startswith("aten") or part.startswith("prim"):
            break                                        # aten::linear/... is an op, not a scope
        out.extend(_dotted(part))
    return tuple(out)


def weight_scope(name: str) -> Scope:
    """The module a weight's name says it belongs to: ``self.blocks.0.qkv.weight`` →
    ``("blocks.0", "qkv")``; ``()`` for a name that is not a module path."""
    if "/" in name or "::" in name or "." not in name:
        return ()
    for suffix in ("_compressed", "/fq_weights_1"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.startswith("self."):
        name = name[len("self."):]
    elif name.startswith("onnx::"):
        return ()
    pieces = _dotted(name)
    if len(pieces) < 2 or not _WEIGHT_LEAF.match(pieces[-1].split(".")[0]):
        return ()
    return pieces[:-1]


def _common(scopes: Iterable[Scope]) -> Scope:
    scopes = list(scopes)
    if not scopes:
        return ()
    first = scopes[0]
    n = len(first)
    for s in scopes[1:]:
        k = 0
        while k < min(n, len(s)) and s[k] == first[k]:
            k += 1
        n = k
    return first[:n]


# -- the assignment ------------------------------------------------------------------------------
def scopes_of(names: Mapping[int, str], types: Mapping[int, str],
              edges: Iterable[tuple[int, int]], pinned: Iterable[int] | None = None
              ) -> dict[int, Scope]:
    """The scope of every node (``()`` is the top level); ``edges`` are ``(producer, consumer)``.

    ``pinned``: the nodes that stay at the top (default: every Parameter and Result); any other
    Parameter (an invariant input: weights an ONNX body reads from outside) counts as a constant.
    Constants get the scope of what they feed.
    """
    ids = list(names)
    preds: dict[int, list[int]] = {i: [] for i in ids}
    succs: dict[int, list[int]] = {i: [] for i in ids}
    for a, b in edges:
        if a in preds and b in preds and a != b:
            if b not in succs[a]:
                succs[a].append(b)
                preds[b].append(a)
    ends = {i for i in ids if types[i] in _ENDS} if pinned is None else set(pinned) & set(ids)
    order = _topological(ids, preds, succs)
    const = {i for i in ids if types[i] in _CONST or (types[i] == "Parameter" and i not in ends)}
    # decompression Converts (and any op on constants only) count as constants
    for i in order:
        if i not in const and i not in ends and preds[i] and \
                all(p in const for p in preds[i]):
            const.add(i)
    shape = _shape_plumbing(order, types, preds, const)

    seeds: dict[int, Scope] = {}
    for i in ids:
        if i in ends or i in const or i in shape:
            continue
        s = name_scope(names[i])
        if not s:
            read = [weight_scope(names[c]) for c in _const_sources(i, preds, const)]
            read = [r for r in read if r]
            s = _common(read) if read else ()
        if s:
            seeds[i] = s
    if not seeds:
        return {i: () for i in ids}
    # a bias Add right after a scoped MatMul that feeds only it: the same module
    for i in order:
        if i in seeds or i in const or i in shape or i in ends:
            continue
        data = [p for p in preds[i] if p not in const and p not in shape]
        if len(data) == 1 and data[0] in seeds and len(succs[data[0]]) == 1 and \
                any(p in const for p in preds[i]):
            seeds[i] = seeds[data[0]]

    scope: dict[int, Scope] = dict(seeds)
    position = {i: k for k, i in enumerate(order)}
    free = [i for i in ids if i not in seeds and i not in const and i not in shape
            and i not in ends]
    up = _nearest(order, free, preds, seeds, const | shape)
    down = _nearest(order[::-1], free, succs, seeds, const | shape)
    undecided = []
    for i in free:
        a, d = up[i], down[i]
        both = _common(a + d) if a and d else ()
        if both:
            scope[i] = both
        elif d and _common(d):
            scope[i] = _common(d)
        elif a and _common(a):
            scope[i] = _common(a)
        else:
            undecided.append(i)
    # what is still open goes to the outermost scope most of its neighbours are in (inputs
    # count more); votes are counted on what was decided before the round, so that a chain of
    # undecided nodes (a residual stream) does not carry one block's scope down the chain
    for _ in range(4):
        known = dict(scope)
        left = []
        for i in undecided:
            votes: Counter = Counter()
            latest: dict[Scope, int] = {}
            for weight, group in ((2.0, preds[i]), (1.5, succs[i])):
                for j in group:
                    s = known.get(j)
                    if s:
                        votes[s[:1]] += weight
                        latest[s[:1]] = max(latest.get(s[:1], -1), position[j])
            if votes:       # a tie goes to the later scope: a residual Add ends the block before it
                scope[i] = max(votes, key=lambda t: (votes[t], latest[t]))
            else:
                left.append(i)
        if len(left) == len(undecided):
            break
        undecided = left
    for i in undecided:
        scope[i] = ()
    # shape plumbing and constants: the scope of what they feed
    for i in reversed(order):
        if i in scope:
            continue
        if i in ends:
            scope[i] = ()
            continue
        fed = [scope[j] for j in succs[i] if j in scope]
        scope[i] = _common(fed) if fed else ()
    return scope


def _shape_plumbing(order, types, preds, const) -> set[int]:
    """ShapeOf and everything computed from shapes and constants only."""
    shape: set[int] = set()
    for i in order:
        t = types[i]
        base = t[5:] if t.startswith("onnx.") else t
        if t in _SHAPE_SOURCES or base == "ShapeOf":
            shape.add(i)
        elif base in _SHAPE_OPS and preds[i] and any(p in shape for p in preds[i]) and \
                all(p in shape or p in const for p in preds[i]):
            shape.add(i)
    return shape


def _const_sources(i, preds, const) -> list[int]:
    """The constants ``i`` reads, through chains of Converts and other ops on constants."""
    out, stack, seen = [], [p for p in preds[i] if p in const], set()
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        out.append(c)
        stack.extend(p for p in preds[c] if p in const)
    return out


_MANY = frozenset({("\0many",), ("\0scopes",)})   # more scopes than matter: nothing in common


def _nearest(order, free, step, seeds, skip) -> dict[int, list[Scope]]:
    """For each free node, the scopes of the nearest seeds along ``step`` (through nodes that
    are not seeds), ``order`` having every node after those ``step`` leads to. One pass: what
    a node reaches is what its neighbours reach; past a few scopes only "many" is kept."""
    memo: dict[int, frozenset] = {}
    for i in order:
        if i in skip:
            continue
        acc: set = set()
        for j in step[i]:
            if j in seeds:
                acc.add(seeds[j])
            elif j in memo:
                acc |= memo[j]
        memo[i] = _MANY if len(acc) > 8 else frozenset(acc)
    return {i: list(memo.get(i, ())) for i in free}


def _topological(ids, preds, succs) -> list[int]:
    indeg = {i: len(preds[i]) for i in ids}
    order = [i for i in ids if indeg[i] == 0]
    k = 0
    while k < len(order):
        for j in succs[order[k]]:
            indeg[j] -= 1
            if indeg[j] == 0:
                order.append(j)
        k += 1
    if len(order) < len(ids):                       # a cycle (not in a body): keep the rest
        placed = set(order)
        order += [i for i in ids if i not in placed]
    return order


# -- the tree ------------------------------------------------------------------------------------
@dataclass
class Group:
    """A scope's nodes: ``path`` is its scope (``("blocks.4", "attn")``), ``nodes`` the ids
    directly in it, ``children`` its inner groups. ``size`` counts every node inside."""

    path: Scope
    nodes: list[int] = field(default_factory=list)
    children: list["Group"] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "/".join(self.path)

    @property
    def size(self) -> int:
        return len(self.nodes) + sum(c.size for c in self.children)

    def all_nodes(self) -> list[int]:
        out = list(self.nodes)
        for c in self.children:
            out += c.all_nodes()
        return out

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def group_tree(scopes: Mapping[int, Scope], counted: Iterable[int] | None = None) -> Group:
    """The tree of groups of a scope assignment; the root (path ``()``) is the top level.

    Groups of fewer than ``MIN_GROUP`` counted nodes dissolve into their parent, and a group whose
    only content is one inner group is that group (``blocks.0 > attn`` with nothing else in
    ``blocks.0`` is ``blocks.0/attn``). ``counted``: the nodes that are boxes (constants folded
    into boxes do not make a group; default: all).
    """
    counted = set(scopes) if counted is None else set(counted)
    # a scope shared by every node says nothing (functional_1/...): drop it
    common = _common([s for i, s in scopes.items() if s and i in counted] or [()])
    if common and all(scopes[i][:len(common)] == common for i in counted):
        scopes = {i: s[len(common):] for i, s in scopes.items()}
    root = Group(())
    index: dict[Scope, Group] = {(): root}
    for i in sorted(scopes, key=lambda i: (natural_order(scopes[i]), i)):
        s = scopes[i]
        for k in range(1, len(s) + 1):
            if s[:k] not in index:
                g = Group(s[:k])
                index[s[:k]] = g
                index[s[:k - 1]].children.append(g)
        index[s].nodes.append(i)
    _prune(root, counted)
    if len(root.children) == 1:         # one group holding all but the Parameters says nothing
        only = root.children[0]
        root.nodes += only.nodes
        root.children = only.children
    return root


def natural_order(scope: Scope) -> tuple:
    """``blocks.2`` before ``blocks.10``."""
    return tuple(tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))
                 for s in scope)


def _prune(group: Group, counted: set[int]) -> None:
    for c in list(group.children):
        _prune(c, counted)
    kept = []
    for c in group.children:
        n = sum(1 for i in c.all_nodes() if i in counted)
        if n < MIN_GROUP:
            group.nodes += c.all_nodes()
        elif not any(i in counted for i in c.nodes) and len(c.children) == 1:
            inner = c.children[0]
            inner.nodes += c.nodes
            kept.append(inner)
        else:
            kept.append(c)
    group.children = kept
