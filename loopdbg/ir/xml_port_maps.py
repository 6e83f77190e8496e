"""The port maps of Loop, TensorIterator and If bodies in an IR: which outer input feeds which
body Parameter (sliced, merged or whole), which body Result gives which output, and the back
edges from a body Result to a body Parameter, each checked as OpenVINO's deserializer does."""

from __future__ import annotations

from typing import Callable

from loopdbg.errors import ModelError
from loopdbg.ir.model import BackEdge, Graph, InputMapping, Layer, OutputMapping
from loopdbg.ir.xml_context import (FROM_LAYER, INTERNAL_ID, TO_LAYER, Context, attr_of,
                                    int_attr, tagged_children)


def check_fed_inputs(inputs: tuple[InputMapping, ...], back_edges: tuple[BackEdge, ...],
                     layer: Layer, body: Graph, ctx: Context) -> None:
    """A sliced or merged input reads an outer input, so its external id must not be negative
    (only the special entries, current_iteration and condition, have none)."""
    targets = {be.to_layer for be in back_edges}
    for m in inputs:
        if m.external_port_id < 0 and m.purpose is None and (
                m.axis is not None or m.internal_layer_id in targets):
            role = "sliced" if m.axis is not None else "merged"
            target = body.layers[m.internal_layer_id].describe()
            raise ctx.fail(layer.describe(), f"feeds body {target} as a {role} input from "
                                             f"external port {m.external_port_id}, which does "
                                             f"not exist")


def check_output_count(layer: Layer, outputs: tuple[OutputMapping, ...], ctx: Context) -> None:
    """Output k is the k-th smallest non-negative external id, so the counts must agree.

    OpenVINO: "Number of outputs must be the same as number of output descriptions".
    """
    described = sum(1 for m in outputs if m.external_port_id >= 0)
    if described != len(layer.outputs):
        raise ctx.fail(layer.describe(), f"declares {len(layer.outputs)} output ports but its "
                                         f"port_map describes {described} outputs")


def read_port_map(el, layer: Layer, body: Graph, ctx: Context, tag: str
                  ) -> tuple[tuple[InputMapping, ...], tuple[OutputMapping, ...]]:
    """Read port_map entries in file order; a repeated external id keeps the first (as OpenVINO).

    Only non-negative external ids are de-duplicated: negative ones are the special entries
    (current_iteration, execution_condition, condition), which OpenVINO reads by purpose.
    """
    if el is None:
        return (), ()
    inputs: list[InputMapping] = []
    outputs: list[OutputMapping] = []
    first_line: dict[tuple[str, int], int] = {}
    for entry in tagged_children(el, ("input", "output")):
        mapping = _read_mapping(entry, layer, body, ctx, tag)
        key = (entry.tag, mapping.external_port_id)
        if mapping.external_port_id >= 0 and key in first_line:
            ctx.warnings.append(
                f"{ctx.file}: {layer.describe()}{ctx.scope} maps external {entry.tag} "
                f"{mapping.external_port_id} twice in <{tag}> (lines {first_line[key]} and "
                f"{entry.sourceline}); the later entry is ignored, as OpenVINO does.")
            continue
        first_line[key] = entry.sourceline
        (inputs if entry.tag == "input" else outputs).append(mapping)
    return tuple(inputs), tuple(outputs)


_MAPPING_INTS = ("axis", "start", "end", "stride", "part_size")


def _read_mapping(entry, layer: Layer, body: Graph, ctx: Context, tag: str
                  ) -> InputMapping | OutputMapping:
    is_input = entry.tag == "input"
    bad = ctx.part_failer(layer.describe(), f"its <{tag}> {entry.tag} at line {entry.sourceline}")
    external = int_attr(entry.get("external_port_id"), "external_port_id", bad)
    internal = int_attr(attr_of(entry, INTERNAL_ID), "internal_layer_id", bad)
    values = {k: int_attr(entry.get(k), k, bad) for k in _MAPPING_INTS if entry.get(k) is not None}
    purpose = entry.get("purpose")
    if is_input and (entry.get("condition") or "").strip().lower() == "true":
        purpose = "condition"
    _check_mapping_target(body, internal, is_input, bad)
    if not is_input:
        return OutputMapping(external, internal, purpose=purpose, **values)
    if values.get("axis", 0) < 0:
        raise bad(f"has a negative axis {values['axis']}, which OpenVINO refuses for inputs")
    if layer.inputs and external >= len(layer.inputs):
        raise bad(f"maps external input {external} but the layer has only "
                  f"{len(layer.inputs)} inputs")
    return InputMapping(external, internal, purpose=purpose, **values)


def _check_mapping_target(body: Graph, internal: int, is_input: bool,
                          bad: Callable[[str], ModelError]) -> None:
    """Inputs feed a body Parameter, outputs read a body Result (up_io_map.at() in OpenVINO)."""
    wanted = "Parameter" if is_input else "Result"
    target = body.layers.get(internal)
    if target is None:
        raise bad(f"names body layer {internal}, which does not exist")
    if target.type != wanted:
        raise bad(f"names body {target.describe()}, which is not a {wanted}")


def read_back_edges(el, layer: Layer, body: Graph, ctx: Context) -> tuple[BackEdge, ...]:
    """Back edges carry a body Result's value to a body Parameter for the next iteration."""
    if el is None:
        return ()
    edges = []
    for edge_el in tagged_children(el, ("edge",)):
        bad = ctx.part_failer(layer.describe(), f"its back edge at line {edge_el.sourceline}")
        src = int_attr(attr_of(edge_el, FROM_LAYER), "from-layer", bad)
        dst = int_attr(attr_of(edge_el, TO_LAYER), "to-layer", bad)
        for layer_id, wanted, end in ((src, "Result", "starts at"), (dst, "Parameter", "ends at")):
            target = body.layers.get(layer_id)
            if target is None:
                raise bad(f"{end} body layer {layer_id}, which does not exist")
            if target.type != wanted:
                raise bad(f"{end} body {target.describe()}, but back edges run from a Result "
                          f"to a Parameter")
        edges.append(BackEdge(src, dst))
    return tuple(edges)
