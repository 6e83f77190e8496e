"""The planner's topological order (``plan.topological_order``) on hand-made graphs: producers in
XML order whatever order the edges come in (one, two — the fast path — or more producers, a
producer read twice), layers that reach no Result dropped, a cycle one sentence naming a layer
on it; and a layer's inputs by port whatever order its edges come in."""

from __future__ import annotations

import pytest

from loopdbg.engine.plan import edges_to, topological_order
from loopdbg.errors import ModelError
from loopdbg.ir.model import Edge, Graph, Layer


def graph(types: dict[int, str], edges: list[tuple[int, int, int, int]]) -> Graph:
    """Layers in the dict's order (their XML order); edges (from, out port, to, in port)."""
    layers = {lid: Layer(lid, f"n{lid}", t, "opset1") for lid, t in types.items()}
    return Graph("g", layers, tuple(Edge(*e) for e in edges),
                 tuple(lid for lid, t in types.items() if t == "Parameter"),
                 tuple(lid for lid, t in types.items() if t == "Result"))


def test_two_producers_come_in_xml_order_whatever_the_edge_order():
    # 3 = Add(2, 1) with its edges listed port 1 first: 1 comes before 2 in XML order
    g = graph({0: "Parameter", 1: "Relu", 2: "Relu", 3: "Add", 4: "Result"},
              [(0, 0, 2, 0), (2, 0, 3, 0), (0, 0, 1, 0), (1, 0, 3, 1), (3, 0, 4, 0)])
    assert topological_order(g) == [0, 1, 2, 3, 4]
    flipped = graph({0: "Parameter", 2: "Relu", 1: "Relu", 3: "Add", 4: "Result"},
                    [(0, 0, 2, 0), (2, 0, 3, 0), (0, 0, 1, 0), (1, 0, 3, 1), (3, 0, 4, 0)])
    assert topological_order(flipped) == [0, 2, 1, 3, 4]


def test_a_producer_read_twice_and_three_producers():
    g = graph({0: "Parameter", 1: "Relu", 2: "Multiply", 3: "Relu", 4: "Concat", 5: "Result"},
              [(0, 0, 1, 0), (1, 0, 2, 1), (1, 0, 2, 0), (0, 0, 3, 0),
               (3, 0, 4, 2), (2, 0, 4, 0), (1, 0, 4, 1), (4, 0, 5, 0)])
    assert topological_order(g) == [0, 1, 2, 3, 4, 5]
    assert topological_order(g, incoming=edges_to(g)) == [0, 1, 2, 3, 4, 5]


def test_layers_that_reach_no_result_are_dropped_but_parameters_stay():
    g = graph({0: "Parameter", 1: "Parameter", 2: "Relu", 3: "Relu", 4: "Result"},
              [(0, 0, 2, 0), (0, 0, 3, 0), (3, 0, 4, 0)])
    assert topological_order(g) == [0, 1, 3, 4]


def test_a_cycle_names_a_layer_on_it():
    g = graph({0: "Parameter", 1: "Add", 2: "Relu", 3: "Result"},
              [(0, 0, 1, 0), (2, 0, 1, 1), (1, 0, 2, 0), (2, 0, 3, 0)])
    with pytest.raises(ModelError, match=r"^m\.xml: the graph has a cycle through layer [12] "):
        topological_order(g, "m.xml: ")


def test_inputs_by_port_whatever_the_edge_order():
    from loopdbg.engine.plan import GraphPlan

    g = graph({0: "Parameter", 1: "Parameter", 2: "Subtract", 3: "Result"},
              [(1, 0, 2, 1), (0, 0, 2, 0), (2, 0, 3, 0)])
    plan = GraphPlan(g, "", "m.xml: ")
    assert plan.steps[0].ins == ("p0", "p1")
    swapped = graph({0: "Parameter", 1: "Parameter", 2: "Subtract", 3: "Result"},
                    [(0, 0, 2, 1), (1, 0, 2, 0), (2, 0, 3, 0)])
    assert GraphPlan(swapped, "", "m.xml: ").steps[0].ins == ("p1", "p0")


def test_inputs_by_port_with_a_gap_and_a_missing_output_for_every_plan_of_a_graph():
    from loopdbg.engine.plan import GraphPlan

    def anything(layer, where="", consts=None):
        return (lambda *ins: None), 1

    # port 1 unconnected (an optional input): None there, in the first plan and a second one
    g = graph({0: "Parameter", 1: "Parameter", 2: "Select", 3: "Result"},
              [(0, 0, 2, 0), (1, 0, 2, 2), (2, 0, 3, 0)])
    for _ in range(2):
        assert GraphPlan(g, "", "m.xml: ", kernel_factory=anything).steps[0].ins == \
            ("p0", None, "p1")
    # edges in port order, one reading an output its producer does not have
    bad = graph({0: "Parameter", 1: "Relu", 2: "Add", 3: "Result"},
                [(0, 0, 1, 0), (0, 0, 2, 0), (1, 1, 2, 1), (2, 0, 3, 0)])
    for _ in range(2):
        with pytest.raises(ModelError, match=r"^m\.xml: layer 2 'n2' \(Add\) reads output 1 of "
                                             r"layer 1 'n1' \(Relu\), which does not exist\.$"):
            GraphPlan(bad, "", "m.xml: ", kernel_factory=anything)
