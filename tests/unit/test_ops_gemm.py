"""Matrix products on BLAS's fast path (loopdbg.ops.gemm): the same values as numpy's stacked
matmul, computed as one 2-D product where a stack meets one matrix."""

import numpy as np
import pytest

from loopdbg.ops import gemm


def _operands(dtype, a_shape, b_shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(a_shape).astype(dtype),
                rng.standard_normal(b_shape).astype(dtype))
    return rng.integers(-5, 5, a_shape).astype(dtype), rng.integers(-5, 5, b_shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
@pytest.mark.parametrize("a_shape, b_shape", [
    ((1, 7, 12), (12, 5)), ((3, 2, 4, 12), (12, 5)), ((7, 12), (12, 5)), ((12,), (12, 5)),
    ((7, 12), (12,)), ((2, 7, 12), (2, 12, 5)), ((7, 12), (3, 12, 5)), ((1, 1, 12), (12, 1)),
])
def test_equal_to_numpy(dtype, a_shape, b_shape):
    a, b = _operands(dtype, a_shape, b_shape)
    want = np.matmul(a, b)
    got = gemm.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype != np.float16 else 1e-2, atol=1e-5)


@pytest.mark.parametrize("ta, tb", [(False, True), (True, False), (True, True)])
def test_transposed_and_strided_operands(ta, tb):
    a, b = _operands(np.float32, (2, 3, 7, 12), (12, 5))
    a_in = np.swapaxes(a, -1, -2).copy() if ta else a          # stored as the layer says
    b_in = b.T.copy() if tb else b
    got = gemm.matmul_t(a_in, b_in, ta, tb)
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_a_stack_times_one_matrix_is_one_2d_product(monkeypatch):
    seen = []
    real = np.matmul

    def spy(x, y, *rest, **kw):
        seen.append((x.ndim, y.ndim))
        return real(x, y, *rest, **kw)

    monkeypatch.setattr(gemm.np, "matmul", spy)
    a, b = _operands(np.float32, (1, 9, 16), (8, 16))
    out = gemm.matmul_t(a, b, False, True)            # a (1, T, K) against a transposed weight
    assert seen == [(2, 2)]
    np.testing.assert_allclose(out, real(a, b.T), rtol=1e-5, atol=1e-5)


def test_a_contiguous_stack_of_one_goes_to_numpy_as_it_is(monkeypatch):
    """(1, T, K) @ (K, N), both C-contiguous (an exporter's linear layer, ONNX's too): numpy's
    matmul makes that one GEMM itself; no views around it, and the same sums."""
    seen = []
    real = np.matmul

    def spy(x, y, *rest, **kw):
        seen.append((x.shape, y.shape))
        return real(x, y, *rest, **kw)

    a, b = _operands(np.float32, (1, 9, 16), (16, 8))
    expected = real(a.reshape(9, 16), b).reshape(1, 9, 8)
    monkeypatch.setattr(gemm.np, "matmul", spy)
    out = gemm.matmul(a, b)
    assert seen == [((1, 9, 16), (16, 8))]
    assert np.array_equal(out, expected) and out.shape == (1, 9, 8)


@pytest.mark.parametrize("b_shape, copied", [((4, 8, 16), False), ((8, 64, 128), True)])
def test_a_big_strided_stack_is_made_contiguous(monkeypatch, b_shape, copied):
    seen = []
    real = np.matmul

    def spy(x, y, *rest, **kw):
        seen.append(y.flags.c_contiguous)
        return real(x, y, *rest, **kw)

    a, b = _operands(np.float32, (b_shape[0], 6, b_shape[1]), b_shape)
    strided = b[:, :, ::2]
    assert not strided.flags.c_contiguous
    want = real(a, strided)
    monkeypatch.setattr(gemm.np, "matmul", spy)
    np.testing.assert_allclose(gemm.matmul(a, strided), want, rtol=1e-5, atol=1e-4)
    assert seen == [copied]             # a small one is multiplied as it is: a copy costs more


