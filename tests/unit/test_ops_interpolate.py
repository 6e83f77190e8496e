"""Interpolate-1, Interpolate-4 and Interpolate-11.

Differential tests against OpenVINO: every mode, coordinate transformation and nearest mode on
the CPU plugin (f32, up- and downsampling, sizes and scales, pads, axes in any order); antialias,
integer and half data, and Pillow's bicubic with a cube_coeff other than -0.5 against OpenVINO's
reference implementation, where the CPU plugin departs from it (noted in the op table). Plain
tests need no OpenVINO.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(20260418)
oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch
TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn",
              "align_corners")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
SIZES = ([9, 4], [3, 12], [5, 6], [1, 13])          # up/down, down/up, unchanged, to length 1


def _x(dtype=np.float32, shape=(1, 2, 5, 6)):
    """Random data; integers well inside their type, so that no cubic overshoot leaves it
    (OpenVINO's reference then wraps around, loopdbg clips)."""
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    low = 50 if np.dtype(dtype).kind == "u" else -60
    return RNG.integers(low, low + 120, shape).astype(dtype)


def _v11(mode, calc="sizes", transform="half_pixel", nearest="round_prefer_floor",
         antialias=False, cube=-0.75, pads=None):
    import openvino.opset11 as o11

    def build(a, s, axes=None):
        return o11.interpolate(a, s, mode, calc, pads, None if pads is None else pads[::-1],
                               transform, nearest, antialias, cube, axes)
    return build


def _i64(v):
    from _ov_single_op import C
    return C(np.array(v, dtype=np.int64))


# ---- Interpolate-11 on the CPU plugin --------------------------------------------------------

GRID = ([("nearest", t, n) for t in TRANSFORMS for n in NEAREST]
        + [(m, t, "round_prefer_floor") for m in ("linear", "linear_onnx", "cubic")
           for t in TRANSFORMS])


@oracle
@pytest.mark.parametrize("mode,transform,nearest", GRID, ids=["-".join(g) for g in GRID])
def test_interpolate11_matches_openvino(tmp_path, mode, transform, nearest):
    from _ov_single_op import P, check
    x = _x()
    for sizes in SIZES:
        check(tmp_path, _v11(mode, transform=transform, nearest=nearest),
              [P(x), _i64(sizes), _i64([2, 3])], version="opset11")


PILLOW = list(itertools.product(("bilinear_pillow", "bicubic_pillow"), (*SIZES, [5, 3])))


@oracle
@pytest.mark.parametrize("mode,sizes", PILLOW, ids=[f"{m}-{s}" for m, s in PILLOW])
def test_pillow_modes_match_openvino(tmp_path, mode, sizes):
    from _ov_single_op import P, check
    x = _x()
    check(tmp_path, _v11(mode, cube=-0.5), [P(x), _i64(sizes), _i64([2, 3])])
    check(tmp_path, _v11(mode, cube=-0.75), [P(x), _i64(sizes), _i64([2, 3])], backend="ref")


SCALED = [([1.7, 0.6], [2, 3]), ([2.0, 0.5], [3, 2]), ([1.0, 1.0, 1.5, 0.75], None),
          ([0.33], [3])]


@oracle
@pytest.mark.parametrize("mode", ["nearest", "linear", "linear_onnx", "cubic"])
@pytest.mark.parametrize("scales,axes", SCALED, ids=[str(s) for s, _ in SCALED])
def test_scales_pads_and_axes_match_openvino(tmp_path, mode, scales, axes):
    """Output sizes from scales (floor of in * scale, in float32), zero pads before resizing,
    axes in any order or absent."""
    import openvino.opset10 as o10
    from _ov_single_op import C, P, check
    x = _x()
    given = [C(np.array(scales, np.float32))] + ([_i64(axes)] if axes else [])
    for pads in ([0, 0, 0, 0], [0, 0, 1, 2], [0, 1, 1, 0]):
        check(tmp_path, _v11(mode, "scales", pads=pads), [P(x)] + given, version="opset11")
        sizes = _i64([int(7 * s) for s in scales])
        for calc in ("scales", "sizes"):
            if calc == "sizes" and axes is None:
                continue          # resizing N and C: the CPU plugin refuses, the reference errs
            check(tmp_path, lambda a, b, c, *e, calc=calc, pads=pads: o10.interpolate(
                a, b, c, mode, calc, pads, pads[::-1], axes=e[0] if e else None),
                [P(x), sizes] + given, version="opset4")


# ---- where the CPU plugin departs: against the reference -------------------------------------


@oracle
@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("sizes", [[3, 4], [2, 5], [9, 4], [3, 12]])
def test_antialias_matches_the_reference(tmp_path, mode, sizes):
    from _ov_single_op import P, check
    check(tmp_path, _v11(mode, antialias=True), [P(_x()), _i64(sizes), _i64([2, 3])],
          backend="ref")


TYPED = list(itertools.product((np.uint8, np.int8, np.float16),
                               ("nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow",
                                "bicubic_pillow")))


@oracle
@pytest.mark.parametrize("dtype,mode", TYPED, ids=[f"{d.__name__}-{m}" for d, m in TYPED])
def test_integer_and_half_data_match_the_reference(tmp_path, dtype, mode):
    """linear and the Pillow modes round, linear_onnx and cubic truncate: exactly, as the
    reference accumulates in float32 in the same order."""
    from _ov_single_op import P, check
    x = _x(dtype, (1, 2, 7, 6))
    for sizes in ([9, 4], [3, 12], [2, 3]):
        check(tmp_path, _v11(mode, cube=-0.5 if "pillow" in mode else -0.75),
              [P(x), _i64(sizes), _i64([2, 3])], backend="ref", rtol=1e-3, atol=1e-3)


# ---- Interpolate-1 ---------------------------------------------------------------------------

V1 = [(m, ac, axes, target, rank, pads)
      for m in ("nearest", "linear", "cubic", "linear_onnx") for ac in (False, True)
      for axes, target, rank in (([2, 3], [7, 3], 4), ([3], [11], 4), ([1, 2, 3], [3, 2, 9], 4),
                                 ([2, 3, 4], [5, 3, 2], 5), ([2, 3], [6, 7], 5))
      for pads in ([0, 0, 0, 0], [0, 0, 1, 1])
      if not (m == "cubic" and axes == [1, 2, 3])]    # the CPU plugin leaves outputs unwritten


@oracle
@pytest.mark.parametrize("mode,align,axes,target,rank,pads", V1,
                         ids=[f"{v[0]}-ac{int(v[1])}-{v[2]}-{v[4]}d-p{v[5][2]}" for v in V1])
def test_interpolate1_matches_openvino(tmp_path, mode, align, axes, target, rank, pads):
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    attrs = {"axes": axes, "mode": mode, "align_corners": align, "antialias": False,
             "pads_begin": pads, "pads_end": pads}
    x = _x(shape=(1, 2, 5, 6) if rank == 4 else (1, 2, 3, 4, 5))
    check(tmp_path, lambda a, b: o1.interpolate(a, b, attrs), [P(x), _i64(target)],
          version="opset1")


# ---- without OpenVINO -------------------------------------------------------------------------


def _layer(version, **data):
    return Layer(id=1, name="i", type="Interpolate", version=f"opset{version}",
                 data={k: str(v) for k, v in data.items()})


def test_nearest_doubling_repeats_and_align_corners_keeps_the_corners():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    near, _ = make_kernel(_layer(11, mode="nearest", shape_calculation_mode="scales",
                                 coordinate_transformation_mode="asymmetric",
                                 nearest_mode="floor"))
    np.testing.assert_array_equal(near(x, np.array([2.0, 2.0], np.float32), np.array([2, 3])),
                                  x.repeat(2, axis=2).repeat(2, axis=3))
    lin, _ = make_kernel(_layer(11, mode="linear_onnx", shape_calculation_mode="sizes",
                                coordinate_transformation_mode="align_corners"))
    y = lin(x, np.array([5, 7]), np.array([2, 3]))
    assert y.shape == (1, 1, 5, 7)
    np.testing.assert_allclose(y[0, 0, ::4, ::3], x[0, 0][:, [0, 1, 2]], atol=1e-6)
    np.testing.assert_allclose(y[0, 0, 2, 3], x.mean(), atol=1e-6)


def test_the_shape_rule_follows_sizes_scales_and_pads():
    attrs = {"mode": "linear", "shape_calculation_mode": "scales", "pads_begin": "0,0,1,1",
             "pads_end": "0,0,0,1"}
    [info] = infer("Interpolate", [TensorInfo("f32", (1, 3, 10, 9)), TensorInfo("f32", (2,)),
                                   TensorInfo("i64", (2,))], attrs,
                   [None, np.array([0.5, 1.5], np.float32), np.array([2, 3])], 1,
                   version="opset11")
    assert info == TensorInfo("f32", (1, 3, 5, 16))
    [info] = infer("Interpolate", [TensorInfo("u8", (2, 3, 4)), TensorInfo("i64", (1,))],
                   {"mode": "nearest", "axes": "2"}, [None, np.array([8])], 1, version="opset1")
    assert info == TensorInfo("u8", (2, 3, 8))


def test_what_loopdbg_does_not_run_is_one_sentence():
    with pytest.raises(UnsupportedOperation, match="mode='area' is not run by OpenVINO"):
        make_kernel(_layer(1, mode="area", axes="2,3"))
    with pytest.raises(UnsupportedOperation, match="mode='bicubic_pillow' is not one of"):
        make_kernel(_layer(4, mode="bicubic_pillow", shape_calculation_mode="sizes"))
    kernel, _ = make_kernel(_layer(11, mode="bilinear_pillow", shape_calculation_mode="sizes"))
    with pytest.raises(ValueError, match="resizes exactly two axes, not 3"):
        kernel(_x(), np.array([2, 3, 3]), np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"axes \[-1\] are out of range for rank 4"):
        kernel(_x(), np.array([3]), np.array([-1]))
