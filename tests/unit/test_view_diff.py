"""loopdbg.view.diff: values changed since the previous stop, per name, only within one key."""

import numpy as np

from loopdbg.view.diff import Changes


def test_changed_since_the_previous_stop_of_the_same_loop_execution():
    changes = Changes()
    changes.update(("loop", ()), {"a": np.array([1, 2]), "b": np.float32(3)})
    assert "a" not in changes and "b" not in changes          # nothing before the first stop
    changes.update(("loop", ()), {"a": np.array([1, 2]), "b": np.float32(4), "c": 1})
    assert "a" not in changes and "b" in changes and "c" not in changes
    changes.update(("loop", (1,)), {"a": np.array([9, 9]), "b": np.float32(4)})
    assert "a" not in changes and "b" not in changes          # another execution: no diff
    changes.update(("loop", (1,)), {"a": np.array([1, 9]), "b": np.float32(4)})
    assert "a" in changes and "b" not in changes and "missing" not in changes


def test_an_odd_value_counts_as_changed_rather_than_failing():
    class Odd:
        def __eq__(self, other):
            raise TypeError("no")
    changes = Changes()
    changes.update("k", {"x": Odd()})
    changes.update("k", {"x": Odd()})
    assert "x" in changes
