"""A graph's layers in the order a plan runs them (``topological_order``), and the edges that end
at each layer (``edges_to``): what ``plan.GraphPlan`` builds its steps from, through ``structure``,
which works both out once per graph: a graph does not change once read, and a second Engine on the
same model (a benchmark's runs, a test's, a check against another engine) then walks none of its
graphs again (a 2,000-node ONNX body: ~4 ms of its ~50 ms plan).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from loopdbg.errors import ModelError
from loopdbg.ir.model import Graph

# Layers that are run for their effect on the run's state although no Result reads them.
SINK_TYPES = ("Assign",)

# graph -> its ``structure``, kept while the graph lives; never changed by a reader
_STRUCTURE: WeakKeyDictionary = WeakKeyDictionary()


def structure(graph: Graph, where: str = "") -> tuple[dict[int, list], list[int], dict]:
    """``(edges_to(graph), topological_order(graph, where), sources)``, worked out on the
    graph's first plan and kept with it (read them, never change them). ``sources``: layer id ->
    the (layer id, output port) feeding each of its inputs, in port order, for a layer whose
    edges are one per input port in that order (most); None for another layer with edges (a
    plan reads those edge by edge). A cycle is not kept: each plan of that graph raises its
    ModelError, with its own ``where``."""
    found = _STRUCTURE.get(graph)
    if found is None:
        incoming = edges_to(graph)
        order = topological_order(graph, where, incoming)
        sources = {}
        for lid, edges in incoming.items():
            keys = []
            for j, e in enumerate(edges):
                if e.to_port != j:
                    keys = None
                    break
                keys.append((e.from_layer, e.from_port))
            sources[lid] = tuple(keys) if keys is not None else None
        found = _STRUCTURE[graph] = (incoming, order, sources)
    return found


def topological_order(graph: Graph, where: str = "",
                      incoming: dict[int, list] | None = None) -> list[int]:
    """Layers that feed a Result or a sink (Assign), and every Parameter, producers first, in XML
    order otherwise.

    Other layers that reach no Result are dropped, as OpenVINO's reader drops them. A cycle is a
    ModelError naming one layer on it. ``incoming``: the edges that end at each layer id, when
    the caller has them already (``edges_to``).
    """
    if incoming is None:
        incoming = edges_to(graph)
    layers = graph.layers
    position = None                     # layer id -> XML position (made when first needed)
    order: list[int] = []
    done = order.append
    state: dict[int, int] = {}        # 1 = on the stack, 2 = done
    sinks = [lid for lid, layer in layers.items() if layer.type in SINK_TYPES]
    roots = list(graph.parameters) + list(graph.results) + sinks

    def producers(edges):           # of a layer of two edges or more, in XML order
        nonlocal position
        if position is None:
            position = {lid: k for k, lid in enumerate(layers)}
        if len(edges) == 2:
            a, b = edges[0].from_layer, edges[1].from_layer
            if a == b:
                return iter((a,))
            return iter((a, b) if position.get(a) < position.get(b) else (b, a))
        return iter(sorted({e.from_layer for e in edges}, key=position.get))

    for root in roots:
        if state.get(root) == 2:
            continue
        edges = incoming.get(root)
        stack = [(root, iter((edges[0].from_layer,)) if edges and len(edges) == 1 else
                  producers(edges) if edges else iter(()))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            for nxt in it:              # the next producer not done yet, if any
                if nxt not in layers:
                    continue
                st = state.get(nxt)
                if st is None:
                    edges = incoming.get(nxt)
                    if not edges:       # (a Constant, a Parameter: done at once, no frame)
                        state[nxt] = 2
                        done(nxt)
                        continue
                    state[nxt] = 1      # (most layers have one producer: nothing to sort)
                    stack.append((nxt, iter((edges[0].from_layer,)) if len(edges) == 1 else
                                  producers(edges)))
                    break
                if st == 1:
                    raise ModelError(
                        f"{where}the graph has a cycle through {layers[nxt].describe()}.")
            else:
                stack.pop()
                state[node] = 2
                done(node)
    return order


def edges_to(graph: Graph) -> dict[int, list]:
    """Layer id -> the edges that end there, in the graph's order."""
    incoming: dict[int, list] = {}
    for e in graph.edges:
        if e.to_layer in incoming:
            incoming[e.to_layer].append(e)
        else:
            incoming[e.to_layer] = [e]
    return incoming
