"""erf and Gelu's erf form without scipy (loopdbg.ops.erf's rational) against math.erf, for the IR
Erf/Gelu and the ONNX Erf/Gelu kernels; the bounds are the module's stated accuracy."""

import math

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops import erf as erf_module
from loopdbg.ops.registry import make_kernel

EXACT = np.frompyfunc(math.erf, 1, 1)


@pytest.fixture(autouse=True)
def without_scipy(monkeypatch):
    monkeypatch.setattr(erf_module, "_ERF", erf_module._erf_rational)


def kernel(type_, version="opset1", **data):
    layer = Layer(id=1, name="x", type=type_, version=version, data=data,
                  inputs=(Port(0, 0),), outputs=(Port(1, 0),))
    return make_kernel(layer)[0]


def onnx_kernel(type_, version):
    layer = Layer(id=1, name="x", type=f"onnx.{type_}", version=f"opset{version}", data={},
                  inputs=(Port(0, 0),), outputs=(Port(1, 0),))
    return make_kernel(layer)[0]


def exact_erf(x):
    return EXACT(np.asarray(x, np.float64)).astype(np.float64)


def exact_gelu(x):
    w = np.asarray(x, np.float64)
    return 0.5 * w * (1 + EXACT(w * math.sqrt(0.5)).astype(np.float64))


def dense(dtype):
    """Both signs of: an even grid over [0, 4.5], a log grid from the smallest subnormal up,
    around the clamp (4) and where float32's erf becomes 1 (3.92), large numbers up to the
    largest finite one."""
    info = np.finfo(dtype)
    small = np.geomspace(float(info.smallest_subnormal), 4, 100_001)
    x = np.concatenate([np.linspace(0, 4.5, 200_001), small, np.linspace(3.85, 4.05, 20_001),
                        np.geomspace(4, float(info.max) / 2, 1_000), [info.max]]).astype(dtype)
    return np.concatenate([x, -x])


def test_float32_erf_within_3_units_of_math_erf_and_relative_near_zero():
    x = dense(np.float32)
    for got in (kernel("Erf")(x), onnx_kernel("Erf", 13)(x)):
        assert got.dtype == np.float32
        exact = exact_erf(x)
        err = np.abs(got.astype(np.float64) - exact)
        unit = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        assert (err <= 2.7 * unit).all(), x[np.argmax(err / unit)]
        assert err.max() < 1.6e-7      # A&S in float32, as before: 4.8e-7 (and 56 units near 0.1)
        assert (np.abs(got) <= 1).all()
        tiny = (np.abs(x) < 1e-3) & (x != 0)
        assert (err[tiny] <= 1.5 * unit[tiny]).all()    # relative: 1e-30 is not rounded to 0


def test_float64_erf_better_than_abramowitz_stegun():
    x = dense(np.float64)
    got = kernel("Erf")(x)
    assert got.dtype == np.float64
    exact = exact_erf(x)
    err = np.abs(got - exact)
    assert err.max() < 4e-8                               # A&S 7.1.26: 1.5e-7
    nonzero = exact != 0
    bound = 4e-8 * np.abs(exact) + np.spacing(np.abs(got))     # (subnormals' own rounding)
    assert (err[nonzero] <= bound[nonzero]).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_erf_edges(dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, 4.0, -4.0, 9.0,
                  info.smallest_subnormal, -info.smallest_subnormal], dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):     # no warning either
        got = kernel("Erf")(x)
        got_onnx = onnx_kernel("Erf", 9)(x)
    for out in (got, got_onnx):
        assert out.dtype == dtype
        assert np.signbit(out[:2]).tolist() == [False, True]
        assert out[2:4].tolist() == [1, -1] and np.isnan(out[4])
        assert out[5:10].tolist() == [1, -1, 1, -1, 1]
        # erf(tiny) = tiny 2/sqrt(pi), rounded: the smallest subnormal itself
        assert out[10:].tolist() == [x[10], x[11]]


