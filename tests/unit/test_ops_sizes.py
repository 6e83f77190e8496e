"""ops.sizes.broadcast_check: a broadcasting step's output is reserved from the budget only when
it is bigger than its inputs."""

import numpy as np
import pytest

from loopdbg.ops import sizes


@pytest.fixture
def reserved(monkeypatch):
    seen = []
    monkeypatch.setattr(sizes, "reserve", seen.append)
    return seen


@pytest.mark.parametrize("a, b", [
    (np.zeros((1, 24, 144), np.float32), np.zeros((1, 1, 144), np.float32)),   # a bias
    (np.zeros((1, 1, 144), np.float32), np.zeros((1, 24, 144), np.float32)),
    (np.zeros((2, 3, 4)), np.zeros(4)), (np.zeros((2, 3, 4)), 2.0), ([[1, 2], [3, 4]], [1, 2]),
    (np.zeros((5, 1, 3)), np.zeros((1, 3))),
])
def test_an_input_that_fits_into_the_other_reserves_nothing(reserved, a, b):
    sizes.broadcast_check(a, b)
    assert reserved == []


@pytest.mark.parametrize("a, b, n", [
    (np.zeros((4096, 1), np.float32), np.zeros(4096, np.float32), 4096 * 4096),   # outer sum
    (np.zeros(4096, np.float32), np.zeros((4096, 1), np.float32), 4096 * 4096),
    (np.zeros((1, 1, 512)), np.zeros((1, 64, 1)), 64 * 512),
    ([[1.0], [2.0]], [1.0, 2.0, 3.0], 6),
])
def test_an_output_bigger_than_its_inputs_is_reserved(reserved, a, b, n):
    sizes.broadcast_check(a, b)
    itemsize = max(getattr(x, "itemsize", 8) for x in (a, b))
    assert reserved == [n * itemsize]


def test_inputs_that_do_not_broadcast_are_left_to_the_kernel(reserved):
    sizes.broadcast_check(np.zeros((2, 3)), np.zeros((4, 3)))
    sizes.broadcast_check(np.zeros((2, 3)), np.zeros((4, 3)), np.zeros(3))
    assert reserved == []


def test_broadcast_tail_is_a_shape_less_its_leading_ones():
    """What the plans' guards compare an input's last dimensions with: (1, 1, N) gives (N,); a
    shape without leading 1s, or of 1s alone, gives None (the guard compares the whole shape)."""
    assert sizes.broadcast_tail((1, 1, 512)) == (512,)
    assert sizes.broadcast_tail((1, 4, 1, 8)) == (4, 1, 8)
    assert sizes.broadcast_tail((512,)) is None
    assert sizes.broadcast_tail((3, 1)) is None
    assert sizes.broadcast_tail((1, 1)) is None
    assert sizes.broadcast_tail(()) is None
