"""The op table agrees with the builder, with docs/ops.md and with OpenVINO's opset tables.

One ``op(...)`` registration carries a kernel's versions, output count, shape rule and builder
default (loopdbg/ops/registry.py). Everything else that describes ops is held to it here:

* docs/ops.md is exactly what ``python -m loopdbg.ops.catalog`` writes today;
* every version the builder writes by default has its kernel, and the builder writes it;
* every kernel has a shape rule or says why it needs none, and ``op`` refuses one that does not;
* every OpenVINO kernel is registered at the opset that introduced the version it implements, and
  no newer OpenVINO version of a type loopdbg runs is left to an older kernel;
* the family modules are found without being listed, and loading them all imports no ONNX reader,
  no onnx and no OpenVINO.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.ops import catalog, registry
from loopdbg.ops.registry import default_version, lookup, op, specs, supported
from loopdbg.ops.shape_rules import same

ROOT = Path(__file__).resolve().parents[2]
IR_TYPES = [t for t in supported() if not t.startswith("onnx.")]
OPENVINO = catalog.openvino_versions()


def test_docs_ops_md_is_what_the_catalog_writes():
    written = (ROOT / "docs" / "ops.md").read_text()
    assert written == catalog.render(), f"docs/ops.md is out of date: run {catalog.REGENERATE}"
    assert catalog.REGENERATE in written.splitlines()[2]


def test_the_catalog_lists_every_registration_once():
    text = catalog.render()
    for spec in specs():
        name = spec.type.removeprefix("onnx.")
        assert f"| {name} |" in text, spec.type
    assert "| ? |" not in text


@pytest.mark.parametrize("type_", IR_TYPES)
def test_every_builder_default_version_has_its_kernel(type_):
    version = default_version(type_)
    spec = lookup(type_, version)
    assert spec is not None and f"opset{spec.version}" == version


def test_the_builder_writes_the_default_versions():
    b = GraphBuilder("every_op")
    for type_ in IR_TYPES:
        out = b.op(type_, [], name=type_)
        b.result(out[0] if isinstance(out, tuple) else out, f"{type_}_out")
    written = {layer.name: layer.version for layer in b.build().graph.layers.values()}
    assert {t: written[t] for t in IR_TYPES} == {t: default_version(t) for t in IR_TYPES}


def test_a_type_without_a_kernel_has_no_default_and_is_written_as_opset1():
    assert default_version("MadeUpOp") is None and default_version("onnx.Add") is None
    b = GraphBuilder()
    b.result(b.op("MadeUpOp", [b.parameter("x", "f32", [2])], name="r"))
    assert b.build().graph.layers[1].version == "opset1"


def test_every_kernel_has_a_shape_rule_or_a_reason_it_needs_none():
    for spec in specs():
        if spec.type.startswith("onnx."):
            assert spec.shape is None and spec.no_shape == registry.ONNX_NEEDS_NO_SHAPE
        else:
            assert callable(spec.shape) or (spec.no_shape or "").strip(), spec.type


def test_op_refuses_an_incomplete_or_repeated_registration(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", {t: dict(v) for t, v in registry._REGISTRY.items()})
    monkeypatch.setattr(registry, "_MODULES", {t: set(m) for t, m in registry._MODULES.items()})
    with pytest.raises(TypeError, match="shape rule"):
        op("Mystery")
    with pytest.raises(TypeError, match="shape rule"):
        op("Mystery", shape=same, no_shape="both")
    with pytest.raises(TypeError, match="ONNX"):
        op("onnx.Mystery", shape=same)
    op("Mystery", versions=(3,), shape=same)(lambda layer: abs)
    assert lookup("Mystery", "opset4").shape is same
    with pytest.raises(ValueError, match="Mystery version 3 is registered twice"):
        op("Mystery", versions=(3,), shape=same)(lambda layer: abs)
    with pytest.raises(ValueError, match="Add version 1 is registered twice"):
        op("Add", shape=same)(lambda layer: abs)


@pytest.mark.parametrize("type_", IR_TYPES)
def test_kernels_sit_where_openvino_introduces_a_version(type_):
    introduced = sorted(opsets[0] for (name, _), opsets in OPENVINO.items() if name == type_)
    assert introduced, f"OpenVINO's opsets have no {type_}"
    registered = supported()[type_]
    assert set(registered) <= set(introduced), \
        f"{type_} is registered at opsets {registered}; OpenVINO introduces it at {introduced}"
    newer = [k for k in introduced if k > registered[0] and k not in registered]
    assert not newer, f"{type_}: layers of opset {newer[0]} would silently run an older kernel"


def test_family_modules_are_found_without_a_list():
    infrastructure = {"__init__", "_families", "args", "budget", "catalog", "registry", "shape_rules",
                      "sizes", "gemm", "threads", "process_state", "erf"}
    files = {p.stem for p in (ROOT / "loopdbg" / "ops").glob("*.py")} - infrastructure
    families = {spec.factory.__module__.rsplit(".", 1)[-1] for spec in specs()}
    assert families == files


def test_the_families_list_is_the_table_s():
    assert catalog.families_source() == catalog.FAMILIES_FILE.read_text(encoding="utf-8"), \
        f"loopdbg/ops/_families.py is out of date: {catalog.REGENERATE}"


def test_the_families_list_is_data_and_imports_nothing():
    tree = ast.parse(catalog.FAMILIES_FILE.read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom,
                                                            ast.FunctionDef, ast.Call))]


def test_a_stale_list_loads_every_family_instead_of_serving_an_older_kernel():
    """The list says Add-5 exists but the families it names for Add serve Add-1 only (Add-5
    was moved to another family): the lookup imports every family rather than serve Add-1."""
    probe = ("import sys; from loopdbg.ops import _families, registry; "
             "_families.VERSIONS['Add'] = (1, 5); "
             "print(registry.lookup('Add', 'opset1').version, registry._LOADED); "
             "print(registry.lookup('Add', 'opset17').version, registry._LOADED)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "False", "1", "True"]


def test_catalog_write_writes_every_generated_file(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "FAMILIES_FILE", tmp_path / "_families.py")
    monkeypatch.setattr(catalog, "DOCS_FILE", tmp_path / "ops.md")
    assert catalog.main(["--write"]) == 0
    assert (tmp_path / "_families.py").read_text() == catalog.families_source()
    assert (tmp_path / "ops.md").read_text() == catalog.render()


def test_a_lookup_imports_only_the_families_of_its_type():
    probe = ("import sys; from loopdbg.ops import registry; "
             "k = registry.lookup('Add', 'opset1'); g = registry.lookup('Gather', 'opset8'); "
             "print(k is not None and g is not None, registry._LOADED, sorted(m for m in "
             "sys.modules if m.startswith('loopdbg.ops.') and m.count('.') == 2))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    found, loaded, modules = proc.stdout.strip().split(" ", 2)
    assert (found, loaded) == ("True", "False")
    assert "loopdbg.ops.elementwise" in modules and "loopdbg.ops.gather" in modules
    assert "loopdbg.ops.conv" not in modules and "loopdbg.ops.nms" not in modules


def test_a_type_the_list_does_not_name_loads_the_whole_table():
    probe = ("from loopdbg.ops import registry; "
             "print(registry.lookup('NoSuchOp', 'opset1'), registry._LOADED)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "True"]


def test_the_whole_table_loads_without_onnx_or_the_onnx_reader():
    probe = ("import sys; from loopdbg.ops import catalog, registry; registry.supported(); "
             "catalog.render(); print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('onnx', 'openvino') or m == 'loopdbg.ir.onnx_reader'))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_kernel_is_made_from_the_registration_of_now(monkeypatch):
    """make_kernel keeps no answer a registration has replaced or removed since (it reads the
    lookups kept, once per layer), and counts outputs given as a number or by the layer."""
    from loopdbg.errors import UnsupportedOperation
    from loopdbg.ir.model import Layer, Port

    layer = Layer(id=3, name="s", type="Split", version="opset1", data={"num_splits": "3"},
                  inputs=(Port(0, 0), Port(1, 1)), outputs=tuple(Port(2 + j, j) for j in range(3)))
    fn, n_out = registry.make_kernel(layer)
    assert n_out == 3
    spec = lookup("Split", "opset1")
    monkeypatch.setitem(registry._REGISTRY["Split"], spec.version,
                        spec.replace(factory=lambda layer: "replaced", outputs=2))
    assert registry.make_kernel(layer) == ("replaced", 2)
    monkeypatch.setitem(registry._REGISTRY, "Split", {})
    with pytest.raises(UnsupportedOperation, match="layer 3 's'"):
        registry.make_kernel(layer)
