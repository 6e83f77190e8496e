"""numpy kernels for the operations found in and around loop bodies, and their table (registry.py).

Each family module (``elementwise``, ``shape``, ``rnn``, ``onnx_shape`` ...) registers its kernels
with ``op``; ``registry`` explains what one registration carries and how the table fills.
"""

from loopdbg.ops.registry import lookup, make_kernel, op, supported

__all__ = ["lookup", "make_kernel", "op", "supported"]
