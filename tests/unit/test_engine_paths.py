"""Loop paths (engine/paths.py): how the engine names loops and how a name picks one."""

from __future__ import annotations

import numpy as np

from loopdbg.engine import Engine
from loopdbg.engine.paths import loop_path, matches_loop, short_name
from loopdbg.builder import GraphBuilder


def test_paths_join_names_and_tell_twins_apart_by_layer_id():
    assert loop_path("", "outer", 4, {}) == "outer"
    assert loop_path("outer", "inner", 2, {"outer"}) == "outer/inner"
    assert loop_path("", "outer", 9, {"outer"}) == "outer#9"
    assert short_name("a/b/c") == "c" and short_name("solo") == "solo"


def test_a_name_picks_a_loop_by_path_short_name_or_layer_name():
    assert matches_loop("outer/inner", "outer/inner")
    assert matches_loop("outer/inner", "inner")
    assert not matches_loop("outer/inner", "outer")
    assert not matches_loop("outer/inner", "nner")
    # a layer name with a "/" in it (as converters write them) picks its loop only when given
    assert not matches_loop("model/while", "model/while/x")
    assert matches_loop("lstm/while", "lstm/while", "lstm/while")
    assert matches_loop("outer/lstm/while", "lstm/while", "lstm/while")
    assert not matches_loop("outer/lstm/while", "lstm/while")


def test_the_engine_names_nested_and_twin_loops_by_these_rules():
    b = GraphBuilder("twins")
    x0 = b.parameter("x0", "f32", [1])
    trip, go = b.const("trip", np.int64(2)), b.const("go", np.bool_(True))
    outs = []
    for _ in range(2):
        loop = b.loop("spin", trip=trip, cond=go)
        x = loop.merged_input(x0, "x")
        inner = loop.body.loop("inner", trip=1)
        y = inner.merged_input(x, "y")
        inner.back_edge(y, y)
        inner.condition(inner.body.const("go", np.array(True)))
        y2 = inner.output_last(y)
        loop.back_edge(y2, x)
        loop.condition(loop.body.const("on", np.array(True)))
        outs.append(loop.output_last(y2))
    for k, t in enumerate(outs):
        b.result(t, name=f"out{k}")
    model = b.build()
    twin = [layer.id for layer in model.graph.layers.values() if layer.name == "spin"][1]
    assert sorted(Engine(model).loops) == ["spin", f"spin#{twin}", f"spin#{twin}/inner",
                                           "spin/inner"]