def test_transposed_constant_is_read_only_c_order():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = gemm.transposed_constant(w)
    assert t.flags.c_contiguous and not t.flags.writeable
    assert t.tolist() == w.T.tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape", [(1, 12, 192), (12, 192), (2, 4, 192), (1, 8, 192)])
def test_a_big_weight_goes_first_for_many_rows(monkeypatch, dtype, a_shape):
    seen = []
    real = np.matmul

    def spy(x, y, *rest, **kw):
        seen.append(x.shape)
        return real(x, y, *rest, **kw)

    a, b = _operands(dtype, a_shape, (192, 256))
    want = real(a, b)
    monkeypatch.setattr(gemm.np, "matmul", spy)
    got = gemm.matmul(a, b)
    assert seen == [(256, 192)]                     # (Wᵀ · Aᵀ)ᵀ: one GEMM, the weight first
    assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("a_shape, b_shape", [((1, 7, 192), (192, 256)), ((1, 12, 48), (48, 192)),
                                              ((1, 192), (192, 1024))])
def test_few_rows_or_a_small_weight_keep_the_usual_order(monkeypatch, a_shape, b_shape):
    seen = []
    real = np.matmul

    def spy(x, y, *rest, **kw):
        seen.append(x.shape[-1])
        return real(x, y, *rest, **kw)

    a, b = _operands(np.float32, a_shape, b_shape)
    monkeypatch.setattr(gemm.np, "matmul", spy)
    got = gemm.matmul(a, b)
    assert seen == [b_shape[0]]                     # A first: its K columns
    np.testing.assert_allclose(got, real(a, b), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
@pytest.mark.parametrize("a_shape, b_shape", [
    ((1, 7, 48), (48, 144)), ((3, 5, 48), (48, 16)), ((7, 48), (48, 16)), ((48,), (48, 16)),
    ((2, 3, 4, 48), (48, 16)), ((4, 20, 192), (192, 192)), ((1, 7, 12), (12,)),
    ((1, 1, 48), (48, 144)), ((1, 2, 9), (9, 1)), ((1, 25, 1), (1, 9)),
])
def test_a_constant_operand_gives_matmuls_values_bit_for_bit(dtype, a_shape, b_shape):
    a, b = _operands(dtype, a_shape, b_shape, seed=3)
    kernel = gemm.with_constant(b)
    want = gemm.matmul(a, b)
    got = kernel(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    strided = np.asfortranarray(a) if a.ndim > 1 else a        # not C order: matmul's copy
    np.testing.assert_array_equal(kernel(strided, b), gemm.matmul(strided, b))
    other = a.astype(np.float64 if dtype != np.float64 else np.float32)
    np.testing.assert_array_equal(kernel(other, b), gemm.matmul(other, b))


def test_a_constant_operand_of_the_wrong_size_fails_as_matmul_does():
    kernel = gemm.with_constant(np.ones((48, 16), np.float32))
    with pytest.raises(ValueError) as got:
        kernel(np.ones((1, 3, 47), np.float32), None)
    with pytest.raises(ValueError) as want:
        gemm.matmul(np.ones((1, 3, 47), np.float32), np.ones((48, 16), np.float32))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
@pytest.mark.parametrize("a_shape", [(1, 20, 192), (1, 5, 192), (2, 9, 192), (20, 192), (192,),
                                     (3, 4, 5, 192), (1, 8, 192)])
def test_a_weight_stored_transposed_gives_matmuls_values(dtype, a_shape):
    a, w = _operands(dtype, a_shape, (576, 192), seed=4)        # (N, K): 110,592 elements
    kernel = gemm.with_transposed_constant(w)
    want = gemm.matmul(a, gemm.transposed_constant(w))
    got = kernel(a, w)
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype != np.float16 else 1e-2, atol=1e-4)
    strided = np.asfortranarray(a)
    np.testing.assert_allclose(kernel(strided, w), want, rtol=1e-5 if dtype != np.float16
                               else 1e-2, atol=1e-4)
    with pytest.raises(ValueError):
        kernel(a[..., :100], w)                                 # K of 100, not 192
