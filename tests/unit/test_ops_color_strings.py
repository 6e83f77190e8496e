"""Colour conversions (loopdbg/ops/color.py) and string tensors (loopdbg/ops/strings.py)."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel

RNG = np.random.default_rng(21)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


# ---- colour: plain unit tests ------------------------------------------------------------------

def test_grey_stays_grey():
    y = np.full((1, 2, 2, 1), 126, np.uint8)
    uv = np.full((1, 1, 1, 2), 128, np.uint8)
    out = kernel("NV12toRGB", 8)(y, uv)
    assert (out == round(1.164 * 110)).all() and out.shape == (1, 2, 2, 3)


def test_one_plane_and_two_planes_agree():
    y, uv = u8(2, 4, 6, 1), u8(2, 2, 3, 2)
    single = np.concatenate([y.reshape(2, -1), uv.reshape(2, -1)], 1).reshape(2, 6, 6, 1)
    np.testing.assert_array_equal(kernel("NV12toBGR", 8)(single), kernel("NV12toBGR", 8)(y, uv))


# ---- colour: against OpenVINO ------------------------------------------------------------------

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


def _ties() -> tuple[np.ndarray, np.ndarray]:
    """Y and U values (V = 128) whose blue is exactly k + 0.5 in float32: where rounding shows."""
    f = np.float32
    y, u = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    blue = f(1.164) * (y.astype(f) - f(16)) + f(2.018) * (u.astype(f) - f(128))
    hit = (blue > 0) & (blue < 255) & (blue - np.floor(blue) == f(0.5))
    return y[hit][:4].astype(np.uint8), u[hit][:4].astype(np.uint8)


@oracle
def test_nv12_u8_ties(tmp_path, ovm):
    # The specification does not say how integers round; the CPU plugin rounds half to even.
    ys, us = _ties()
    assert len(ys) == 4
    y = np.repeat(np.repeat(ys.reshape(1, 2, 2, 1), 2, 1), 2, 2)     # each tie a 2x2 block
    uv = np.stack([us.reshape(1, 2, 2), np.full((1, 2, 2), 128, np.uint8)], -1)
    ovm["check"](tmp_path, ovm["o8"].nv12_to_bgr, [ovm["P"](y), ovm["P"](uv)])


@oracle
@pytest.mark.parametrize("bgr", [False, True])
@pytest.mark.parametrize("planes", [1, 2])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_nv12(tmp_path, ovm, bgr, planes, dtype):
    P = ovm["P"]
    factory = ovm["o8"].nv12_to_bgr if bgr else ovm["o8"].nv12_to_rgb
    if planes == 1:
        ins = [P(u8(2, 6, 8, 1).astype(dtype))]
    else:
        ins = [P(u8(2, 4, 8, 1).astype(dtype)), P(u8(2, 2, 4, 2).astype(dtype))]
    ovm["check"](tmp_path, factory, ins, rtol=1e-5, atol=1e-3)


@oracle
@pytest.mark.parametrize("bgr", [False, True])
@pytest.mark.parametrize("planes", [1, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_i420(tmp_path, ovm, bgr, planes, dtype):
    P = ovm["P"]
    factory = ovm["o8"].i420_to_bgr if bgr else ovm["o8"].i420_to_rgb
    if planes == 1:
        ins = [P(u8(1, 9, 4, 1).astype(dtype))]
    else:
        ins = [P(u8(2, 6, 4, 1).astype(dtype)), P(u8(2, 3, 2, 1).astype(dtype)),
               P(u8(2, 3, 2, 1).astype(dtype))]
    ovm["check"](tmp_path, factory, ins, rtol=1e-5, atol=1e-3)


# RGBtoNV12 / BGRtoNV12 have no differential test: no OpenVINO 2026.4 device runs them (the CPU
# plugin has no kernel and the reference no evaluate). They are checked by hand here.

@pytest.mark.parametrize("type_", ["RGBtoNV12", "BGRtoNV12"])
def test_to_nv12_by_hand(type_):
    image = u8(1, 2, 2, 3)
    rgb = image[..., ::-1] if type_ == "BGRtoNV12" else image
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = np.clip(np.floor(0.257 * r + 0.504 * g + 0.098 * b + 16 + 0.5), 0, 255)
    u = np.clip(np.floor(-0.148 * r - 0.291 * g + 0.439 * b + 128 + 0.5), 0, 255)
    v = np.clip(np.floor(0.439 * r - 0.368 * g - 0.071 * b + 128 + 0.5), 0, 255)
    out_y, out_uv = kernel(type_, 17, single_plane="false")(image)
    np.testing.assert_array_equal(out_y[0, ..., 0], y[0])
    np.testing.assert_array_equal(out_uv[0, 0, 0], [np.floor(u.mean() + 0.5),
                                                    np.floor(v.mean() + 0.5)])
    single = kernel(type_, 17, single_plane="true")(image)
    assert single.shape == (1, 3, 2, 1)
    np.testing.assert_array_equal(single.reshape(-1), np.concatenate([out_y.reshape(-1),
                                                                      out_uv.reshape(-1)]))


def test_to_nv12_and_back_is_close():
    image = RNG.uniform(40, 200, (1, 4, 4, 3)).astype(np.float32)
    image[:, 1::2] = image[:, ::2]
    image[:, :, 1::2] = image[:, :, ::2]            # flat 2×2 blocks: chroma survives
    y, uv = kernel("RGBtoNV12", 17, single_plane="false")(image)
    back = kernel("NV12toRGB", 8)(y, uv)
    np.testing.assert_allclose(back, image, atol=1.5)


# ---- strings -----------------------------------------------------------------------------------

def test_unpack_then_pack_is_the_identity():
    strings = np.array([["ab", "çd"], ["", "日本"]])
    begins, ends, symbols = kernel("StringTensorUnpack", 15)(strings)
    assert symbols.dtype == np.uint8 and begins.dtype == np.int32 and begins.shape == (2, 2)
    np.testing.assert_array_equal(kernel("StringTensorPack", 15)(begins, ends, symbols), strings)


def test_bytes_that_are_not_utf8_survive_a_round_trip():
    symbols = np.array([0xFF, 0x61], np.uint8)
    packed = kernel("StringTensorPack", 15)(np.array([0]), np.array([2]), symbols)
    _, _, back = kernel("StringTensorUnpack", 15)(packed)
    np.testing.assert_array_equal(back, symbols)


def test_pack_refuses_pairs_outside_the_symbols():
    with pytest.raises(ValueError, match="outside"):
        kernel("StringTensorPack", 15)(np.array([0]), np.array([3]), np.zeros(2, np.uint8))


@oracle
@pytest.mark.parametrize("strings", [np.array([["ab", "çd"], ["", "xyz"]]),
                                     np.array(["Grüße", "", "日本語", "a"]),
                                     np.array("one")])
def test_string_tensor_unpack(tmp_path, ovm, strings):
    import openvino.opset15 as o15
    ovm["check"](tmp_path, o15.string_tensor_unpack, [ovm["P"](strings)])


@oracle
@pytest.mark.parametrize("begins, ends", [([0, 3, 3], [3, 3, 10]), ([[0, 1], [4, 4]],
                                                                    [[1, 4], [4, 10]])])
def test_string_tensor_pack(tmp_path, ovm, begins, ends):
    # OpenVINO gives its strings back as bytes; loopdbg's are text (UTF-8 decoded).
    import openvino.opset15 as o15
    from _ov_single_op import run_openvino
    symbols = np.frombuffer("abcñandú".encode(), np.uint8).copy()
    ins = [ovm["P"](np.array(begins, np.int32)), ovm["P"](np.array(ends, np.int32)),
           ovm["P"](symbols)]
    want, = run_openvino(o15.string_tensor_pack, ins, "cpu", tmp_path / "op.xml")
    got = kernel("StringTensorPack", 15)(*(x.value for x in ins))
    assert got.shape == want.shape
    assert [s.encode("utf-8", "surrogateescape") for s in got.reshape(-1)] == \
        [bytes(b) for b in want.reshape(-1)]
