"""A model's inputs and outputs by name: matching user arrays, loading .npz safely, templates."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from loopdbg.errors import InputError
from loopdbg.files.read import npz_names, read_npz
from loopdbg.ir.elements import dtype_name, is_ml_dtype, is_numeric
from loopdbg.ir.model import Model
from loopdbg.ir.onnx_names import OPTIONAL, SEQUENCE, VALUE_KIND
from loopdbg.ir.record import Record, set_field as _set
from loopdbg.text import byte_size, listing


class InputSpec(Record):
    """One model input: its Parameter name, other tensor names, declared shape and dtype."""

    __slots__ = ("name", "names", "shape", "dtype", "kind")
    name: str
    names: tuple[str, ...]
    shape: tuple[int, ...] | None      # -1 for a dynamic dim; None for dynamic rank
    dtype: np.dtype | None             # None: dynamic element type, any numeric dtype
    kind: str | None                   # ONNX: "sequence", "optional", "optional sequence"

    def __init__(self, name: str, names: tuple[str, ...], shape: tuple[int, ...] | None,
                 dtype: np.dtype | None, kind: str | None = None):
        _set(self, "name", name)
        _set(self, "names", names)
        _set(self, "shape", shape)
        _set(self, "dtype", dtype)
        _set(self, "kind", kind)

    @property
    def shape_text(self) -> str:
        if self.shape is None:
            return "any shape"
        return "(" + ", ".join("?" if d < 0 else str(d) for d in self.shape) + \
            ("," if len(self.shape) == 1 else "") + ")"

    def describe(self) -> str:
        dtype = dtype_name(self.dtype) if self.dtype is not None else "of any type"
        if self.kind is not None:       # a sequence (list) or optional (None or the value)
            what = "sequence" if self.kind.endswith(SEQUENCE) else "tensor"
            opt = "optional " if self.kind.startswith(OPTIONAL) else ""
            return f"{self.name} {opt}{what} of {dtype} {self.shape_text} tensors" \
                if what == "sequence" else f"{self.name} {opt}{dtype} {self.shape_text}"
        return f"{self.name} {dtype} {self.shape_text}"


def input_specs(model: Model) -> list[InputSpec]:
    from loopdbg.ir.elements import numpy_dtype
    from loopdbg.ir.shapes import parse_shape

    specs = []
    g = model.graph
    for pid in g.parameters:
        layer = g.layers[pid]
        try:
            shape = parse_shape(layer.data.get("shape", "")) if "shape" in layer.data else (
                tuple(layer.outputs[0].dims) if layer.outputs else None)
        except ValueError as exc:        # rank 65, a dim past numpy's: no input can be given
            where = f"{model.path}: " if model.path else ""
            raise InputError(f"{where}input '{layer.name}' has a shape loopdbg cannot use "
                             f"({exc}).") from None
        et = layer.data.get("element_type") or (layer.outputs[0].precision if layer.outputs else "f32")
        names = tuple(n for p in layer.outputs[:1] for n in p.names if n != layer.name)
        dt = numpy_dtype(et)
        specs.append(InputSpec(layer.name, names, shape, np.dtype(dt) if dt is not None else None,
                               layer.data.get(VALUE_KIND)))
    return specs


def output_names(model: Model) -> list[str]:
    """Names of the outputs: the tensor name feeding each top-level Result, else its layer name."""
    g = model.graph
    names: list[str] = []
    taken: set[str] = set()             # the names so far, as a set: linear in the outputs
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
        if name in taken:
            name = result.name if result.name not in taken else f"{result.name}#{rid}"
        names.append(name)
        taken.add(name)
    return names


def load_npz(path: str | Path, limit: int | None = None, model: Model | None = None
             ) -> dict[str, np.ndarray]:
    """Read an .npz of named arrays without ever unpickling anything, within a byte budget
    (default a quarter of physical memory): see ``loopdbg.files.read.read_npz``. With ``model``,
    the names of its arrays are matched against the model's inputs first, from the zip's
    directory alone, and an array no input takes is not read: it is there as None, for
    ``match_inputs`` to refuse by name (200,000 of them cost their names, not their reading)."""
    unused: set[str] = set()
    names = npz_names(path, InputError) if model is not None else None
    if names is not None:
        try:
            specs = input_specs(model)
        except InputError:          # said when the model runs, in its turn
            specs = None
        if specs is not None:
            remaining = dict.fromkeys(names)
            for k, spec in enumerate(specs):
                key = _key_for(k, spec, remaining)
                if key is not None:
                    remaining.pop(key)
            unused = set(remaining)
    return read_npz(path, InputError, limit, skip=unused)


def match_inputs(model: Model, given: Mapping[str, np.ndarray], source: str = "inputs"
                 ) -> list[np.ndarray]:
    """The arrays for the model's Parameters, in order; one clear error for any mismatch.

    An input is found by its name (or another name of its tensor), else by its position: the
    key ``"0"``, ``"1"``, ... or ``numpy.savez``'s ``"arr_0"``, ``"arr_1"``, ... for the first,
    second, ... input. Converters name inputs ``x.1``, ``n.1``; positions spare the guessing.
    """
    specs = input_specs(model)
    expected = "; the model expects " + listing(s.describe() for s in specs) if specs else ""
    remaining = dict(given)
    values = []
    for k, spec in enumerate(specs):
        key = _key_for(k, spec, remaining)
        if key is None:
            raise InputError(f"{source} has no input '{spec.name}' (nor an array '{k}' or "
                             f"'arr_{k}' for input number {k}){expected}.")
        raw = remaining.pop(key)
        values.append(_check_value(spec, raw, source))
    if remaining:
        extra = listing(sorted(remaining))
        raise InputError(f"{source} has input(s) the model does not take: {extra}{expected}.")
    return values


def _key_for(k: int, spec: InputSpec, remaining: dict) -> str | None:
    """The key of ``remaining`` that input number ``k`` takes (a sequence's items gathered under
    its name first), None if there is none."""
    key = next((n for n in (spec.name, *spec.names) if n in remaining), None)
    if key is None and spec.kind is not None and spec.kind.endswith(SEQUENCE):
        key = _gather_sequence(spec.name, remaining)      # npz: name[0], name[1], ...
    if key is None:
        key = next((p for p in (str(k), f"arr_{k}") if p in remaining), None)
    return key


def _gather_sequence(name: str, given: dict) -> str | None:
    """An .npz holds a sequence input ``s`` as ``s[0]``, ``s[1]``, ... (an empty one as ``s[]``):
    gather them into one list under ``name`` in ``given``; the key, or None if there is none."""
    if f"{name}[]" in given:
        given.pop(f"{name}[]")
        given[name] = []
        return name
    items = []
    while f"{name}[{len(items)}]" in given:
        items.append(given.pop(f"{name}[{len(items)}]"))
    if not items:
        return None
    given[name] = items
    return name


def _check_value(spec: InputSpec, raw, source: str):
    """A tensor input as ``_check`` takes it; a sequence as a list of such tensors; an optional
    as None (empty) or its value."""
    kind = spec.kind
    if kind is None:
        return _check(spec, raw, source)
    if raw is None:
        if kind.startswith(OPTIONAL):
            return None
        raise InputError(f"{source}: input '{spec.name}' is None, but the model expects a "
                         f"sequence ({spec.describe()}).")
    if not kind.endswith(SEQUENCE):
        return _check(spec, raw, source)
    if not isinstance(raw, (list, tuple)):
        raise InputError(f"{source}: input '{spec.name}' is a {type(raw).__name__}, but the "
                         f"model expects a sequence: give a list of arrays ({spec.describe()}).")
    items = [_check(spec, v, f"{source} (element {k} of sequence '{spec.name}')")
             for k, v in enumerate(raw)]
    if len({v.dtype for v in items}) > 1:
        raise InputError(f"{source}: the tensors of sequence input '{spec.name}' differ in "
                         f"dtype; a sequence holds one element type.")
    return items


def _check(spec: InputSpec, raw, source: str) -> np.ndarray:
    arr = _as_array(spec, raw, source)
    want = spec.dtype
    if want is not None and arr.dtype != want and not (want.kind == arr.dtype.kind == "U"):
        if not _can_cast(arr.dtype, want):
            raise InputError(f"{source}: input '{spec.name}' has dtype {dtype_name(arr.dtype)}, "
                             f"but the model expects {dtype_name(want)}.")
        arr = arr.astype(want)
    if spec.shape is not None:
        ok = len(spec.shape) == arr.ndim and all(d < 0 or d == a for d, a in zip(spec.shape, arr.shape))
        if not ok:
            raise InputError(f"{source}: input '{spec.name}' has shape {arr.shape}, but the model "
                             f"expects {spec.shape_text}.")
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


def _as_array(spec: InputSpec, raw, source: str) -> np.ndarray:
    """``raw`` as an array of numbers, booleans or strings (see ``loopdbg.engine.npz`` for the
    raw-bytes form numpy gives ml_dtypes values it saved without their name)."""
    expects = f"the model expects {dtype_name(spec.dtype)}" if spec.dtype is not None else \
        "the model takes numbers, booleans or strings"
    arr = np.asarray(raw)
    if arr.dtype == object:             # Python strings: accepted as numpy unicode
        flat = arr.reshape(-1).tolist()
        if all(isinstance(v, str) for v in flat):
            return np.array(flat, dtype=str).reshape(arr.shape)
        raise InputError(f"{source}: input '{spec.name}' holds Python objects, not numbers or "
                         f"strings; {expects}.")
    if arr.dtype.kind == "V" and spec.dtype is not None and is_ml_dtype(spec.dtype) \
            and arr.dtype.itemsize == spec.dtype.itemsize and arr.dtype.names is None:
        return arr.view(spec.dtype)
    if not (is_numeric(arr.dtype) or arr.dtype.kind == "U"):
        what = " (raw bytes)" if arr.dtype.kind == "V" and arr.dtype.names is None else ""
        raise InputError(f"{source}: input '{spec.name}' has dtype {arr.dtype}{what}, which is "
                         f"not numeric (loopdbg takes numbers, booleans and strings); {expects}.")
    return arr


def _can_cast(have: np.dtype, want: np.dtype) -> bool:
    """Whether an input of dtype ``have`` is taken for ``want`` without losing anything: numpy's
    safe casts; strings only as strings; an ml_dtypes type only from itself."""
    if have.kind == "U" or want.kind == "U":
        return False
    if is_ml_dtype(have) or is_ml_dtype(want):
        return False
    return bool(np.can_cast(have, want, "safe"))


RANDOM_BYTES = 1 << 29            # what random inputs may take together without --max-memory


def random_inputs(model: Model, seed: int = 0, shapes: Mapping[str, tuple[int, ...]] | None = None,
                  limit: int | None = None) -> dict[str, np.ndarray]:
    """Seeded random data for every input; dynamic dims become 1 unless ``shapes`` says otherwise.

    All of them together get one budget, ``limit`` bytes (the run's --max-memory; default
    ``RANDOM_BYTES``), counted before any is made, with the float64 draws they are made from: a
    model with many inputs cannot take a multiple of it."""
    rng = np.random.default_rng(seed)
    shapes = dict(shapes or {})
    where = f"{model.path}: " if model.path else ""
    budget = RANDOM_BYTES if limit is None else limit
    planned = []
    total = 0
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
        copies = 2 if spec.kind is not None and spec.kind.endswith(SEQUENCE) else 1
        total += count * (max(dtype.itemsize, 1) * copies + 8)
        if total > budget:         # a hostile or mistaken shape must not exhaust memory
            raise InputError(f"{where}input '{spec.name}' has shape {shape}, {count} elements: "
                             f"too many to make up random data for (the random inputs may use "
                             f"{byte_size(budget)} together, --max-memory); give the inputs in "
                             f"an .npz.")
        planned.append((spec, shape, dtype))
    if shapes:
        raise InputError(f"--shape names input(s) the model does not have: {listing(shapes)}.")
    out = {}
    for spec, shape, dtype in planned:
        if dtype.kind == "b":
            out[spec.name] = rng.random(shape) < 0.5
        elif dtype.kind in "iu":
            out[spec.name] = rng.integers(0, 10, size=shape).astype(dtype)
        elif dtype.kind == "U":
            words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
            out[spec.name] = words[rng.integers(0, len(words), size=shape)]
        elif "int" in dtype.name:           # int4, uint2, ...: small values every width holds
            out[spec.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            out[spec.name] = rng.standard_normal(shape).astype(dtype)
        if spec.kind is not None and spec.kind.endswith(SEQUENCE):    # two tensors of the kind
            out[spec.name] = [out[spec.name], out[spec.name].copy()]
    return out
