"""The benchmark's models and its hand-written numpy floors compute the same thing.

tests/benchmark.py measures loopdbg against these floors; a floor that did less (or other) work
than the model would make every ratio it reports a lie. Each model of tests/perf and the
converter-style body run here once, and their outputs are held to the floor's.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import benchmark_cases  # noqa: E402
import benchmark_converter  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402


@pytest.mark.parametrize("name", sorted(benchmark_cases.CASES))
def test_perf_case_matches_its_floor(name):
    model, inputs, weights, floor = benchmark_cases.load(name, scale=0.01)
    got = Engine(model).run_to_end(inputs).outputs
    want = floor(inputs, weights)
    assert set(want) <= set(got)
    for key, value in want.items():
        assert got[key].shape == value.shape, key
        np.testing.assert_allclose(got[key], value, rtol=1e-4, atol=1e-5, err_msg=key)


def test_converter_body_matches_its_floor_and_is_converter_sized():
    model, inputs, weights = benchmark_converter.build(steps=30)
    assert 100 <= benchmark_converter.body_layers(model) <= 160
    types = {la.type for la in next(la for la in model.graph.layers.values()
                                     if la.type == "Loop").body.graph.layers.values()}
    assert {"ShapeOf", "Gather", "Unsqueeze", "Squeeze", "Concat", "Convert", "Reshape",
            "VariadicSplit"} <= types
    got = Engine(model).run_to_end(inputs).outputs
    want = benchmark_converter.floor(inputs, weights)
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-4, atol=1e-5, err_msg=key)
