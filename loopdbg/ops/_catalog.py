"""Imports every kernel module so that each registers its kernels (see registry.py)."""

from loopdbg.ops import (  # noqa: F401
    convert,
    elementwise,
    indexing,
    reduce,
    rnn,
    shape,
)
