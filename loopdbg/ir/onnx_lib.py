"""onnx's protobuf classes and C++ extension for the ONNX reader, without onnx's package ``__init__``.

``import onnx`` runs onnx's ``__init__``, which imports every part of onnx (helper, compose,
checker, the JSON and text serializers, importlib.metadata ...): ~150 ms of a ~1 s ``loopdbg run``
on a real model, of which reading an .onnx needs only the generated ``onnx.onnx_ml_pb2`` (the
ModelProto classes) and the extension ``onnx.onnx_cpp2py_export`` (operator schemas, shape
inference), ~30 ms with protobuf. ``modules()`` imports those two under their own names inside
the ``onnx`` package object, whose ``__init__`` has not run yet; the first attribute anyone reads
from the package that it does not hold yet (``onnx.helper``, ``from onnx import TensorProto``,
``onnx.__version__``) runs the ``__init__`` in that same package object (PEP 562's module
``__getattr__``), so ``import onnx`` and onnx.reference work as ever, with the same classes. When
onnx is imported already, or its package cannot be found or loaded so, it is ``import onnx``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import NamedTuple

_LOCK = threading.RLock()
_FOUND: Onnx | None = None        # the two modules, once imported without the __init__


class Onnx(NamedTuple):
    pb: ModuleType                  # ModelProto, TensorProto ...: onnx_ml_pb2, or onnx itself
    cpp: ModuleType | None          # onnx_cpp2py_export, None when onnx was imported whole


def full() -> ModuleType:
    """The onnx package, its ``__init__`` run (ImportError when onnx is not installed)."""
    import onnx

    onnx.ModelProto                    # noqa: B018 - runs the __init__ of a package modules() made
    return onnx


def modules() -> Onnx:
    """onnx's protobuf module and C++ extension (ImportError when onnx is not installed)."""
    global _FOUND
    with _LOCK:
        if _FOUND is None and "onnx" not in sys.modules:
            _FOUND = _without_init()
        return _FOUND if _FOUND is not None else Onnx(full(), None)


def parse_model(data: bytes):
    """A ModelProto from its bytes, as ``onnx.load_model_from_string`` reads it (DecodeError)."""
    from google.protobuf.message import DecodeError

    proto = modules().pb.ModelProto()
    decoded = proto.ParseFromString(data)
    if decoded is not None and decoded != len(data):
        raise DecodeError(f"Protobuf decoding consumed too few bytes: {decoded} out of "
                          f"{len(data)}")
    return proto


def get_schema(op_type: str, version: int, domain: str):
    """``onnx.defs.get_schema``."""
    cpp = modules().cpp
    return (cpp.defs if cpp is not None else full().defs).get_schema(op_type, version, domain)


# The weights shape inference reads by their dims alone: tensors of these element types (FLOAT,
# FLOAT16, DOUBLE, BFLOAT16) of at least WEIGHT elements. An operator's inference reads the
# values of an input only where they give a shape (Reshape's shape, Slice's starts, Resize's
# scales, Range's bounds ...): a few numbers, one per axis at most.
WEIGHT_TYPES = (1, 10, 11, 16)
WEIGHT = 1024
_DATA_FIELDS = ("raw_data", "float_data", "double_data", "int32_data")


def for_inference(proto):
    """``proto``'s bytes as shape inference needs them: the top graph's weights (initializers
    of WEIGHT_TYPES, WEIGHT elements or more) with their type and dims but not their values.
    Inference then infers the same types, without serializing, parsing and copying the weights
    back and forth (~30 ms of an 8 MB model); ``proto`` itself is left as it is."""
    heavy = [k for k, t in enumerate(proto.graph.initializer)
             if t.data_type in WEIGHT_TYPES and _elements(t.dims) >= WEIGHT]
    if not heavy:
        return proto.SerializeToString()
    light = type(proto)()
    light.CopyFrom(proto)
    for k in heavy:
        tensor = light.graph.initializer[k]
        for name in _DATA_FIELDS:
            tensor.ClearField(name)
    return light.SerializeToString()


def _elements(dims) -> int:
    n = 1
    for d in dims:
        n *= max(int(d), 0)
    return n


def infer_shapes(proto):
    """``onnx.shape_inference.infer_shapes(proto)`` (its defaults: no type checks, no strict
    mode, no data propagation), on ``for_inference(proto)``: the inferred model holds no
    weights' values."""
    cpp = modules().cpp
    if cpp is not None:
        try:
            inferred = cpp.shape_inference.infer_shapes(for_inference(proto), False, False,
                                                        False)
        except TypeError:           # another onnx's signature: its own Python function
            pass
        else:
            return parse_model(inferred)
    return full().shape_inference.infer_shapes(proto)


def _without_init() -> Onnx | None:
    """The two modules, imported inside an onnx package whose __init__ waits for its first
    missing attribute; None when this onnx is laid out otherwise (its __init__ then runs)."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError("No module named 'onnx'")
    package = importlib.util.module_from_spec(spec)
    state = {"running": False}

    def __getattr__(name: str):
        # the first attribute the package lacks: run its __init__ (once; while it runs, the
        # import system's own look-ups of submodules see a plain missing attribute)
        with _LOCK:
            if state["running"] or "__getattr__" not in package.__dict__:
                raise AttributeError(f"module 'onnx' has no attribute '{name}'")
            state["running"] = True
            try:
                spec.loader.exec_module(package)
            except BaseException:
                if sys.modules.get("onnx") is package:    # as a failed import leaves it
                    del sys.modules["onnx"]
                raise
            finally:
                state["running"] = False
                package.__dict__.pop("__getattr__", None)
        return getattr(package, name)

    package.__getattr__ = __getattr__
    sys.modules["onnx"] = package
    try:
        pb = importlib.import_module("onnx.onnx_ml_pb2")
        cpp = importlib.import_module("onnx.onnx_cpp2py_export")
        pb.ModelProto, pb.TensorProto.DataType.Value           # noqa: B018 - what the reader
        cpp.defs.get_schema, cpp.shape_inference.infer_shapes  # noqa: B018 - uses of them
    except Exception:  # noqa: BLE001 - an onnx without them: the whole package, as ever
        return None
    return Onnx(pb, cpp)
