"""DepthToSpace-1, SpaceToDepth-1, BatchToSpace-2, SpaceToBatch-2, ShuffleChannels-1,
ExtractImagePatches-3 and Col2Im-15.

Differential tests against OpenVINO's CPU plugin and, where it can evaluate the op, its reference
implementation; plain tests (inverses, a direct patch loop) need no OpenVINO.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(20260419)
oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch
DTYPES = [np.float32, np.int8, np.int64]


def _x(shape, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-100, 100, shape).astype(dtype)


def _i64(v):
    from _ov_single_op import C
    return C(np.array(v, dtype=np.int64))


@oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 8, 3), (1, 8, 2, 3), (2, 16, 2, 3, 2)])
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
def test_depth_and_space_match_openvino(tmp_path, shape, mode, dtype):
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    for backend in ("cpu", "ref"):
        check(tmp_path, lambda a: o1.depth_to_space(a, mode, 2), [P(_x(shape, dtype))],
              backend=backend, version="opset1")
        wide = (shape[0], 3, *(s * 2 for s in shape[2:]))
        check(tmp_path, lambda a: o1.space_to_depth(a, mode, 2), [P(_x(wide, dtype))],
              backend=backend, version="opset1")


BATCH = [([1, 1, 2, 3], [0, 0, 1, 0], [0, 0, 0, 2]), ([1, 2, 3, 2], [0, 0, 0, 1], [0, 1, 2, 0]),
         ([1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0])]


@oracle
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("blocks,begin,end", BATCH, ids=[str(b[0]) for b in BATCH])
def test_batch_and_space_match_openvino(tmp_path, blocks, begin, end, dtype):
    import openvino.opset2 as o2
    from _ov_single_op import P, check
    for backend in ("cpu", "ref"):
        check(tmp_path, lambda a, b, c, e: o2.batch_to_space(a, b, c, e),
              [P(_x((12, 2, 3, 2), dtype)), _i64(blocks), _i64(begin), _i64(end)],
              backend=backend, version="opset2")
        pads_end = [e + (-(s + b + e) % k) for s, b, e, k in zip((2, 2, 4, 3), begin, end,
                                                                  blocks)]
        check(tmp_path, lambda a, b, c, e: o2.space_to_batch(a, b, c, e),
              [P(_x((2, 2, 4, 3), dtype)), _i64(blocks), _i64(begin), _i64(pads_end)],
              backend=backend, version="opset2")


@oracle
@pytest.mark.parametrize("axis,group", [(1, 3), (1, 2), (-3, 6), (2, 2), (0, 2), (-1, 3)])
def test_shuffle_channels_matches_openvino(tmp_path, axis, group):
    import openvino.opset3 as o3
    from _ov_single_op import P, check
    for backend, dtype in (("cpu", np.float32), ("ref", np.int8)):
        check(tmp_path, lambda a: o3.shuffle_channels(a, axis, group),
              [P(_x((2, 6, 4, 3), dtype))], backend=backend, version="opset1")


PATCHES = [([3, 3], [5, 5], [1, 1]), ([2, 3], [3, 2], [2, 1]), ([4, 4], [8, 8], [1, 1]),
           ([1, 1], [3, 3], [1, 1]), ([3, 2], [1, 1], [3, 4])]


@oracle
@pytest.mark.parametrize("sizes,strides,rates", PATCHES, ids=[str(p) for p in PATCHES])
@pytest.mark.parametrize("auto_pad", ["valid", "same_upper", "same_lower"])
def test_extract_image_patches_matches_openvino(tmp_path, sizes, strides, rates, auto_pad):
    import openvino.opset3 as o3
    from _ov_single_op import P, check
    for dtype in (np.float32, np.int32):
        check(tmp_path, lambda a: o3.extract_image_patches(a, sizes, strides, rates, auto_pad),
              [P(_x((2, 3, 10, 9), dtype))], version="opset3")


COL2IM = [([4, 4], [2, 2], [1, 1], [1, 1], [0, 0], [0, 0]),
          ([6, 5], [2, 3], [2, 1], [1, 2], [1, 0], [0, 1]),
          ([7, 7], [3, 3], [2, 2], [2, 1], [2, 1], [1, 2])]


@oracle
@pytest.mark.parametrize("out,kernel,strides,dilations,begin,end", COL2IM,
                         ids=[str(c[:2]) for c in COL2IM])
@pytest.mark.parametrize("batched", [True, False])
def test_col2im_matches_openvino(tmp_path, out, kernel, strides, dilations, begin, end,
                                 batched):
    import openvino.opset15 as o15
    from _ov_single_op import P, check
    blocks = [(o + b + e - ((k - 1) * d + 1)) // s + 1
              for o, b, e, k, d, s in zip(out, begin, end, kernel, dilations, strides)]
    shape = (2,) * batched + (3 * kernel[0] * kernel[1], blocks[0] * blocks[1])
    for dtype in (np.float32, np.int32):
        check(tmp_path, lambda a, b, c: o15.col2im(a, b, c, strides, dilations, begin, end),
              [P(_x(shape, dtype)), _i64(out), _i64(kernel)], version="opset15")


# ---- without OpenVINO -------------------------------------------------------------------------


def _kernel(type_, version, **data):
    layer = Layer(id=1, name="s", type=type_, version=f"opset{version}",
                  data={k: str(v) for k, v in data.items()})
    return make_kernel(layer)[0]


@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
def test_space_to_depth_undoes_depth_to_space(mode):
    x = _x((2, 27, 2, 3, 1))
    d2s = _kernel("DepthToSpace", 1, mode=mode, block_size=3)
    s2d = _kernel("SpaceToDepth", 1, mode=mode, block_size=3)
    np.testing.assert_array_equal(s2d(d2s(x)), x)


def test_batch_to_space_undoes_space_to_batch():
    x = _x((2, 3, 4, 6))
    blocks, zero = np.array([1, 3, 2, 3]), np.zeros(4, np.int64)
    moved = _kernel("SpaceToBatch", 2)(x, blocks, zero, zero)
    assert moved.shape == (36, 1, 2, 2)
    np.testing.assert_array_equal(_kernel("BatchToSpace", 2)(moved, blocks, zero, zero), x)


def test_patches_are_the_windows_in_row_column_channel_order():
    x = _x((1, 2, 5, 5))
    y = _kernel("ExtractImagePatches", 3, sizes="2,3", strides="2,1", rates="1,2",
                auto_pad="valid")(x)
    assert y.shape == (1, 12, 2, 1)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(y[0, (i * 3 + j) * 2:(i * 3 + j) * 2 + 2, :, 0],
                                          x[0, :, [0 + i, 2 + i], 2 * j].T)


def test_col2im_sums_the_overlaps():
    cols = np.ones((1, 4, 9), np.float32)                    # 1 channel, 2x2 kernel, 3x3 blocks
    image = _kernel("Col2Im", 15, strides="1,1", dilations="1,1", pads_begin="0,0",
                    pads_end="0,0")(cols, np.array([4, 4]), np.array([2, 2]))
    np.testing.assert_array_equal(image[0, 0], [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2],
                                                [1, 2, 2, 1]])


def test_the_shape_rules_give_the_output_shapes():
    [info] = infer("DepthToSpace", [TensorInfo("f32", (1, 16, 3, -1))],
                   {"mode": "blocks_first", "block_size": "2"}, [None], 1)
    assert info == TensorInfo("f32", (1, 4, 6, -1))
    [info] = infer("SpaceToBatch", [TensorInfo("f32", (2, 2, 4, 3)), TensorInfo("i64", (4,)),
                                    TensorInfo("i64", (4,)), TensorInfo("i64", (4,))], {},
                   [None, np.array([1, 1, 2, 3]), np.zeros(4, int), np.zeros(4, int)], 1)
    assert info == TensorInfo("f32", (12, 2, 2, 1))
    [info] = infer("ExtractImagePatches", [TensorInfo("f32", (2, 3, 10, 9))],
                   {"sizes": "3,3", "strides": "5,5", "rates": "1,1", "auto_pad": "same_upper"},
                   [None], 1)
    assert info == TensorInfo("f32", (2, 27, 2, 2))
    [info] = infer("Col2Im", [TensorInfo("f32", (12, 9)), TensorInfo("i64", (2,)),
                              TensorInfo("i64", (2,))], {"strides": "1,1", "dilations": "1,1",
                                                          "pads_begin": "0,0", "pads_end": "0,0"},
                   [None, np.array([4, 4]), np.array([2, 2])], 1)
    assert info == TensorInfo("f32", (3, 4, 4))


def test_bad_inputs_are_one_sentence():
    with pytest.raises(UnsupportedOperation, match="mode='sideways' is not one of"):
        make_kernel(Layer(id=1, name="d", type="DepthToSpace", version="opset1",
                          data={"mode": "sideways", "block_size": "2"}))
    with pytest.raises(ValueError, match="6 channels do not divide into blocks of 2\\^2"):
        _kernel("DepthToSpace", 1, mode="blocks_first", block_size=2)(_x((1, 6, 2, 2)))
    with pytest.raises(ValueError, match="block_shape\\[0\\] must be 1"):
        _kernel("BatchToSpace", 2)(_x((4, 2)), np.array([2, 2]), np.zeros(2, int),
                                   np.zeros(2, int))
    with pytest.raises(ValueError, match="does not split into 4 groups"):
        _kernel("ShuffleChannels", 1, axis=1, group=4)(_x((1, 6, 2)))
