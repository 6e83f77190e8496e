"""Kernels for a plan, or placeholders: what lets ``explain`` and ``graph`` open any model.

An Engine normally refuses a model with an operation loopdbg cannot run (every one of them named
in one sentence, before any plan is built). Reading a model's loops needs no kernels, though:
``Engine(model, require_kernels=False)`` builds its plans with ``KernelMaker(required=False)``,
which gives each layer its kernel when loopdbg has one and otherwise a placeholder that raises
the layer's UnsupportedOperation if it is ever run. Everything before the first such layer runs
as usual, so ``explain`` on inputs still learns the loops that start before it.
"""

from __future__ import annotations

from collections.abc import Callable

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel


class KernelMaker:
    """``make_kernel``, or, unless ``required``, a placeholder for a layer without a kernel.

    ``missing`` is the message of the first layer that got a placeholder (None while every
    layer has its kernel).
    """

    def __init__(self, required: bool = True):
        self.required = required
        self.missing: str | None = None
        # what plans call: ``make_kernel`` itself when every kernel is required (a body makes
        # thousands, and this wrapper's frame would only re-raise), else this placeholder maker
        self.make: Callable[..., tuple[Callable, int]] = make_kernel if required else self

    def __call__(self, layer: Layer, where: str = "", consts=None) -> tuple[Callable, int]:
        try:
            return make_kernel(layer, where, consts)
        except UnsupportedOperation as exc:
            if self.required:
                raise
            message = str(exc)
            if self.missing is None:
                self.missing = message
            return placeholder(message), max(len(layer.outputs), 1)


def placeholder(message: str) -> Callable:
    """A kernel that raises UnsupportedOperation(``message``) when run."""
    def cannot_run(*_inputs):
        raise UnsupportedOperation(message)
    return cannot_run
