"""Planning does each graph's work once: an Engine makes each layer's kernel once (the loop
bodies and If branches included, no graph planned twice, e.g. once per run mode), and the
topological order of a graph is worked out once for every Engine of the same model
(``graph_order.structure``), with the same plans and code as a fresh one. A graph with a cycle
is not kept: every plan of it says so, naming its own place."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine import Engine, RunFinished, graph_order, kernels
from loopdbg.engine.plan import GraphPlan
from loopdbg.errors import ModelError
from loopdbg.ir.model import Edge, Graph, Layer

NOT_KERNELS = {"Parameter", "Result", "Constant", "Loop", "TensorIterator", "If"}


def nested_with_if():
    """A loop in a loop whose body holds an If: five graphs."""
    b = GraphBuilder("nested_if")
    x0 = b.parameter("x0", "f32", [2])
    outer = b.loop("outer", trip=3)
    x = outer.merged_input(x0, "x")
    it = outer.current_iteration("i")
    inner = outer.body.loop("inner", trip=2)
    y = inner.merged_input(x, "y")
    y2 = inner.body.op("Multiply", [y, np.array([2.0, 3.0], np.float32)], name="twice")
    inner.back_edge(y2, y)
    inner.condition(inner.body.const("go", np.array(True)))
    grown = inner.output_last(y2, name="grown")
    even = outer.body.op("Equal", [outer.body.op("Mod", [it, np.array([2], np.int64)],
                                                 name="parity"), np.array([0], np.int64)],
                         name="is_even")
    choose = outer.body.if_("pick", even)
    t, e = choose.input(grown, "g")
    picked = choose.output(choose.then_body.op("Add", [t, np.array([1.0], np.float32)],
                                               name="plus"),
                           choose.else_body.op("Negative", [e], name="minus"), name="picked")
    outer.back_edge(picked, x)
    outer.condition(outer.body.const("on", np.array(True)))
    b.result(outer.output_last(picked, name="x_final"))
    return b.build(), {"x0": np.array([0.5, -1.0], np.float32)}


def graphs(graph: Graph):
    """``graph`` and every graph nested in it."""
    yield graph
    for layer in graph.layers.values():
        for sub in layer.subgraphs:
            yield from graphs(sub.graph)


def code(engine: Engine) -> list[str]:
    """Every generated source of ``engine``, its file names left out (they count up)."""
    return [re.sub(r"<loopdbg [a-z ]+ \d+>", "<file>", source or "")
            for _, _, source in engine.generated_code()]


def test_each_layer_gets_its_kernel_once_per_engine(monkeypatch):
    model, _ = nested_with_if()
    made = Counter()
    real = kernels.make_kernel

    def counted(layer, *args):
        made[id(layer)] += 1
        return real(layer, *args)

    monkeypatch.setattr(kernels, "make_kernel", counted)
    Engine(model)
    every = {id(layer) for g in graphs(model.graph) for layer in g.layers.values()
             if layer.type not in NOT_KERNELS}
    assert len(every) == 5                  # twice, parity, is_even, plus, minus
    assert set(made) == every
    assert set(made.values()) == {1}


def test_each_graph_is_ordered_once_for_every_engine_of_a_model(monkeypatch):
    model, inputs = nested_with_if()
    fresh = Engine(model)
    first = fresh.run_to_end(inputs)
    ordered = Counter()
    real = graph_order.topological_order

    def counted(graph, *args):
        ordered[id(graph)] += 1
        return real(graph, *args)

    monkeypatch.setattr(graph_order, "topological_order", counted)
    again = Engine(model)
    assert not ordered                      # all five graphs were ordered by the first Engine
    other, _ = nested_with_if()             # another model (the same file read again): its own
    Engine(other)
    assert sorted(ordered.values()) == [1] * 5
    assert code(again) == code(fresh)
    second = again.run_to_end(inputs)
    assert isinstance(second, RunFinished)
    np.testing.assert_array_equal(second.outputs["x_final"], first.outputs["x_final"])


def test_a_graph_with_a_cycle_is_refused_by_every_plan_with_its_own_place():
    layers = {lid: Layer(lid, f"n{lid}", t, "opset1")
              for lid, t in {0: "Parameter", 1: "Add", 2: "Relu", 3: "Result"}.items()}
    g = Graph("g", layers, tuple(Edge(*e) for e in [(0, 0, 1, 0), (2, 0, 1, 1), (1, 0, 2, 0),
                                                      (2, 0, 3, 0)]), (0,), (3,))
    for where in ("a.xml: ", "b.xml: "):
        with pytest.raises(ModelError, match=rf"^{where}the graph has a cycle through layer "):
            GraphPlan(g, "", where)
