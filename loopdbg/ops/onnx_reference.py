"""The long tail of ONNX operators, run by onnx.reference's own implementations.

loopdbg writes numpy kernels by hand for the operators found in and around loop bodies (the other
``onnx_*`` family modules). Every other operator of the default domain that onnx's reference
runtime implements exactly is registered here, at each opset version that changed it
(``REFERENCE_OPS``, printed by ``tools/onnx_reference_ops.py``; a test holds it to the installed
onnx). onnx is already needed to read an ONNX model, so this costs no new dependency.

The kernel is made once per layer, when the plan is built: the node as the file holds it (the
serialized NodeProto the ONNX reader keeps in ``Layer.data``, so tensor and graph attributes arrive
intact) is given to the op class ``onnx.reference.ops.load_op`` picks for the model's opset, as
``ReferenceEvaluator`` does; operators that onnx defines as a function of others run that function
with the reference evaluator. Each call is then ``instance.run(*inputs)``. Inputs are passed as
read-only views, so an implementation that wrote into its input would fail loudly rather than
change a value another layer reads.

Operators not here (``NOT_HERE``) have a hand-written kernel elsewhere, because onnx.reference
departs from the specification for them or has no implementation. This module is the only part
of ``loopdbg.ops`` that imports onnx (the import contract "readers" in pyproject.toml allows it
by name), and only when a kernel is built: loading the op table imports no onnx.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any, Callable

import numpy as np

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ir.onnx_names import NODE_PROTO, ONNX_TYPES, OPSETS
from loopdbg.ops.args import declared_outputs, opset
from loopdbg.ops.onnx_bounded import check_subgraphs
from loopdbg.ops.process_state import kept, no_locale_changes
from loopdbg.ops.registry import op

# Run by the engine itself (the ONNX reader turns them into Constant / Loop / TensorIterator / If).
ENGINE = ("Constant", "Loop", "Scan", "If")

# Operators onnx.reference implements that this module leaves alone, and why (most have a
# hand-written kernel in another family).
NOT_HERE = {
    "LSTM": "onnx.reference ignores sequence_lens, clip, activations and input_forget",
    "GRU": "onnx.reference ignores sequence_lens, clip and activations",
    "RNN": "onnx.reference ignores sequence_lens, clip and activations",
    "Bernoulli": "random: loopdbg seeds it and says so (onnx_random)",
    "RandomNormal": "random: loopdbg seeds it and says so (onnx_random)",
    "RandomNormalLike": "random: loopdbg seeds it and says so (onnx_random)",
    "RandomUniform": "random: loopdbg seeds it and says so (onnx_random)",
    "RandomUniformLike": "random: loopdbg seeds it and says so (onnx_random)",
    "DictVectorizer": "its input is a map, which loopdbg does not model",
}

# Printed by tools/onnx_reference_ops.py.
REFERENCE_OPS = {
    "AffineGrid": (20,), "Attention": (23, 24, 25), "BatchNormalization": (1, 6, 7, 9, 14, 15),
    "BitCast": (26,), "BlackmanWindow": (17,), "CausalConvWithState": (27,),
    "CenterCropPad": (18,), "Col2Im": (18,), "Compress": (9, 11, 28), "ConvInteger": (10,),
    "CumProd": (26,), "DFT": (17, 20), "DeformConv": (19, 22), "DepthToSpace": (1, 11, 13, 28),
    "DequantizeLinear": (10, 13, 19, 21, 23, 24, 25, 28), "Det": (11, 22),
    "DynamicQuantizeLinear": (11,), "Einsum": (12, 28), "EyeLike": (9, 22),
    "GatherND": (11, 12, 13), "GlobalAveragePool": (1, 22), "GlobalMaxPool": (1, 22),
    "GroupNormalization": (18, 21), "HammingWindow": (17,), "HannWindow": (17,),
    "ImageDecoder": (20,), "InstanceNormalization": (1, 6, 22), "LinearAttention": (27,),
    "MatMulInteger": (10,), "MaxUnpool": (9, 11, 22), "MeanVarianceNormalization": (9, 13),
    "MelWeightMatrix": (17,), "NegativeLogLikelihoodLoss": (12, 13, 22), "QLinearConv": (10,),
    "QLinearMatMul": (10, 21), "QuantizeLinear": (10, 13, 19, 21, 23, 24, 25, 28),
    "RMSNormalization": (23,), "ReverseSequence": (10, 28),
    "RotaryEmbedding": (23,), "STFT": (17,), "SequenceMap": (17,), "Shrink": (9,),
    "SoftmaxCrossEntropyLoss": (12, 13), "SpaceToDepth": (1, 13, 28), "StringConcat": (20,),
    "StringNormalizer": (10,), "StringSplit": (20,), "SwiGLU": (28,), "Swish": (24,),
    "TensorScatter": (24,), "TfIdfVectorizer": (9,),
}
DOMAIN_OPS = {
    "ai.onnx.ml": {
        "ArrayFeatureExtractor": (1,), "Binarizer": (1,), "FeatureVectorizer": (1,),
        "Imputer": (1,), "LabelEncoder": (1, 2, 4), "LinearClassifier": (1,),
        "LinearRegressor": (1,), "Normalizer": (1,), "OneHotEncoder": (1,), "SVMClassifier": (1,),
        "SVMRegressor": (1,), "Scaler": (1,), "TreeEnsemble": (5,),
        "TreeEnsembleClassifier": (1, 3, 5), "TreeEnsembleRegressor": (1, 3, 5),
    },
    "ai.onnx.preview": {
        "FlexAttention": (1,),
    },
    "ai.onnx.preview.training": {
        "Adagrad": (1,), "Adam": (1,), "Momentum": (1,),
    },
}

_CODES = {name: code for code, name in ONNX_TYPES.items()}

# Opset versions onnx.reference has no class for, run by the class of a later version that
# only widened the operator: DequantizeLinear-19 added float8 inputs (and a float16 scale) to
# what versions 10 and 13 define, so a QDQ model at opset 13 (most quantized exports) runs.
RUN_AS = {("", "DequantizeLinear", 10): 19, ("", "DequantizeLinear", 13): 19}


def layer_type(domain: str, name: str) -> str:
    """The layer type the ONNX reader gives a node of ``domain`` (``onnx.Conv``,
    ``onnx.ai.onnx.ml.Scaler``)."""
    return f"onnx.{name}" if domain in ("", "ai.onnx") else f"onnx.{domain}.{name}"


def node_proto(layer: Layer):
    """The layer's NodeProto, as the ONNX reader kept it."""
    from onnx import NodeProto

    raw = layer.data.get(NODE_PROTO)
    if not isinstance(raw, bytes):
        raise UnsupportedOperation(f"{layer.describe()} carries no ONNX node (it was not read "
                                   f"from an ONNX file), which its kernel needs.")
    return NodeProto.FromString(raw)


