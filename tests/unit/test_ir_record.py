"""ir.record.Record: the records made at every start behave as the frozen dataclasses they were."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

from loopdbg.engine.events import LoopFinished, LoopStarted, Notice, RunFinished
from loopdbg.ir.model import Edge, InputMapping, OutputMapping, Port
from loopdbg.ops.registry import KernelSpec


def test_a_record_is_frozen():
    p = Port(3, 0, "FP32", (1, 4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.dims = (2,)                                           # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.index
    with pytest.raises(AttributeError):
        p.extra = 1                                             # type: ignore[attr-defined]
    assert (p.id, p.index, p.precision, p.dims, p.names) == (3, 0, "FP32", (1, 4), ())


def test_equal_and_hashed_by_fields_of_the_same_class():
    assert Edge(1, 0, 2, 1) == Edge(1, 0, 2, 1) and hash(Edge(1, 0, 2, 1)) == hash(Edge(1, 0, 2, 1))
    assert Edge(1, 0, 2, 1) != Edge(1, 0, 2, 0)
    assert len({Port(0, 0), Port(0, 0), Port(0, 1)}) == 2
    # the two port maps share their fields, not their equality (as two dataclasses)
    assert InputMapping(0, 1, axis=0) != OutputMapping(0, 1, axis=0)
    assert InputMapping(0, 1)._fields == ("external_port_id", "internal_layer_id", "axis",
                                          "start", "end", "stride", "part_size", "purpose")
    assert Notice("loop", "said", 3) == Notice("loop", "said", 3) != ("loop", "said", 3)


def test_repr_as_the_dataclass_s_without_hidden_fields():
    assert repr(Port(1, 2, "f32", (2,))) == \
        "Port(id=1, index=2, precision='f32', dims=(2,), names=())"
    started = LoopStarted("a/b", 4, "b", "Loop", None, True, (2,), spec=object())
    assert repr(started) == ("LoopStarted(path='a/b', layer_id=4, layer_name='b', kind='Loop', "
                             "trip_count=None, execution_condition=True, outer=(2,))")
    finished = LoopFinished("a", 3, "condition", {"y": np.zeros(9)})
    assert repr(finished) == "LoopFinished(path='a', iterations=3, reason='condition', " \
                             "outer=(), error=None)"


def test_defaults_and_fresh_dicts():
    a, b = LoopFinished("a", 0, "trip_count"), LoopFinished("b", 0, "trip_count")
    assert a.outputs == {} and a.outputs is not b.outputs
    assert RunFinished({}).loops == () and RunFinished({}).interrupted is False


def test_pickled_copied_and_replaced_as_a_call_of_the_class():
    m = InputMapping(2, 7, axis=1, start=-1, end=0, stride=-1, purpose=None)
    assert pickle.loads(pickle.dumps(m)) == m
    assert m.__reduce_ex__(5) == (InputMapping, (2, 7, 1, -1, 0, -1, 1, None))
    assert copy.copy(m) == m and copy.deepcopy(m) == m
    changed = m.replace(axis=None, part_size=2)
    assert (changed.axis, changed.part_size, changed.start, m.axis) == (None, 2, -1, 1)
    with pytest.raises(TypeError, match="no field 'axes'"):
        m.replace(axes=0)
    spec = KernelSpec("Add", 1, lambda layer: None)
    assert spec.replace(version=7).version == 7 and spec.replace(version=7).outputs == 1
