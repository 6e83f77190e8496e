"""numpy kernels for the operations found in and around loop bodies, and their registry."""

from loopdbg.ops.registry import lookup, make_kernel, register, supported

__all__ = ["lookup", "make_kernel", "register", "supported"]
