"""Which loop and which tensor of a converted model stands for which of its source.

A converter (OpenVINO's ONNX frontend, say) keeps most tensor names: a Loop's outputs, the
outputs of the nodes it copied, often the body's inputs. It renames what it makes (constants it
folded, the Unsqueeze it adds before a scan output) and may rename the loop layer itself. So:

* loops are paired level by level (the loops of the top graph, then inside each pair of bodies):
  first by a shared output tensor name, then the ones left in the order they run, when their
  kinds fit (a Loop with a Loop; a Scan, a TensorIterator, with either) and the shapes declared
  on their outputs do not contradict each other;
* inside a pair of bodies, a value (a body Parameter, or an output of a node loopdbg runs) is
  paired with the value of the other body that carries one of its tensor names; a name both
  sides use for different shapes that hold the same elements (``(1, 4)`` and ``(4,)``) pairs
  too, and is compared on the elements;
* the models' outputs are paired by name, else by position.

Both engines come from ``loopdbg.engine``: each model runs with its own format's semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopdbg.engine.loopspec import LoopSpec

BY_NAME = "output names"
BY_ORDER = "order"


@dataclass
class LoopPair:
    """A loop of the model (``path``) and the loop of the reference standing for it."""

    path: str
    reference: str
    how: str                                       # BY_NAME or BY_ORDER
    values: list[tuple[str, str, str]] = field(default_factory=list)
    # (model value name, reference value name, the tensor name they share), in the model's
    # execution order: body Parameters first, then node outputs


def loop_tree(engine) -> dict[str | None, list[LoopSpec]]:
    """The loops of ``engine`` by the path of the loop whose body holds them (None: the top)."""
    owners = {id(s.body.graph): p for p, s in engine.loops.items()}
    tree: dict[str | None, list[LoopSpec]] = {}
    for spec in engine.loops.values():
        parent = owners.get(id(getattr(spec, "parent_graph", None)))
        tree.setdefault(parent, []).append(spec)
    return tree


def pair_loops(model_engine, reference_engine) -> tuple[list[LoopPair], list[str], list[str]]:
    """(pairs, the model's loops without a partner, the reference's), level by level."""
    ta, tb = loop_tree(model_engine), loop_tree(reference_engine)
    pairs: list[LoopPair] = []
    todo = [(None, None)]
    while todo:
        pa, pb = todo.pop(0)
        found = _pair_level(ta.get(pa, []), tb.get(pb, []))
        for a, b, how in found:
            pair = LoopPair(a.path, b.path, how, pair_values(a, b))
            pairs.append(pair)
            todo.append((a.path, b.path))
    paired_a = {p.path for p in pairs}
    paired_b = {p.reference for p in pairs}
    lone_a = [p for p in model_engine.loops if p not in paired_a]
    lone_b = [p for p in reference_engine.loops if p not in paired_b]
    return pairs, lone_a, lone_b


def _pair_level(a_loops: list[LoopSpec], b_loops: list[LoopSpec]):
    found = []
    left_a, left_b = list(a_loops), list(b_loops)
    for a in list(left_a):
        names = _output_names(a)
        hits = [b for b in left_b if names & _output_names(b)]
        if len(hits) == 1:
            found.append((a, hits[0], BY_NAME))
            left_a.remove(a)
            left_b.remove(hits[0])
    for a, b in zip(left_a, left_b):
        if _kinds_fit(a, b) and _shapes_fit(a, b):
            found.append((a, b, BY_ORDER))
    order = {id(s): k for k, s in enumerate(a_loops)}
    return sorted(found, key=lambda f: order[id(f[0])])


def _output_names(spec: LoopSpec) -> set[str]:
    return {n for p in spec.layer.outputs for n in p.names if n}


def _kinds_fit(a: LoopSpec, b: LoopSpec) -> bool:
    return a.kind == b.kind or "TensorIterator" in (a.kind, b.kind)


def _shapes_fit(a: LoopSpec, b: LoopSpec) -> bool:
    da = [tuple(p.dims) for p in a.layer.outputs]
    db = [tuple(p.dims) for p in b.layer.outputs]
    if len(da) != len(db):
        return False
    for x, y in zip(da, db):
        if x and y and -1 not in x and -1 not in y and x != y:
            return False
    return True


def value_names(spec: LoopSpec) -> list[tuple[str, tuple[str, ...]]]:
    """Every value of ``spec``'s body in execution order, with its tensor names: (value name as
    loopdbg records it, tensor names)."""
    plan = spec.body
    graph = plan.graph
    out = []
    for pid, name in zip(plan.param_ids, plan.param_names):
        ports = graph.layers[pid].outputs
        out.append((name, tuple(n for n in (ports[0].names if ports else ()) if n) or (name,)))
    for step in plan.steps:
        layer = step.layer
        for j in range(len(step.outs)):
            label = layer.name if j == 0 else f"{layer.name}:{j}"
            names = layer.outputs[j].names if j < len(layer.outputs) else ()
            out.append((label, tuple(n for n in names if n)))
    return out


def pair_values(a: LoopSpec, b: LoopSpec) -> list[tuple[str, str, str]]:
    """The values of two paired bodies that share a tensor name, in ``a``'s execution order."""
    by_name: dict[str, str] = {}
    for label, names in value_names(b):
        for n in names:
            by_name.setdefault(n, label)
    pairs, used = [], set()
    for label, names in value_names(a):
        hit = next((n for n in names if n in by_name and by_name[n] not in used), None)
        if hit is not None:
            used.add(by_name[hit])
            pairs.append((label, by_name[hit], hit))
    return pairs


def pair_outputs(names_a: list[str], names_b: list[str]) -> list[tuple[int, int | None]]:
    """For each output of the model, the index of the reference's output it stands for."""
    out = []
    taken: set[int] = set()
    for k, name in enumerate(names_a):
        j = names_b.index(name) if name in names_b else None
        if j is None and k < len(names_b) and names_b[k] not in names_a and k not in taken:
            j = k
        if j is not None:
            taken.add(j)
        out.append((k, j))
    return out
