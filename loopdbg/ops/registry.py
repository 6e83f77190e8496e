"""The kernel registry: which numpy function runs a layer of a given (type, version).

A kernel is registered as a *factory*: it receives the ``Layer`` once, when the execution plan is
built, parses its attributes, and returns the function that runs it on arrays. That function takes
the input arrays positionally and returns one array (single-output ops) or a tuple of arrays
(ops registered with ``outputs > 1``).

Versions follow OpenVINO's opsets: opset N holds, for each type, the newest version introduced at or
before N. So ``Add`` registered for ``opset1`` serves a layer that says ``opset8``, and ``Gather``
registered for opset1, opset7 and opset8 picks the right one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer

Kernel = Callable[..., object]
KernelFactory = Callable[[Layer], Kernel]


@dataclass(frozen=True)
class KernelSpec:
    type: str
    version: int
    factory: KernelFactory
    outputs: int | Callable[[Layer], int] = 1   # a callable counts them per layer (Split)


_REGISTRY: dict[str, dict[int, KernelSpec]] = {}
_LOADED = False

# Versions that are not "opsetN": where OpenVINO takes such ops from (DESER create_node).
_SPECIAL_VERSIONS = {"experimental": 6, "extension": 6, "ie_internal_opset": 1000}


def register(type_: str, *versions: str, outputs: int | Callable[[Layer], int] = 1):
    """Decorator: register ``factory`` for ``type_`` in each of ``versions`` (``"opset1"``, ...).

    ``outputs`` is the number of outputs, or a function of the layer for ops whose count depends on
    attributes or declared ports (Split's ``num_splits``).
    """

    def deco(factory: KernelFactory) -> KernelFactory:
        for v in versions:
            n = opset_number(v)
            _REGISTRY.setdefault(type_, {})[n] = KernelSpec(type_, n, factory, outputs)
        return factory

    return deco


# The newest OpenVINO opset (2026.4 ships opset17): a layer claiming a later one is not OpenVINO's.
LATEST_OPENVINO_OPSET = 17


def opset_number(version: str) -> int:
    m = re.fullmatch(r"opset(\d+)", version or "")
    if m:
        return int(m.group(1))
    if version in _SPECIAL_VERSIONS:
        return _SPECIAL_VERSIONS[version]
    raise ValueError(f"unknown opset version {version!r}")


def _load_all() -> None:
    global _LOADED
    if not _LOADED:
        from loopdbg.ops import _catalog  # noqa: F401  (importing registers every kernel)
        _LOADED = True


def lookup(type_: str, version: str) -> KernelSpec | None:
    """The kernel serving ``type_`` in ``version``, or None."""
    _load_all()
    versions = _REGISTRY.get(type_)
    if not versions:
        return None
    try:
        n = opset_number(version)
    except ValueError:
        return None
    if n > LATEST_OPENVINO_OPSET and not type_.startswith("onnx.") and version.startswith("opset"):
        return None
    usable = [v for v in versions if v <= n]
    return versions[max(usable)] if usable else None


def supported() -> dict[str, list[int]]:
    """Every registered type with its opset versions, for error messages and ``--help``."""
    _load_all()
    return {t: sorted(v) for t, v in sorted(_REGISTRY.items())}


def make_kernel(layer: Layer, where: str = "") -> tuple[Kernel, int]:
    """Build the kernel for ``layer``; return it with its number of outputs.

    Raises UnsupportedOperation naming the layer and listing what loopdbg supports.
    """
    spec = lookup(layer.type, layer.version)
    if spec is None:
        known = supported()
        if layer.type in known:
            vs = ", ".join(f"opset{v}" for v in known[layer.type])
            detail = f"loopdbg supports {layer.type} in {vs}"
        else:
            onnx = layer.type.startswith("onnx.")      # list the kernels of the model's format
            detail = "supported operations: " + ", ".join(
                t for t in known if t.startswith("onnx.") == onnx)
        raise UnsupportedOperation(
            f"{where}{layer.describe()} has type {layer.type} version {layer.version!r}, "
            f"which loopdbg cannot run; {detail}.")
    try:
        kernel = spec.factory(layer)
        return kernel, spec.outputs(layer) if callable(spec.outputs) else spec.outputs
    except UnsupportedOperation:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise UnsupportedOperation(
            f"{where}{layer.describe()} has attributes loopdbg cannot use: {exc}.") from None
