"""What an ONNX layer carries, named once for the ONNX reader and the ONNX kernels (no onnx here).

The kernels (``loopdbg.ops``) may not import the reader, and neither needs onnx for these.
"""

from __future__ import annotations

# ``Layer.data`` key of the node as the file holds it (a serialized NodeProto), for the kernels that
# need what the attribute values lose: onnx.reference's (``loopdbg/ops/onnx_reference.py``).
NODE_PROTO = "onnx_node_proto"
# ``Layer.data`` key of the model's opset imports (domain -> version), kept on the nodes whose graph
# attributes onnx.reference runs as graphs of their own (SequenceMap, FlexAttention).
OPSETS = "onnx_opsets"

# ``Layer.data`` keys of an ONNX Loop/Scan whose scan outputs have shapes the file leaves open: its
# body graph (a serialized GraphProto) and those outputs' positions among the body's outputs, for
# the element shapes of a run of zero iterations (``loopdbg/ir/onnx_infer.py``).
BODY_PROTO = "onnx_body_proto"
OPEN_OUTPUTS = "onnx_open_outputs"
# ... and on the batch loop of a Scan-8 (whose body is the Scan's body), its number of states.
SCAN8_STATES = "onnx_scan8_states"

# ``Layer.data`` key of a Parameter that is not a tensor: one of the kinds below (its
# ``element_type`` and ``shape`` then describe the tensors in it).
VALUE_KIND = "onnx_value_kind"
SEQUENCE, OPTIONAL, OPTIONAL_SEQUENCE = "sequence", "optional", "optional sequence"

# TensorProto.DataType -> loopdbg element type names (``loopdbg.ir.elements``). The types numpy
# lacks are ml_dtypes' and named as its dtypes are; strings are numpy unicode arrays.
ONNX_TYPES = {1: "f32", 2: "u8", 3: "i8", 4: "u16", 5: "i16", 6: "i32", 7: "i64", 8: "string",
              9: "boolean", 10: "f16", 11: "f64", 12: "u32", 13: "u64", 16: "bfloat16",
              17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
              20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn",
              24: "float8_e8m0fnu", 25: "uint2", 26: "int2"}
# Types loopdbg does not compute with, by the names messages give them.
UNSUPPORTED_TYPES = {14: "complex64", 15: "complex128"}


def onnx_type_name(code: int) -> str:
    """The element type name of an ONNX type code (``1`` -> ``f32``; ``type 99`` if unknown)."""
    return ONNX_TYPES.get(code) or UNSUPPORTED_TYPES.get(code) or f"type {code}"