def test_every_float16_erf_and_gelu_within_one_float16_step():
    # computed in float32 and rounded back once (in float16 arithmetic the rational would keep
    # three digits): erf within one float16 step of the exact value everywhere; Gelu too, or
    # where x (1 + erf)/2 cancels (x below -3: Gelu(-3.8) = -2.5e-4, its steps 2.4e-7 apart)
    # within float32's error of erf times |x| (test_gelu_against_its_definition_in_float64)
    x = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    for gelu, got, exact in ((False, kernel("Erf")(x), exact_erf(x)),
                             (False, onnx_kernel("Erf", 13)(x), exact_erf(x)),
                             (True, kernel("Gelu", "opset7", approximation_mode="ERF")(x),
                              exact_gelu(x)),
                             (True, onnx_kernel("Gelu", 20)(x), exact_gelu(x))):
        assert got.dtype == np.float16
        with np.errstate(over="ignore"):
            step = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
        if gelu:
            step = np.maximum(step, 1.4e-7 * np.abs(x.astype(np.float64)) + step / 2)
        assert (np.abs(got.astype(np.float64) - exact) <= step).all()


@pytest.mark.parametrize("dtype, per_x", [(np.float32, 1.4e-7), (np.float64, 2e-8)])
def test_gelu_against_its_definition_in_float64(dtype, per_x):
    # Gelu(x) = x (1 + erf(x/√2))/2: the error is erf's, times |x|/2, plus the result's rounding
    x = np.concatenate([np.linspace(-8, 8, 200_001), np.geomspace(1e-30, 8, 50_001),
                        -np.geomspace(1e-30, 8, 50_001)]).astype(dtype)
    exact = exact_gelu(x)
    unit = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    for got in (kernel("Gelu", "opset7", approximation_mode="ERF")(x), kernel("Gelu", "opset2")(x),
                onnx_kernel("Gelu", 20)(x)):
        assert got.dtype == dtype
        err = np.abs(got.astype(np.float64) - exact)
        assert (err <= per_x * np.abs(x.astype(np.float64)) + unit).all()
        # between 0 and x, of x's sign
        assert ((got / np.where(x == 0, 1, x) >= 0) & (got / np.where(x == 0, 1, x) <= 1)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_edges(dtype):
    big = np.finfo(dtype).max
    x = np.array([0.0, -0.0, 5.66, big, np.inf, -5.66, -big, np.nan, 1e-7, -1e-7], dtype)
    with np.errstate(invalid="ignore"):                      # -inf: -inf times 0
        for got in (kernel("Gelu", "opset7", approximation_mode="ERF")(x),
                    onnx_kernel("Gelu", 20)(x)):
            assert np.signbit(got[:2]).tolist() == [False, True]
            assert got[2:5].tolist() == x[2:5].tolist()     # x itself for large x, no overflow
            assert got[5:7].tolist() == [0, 0] and np.isnan(got[7])
            np.testing.assert_allclose(got[8:], exact_gelu(x[8:]), rtol=1e-6)


def test_erf_of_scalars_and_integers():
    assert isinstance(erf_module.erf(0.5), np.floating)
    assert math.isclose(erf_module.erf(0.5), math.erf(0.5), rel_tol=1e-7)
    zero_d = erf_module.erf(np.array(0.5, np.float32))
    assert zero_d.shape == () and zero_d.dtype == np.float32
    # IR Erf of integers rounds the float64 result back; ONNX Erf keeps the integer type
    assert kernel("Erf")(np.array([-3, 0, 2], np.int32)).tolist() == [-1, 0, 1]
    assert onnx_kernel("Erf", 13)(np.array([-3, 0, 2], np.int64)).dtype == np.int64


def test_erf_of_a_strided_view_is_its_copy():
    x = np.linspace(-5, 5, 2000, dtype=np.float32).reshape(2, -1)
    np.testing.assert_array_equal(erf_module.erf(x.T), erf_module.erf(x.T.copy()))
    np.testing.assert_array_equal(erf_module.gelu_erf(x[:, ::3]),
                                  erf_module.gelu_erf(np.ascontiguousarray(x[:, ::3])))
