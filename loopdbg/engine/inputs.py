"""A model's inputs and outputs by name: matching user arrays, loading .npz safely, templates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from loopdbg.errors import InputError
from loopdbg.ir.files import read_npz
from loopdbg.ir.model import Model


@dataclass(frozen=True)
class InputSpec:
    """One model input: its Parameter name, other tensor names, declared shape and dtype."""

    name: str
    names: tuple[str, ...]
    shape: tuple[int, ...] | None      # -1 for a dynamic dim; None for dynamic rank
    dtype: np.dtype | None             # None: dynamic element type, any numeric dtype

    def describe(self) -> str:
        if self.shape is None:
            shape = "any shape"
        else:
            shape = "(" + ", ".join("?" if d < 0 else str(d) for d in self.shape) + \
                    ("," if len(self.shape) == 1 else "") + ")"
        return f"{self.name} {self.dtype} {shape}"


def input_specs(model: Model) -> list[InputSpec]:
    from loopdbg.ir.elements import numpy_dtype
    from loopdbg.ir.shapes import parse_shape

    specs = []
    g = model.graph
    for pid in g.parameters:
        layer = g.layers[pid]
        shape = parse_shape(layer.data.get("shape", "")) if "shape" in layer.data else (
            tuple(layer.outputs[0].dims) if layer.outputs else None)
        et = layer.data.get("element_type") or (layer.outputs[0].precision if layer.outputs else "f32")
        names = tuple(n for p in layer.outputs[:1] for n in p.names if n != layer.name)
        dt = numpy_dtype(et)
        specs.append(InputSpec(layer.name, names, shape, np.dtype(dt) if dt is not None else None))
    return specs


def output_names(model: Model) -> list[str]:
    """Names of the outputs: the tensor name feeding each top-level Result, else its layer name."""
    g = model.graph
    names: list[str] = []
    for rid in g.results:
        result = g.layers[rid]
        name = result.name
        src = g.producer(rid, 0)
        if src is not None:
            producer = g.layers.get(src[0])
            if producer is not None and src[1] < len(producer.outputs):
                port_names = producer.outputs[src[1]].names
                if port_names:
                    name = port_names[0]
        if name in names:
            name = result.name if result.name not in names else f"{result.name}#{rid}"
        names.append(name)
    return names


def load_npz(path: str | Path, limit: int | None = None) -> dict[str, np.ndarray]:
    """Read an .npz of named arrays without ever unpickling anything, within a byte budget
    (default a quarter of physical memory): see ``loopdbg.ir.files.read_npz``."""
    return read_npz(path, InputError, limit)


def match_inputs(model: Model, given: Mapping[str, np.ndarray], source: str = "inputs"
                 ) -> list[np.ndarray]:
    """The arrays for the model's Parameters, in order; one clear error for any mismatch.

    An input is found by its name (or another name of its tensor), else by its position: the
    key ``"0"``, ``"1"``, ... or ``numpy.savez``'s ``"arr_0"``, ``"arr_1"``, ... for the first,
    second, ... input. Converters name inputs ``x.1``, ``n.1``; positions spare the guessing.
    """
    specs = input_specs(model)
    expected = "; the model expects " + ", ".join(s.describe() for s in specs) if specs else ""
    remaining = dict(given)
    values = []
    for k, spec in enumerate(specs):
        key = next((k for k in (spec.name, *spec.names) if k in remaining), None)
        if key is None:
            key = next((p for p in (str(k), f"arr_{k}") if p in remaining), None)
        if key is None:
            raise InputError(f"{source} has no input '{spec.name}' (nor an array '{k}' or "
                             f"'arr_{k}' for input number {k}){expected}.")
        raw = remaining.pop(key)
        values.append(_check(spec, raw, source))
    if remaining:
        extra = ", ".join(sorted(remaining))
        raise InputError(f"{source} has input(s) the model does not take: {extra}{expected}.")
    return values


def _check(spec: InputSpec, raw, source: str) -> np.ndarray:
    arr = np.asarray(raw)
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{source}: input '{spec.name}' has dtype {arr.dtype}, which is not "
                         f"numeric; the model expects {spec.dtype}.")
    if spec.dtype is not None and arr.dtype != spec.dtype:
        if not np.can_cast(arr.dtype, spec.dtype, "safe"):
            raise InputError(f"{source}: input '{spec.name}' has dtype {arr.dtype}, but the model "
                             f"expects {spec.dtype}.")
        arr = arr.astype(spec.dtype)
    if spec.shape is not None:
        ok = len(spec.shape) == arr.ndim and all(d < 0 or d == a for d, a in zip(spec.shape, arr.shape))
        if not ok:
            raise InputError(f"{source}: input '{spec.name}' has shape {arr.shape}, but the model "
                             f"expects {spec.describe().split(' ', 2)[2]}.")
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


RANDOM_LIMIT = 1 << 26            # elements of random data per input (512 MiB as float64)


def random_inputs(model: Model, seed: int = 0, shapes: Mapping[str, tuple[int, ...]] | None = None
                  ) -> dict[str, np.ndarray]:
    """Seeded random data for every input; dynamic dims become 1 unless ``shapes`` says otherwise."""
    rng = np.random.default_rng(seed)
    shapes = dict(shapes or {})
    out = {}
    where = f"{model.path}: " if model.path else ""
    for spec in input_specs(model):
        if spec.name in shapes:
            shape = tuple(shapes.pop(spec.name))
        elif spec.shape is None:
            raise InputError(f"{where}input '{spec.name}' has a dynamic rank, so loopdbg cannot "
                             f"make up random data for it; give the inputs in an .npz (`loopdbg "
                             f"inputs MODEL --shape {spec.name}=D1,D2,... -o inputs.npz`).")
        else:
            shape = tuple(1 if d < 0 else d for d in spec.shape)
        dtype = spec.dtype or np.dtype(np.float32)
        if len(shape) > 64:
            raise InputError(f"{where}input '{spec.name}' has rank {len(shape)}, more than the 64 "
                             f"dimensions numpy supports.")
        count = int(np.prod(shape, dtype=object))
        if count > RANDOM_LIMIT:      # a hostile or mistaken shape must not exhaust memory
            raise InputError(f"{where}input '{spec.name}' has shape {shape}, {count} elements: "
                             f"too many to make up random data for (at most {RANDOM_LIMIT}); "
                             f"give the inputs in an .npz.")
        if dtype.kind == "b":
            out[spec.name] = rng.random(shape) < 0.5
        elif dtype.kind in "iu":
            out[spec.name] = rng.integers(0, 10, size=shape).astype(dtype)
        else:
            out[spec.name] = rng.standard_normal(shape).astype(dtype)
    if shapes:
        raise InputError(f"--shape names input(s) the model does not have: {', '.join(shapes)}.")
    return out
