"""The ``ai.onnx.ml`` operators onnx.reference lacks that loopdbg runs (CategoryMapper), and
those it refuses: the ones whose values are maps, which loopdbg does not model.

The others of the domain (Scaler, LinearClassifier, TreeEnsemble*, SVM*, LabelEncoder, ...) run
onnx.reference's implementations (``onnx_reference``). sklearn models converted by skl2onnx end
in ZipMap unless converted with ``options={"zipmap": False}``, which gives the probabilities as a
tensor instead of a sequence of maps.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a
from loopdbg.ops.registry import op, refuse

MAPS = "its values are maps, which loopdbg does not model (tensors, sequences and optionals only)"
refuse("onnx.ai.onnx.ml.ZipMap", (1,), MAPS + "; convert the model without ZipMap (skl2onnx: "
       "options={'zipmap': False})")
refuse("onnx.ai.onnx.ml.CastMap", (1,), MAPS)
refuse("onnx.ai.onnx.ml.DictVectorizer", (1,), MAPS)


@op("onnx.ai.onnx.ml.CategoryMapper")
def _category_mapper(layer: Layer):
    """Strings to int64 by ``cats_strings``/``cats_int64s`` (``default_int64`` when absent), or
    int64 to strings (``default_string``)."""
    strings = [str(s) for s in a(layer, "cats_strings", [])]
    ints = [int(v) for v in a(layer, "cats_int64s", [])]
    if len(strings) != len(ints):
        raise ValueError(f"cats_strings has {len(strings)} entries, cats_int64s {len(ints)}")
    to_int = dict(zip(strings, ints))
    to_str = dict(zip(ints, strings))
    default_int = int(a(layer, "default_int64", -1))
    default_str = str(a(layer, "default_string", "_Unused"))

    def mapper(x):
        x = np.asarray(x)
        if x.dtype.kind == "U":
            flat = [to_int.get(str(v), default_int) for v in x.reshape(-1)]
            return np.array(flat, dtype=np.int64).reshape(x.shape)
        if x.dtype.kind in "iu":
            flat = [to_str.get(int(v), default_str) for v in x.reshape(-1)]
            return np.array(flat, dtype=str).reshape(x.shape)
        raise ValueError(f"input of dtype {x.dtype} is neither strings nor int64")

    return mapper
