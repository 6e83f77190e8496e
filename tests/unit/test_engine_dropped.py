"""A dropped Engine goes at once: no reference cycle holds its plans, kernels and folded values
for the garbage collector's next full pass (which then walks all of them: ~10 ms for a real
decoder's engine, inside whatever runs then, and its folded weights stay in memory until it
comes). Each model of test_engine_plan's (loops, a TensorIterator, a loop in a loop around an
If, no loop at all), after a run, a run that records every node and its generated code listed.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from loopdbg.engine import Engine
from test_engine_plan import MODELS


@pytest.mark.parametrize("make", list(MODELS))
def test_a_dropped_engine_is_freed_without_the_garbage_collector(make):
    model, inputs = MODELS[make]()
    _used(Engine(model), inputs)        # (what a first run makes once, e.g. BLAS's threads)
    gc.collect()
    gc.disable()                        # only reference counts free what follows
    try:
        engine = Engine(model)
        _used(engine, inputs)
        refs = [weakref.ref(engine)] + [weakref.ref(p) for p in engine.plans] + \
            [weakref.ref(spec) for spec in engine.loops.values()]
        del engine
        assert [r() for r in refs if r() is not None] == []
        assert gc.collect() == 0        # nor a cycle of what they held (a plan's namespace)
    finally:
        gc.enable()


def _used(engine: Engine, inputs) -> None:
    for _ in engine.run(inputs):
        pass
    for _ in engine.run(inputs, record_nodes=True):
        pass
    engine.generated_code()
