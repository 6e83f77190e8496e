"""Embedding-bag kernels (loopdbg/ops/embedding.py)."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel

RNG = np.random.default_rng(9)
TABLE = RNG.uniform(-2, 2, (6, 3, 2)).astype(np.float32)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


def test_offsets_by_hand():
    k = kernel("EmbeddingBagOffsets", 15, reduction="mean")
    out = k(TABLE, np.array([0, 2, 5, 1]), np.array([0, 3, 3]), np.array(4))
    np.testing.assert_allclose(out[0], TABLE[[0, 2, 5]].mean(0), rtol=1e-6)
    np.testing.assert_array_equal(out[1], TABLE[4])
    np.testing.assert_array_equal(out[2], TABLE[1])


def test_an_index_outside_the_table_is_an_error():
    with pytest.raises(ValueError, match="outside the table"):
        kernel("EmbeddingBagPackedSum", 3)(TABLE, np.array([[0, 6]]))


def test_mean_with_weights_is_an_error():
    with pytest.raises(ValueError, match="only allowed with reduction 'sum'"):
        kernel("EmbeddingBagPacked", 15, reduction="mean")(TABLE, np.array([[0, 1]]),
                                                           np.ones((1, 2), np.float32))


oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


INDICES = np.array([0, 2, 5, 1, 1, 3, 4], np.int32)
WEIGHTS = RNG.uniform(0, 2, 7).astype(np.float32)


REDUCTIONS = [(3, "sum"), (15, "sum"), (15, "mean")]
OFFSETS = [([0, 2, 2, 5], None, False), ([0, 2, 2, 5], 3, False), ([0, 3, 3, 6], 1, True),
           ([0, 6, 6], -1, True)]


@oracle
@pytest.mark.parametrize("version, reduction, offsets, default, weighted", [
    (v, r, *case) for v, r in REDUCTIONS for case in OFFSETS if r == "sum" or not case[2]])
def test_bag_offsets(tmp_path, ovm, version, reduction, offsets, default, weighted):
    C, P = ovm["C"], ovm["P"]
    idx_type = np.int64 if version == 15 else np.int32
    ins = [P(TABLE), C(INDICES.astype(idx_type)), C(np.array(offsets, idx_type))]
    if default is not None or weighted:
        ins.append(C(np.array(default if default is not None else -1, idx_type)))
    if weighted:
        ins.append(P(WEIGHTS))
    if version == 3:
        build = ovm["o3"].embedding_bag_offsets_sum
    else:
        def build(*a):
            return ovm["o15"].embedding_bag_offsets(*a, reduction=reduction)
    ovm["check"](tmp_path, build, ins)


@oracle
@pytest.mark.parametrize("version, reduction, weighted", [
    (v, r, w) for v, r in REDUCTIONS for w in (False, True) if r == "sum" or not w])
def test_bag_packed(tmp_path, ovm, version, reduction, weighted):
    C, P = ovm["C"], ovm["P"]
    ins = [P(TABLE), C(np.array([[0, 2, 5], [1, 1, 3], [4, 0, 0]], np.int32))]
    if weighted:
        ins.append(P(RNG.uniform(0, 2, (3, 3)).astype(np.float32)))
    if version == 3:
        build = ovm["o3"].embedding_bag_packed_sum
    else:
        def build(*a):
            return ovm["o15"].embedding_bag_packed(*a, reduction=reduction)
    ovm["check"](tmp_path, build, ins)


@oracle
@pytest.mark.parametrize("default, weighted", [(None, False), (2, False), (5, True), (0, True)])
def test_segments_sum(tmp_path, ovm, default, weighted):
    # (The CPU plugin refuses default_index -1, which the reference reads as "none".)
    C, P = ovm["C"], ovm["P"]
    ins = [P(TABLE), C(INDICES), C(np.array([0, 0, 0, 2, 2, 4, 4], np.int32)),
           C(np.array(6, np.int32))]
    if default is not None:
        ins.append(C(np.array(default, np.int32)))
    if weighted:
        ins.append(P(WEIGHTS))
    ovm["check"](tmp_path, ovm["o3"].embedding_segments_sum, ins)


# ---- SparseFillEmptyRows (loopdbg/ops/sparse.py) -----------------------------------------------

def test_sparse_fill_empty_rows_by_hand():
    k = kernel("SparseFillEmptyRows", 16)
    idx, vals, empty = k(np.array([5.0, 6.0]), np.array([4, 3]), np.array([[2, 1], [0, 2]]),
                         np.array(-1.0))
    np.testing.assert_array_equal(idx, [[0, 2], [1, 0], [2, 1], [3, 0]])
    np.testing.assert_array_equal(vals, [6, -1, 5, -1])
    np.testing.assert_array_equal(empty, [False, True, False, True])


@oracle
@pytest.mark.parametrize("indices, rows, dtype", [
    ([[0, 1], [0, 3], [2, 0], [4, 2]], 6, np.float32), ([[3, 1], [1, 0]], 5, np.int32),
    ([[0, 0], [1, 1], [2, 2]], 3, np.int64), (np.zeros((0, 2), np.int64).tolist(), 3, np.float32),
])
def test_sparse_fill_empty_rows(tmp_path, ovm, indices, rows, dtype):
    import openvino.opset16 as o16
    C, P = ovm["C"], ovm["P"]
    idx = np.array(indices, np.int64).reshape(-1, 2)
    values = (np.arange(len(idx)) + 1).astype(dtype)
    ovm["check"](tmp_path, o16.sparse_fill_empty_rows,
                 [P(values), C(np.array([rows, 4], np.int64)), P(idx),
                  C(np.array(-7, dtype))])
