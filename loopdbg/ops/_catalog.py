"""Imports every kernel module so that each registers its kernels (see registry.py)."""

from loopdbg.ops import (  # noqa: F401
    attention,
    convert,
    elementwise,
    indexing,
    onnx_elementwise,
    onnx_reduce,
    onnx_shape,
    reduce,
    rnn,
    shape,
)