@functools.lru_cache(maxsize=1)
def _evaluator() -> type:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator


def _input_types(layer: Layer) -> list:
    """TypeProtos of the layer's inputs, from the ports onnx's shape inference typed (for the
    operators whose function depends on them)."""
    from onnx import helper

    types = []
    for port in layer.inputs:
        code = _CODES.get(elements.canonical(port.precision)) if port.precision else None
        if code is None:
            raise ValueError(f"the element type of input {port.index} is not known before the "
                             f"run, and onnx.reference needs it to expand this operator")
        types.append(helper.make_tensor_type_proto(code, None))
    return types


def _since(domain: str, name: str, version: int) -> int:
    """The version of ``name``'s schema in force at opset ``version`` (per the tables)."""
    table = REFERENCE_OPS if not domain else DOMAIN_OPS.get(domain, {})
    return max((v for v in table.get(name, ()) if v <= version), default=version)


def reference_op(layer: Layer, node=None, version: int | None = None) -> Any:
    """The onnx.reference op instance that runs ``layer`` (``node``: its NodeProto, if not the
    one the reader kept; ``version``: the opset, if not the layer's), built as
    ReferenceEvaluator builds one."""
    from onnx.reference.op_run import RuntimeContextError
    from onnx.reference.ops import load_op

    node = node_proto(layer) if node is None else node
    check_subgraphs(layer, node)            # no Loop or re-based regex where limits cannot reach
    version = opset(layer) if version is None else version
    evaluator = _evaluator()
    domain = "" if node.domain == "ai.onnx" else node.domain
    version = RUN_AS.get((domain, node.op_type, _since(domain, node.op_type, version)), version)
    try:
        if domain:
            package = importlib.import_module(_PACKAGES[domain])
            cls = package.load_op(domain, node.op_type, version)
        else:
            cls = load_op("", node.op_type, version, evaluator_cls=evaluator)
    except RuntimeContextError:
        cls = load_op("", node.op_type, version, node=node, input_types=_input_types(layer),
                      evaluator_cls=evaluator)
    except (NotImplementedError, RuntimeError) as exc:
        raise UnsupportedOperation(f"{layer.describe()}: onnx.reference has no implementation of "
                                   f"{node.op_type} for opset {version} "
                                   f"({str(exc).splitlines()[0]}).") from None
    no_locale_changes(sys.modules[cls.__module__])     # StringNormalizer's setlocale
    opsets = {"" if d == "ai.onnx" else d: v for d, v in layer.data.get(OPSETS, {}).items()}
    opsets[domain] = version
    params = {"log": lambda *args: None, "opsets": opsets, "verbose": 0, "new_ops": {},
              "existing_functions": {}, "evaluator_cls": evaluator}
    try:
        return cls(node, params)
    except Exception as exc:  # a missing required attribute, a bad subgraph, ...
        text = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else \
            type(exc).__name__
        raise ValueError(f"onnx.reference cannot build its {node.op_type} from the node: "
                         f"{text}") from None     # the registry names the file and the layer


