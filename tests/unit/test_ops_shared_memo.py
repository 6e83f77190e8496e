"""args.SHAPES: what a kernel computes from its constants and an input's shape is kept for every
kernel of the same constants (a decoder's 24 Reshapes each see a new shape once an iteration),
and never given to a kernel of other constants."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops import shape as shape_ops
from loopdbg.ops.args import SHAPES, SharedMemo
from loopdbg.ops.registry import make_kernel

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def kernel(type_, consts, n_out=1, version="opset1", **data):
    layer = Layer(id=1, name="x", type=type_, version=version, data=data,
                  inputs=tuple(Port(i, i) for i in range(len(consts))),
                  outputs=tuple(Port(len(consts) + j, j) for j in range(n_out)))
    return make_kernel(layer, "", consts)[0]


@pytest.fixture(autouse=True)
def fresh_memo():
    SHAPES.found.clear()
    yield
    SHAPES.found.clear()


def test_a_reshape_of_the_same_target_reuses_the_shape_another_computed(monkeypatch):
    target = np.array([0, -1], np.int64)
    first = kernel("Reshape", [None, target], special_zero="true")
    assert first(X, target).shape == (2, 12)

    def not_again(*_):
        raise AssertionError("the shape was computed again")

    monkeypatch.setattr(shape_ops, "reshape_target", not_again)
    second = kernel("Reshape", [None, target], special_zero="true")
    assert second(X, target).shape == (2, 12)
    other = kernel("Reshape", [None, target], special_zero="false")    # 0 means 0 here
    with pytest.raises(AssertionError, match="computed again"):
        other(X, target)


def test_kernels_of_other_constants_get_their_own_answers():
    t1, t2 = np.array([4, -1], np.int64), np.array([-1, 4], np.int64)
    assert kernel("Reshape", [None, t1], special_zero="false")(X, t1).shape == (4, 6)
    assert kernel("Reshape", [None, t2], special_zero="false")(X, t2).shape == (6, 4)
    for axis in (0, 1, 2):
        a = np.array(axis, np.int64)
        lengths = np.array([1, -1], np.int64)
        parts = kernel("VariadicSplit", [None, a, None], n_out=2)(X, a, lengths)
        np.testing.assert_array_equal(parts[0], np.split(X, [1], axis=axis)[0])
        np.testing.assert_array_equal(parts[1], np.split(X, [1], axis=axis)[1])
        fixed = kernel("VariadicSplit", [None, a, np.array([1, 1], np.int64)], n_out=2)
        if X.shape[axis] == 2:
            np.testing.assert_array_equal(fixed(X, a, None)[1], np.split(X, 2, axis=axis)[1])
        else:
            with pytest.raises(ValueError, match="do not add up"):
                fixed(X, a, None)
    squeezed = kernel("Squeeze", [None, np.array([0], np.int64)])(X[None], None)
    assert squeezed.shape == (2, 3, 4)
    assert kernel("Unsqueeze", [None, np.array([1], np.int64)])(X, None).shape == (2, 1, 3, 4)
    assert kernel("Unsqueeze", [None, np.array([3], np.int64)])(X, None).shape == (2, 3, 4, 1)


@pytest.mark.parametrize("eps", ["1e-5", "0.5"])
def test_layer_norms_of_other_eps_or_axes_do_not_share(eps):
    x = np.random.default_rng(0).standard_normal((1, 5, 8)).astype(np.float32)
    for axes in ([-1], [1, 2], [1]):
        a = np.array(axes, np.int64)
        out = kernel("MVN", [None, a], version="opset6", eps=eps, normalize_variance="true",
                     eps_mode="inside_sqrt")(x, a)
        xf = x.astype(np.float64)
        ax = tuple(sorted(v % 3 for v in axes))
        centred = xf - xf.mean(axis=ax, keepdims=True)
        want = centred / np.sqrt((centred ** 2).mean(axis=ax, keepdims=True) + float(eps))
        np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-6, atol=1e-7)


def test_the_memo_starts_afresh_at_its_limit():
    memo, own = SharedMemo(limit=3), {}
    for k in range(10):
        assert memo.through(own, "p", (k,), lambda key: key[0] * 2, limit=5) == 2 * k
        assert len(memo.table("p")) <= 3
    assert memo.table("p")[(9,)] == 18
    assert sorted(own) == [(0,), (1,), (2,), (3,), (4,)]        # the kernel's own: its limit


def test_a_table_is_one_per_params_and_the_tables_start_afresh_at_their_most():
    memo = SharedMemo(limit=2, most=3)
    first = memo.table(("Reshape", False, (-1,)))
    assert memo.table(("Reshape", False, (-1,))) is first
    assert memo.table(("Reshape", True, (-1,))) is not first
    assert memo.remember(first, (4,), lambda key: key * 2) == (4, 4)
    assert memo.remember(first, (5,), lambda key: key * 2) == (5, 5)
    assert memo.remember(first, (6,), lambda key: key * 2) == (6, 6)
    assert first == {(6,): (6, 6)}                              # full at 2: afresh
    with pytest.raises(ValueError):
        memo.remember(first, (7,), lambda key: int("x"))
    assert first == {(6,): (6, 6)}                              # a failure keeps nothing
    memo.table("b")
    assert len(memo.found) == 3
    memo.table("c")                                             # the fourth: afresh
    assert list(memo.found) == ["c"]
    assert first[(6,)] == (6, 6)                                # a kernel keeps its table


def test_a_decoder_s_layers_find_what_the_first_worked_out_at_each_new_shape(monkeypatch):
    """Each of four Reshapes, MVNs and VariadicSplits (lengths computed in the graph) sees a new
    shape at each iteration: only the first of each works it out, the others find it in the
    table of their parameters."""
    from loopdbg.ops import concat_split, norm
    calls = []
    target = np.array([0, 0, 2, -1], np.int64)
    reshape_target = shape_ops.reshape_target
    monkeypatch.setattr(shape_ops, "reshape_target",
                        lambda *a: calls.append("reshape") or reshape_target(*a))
    split_lengths = concat_split._split_lengths
    monkeypatch.setattr(concat_split, "_split_lengths",
                        lambda *a: calls.append("split") or split_lengths(*a))
    mvn_axes = norm._axes
    monkeypatch.setattr(norm, "_axes", lambda *a: calls.append("mvn") or mvn_axes(*a))
    axes, axis = np.array([-1], np.int64), np.array(2, np.int64)
    reshapes = [kernel("Reshape", [None, target], special_zero="true") for _ in range(4)]
    mvns = [kernel("MVN", [None, axes], version="opset6", eps="1e-5", normalize_variance="true",
                   eps_mode="inside_sqrt") for _ in range(4)]
    splits = [kernel("VariadicSplit", [None, axis, None], n_out=3) for _ in range(4)]
    rng = np.random.default_rng(3)
    for t in (2, 3, 4):
        x = rng.standard_normal((1, t, 12)).astype(np.float32)
        lengths = np.array([4, 4, -1], np.int64)          # a new array each iteration
        for r, m, s in zip(reshapes, mvns, splits):
            assert r(x, target).shape == (1, t, 2, 6)
            xf = x.astype(np.float64)
            centred = xf - xf.mean(axis=2, keepdims=True)
            want = centred / np.sqrt((centred ** 2).mean(axis=2, keepdims=True) + 1e-5)
            np.testing.assert_allclose(m(x, axes), want.astype(np.float32), rtol=1e-6,
                                       atol=1e-7)
            parts = s(x, axis, lengths)
            for got, expected in zip(parts, np.split(x, [4, 8], axis=2)):
                np.testing.assert_array_equal(got, expected)
    assert calls == ["reshape", "mvn", "split"] * 3


@pytest.mark.parametrize("lengths", [[4, -1], np.array([[4], [-1]], np.int64),
                                     np.array([4, -1], np.int32)],
                         ids=["list", "2-d", "int32"])
def test_computed_split_lengths_of_any_form_give_the_same_pieces(lengths):
    axis = np.array(-1, np.int64)
    split = kernel("VariadicSplit", [None, axis, None], n_out=2)
    first, second = split(X, axis, lengths)
    np.testing.assert_array_equal(first, X[..., :4][..., :4])
    assert second.shape == (2, 3, 0)
    with pytest.raises(ValueError):
        split(X, axis, np.array([5, -1], np.int64))


def test_a_kernel_keeps_its_own_shapes_too(monkeypatch):
    target = np.array([-1], np.int64)
    fn = kernel("Reshape", [None, target], special_zero="false")
    assert fn(X, target).shape == (24,)
    SHAPES.found.clear()

    def not_again(*_):
        raise AssertionError("the shape was computed again")

    monkeypatch.setattr(shape_ops, "reshape_target", not_again)
    assert fn(X, target).shape == (24,)             # a steady loop's hit: the kernel's own memo
    assert not SHAPES.found
