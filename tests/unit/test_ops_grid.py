"""GridSample-9: hand-computed values (no OpenVINO) and differential tests against OpenVINO's
reference implementation and CPU plugin (``-m oracle``)."""

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel


def kernel(**data):
    layer = Layer(id=1, name="gs", type="GridSample", version="opset9", data=data,
                  inputs=(Port(0, 0), Port(1, 1)), outputs=(Port(2, 0),))
    return make_kernel(layer)[0]


IMG = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)       # rows 0-3, 4-7, 8-11


def at(*xy):
    return np.array(xy, np.float32).reshape(1, 1, -1, 2)


def test_align_corners_maps_extrema_to_border_pixel_centres():
    fn = kernel(align_corners="true")
    np.testing.assert_allclose(fn(IMG, at(-1, -1, 1, 1, 0, 0))[0, 0, 0], [0, 11, 5.5])
    # without: -1 is the outer edge, half a pixel before the first centre (zeros padding)
    fn = kernel(align_corners="false")
    np.testing.assert_allclose(fn(IMG, at(-1, -1, 0, 0))[0, 0, 0], [0, 5.5])
    np.testing.assert_allclose(fn(IMG, at(-0.75, -2 / 3))[0, 0, 0], [0])   # pixel (0, 0) centre


def test_padding_modes_read_outside_the_image():
    far = at(1.5, 0)              # x = 4.5 px (no align), y = 1 px: row 1 is 4..7
    assert kernel(mode="nearest")(IMG, far).item() == 0
    assert kernel(mode="nearest", padding_mode="border")(IMG, far).item() == 7
    # reflection about the edges: index 4 (4.5 rounds half to even) -> 3
    assert kernel(mode="nearest", padding_mode="reflection")(IMG, far).item() == 7
    # about the border centres with align_corners: x = 1.5 -> 4.5 px, index 4 (even) -> 2
    assert kernel(mode="nearest", padding_mode="reflection", align_corners="1")(
        IMG, at(1.5, 0)).item() == 6


def test_bicubic_keys_kernel():
    fn = kernel(mode="bicubic", align_corners="true")
    # at pixel centres the pixel itself; a constant image stays constant everywhere inside
    np.testing.assert_allclose(fn(IMG, at(-1 / 3, 0, 1, 1))[0, 0, 0], [5, 11], atol=1e-6)
    flat = np.full((1, 1, 6, 6), 2.5, np.float32)
    np.testing.assert_allclose(fn(flat, at(-0.1, 0.2, 0.3, -0.4)), 2.5, rtol=1e-6)
    # halfway between pixels the weights are [-3/32, 19/32, 19/32, -3/32] (A = -0.75)
    row = np.array([[[[0, 0, 32, 0, 64, 0]]]], np.float32)
    assert fn(row, at(0, 0)).item() == pytest.approx(19 - 6)     # x = 2.5 px
    assert fn(row, at(-0.2, 0)).item() == pytest.approx(32)      # x = 2 px


def test_integer_images_truncate_and_saturate():
    img = np.array([[[[0, 255], [255, 0]]]], np.uint8)
    out = kernel(mode="bicubic", padding_mode="border")(img, at(-0.2, -0.2, 0.6, 0.1))
    assert out.dtype == np.uint8
    ref = kernel(mode="bicubic", padding_mode="border")(img.astype(np.float32),
                                                       at(-0.2, -0.2, 0.6, 0.1))
    np.testing.assert_array_equal(out, np.clip(np.trunc(ref), 0, 255))


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="grid"):
        kernel()(IMG, np.zeros((1, 2, 2, 3), np.float32))


@pytest.mark.oracle
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_grid_sample_against_openvino(tmp_path, mode, padding, align, backend):
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    rng = np.random.default_rng(hash((mode, padding, align)) % 1000)
    data = (rng.standard_normal((2, 3, 5, 7)) * 4).astype(np.float32)
    grid = rng.uniform(-2.5, 2.5, (2, 4, 6, 2)).astype(np.float32)
    attrs = {"align_corners": align, "mode": mode, "padding_mode": padding}
    tol = 0 if backend == "ref" else 1e-4
    check(tmp_path, lambda d, g: o9.grid_sample(d, g, attrs), [P(data), P(grid)],
          backend=backend, rtol=tol or 1e-7, atol=tol)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype, grid_dtype", [(np.int32, np.float32), (np.float16, np.float32),
                                               (np.float32, np.float16)])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_grid_sample_types_against_openvino(tmp_path, dtype, grid_dtype, mode):
    import openvino.opset9 as o9
    from _ov_single_op import P, check
    rng = np.random.default_rng(5)
    data = (rng.standard_normal((1, 2, 4, 6)) * 30).astype(dtype)
    grid = rng.uniform(-1.3, 1.3, (1, 3, 5, 2)).astype(grid_dtype)
    attrs = {"align_corners": False, "mode": mode, "padding_mode": "border"}
    check(tmp_path, lambda d, g: o9.grid_sample(d, g, attrs), [P(data), P(grid)],
          rtol=1e-3, atol=1e-3)