def _frozen(value):
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


def _value(value):
    """An output as loopdbg holds values: strings as numpy unicode (onnx.reference gives Python
    objects), in sequences too."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        flat = [v.decode() if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]
        return np.array(flat, dtype=str).reshape(value.shape)
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def reference_kernel(layer: Layer, node=None, version: int | None = None) -> Callable:
    """A kernel running ``layer`` with onnx.reference (see the module docstring); the other
    ONNX families use it for the element types their numpy does not cover."""
    inst = reference_op(layer, node, version)
    count = declared_outputs(layer)

    def kernel(*args):
        # no change to the locale, numpy's settings, ... outlives the call
        try:
            res = kept(inst.run, *(_frozen(x) for x in args))
        except TypeError as exc:      # onnx.reference's "Issues with types [...]" hides the why
            if exc.__cause__ is None or not str(exc).startswith("Issues with types"):
                raise
            raise ValueError(f"onnx.reference's {layer.type.rsplit('.', 1)[-1]} failed on "
                             f"these inputs: {exc.__cause__}") from exc.__cause__
        if len(res) < count:
            raise ValueError(f"onnx.reference gave {len(res)} outputs, the node declares {count}")
        res = [_value(v) for v in res[:count]]
        return res[0] if count == 1 else tuple(res)

    return kernel


# Where onnx.reference keeps the implementations of the other domains' operators.
_PACKAGES = {"ai.onnx.ml": "onnx.reference.ops.aionnxml",
             "ai.onnx.preview": "onnx.reference.ops.aionnx_preview",
             "ai.onnx.preview.training": "onnx.reference.ops.aionnx_preview_training"}

for _name, _versions in REFERENCE_OPS.items():
    op(layer_type("", _name), versions=_versions, outputs=declared_outputs)(reference_kernel)
for _domain, _table in DOMAIN_OPS.items():
    for _name, _versions in _table.items():
        op(layer_type(_domain, _name), versions=_versions,
           outputs=declared_outputs)(reference_kernel)
