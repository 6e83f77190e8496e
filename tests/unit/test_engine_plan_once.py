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
from test_engine_plan import nested_with_if      # a loop in a loop holding an If: five graphs

from loopdbg.engine import Engine, RunFinished, graph_order, kernels
from loopdbg.engine.plan import GraphPlan
from loopdbg.errors import ModelError
from loopdbg.ir.model import Edge, Graph, Layer

NOT_KERNELS = {"Parameter", "Result", "Constant", "Loop", "TensorIterator", "If"}


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


def spy(monkeypatch, module, name: str) -> Counter:
    """Calls of ``module.name`` from now on, by the identity of their first argument."""
    calls = Counter()
    real = getattr(module, name)

    def counted(first, *args):
        calls[id(first)] += 1
        return real(first, *args)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_each_layer_gets_its_kernel_once_per_engine(monkeypatch):
    model, _ = nested_with_if()
    made = spy(monkeypatch, kernels, "make_kernel")
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
    ordered = spy(monkeypatch, graph_order, "topological_order")
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
