"""Fourier-transform kernels (loopdbg/ops/spectral.py): DFT, IDFT, RDFT, IRDFT, STFT, ISTFT."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(13)


def f32(*shape):
    return RNG.uniform(-1, 1, size=shape).astype(np.float32)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


def test_dft_then_idft_is_the_identity():
    x = f32(3, 4, 2)
    y = kernel("DFT", 7)(x, np.array([0, 1]))
    np.testing.assert_allclose(kernel("IDFT", 7)(y, np.array([0, 1])), x, atol=1e-6)


def test_istft_inverts_stft():
    x = f32(2, 64)
    window = np.hanning(16).astype(np.float32) + 0.1
    spec = kernel("STFT", 15, transpose_frames="true")(x, window, np.array(16), np.array(4))
    back = kernel("ISTFT", 16, center="false", normalized="false")(
        spec, window, np.array(16), np.array(4))
    np.testing.assert_allclose(back, x, atol=1e-5)


def test_shape_rules():
    assert infer("RDFT", [TensorInfo("f32", (4, 6)), TensorInfo("i64", (1,))], {},
                 [None, np.array([1])], 1) == [TensorInfo("f32", (4, 4, 2))]
    assert infer("STFT", [TensorInfo("f32", (2, 64)), TensorInfo("f32", (16,)),
                          TensorInfo("i64", ()), TensorInfo("i64", ())],
                 {"transpose_frames": "false"}, [None, None, np.array(16), np.array(4)], 1) == \
        [TensorInfo("f32", (2, 13, 9, 2))]


oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


DFT_CASES = [((4, 6, 2), [0, 1], None), ((2, 5, 2), [-1], None), ((3, 4, 5, 2), [1, 2], [3, 8]),
             ((3, 4, 5, 2), [2, 0], [-1, 2]), ((8, 2), [0], [5])]


@oracle
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("shape, axes, sizes", DFT_CASES)
def test_dft(tmp_path, ovm, inverse, shape, axes, sizes):
    C, P = ovm["C"], ovm["P"]
    ins = [P(f32(*shape)), C(np.array(axes, np.int64))]
    if sizes is not None:
        ins.append(C(np.array(sizes, np.int64)))
    ovm["check"](tmp_path, ovm["o7"].idft if inverse else ovm["o7"].dft, ins, rtol=1e-4,
                 atol=1e-5)


@oracle
@pytest.mark.parametrize("shape, axes, sizes", [
    ((4, 6), [1], None), ((4, 6), [0, 1], None), ((3, 5, 4), [2, 1], [3, 5]),
    ((3, 5, 4), [0, 2], [2, 3]), ((7,), [0], [4])])
def test_rdft(tmp_path, ovm, shape, axes, sizes):
    C, P = ovm["C"], ovm["P"]
    ins = [P(f32(*shape)), C(np.array(axes, np.int64))]
    if sizes is not None:
        ins.append(C(np.array(sizes, np.int64)))
    ovm["check"](tmp_path, ovm["o9"].rdft, ins, rtol=1e-4, atol=1e-5)


@oracle
@pytest.mark.parametrize("shape, axes, sizes", [((4, 4, 2), [1], None), ((4, 4, 2), [0, 1], None),
                                                ((3, 5, 4, 2), [0, 2], [2, 7]),
                                                ((5, 2), [0], [6]), ((5, 2), [0], [11])])
def test_irdft(tmp_path, ovm, shape, axes, sizes):
    C, P = ovm["C"], ovm["P"]
    # a spectrum of a real signal (Hermitian), so that every convention agrees on it
    real_shape = list(shape[:-1])
    real_shape[axes[-1]] = 2 * (shape[axes[-1]] - 1)
    spec = np.fft.rfftn(f32(*real_shape), axes=axes)
    data = np.stack([spec.real, spec.imag], -1).astype(np.float32)
    ins = [P(data), C(np.array(axes, np.int64))]
    if sizes is not None:
        ins.append(C(np.array(sizes, np.int64)))
    ovm["check"](tmp_path, ovm["o9"].irdft, ins, rtol=1e-4, atol=1e-5)


def test_rdft_pads_with_zeros_and_keeps_minus_one_axes():
    # (The CPU plugin refuses both; there is no reference RDFT.)
    x = f32(3, 5, 4)
    got = kernel("RDFT", 9)(x, np.array([2, 1]), np.array([6, -1]))
    want = np.fft.rfftn(np.pad(x, [(0, 0), (0, 0), (0, 2)]), axes=[2, 1])
    np.testing.assert_allclose(got, np.stack([want.real, want.imag], -1), atol=1e-5)


def test_irdft_pads_other_axes_with_zeros():
    # (The CPU plugin leaves a zero-padded axis other than the last unwritten: garbage; there
    # is no reference IRDFT. numpy is the check here.)
    x = f32(3, 5, 4, 2)
    got = kernel("IRDFT", 9)(x, np.array([0, 2]), np.array([4, 7]))
    z = np.pad(x[..., 0] + 1j * x[..., 1], [(0, 1), (0, 0), (0, 0)])
    np.testing.assert_allclose(got, np.fft.irfftn(z, s=[4, 7], axes=[0, 2]), atol=1e-6)


@oracle
def test_irdft_of_a_non_hermitian_input(tmp_path, ovm):
    C, P = ovm["C"], ovm["P"]
    ovm["check"](tmp_path, ovm["o9"].irdft, [P(f32(3, 4, 2)), C(np.array([0, 1], np.int64))],
                 rtol=1e-4, atol=1e-5)


@oracle
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("signal_shape, window, size, step", [
    ((2, 48), 16, 16, 4), ((40,), 8, 12, 5), ((1, 33), 11, 11, 11)])
def test_stft(tmp_path, ovm, transpose, signal_shape, window, size, step):
    C, P = ovm["C"], ovm["P"]
    ins = [P(f32(*signal_shape)), P(np.hanning(window).astype(np.float32) + 0.05),
           C(np.array(size, np.int64)), C(np.array(step, np.int64))]
    ovm["check"](tmp_path, lambda *a: ovm["o15"].stft(*a, transpose), ins, rtol=1e-4,
                 atol=1e-5)


@oracle
@pytest.mark.parametrize("center, normalized, length", [(False, False, None), (True, False, None),
                                                         (False, True, 30), (True, True, 50)])
@pytest.mark.parametrize("batched", [False, True])
def test_istft(tmp_path, ovm, center, normalized, length, batched):
    C, P = ovm["C"], ovm["P"]
    size, step, frames = 16, 4, 9
    data = f32(*((2,) if batched else ()), size // 2 + 1, frames, 2)
    ins = [P(data), P(np.hanning(12).astype(np.float32) + 0.1), C(np.array(size, np.int64)),
           C(np.array(step, np.int64))]
    if length is not None:
        ins.append(C(np.array(length, np.int64)))
    ovm["check"](tmp_path, lambda *a: ovm["o16"].istft(
        *a[:4], center, normalized, a[4] if len(a) > 4 else None), ins, rtol=1e-4, atol=1e-5)
