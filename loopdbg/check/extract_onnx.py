"""A Loop/Scan body of an ONNX model as a standalone ONNX model, to run one iteration at a time.

The body graph is copied from the .onnx file as it is (nested Loop/Scan/If nodes stay inside it,
run by the runtime itself) by ``loopdbg.ir.onnx_bodies``, which reads and writes ONNX; this module
says, in loopdbg's terms, what the copy is:

* its inputs are loopdbg's body Parameters in order: the body's own inputs, then every value it
  reads from an enclosing graph (``outer-scope`` names, which loopdbg's ONNX reader makes
  Parameters of the body), each typed by the value loopdbg fed it with dims of unknown size, so
  one model serves every iteration of the same ranks (``extract.signature``);
* its outputs are one ``Identity`` per ``Target`` (``extract.body_targets``): the body's outputs
  in order, then with ``all_nodes`` every output of every node loopdbg runs; typed as ONNX's
  shape inference types them from the inputs (the body's declared types are not kept: one that
  a dynamic value contradicts would make the copy invalid);
* the model keeps the file's opset imports, IR version and local functions.

The body is found by its node's op type and output tensor names, which ONNX makes unique in a
model (a Scan-8's batch loop is loopdbg's own wrapper: its body is the Scan node's).
"""

from __future__ import annotations

from typing import Sequence

from loopdbg.check.extract import NODE, Target, body_targets
from loopdbg.engine.loopspec import LoopSpec
from loopdbg.ir.onnx_bodies import body_outputs, standalone_body

SCAN8 = "onnx_scan8_batch"


class NoBody(ValueError):
    """The loop has no ONNX body of its own to extract (one sentence why)."""


def is_batch_loop(spec: LoopSpec) -> bool:
    """Whether ``spec`` is the batch loop loopdbg's ONNX reader wraps around a Scan-8."""
    return str(spec.layer.data.get(SCAN8, "")).lower() == "true"


def body_key(spec: LoopSpec, parent: LoopSpec | None) -> tuple[str, tuple[str, ...]]:
    """(op type, output tensor names) of the node whose body ``spec`` runs."""
    layer = spec.layer
    if is_batch_loop(spec):
        raise NoBody("it is the batch loop loopdbg wraps around a Scan-8, which has no ONNX body "
                     "of its own (the Scan inside it is checked)")
    op = str(layer.data.get("onnx_op") or layer.ir_type or layer.type)
    source = layer
    if parent is not None and is_batch_loop(parent):
        source = parent.layer                 # the Scan-8 node's outputs are the batch loop's
    names = tuple(p.names[0] if p.names else "" for p in source.outputs)
    return op, names


def standalone_onnx_body(proto, node, spec: LoopSpec, values: Sequence, *,
                         all_nodes: bool = False) -> tuple[bytes, list[Target]]:
    """The body of ONNX ``node`` (in ModelProto ``proto``, from ``onnx_bodies.read_bodies``) as
    a serialized model for ``spec`` (``loopdbg.ir.onnx_bodies`` writes it).

    ``values`` are loopdbg's body inputs of one iteration (they give the inputs' types).
    """
    plan = spec.body
    try:
        outputs = body_outputs(node)
        targets = [t for t in body_targets(plan, all_nodes) if _tensor(t, outputs) is not None]
        data = standalone_body(proto, node, f"{spec.path} body", list(zip(plan.param_names, values)),
                               [_tensor(t, outputs) for t in targets])
    except ValueError as exc:
        raise NoBody(str(exc)) from None
    return data, targets


def _tensor(t: Target, outputs: list[str]) -> str | None:
    """The ONNX tensor name of a target: a body output's, or a node output's."""
    if t.kind != NODE:
        return outputs[t.index] if t.index < len(outputs) else None
    ports = t.layer.outputs
    names = ports[t.port].names if t.port < len(ports) else ()
    return names[0] if names and names[0] else None
