"""Attention and linear-algebra kernels (loopdbg/ops/attention.py): ScaledDotProductAttention,
Einsum, GroupedMatMul, Inverse."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(5)


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


# ---- plain unit tests --------------------------------------------------------------------------

def test_sdpa_by_hand():
    q, k, v = f32(2, 3, 4), f32(2, 5, 4), f32(2, 5, 6)
    w = q.astype(np.float64) @ k.transpose(0, 2, 1) / 2.0
    w = np.exp(w - w.max(-1, keepdims=True))
    want = (w / w.sum(-1, keepdims=True)) @ v
    got = kernel("ScaledDotProductAttention", 13, causal="false")(q, k, v)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)    # worked in float32
    assert got.dtype == np.float32 and got.shape == (2, 3, 6)
    exact = kernel("ScaledDotProductAttention", 13, causal="false")(
        *(x.astype(np.float64) for x in (q, k, v)))                  # float64: in float64
    np.testing.assert_allclose(exact, want, rtol=1e-13)
    assert exact.dtype == np.float64


def test_sdpa_causal_and_boolean_mask_in_float32():
    q, k, v = f32(1, 2, 4, 3), f32(1, 2, 4, 3), f32(1, 2, 4, 5)
    causal = kernel("ScaledDotProductAttention", 13, causal="true")(q, k, v)
    keep = np.tril(np.ones((4, 4), bool))
    masked = kernel("ScaledDotProductAttention", 13, causal="false")(q, k, v, keep)
    np.testing.assert_array_equal(causal, masked)
    w = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2) / np.sqrt(3)
    w = np.exp(np.where(keep, w, -np.inf) - w.max(-1, keepdims=True))
    want = (w / w.sum(-1, keepdims=True)) @ v
    np.testing.assert_allclose(causal, want, rtol=1e-5, atol=1e-7)


def test_sdpa_a_row_masked_whole_is_nan_without_a_warning_and_the_others_exact():
    import warnings

    q, k, v = f32(1, 3, 4), f32(1, 3, 4), f32(1, 3, 2)
    keep = np.ones((3, 3), bool)
    keep[1] = False                                         # row 1 sees nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = kernel("ScaledDotProductAttention", 13)(q, k, v, keep)
        nan_in = kernel("ScaledDotProductAttention", 13)(q, k, v, np.where(keep, 0, np.nan))
    assert np.isnan(got[0, 1]).all() and np.isnan(nan_in[0, 1]).all()
    plain = kernel("ScaledDotProductAttention", 13)(q, k, v)
    np.testing.assert_array_equal(got[0, [0, 2]], plain[0, [0, 2]])
    np.testing.assert_array_equal(nan_in[0, [0, 2]], plain[0, [0, 2]])


def test_sdpa_scale_and_mask_inputs_that_change_between_calls():
    q, k, v = f32(1, 2, 3, 4), f32(1, 2, 5, 4), f32(1, 2, 5, 6)
    fn = kernel("ScaledDotProductAttention", 13)
    fresh = kernel("ScaledDotProductAttention", 13)
    half = np.array(0.5, np.float32)
    half.flags.writeable = False                    # a constant: its value is kept
    mask = f32(3, 5)
    first = fn(q, k, v, mask, half)
    np.testing.assert_array_equal(first, fresh(q, k, v, mask, np.array(0.5, np.float32)))
    other = np.array(0.25, np.float32)              # another scale, then it changes in place
    np.testing.assert_array_equal(fn(q, k, v, mask, other),
                                  fresh(q, k, v, mask, np.array(0.25, np.float32)))
    other[...] = 2.0
    np.testing.assert_array_equal(fn(q, k, v, mask, other),
                                  fresh(q, k, v, mask, np.array(2.0, np.float32)))
    np.testing.assert_array_equal(fn(q, k, v, mask, half), first)
    wide = f32(3, 2, 3, 5)                          # a mask that broadcasts the scores up
    got = fn(q, k, v, wide, half)
    assert got.shape == (3, 2, 3, 6)
    for b in range(3):
        np.testing.assert_array_equal(got[b], fresh(q, k, v, wide[b], half)[0])


class _Held(np.ndarray):
    """An array the kernel does not take for a plain one: it goes the general way."""


def test_sdpa_of_a_decoder_block_is_the_general_path_bit_for_bit():
    # float32 views of a fused QKV, a float causal mask, the constant scale: the short path
    # gives the general path's values bit for bit, also where a row is masked whole (NaN
    # there) or the mask holds NaN or +inf, and with a mask that broadcasts the scores up
    qkv = f32(1, 7, 3, 4, 8, lo=-4, hi=4)
    q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
    causal = np.triu(np.full((7, 7), -np.inf, np.float32), 1)
    whole = causal.copy()
    whole[3] = -np.inf
    odd = causal.copy()
    odd[2, 0], odd[5, 1] = np.nan, np.inf
    scale = np.array(1 / np.sqrt(8), np.float32)
    scale.flags.writeable = False
    fn = kernel("ScaledDotProductAttention", 13)
    fn(q, k, v, causal, scale)                      # the first call keeps the constant
    for mask in (causal, whole, odd, f32(7, 7), f32(2, 1, 4, 7, 7), None):
        with np.errstate(invalid="ignore"):
            got = fn(q, k, v, mask, scale)
            held = None if mask is None else mask.view(_Held)
            want = fn(q.view(_Held), k.view(_Held), v.view(_Held), held, scale)
        assert got.dtype == np.float32 and got.shape == want.shape
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_sdpa_a_constant_scale_in_each_work_type():
    # the kept constant (and its float32 value) serves float32 work; float16/float64 inputs
    # work in float64 with the scale's own value; each as a kernel without the constant gives
    q, k, v = f32(1, 2, 3, 4), f32(1, 2, 5, 4), f32(1, 2, 5, 6)
    third = np.array(1 / 3, np.float32)
    third.flags.writeable = False
    fn = kernel("ScaledDotProductAttention", 13)
    for dtype in (np.float32, np.float64, np.float16, np.float32):
        args = [x.astype(dtype) for x in (q, k, v)]
        got = fn(*args, None, third)
        want = kernel("ScaledDotProductAttention", 13)(*args, None, np.array(1 / 3, np.float32))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    assert fn(q, k, v).dtype == np.float32                      # no scale: 1/sqrt(E)
    np.testing.assert_array_equal(fn(q, k, v), fn(q, k, v, None, np.float32(0.5)))


def test_sdpa_sink_takes_part_in_the_softmax_only():
    q, k, v = f32(1, 2, 4), f32(1, 3, 4), f32(1, 3, 2)
    sink = np.full((1, 2, 1), -np.inf, np.float32)
    plain = kernel("ScaledDotProductAttention", 13)(q, k, v)
    with_sink = kernel("ScaledDotProductAttention", 13)(q, k, v, None, None, sink)
    np.testing.assert_allclose(with_sink, plain, rtol=1e-6)
    heavy = kernel("ScaledDotProductAttention", 13)(q, k, v, None, None, np.full_like(sink, 50))
    np.testing.assert_allclose(heavy, 0, atol=1e-12)


def test_einsum_shape_rule():
    infos = [TensorInfo("f32", (2, 3, 4)), TensorInfo("f32", (4, 5))]
    assert infer("Einsum", infos, {"equation": "abc,cd->dab"}, [None, None], 1) == \
        [TensorInfo("f32", (5, 2, 3))]
    assert infer("Einsum", infos, {"equation": "...c,cd"}, [None, None], 1) == \
        [TensorInfo("f32", (2, 3, 5))]


# GroupedMatMul-17 has no differential test: OpenVINO 2026.4 has neither a CPU kernel nor a
# reference evaluate for it. The weights are [G, N, K] as its documentation and shape inference
# say ("stored transposed").

def test_grouped_matmul_3d_by_hand():
    a, b = f32(3, 2, 4), f32(3, 5, 4)
    got = kernel("GroupedMatMul", 17)(a, b)
    want = np.stack([a[g] @ b[g].T for g in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.shape == (3, 2, 5) and got.dtype == np.float32


def test_grouped_matmul_offsets_by_hand():
    a, b = f32(7, 4), f32(3, 5, 4)
    got = kernel("GroupedMatMul", 17)(a, b, np.array([1, 4, 5], np.int64))
    want = np.zeros((7, 5), np.float32)
    for g, (lo, hi) in enumerate([(0, 1), (1, 4), (4, 5)]):
        want[lo:hi] = a[lo:hi] @ b[g].T
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not got[5:].any()
    with pytest.raises(ValueError, match="needs offsets"):
        kernel("GroupedMatMul", 17)(a, b)
    with pytest.raises(ValueError, match="must rise"):
        kernel("GroupedMatMul", 17)(a, b, np.array([3, 2, 7]))


def test_inverse_of_a_singular_matrix_is_an_error():
    with pytest.raises(ValueError, match="singular"):
        kernel("Inverse", 14)(np.ones((2, 2), np.float32))


# ---- against OpenVINO --------------------------------------------------------------------------

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


SDPA_SHAPES = [((2, 3, 4), (2, 5, 4), (2, 5, 6)), ((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)),
               ((2, 2, 1, 4), (2, 2, 6, 4), (2, 2, 6, 3))]


@oracle
@pytest.mark.parametrize("shapes", SDPA_SHAPES)
@pytest.mark.parametrize("variant", ["plain", "causal", "float_mask", "bool_mask", "scale",
                                     "causal_scale"])
def test_sdpa(tmp_path, ovm, shapes, variant):
    C, P = ovm["C"], ovm["P"]
    qs, ks, vs = shapes
    ins = [P(f32(*qs)), P(f32(*ks)), P(f32(*vs))]
    mask_shape = qs[:-1] + (ks[-2],)
    if variant == "float_mask":
        ins.append(P(f32(*mask_shape)))
    elif variant == "bool_mask":
        m = RNG.random(mask_shape) > 0.3
        m[..., 0] = True                   # no row fully masked
        ins.append(P(m))
    elif variant in ("scale", "causal_scale"):
        ins += [C(np.zeros((), np.float32)), C(np.array(0.37, np.float32))]
    causal = variant.startswith("causal")
    ovm["check"](tmp_path, lambda *a: ovm["o13"].scaled_dot_product_attention(
        *a, causal=causal), ins)


@oracle
def test_sdpa_mask_broadcasts(tmp_path, ovm):
    P = ovm["P"]
    ovm["check"](tmp_path, ovm["o13"].scaled_dot_product_attention,
                 [P(f32(2, 3, 4, 8)), P(f32(2, 3, 5, 8)), P(f32(2, 3, 5, 8)), P(f32(4, 5))])


@oracle
def test_sdpa_sink(tmp_path, ovm):
    C, P = ovm["C"], ovm["P"]
    ovm["check_ir"](tmp_path, "ScaledDotProductAttention", "opset13",
                    [P(f32(1, 2, 3, 4)), P(f32(1, 2, 5, 4)), P(f32(1, 2, 5, 4)),
                     P(f32(1, 2, 3, 5)), C(np.array(0.5, np.float32)), P(f32(1, 2, 3, 1))],
                    causal=False)


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]), ("ij->ji", [(3, 4)]), ("ij,kj", [(3, 4), (5, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 2)]), ("abc->", [(2, 3, 4)]),
    ("i,j->ij", [(3,), (4,)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ab,ab,ab->a", [(2, 3), (2, 3), (2, 3)]), ("iij->j", [(3, 3, 2)]),
    ("Ba,aC", [(2, 3), (3, 4)]),
]


@oracle
@pytest.mark.parametrize("equation, shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(tmp_path, ovm, equation, shapes):
    P = ovm["P"]
    ovm["check"](tmp_path, lambda *a: ovm["o7"].einsum(list(a), equation),
                 [P(f32(*s)) for s in shapes])


@oracle
def test_einsum_integers(tmp_path, ovm):
    P = ovm["P"]
    a = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    b = RNG.integers(-5, 5, (4, 2)).astype(np.int32)
    ovm["check"](tmp_path, lambda x, y: ovm["o7"].einsum([x, y], "ij,jk->ik"), [P(a), P(b)])


@oracle
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1,  1), (2, 2, 2, 2)])
def test_inverse(tmp_path, ovm, adjoint, shape):
    x = f32(*shape) + 3 * np.eye(shape[-1], dtype=np.float32)
    ovm["check"](tmp_path, lambda a: ovm["o14"].inverse(a, adjoint), [ovm["P"](x)],
                 rtol=1e-4, atol=1e-5)


