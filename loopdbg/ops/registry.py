"""The op table: every kernel loopdbg runs, and all else loopdbg knows about its op, in one place.

Each kernel is registered once, with ``op`` on its factory, in its family module::

    @op("Gather", versions=(8,), shape=gather_shape)
    def _gather8(layer: Layer): ...

(a family of like kernels, such as the unary math ops, calls ``op`` the same way in a loop over a
table of them), and that one entry carries

* the **type**: the canonical OpenVINO type (``Gather``) or ``onnx.<OpType>`` for an operator of
  ONNX's default domain;
* the **versions** it serves: OpenVINO opset numbers, or ONNX opset versions;
* the number of **outputs**: an int, or a function of the layer for ops whose count depends on
  attributes or declared ports (Split's ``num_splits``); its docstring's first line says how, for
  ``docs/ops.md``;
* the **shape rule** the model builder declares output ports with (see ``shape_rules``), or, as
  ``no_shape``, the reason the op needs none. ONNX kernels never need one: ONNX layers come from
  the ONNX reader, whose port shapes are onnx's own inference, and the builder writes IR only;
* the builder's **default version** of the type, when it is not the newest registered one;
* **notes**: where OpenVINO's CPU plugin (or reference) departs from the operation's
  specification and which one loopdbg follows, or any other limit a user must know.

An operation loopdbg deliberately does not run is registered with ``refuse(type, versions,
reason)``: the layer is refused with that reason, and ``docs/ops.md`` lists it.

A kernel is registered as a *factory*: it receives the ``Layer`` once, when the execution plan is
built, parses its attributes, and returns the function that runs it on arrays. That function takes
the input arrays positionally and returns one array (single-output ops) or a tuple of arrays.

Specialising on constant inputs. Axes, indices, target shapes and permutations usually come from
Constants, and a small body pays more for reading them on every call (``np.asarray``,
``normalize_axis_tuple``, ``.tolist()``) than for the numpy work itself. A family opts in per
registration with ``op(..., constants=True)``; its factory is then called as
``factory(layer, consts)``, where ``consts`` has one entry per input port: the Constant's value
(a read-only array) when a Constant feeds that input, else None. The factory resolves what it can
once (an axis normalised, indices checked, a key for ``x[key]`` precomputed) and returns a kernel
that is *still called with every input*, constants included, and must give exactly what the
general kernel gives for those inputs (tests compare the two). Where a value decides something only
together with a run-time rank or shape, the kernel keeps a small cache keyed by it; what it cannot
decide (a negative index, an out-of-range one, an unusual dtype) it hands to the general code, so
errors stay run-time errors with the same sentence. The factory's second parameter has a default
(``consts=None``) so that the factory also builds the general kernel, which is what a caller that
knows no constants gets (``make_kernel(layer)``). Families that do not opt in are untouched: their
factories keep the one argument.

Versions follow OpenVINO's opsets: opset N holds, for each type, the newest version introduced at or
before N. So ``Add`` registered for opset 1 serves a layer that says ``opset8``, and ``Gather``
registered for opsets 1, 7 and 8 picks the right one. A version is registered at the first opset
that holds it (``tools/openvino_opsets.py`` lists them; a test holds the table to that list).

Where the table lives, and why there. ``ir`` reads models and must not import ``ops``, and the
kernels are ``ops``: so the table is here, and a shape rule is a pure function of port types and
shapes written next to its kernel. The model builder needs output counts, default versions and
shape rules to write a layer, so it is not part of ``ir`` but a layer above this one,
``loopdbg.builder`` (``ir`` → ``ops`` → ``builder``); handing the table to an ``ir`` builder
from each caller was the other way, but every test and demo that builds a model would then have
had to pass it. The engine asks only for kernels (``make_kernel``), once per layer, when it
builds a plan.

How the table fills. A lookup of a type imports the family modules that register it, as
``_families.py`` lists them (importing all of them costs ~0.15 s, a third of opening a small
model); a type that list does not name, a lookup that finds no kernel or another version than
the list says (a family it does not name may hold it), and every question about the whole
table, import every module of this package whose name does not start with ``_``, in name order, and the ``op``
entries of the family modules among them fill the table (``args``, ``budget``, ``shape_rules``
and ``catalog`` are helpers and register nothing). ``_families.py`` is written from the table
with ``docs/ops.md`` (``python -m loopdbg.ops.catalog --write``), and a test holds them to it;
``_families.py`` is data and imports nothing.
Nothing lists the families, so adding an op to a family is editing one file, and adding a family
is adding one; family modules import this module, which imports none of them by name.
``tests/unit/test_ops_table.py`` holds the table, the builder, docs/ops.md and OpenVINO's opset
tables to each other.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Callable, Sequence

from loopdbg.errors import UnsupportedOperation
from loopdbg.ops.sizes import SIZED_BY_ATTRIBUTES, SIZED_BY_VALUES, guarded
from loopdbg.ir.model import Layer
from loopdbg.ir.record import Record, set_field as _set

Kernel = Callable[..., object]
KernelFactory = Callable[[Layer], Kernel]
ShapeRule = Callable[..., object]      # (layer, input infos, constant inputs) -> info(s) or None

ONNX_NEEDS_NO_SHAPE = ("ONNX layers are made by the ONNX reader, which takes port shapes from "
                       "onnx's own inference; the builder writes OpenVINO IR only")


class KernelSpec(Record):
    """One registered operation (type and version): its kernel factory, output count and
    shape rule."""

    __slots__ = ("type", "version", "factory", "outputs", "shape", "no_shape", "notes",
                 "constants")
    type: str
    version: int
    factory: KernelFactory
    outputs: int | Callable[[Layer], int]
    shape: ShapeRule | None
    no_shape: str | None                 # why there is no shape rule
    notes: str | None                    # departures from the specification, limits
    constants: bool                      # the factory takes the constant inputs too

    def __init__(self, type: str, version: int, factory: KernelFactory,  # noqa: A002
                 outputs: int | Callable[[Layer], int] = 1, shape: ShapeRule | None = None,
                 no_shape: str | None = None, notes: str | None = None,
                 constants: bool = False):
        _set(self, "type", type)
        _set(self, "version", version)
        _set(self, "factory", factory)
        _set(self, "outputs", outputs)
        _set(self, "shape", shape)
        _set(self, "no_shape", no_shape)
        _set(self, "notes", notes)
        _set(self, "constants", constants)

    def count_outputs(self, layer: Layer) -> int:
        return self.outputs(layer) if callable(self.outputs) else self.outputs


_REGISTRY: dict[str, dict[int, KernelSpec]] = {}
_DEFAULTS: dict[str, int] = {}           # builder default versions that are not the newest
_REFUSED: dict[tuple[str, int], str] = {}  # (type, version) -> why loopdbg does not run it
_LOADED = False
_MODULES: dict[str, set[str]] = {}      # type -> the family modules registering or refusing it
_OPSETS: dict[str, int] = {}             # opset_number's answers (a model asks once per layer)
_FOUND: dict[tuple[str, str], KernelSpec] = {}   # lookup's answers (a registration forgets them)
_NONE: dict = {}                         # (no registration: a type unregistered since)

# Versions that are not "opsetN": where OpenVINO takes such ops from (DESER create_node).
_SPECIAL_VERSIONS = {"experimental": 6, "extension": 6, "ie_internal_opset": 1000}

# The newest OpenVINO opset (2026.4 ships opset17): a layer claiming a later one is not OpenVINO's.
LATEST_OPENVINO_OPSET = 17


def op(type_: str, *, versions: Sequence[int] = (1,), outputs: int | Callable[[Layer], int] = 1,
       shape: ShapeRule | None = None, no_shape: str | None = None,
       default_version: int | None = None, notes: str | None = None,
       constants: bool = False) -> Callable[[KernelFactory], KernelFactory]:
    """Decorator: register ``factory`` as the kernel of ``type_`` at each of ``versions``.

    OpenVINO types take ``shape`` (a rule, see ``shape_rules``) or ``no_shape`` (why none is
    needed), and may take ``default_version`` (the builder's, when not the newest registered);
    ``onnx.`` types take neither. ``constants=True``: the factory is called with the constant
    inputs as its second argument (module docstring). Registering a (type, version) twice is an
    error.
    """
    if type_.startswith("onnx."):
        if shape is not None or no_shape is not None or default_version is not None:
            raise TypeError(f"{type_}: ONNX kernels take no shape rule and no builder default")
        no_shape = ONNX_NEEDS_NO_SHAPE
    elif (shape is None) == (no_shape is None):
        raise TypeError(f"{type_}: give a shape rule (shape=...) or the reason it needs none "
                        f"(no_shape=...)")
    if not versions:
        raise TypeError(f"{type_}: no versions given")

    def deco(factory: KernelFactory) -> KernelFactory:
        _FOUND.clear()                      # a newer version may serve what an older did
        table = _REGISTRY.setdefault(type_, {})
        for v in versions:
            if v in table:
                raise ValueError(f"{type_} version {v} is registered twice")
            table[v] = KernelSpec(type_, v, factory, outputs, shape, no_shape, notes, constants)
        _MODULES.setdefault(type_, set()).add(sys._getframe(1).f_globals["__name__"])
        if default_version is not None:
            if _DEFAULTS.setdefault(type_, default_version) != default_version:
                raise ValueError(f"{type_} has two builder default versions")
        return factory

    return deco


def refuse(type_: str, versions: Sequence[int], reason: str) -> None:
    """Record that loopdbg does not run ``type_`` at ``versions`` (opset numbers), and why: a
    layer of it is refused with ``reason`` (one clause, e.g. "its output depends on OpenVINO's
    random generator, which loopdbg does not reproduce")."""
    _MODULES.setdefault(type_, set()).add(sys._getframe(1).f_globals["__name__"])
    for v in versions:
        if (type_, v) in _REFUSED:
            raise ValueError(f"{type_} version {v} is refused twice")
        _REFUSED[(type_, v)] = reason


def refused() -> dict[tuple[str, int], str]:
    """Every deliberately refused (type, opset version) with its reason."""
    _load_all()
    return dict(_REFUSED)


def opset_number(version: str) -> int:
    n = _OPSETS.get(version)
    if n is None:
        n = _opset_number(version)
        if len(_OPSETS) < 1024:
            _OPSETS[version] = n
    return n


def _opset_number(version: str) -> int:
    m = re.fullmatch(r"opset(\d+)", version or "")
    if m:
        return int(m.group(1))
    if version in _SPECIAL_VERSIONS:
        return _SPECIAL_VERSIONS[version]
    raise ValueError(f"unknown opset version {version!r}")


def _load_all() -> None:
    """Import every family module of this package (see the module docstring), once."""
    global _LOADED
    if _LOADED:
        return
    import pkgutil      # here: a run imports the families its model names (_families.py)

    here = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if not info.name.startswith("_") and info.name != "registry":
            importlib.import_module(f"{__package__}.{info.name}")
    _LOADED = True


def families() -> dict[str, list[str]]:
    """Each type with the family modules that register or refuse it (for ``_families.py``)."""
    _load_all()
    return {t: sorted(m.rsplit(".", 1)[-1] for m in mods) for t, mods in sorted(_MODULES.items())}


def versions() -> dict[str, list[int]]:
    """Each type with the versions it has kernels for (for ``_families.py``)."""
    _load_all()
    return {t: sorted(vs) for t, vs in sorted(_REGISTRY.items())}


def _load_for(type_: str) -> None:
    """Import the family modules that register ``type_`` (every module for a type not listed)."""
    if _LOADED:
        return
    from loopdbg.ops._families import FAMILIES
    names = FAMILIES.get(type_)
    if names is None:
        _load_all()
        return
    for name in names:
        importlib.import_module(f"{__package__}.{name}")


def lookup(type_: str, version: str) -> KernelSpec | None:
    """The kernel serving ``type_`` in ``version``, or None."""
    found = _FOUND.get((type_, version))     # a model asks once per layer: answers are kept
    if found is not None:
        registered = _REGISTRY.get(type_)
        if registered is not None and registered.get(found.version) is found:
            return found
    _load_for(type_)
    spec = _lookup_loaded(type_, version)
    if not _LOADED and (spec is None or spec.version != _listed(type_, version)):
        _load_all()          # a family _families.py does not name may hold it (a stale list)
        spec = _lookup_loaded(type_, version)
    if spec is not None and len(_FOUND) < 4096:
        _FOUND[(type_, version)] = spec
    return spec


def _listed(type_: str, version: str) -> int | None:
    """The kernel version ``_families.py`` says serves ``type_`` in ``version`` (None: none)."""
    from loopdbg.ops._families import VERSIONS
    try:
        n = opset_number(version)
    except ValueError:
        return None
    usable = [v for v in VERSIONS.get(type_, ()) if v <= n]
    return max(usable) if usable else None


def _lookup_loaded(type_: str, version: str) -> KernelSpec | None:
    """``lookup`` among the families imported so far."""
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


def specs() -> list[KernelSpec]:
    """Every registration, by type then version."""
    _load_all()
    return [_REGISTRY[t][v] for t in sorted(_REGISTRY) for v in sorted(_REGISTRY[t])]


def default_version(type_: str) -> str | None:
    """The version the builder writes for an OpenVINO ``type_`` when not told: the one named by a
    registration's ``default_version``, else the newest registered. None for an unknown type."""
    _load_all()
    versions = _REGISTRY.get(type_)
    if not versions or type_.startswith("onnx."):
        return None
    return f"opset{_DEFAULTS.get(type_, max(versions))}"


ENGINE_TYPES = ("Parameter", "Constant", "Result", "Loop", "TensorIterator", "If")
DOCS = "docs/ops.md"


def check_supported(graph, file: str) -> None:
    """UnsupportedOperation naming every (type, version) of ``graph`` (bodies too) that loopdbg
    cannot run, in one sentence, before any plan is built: a converted model often lacks several,
    and a user should learn them all at once, not one per attempt."""
    graphs = []                             # every graph, with its loop path, in walk order
    todo = [(graph, "")]
    while todo:
        g, path = todo.pop()
        graphs.append((g, path))
        for layer in [layer for layer in g.layers.values() if layer.subgraphs]:
            for sub in layer.subgraphs:
                todo.append((sub.graph, f"{path}/{layer.name}" if path else layer.name))
    kinds = {(layer.type, layer.version) for g, _ in graphs for layer in g.layers.values()}
    bad = {key for key in kinds if key[0] not in ENGINE_TYPES and lookup(*key) is None}
    if not bad:                             # (asked once per type and version, not per layer)
        return
    missing: dict[tuple[str, str], list[str]] = {}
    for g, path in graphs:
        for layer in g.layers.values():
            key = (layer.type, layer.version)
            if key in bad:
                where = f" in the body of loop '{path}'" if path else ""
                missing.setdefault(key, []).append(layer.describe() + where)
    _load_all()                                 # the reasons of refused ops, from every family
    parts = []
    for (type_, version), places in sorted(missing.items()):
        reason = _refusal(type_, version)
        count = f"{len(places)} layers" if len(places) > 1 else places[0]
        parts.append(f"{type_} {version} ({count}" + (f": {reason})" if reason else ")"))
    shown = parts[:12] + ([f"and {len(parts) - 12} more"] if len(parts) > 12 else [])
    what = "an operation" if len(parts) == 1 else f"{len(parts)} operations"
    raise UnsupportedOperation(f"{file} uses {what} loopdbg cannot run: {', '.join(shown)}; "
                               f"{DOCS} lists what loopdbg runs.")


def _refusal(type_: str, version: str) -> str | None:
    try:
        n = opset_number(version)
    except ValueError:
        return None
    hits = [v for (t, v) in _REFUSED if t == type_ and v <= n]
    return _REFUSED[(type_, max(hits))] if hits else None


def make_kernel(layer: Layer, where: str = "",
                consts: Sequence[object | None] | None = None) -> tuple[Kernel, int]:
    """Build the kernel for ``layer``; return it with its number of outputs.

    ``consts``: the value of each input fed by a Constant, else None (one entry per input; the
    execution plan gives it), for the kernels registered with ``constants=True``.
    Raises UnsupportedOperation naming the layer and listing what loopdbg supports.
    """
    type_ = layer.type
    spec = _FOUND.get((type_, layer.version))     # (lookup's answer, inline: once per layer)
    if spec is None or _REGISTRY.get(type_, _NONE).get(spec.version) is not spec:
        spec = lookup(type_, layer.version)
    if spec is None:
        reason = _refusal(layer.type, layer.version)
        if reason is not None:
            raise UnsupportedOperation(
                f"{where}{layer.describe()} has type {layer.type} version {layer.version!r}, "
                f"which loopdbg does not run: {reason}.")
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
        known = False                       # a constant input (a loop: no generator's frame)
        if spec.constants and consts is not None:
            for c in consts:
                if c is not None:
                    known = True
                    break
        kernel = spec.factory(layer, tuple(consts)) if known else spec.factory(layer)
        if type_ in SIZED_BY_VALUES or type_ in SIZED_BY_ATTRIBUTES:
            kernel = guarded(layer, kernel)     # (a plan makes thousands: no call for the rest)
        n_out = spec.outputs
        return kernel, (n_out if n_out.__class__ is int else spec.count_outputs(layer))
    except UnsupportedOperation:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise UnsupportedOperation(
            f"{where}{layer.describe()} has attributes loopdbg cannot use: {exc}.") from None
