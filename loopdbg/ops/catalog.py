"""The files written from the op table: ``docs/ops.md`` (every operation loopdbg runs) and
``loopdbg/ops/_families.py`` (which family modules to import for a type), both at once:

    python -m loopdbg.ops.catalog --write       # (without --write: docs/ops.md to stdout)

The OpenVINO side is held against OpenVINO's own opset tables, which ``tools/openvino_opsets.py``
copies into ``openvino_opsets.txt`` beside this module (so neither this module nor its test
imports OpenVINO): each kernel is shown with the OpenVINO version it implements and the opsets
holding that version, and the versions loopdbg has no kernel for are listed at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

from loopdbg.ops.registry import KernelSpec, default_version, families, refused, specs, versions

OPENVINO_TABLE = Path(__file__).with_name("openvino_opsets.txt")
ONNX_NODE_TESTS = Path(__file__).with_name("onnx_node_tests.txt")
REGENERATE = "python -m loopdbg.ops.catalog --write"
FAMILIES_FILE = Path(__file__).with_name("_families.py")
DOCS_FILE = Path(__file__).resolve().parents[2] / "docs" / "ops.md"     # in a source checkout

# Layers the engine runs itself (engine/plan.py), not through a kernel, per format.
ENGINE_IR = ("Parameter", "Constant", "Result", "Loop", "TensorIterator", "If")
ENGINE_ONNX = ("Constant", "Loop", "Scan", "If")


def openvino_versions() -> dict[tuple[str, int], list[int]]:
    """OpenVINO's (type, version) -> the opsets that hold it, from ``openvino_opsets.txt``."""
    table: dict[tuple[str, int], list[int]] = {}
    for line in OPENVINO_TABLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version, ranges = line.split()
            opsets = []
            for part in ranges.split(","):
                first, _, last = part.partition("-")
                opsets += range(int(first), int(last or first) + 1)
            table[(name, int(version))] = opsets
    return table


def openvino_source() -> str:
    """The first comment line of the table: which OpenVINO it was copied from."""
    return OPENVINO_TABLE.read_text().splitlines()[0].lstrip("# ")


def implemented_version(spec: KernelSpec, table) -> tuple[int, list[int]] | None:
    """The OpenVINO version a kernel registered at opset k implements: the one first held by k."""
    for (name, version), opsets in table.items():
        if name == spec.type and opsets[0] == spec.version:
            return version, opsets
    return None


def _span(opsets: list[int]) -> str:
    parts, start = [], None
    for k, n in enumerate(opsets):
        start = n if start is None else start
        if k + 1 == len(opsets) or opsets[k + 1] != n + 1:
            parts.append(str(start) if start == n else f"{start}–{n}")
            start = None
    return ", ".join(parts)


def _outputs(spec: KernelSpec) -> str:
    if not callable(spec.outputs):
        return str(spec.outputs)
    doc = (spec.outputs.__doc__ or spec.outputs.__name__).strip().splitlines()[0]
    return doc.replace("``", "`").rstrip(".")


def _family(spec: KernelSpec) -> str:
    return f"`{spec.factory.__module__.rsplit('.', 1)[-1]}`"


def render() -> str:
    table = openvino_versions()
    all_specs = specs()
    ir = [s for s in all_specs if not s.type.startswith("onnx.")]
    onnx = [s for s in all_specs if s.type.startswith("onnx.")]
    out = [
        "# The operations loopdbg runs",
        "",
        f"<!-- Written by `{REGENERATE}` from loopdbg's op table; do not edit by hand.",
        "     tests/unit/test_ops_table.py fails while this file is out of date. -->",
        "",
        "Each kernel is one `op(...)` registration in a family module of `loopdbg/ops/` (see the "
        "docstring of `loopdbg/ops/registry.py`), which also gives its output count, the shape "
        "rule `loopdbg.builder` declares ports with, and the builder's default version.",
        "",
        f"## OpenVINO IR: {len(ir)} kernels for {len({s.type for s in ir})} types",
        "",
        "A layer's `version=\"opsetN\"` runs the newest kernel registered at or below opset N. "
        "*Version* is OpenVINO's (`Gather-8`), *opsets* those of "
        f"{openvino_source().split(':')[0]} that hold it. *Builder* marks the version "
        "`GraphBuilder.op` writes when given none. "
        f"{', '.join(ENGINE_IR[:-1])} and {ENGINE_IR[-1]} are run by the engine itself.",
        "",
        "| Type | Version | Opsets | Outputs | Builder | Module |",
        "|---|---|---|---|---|---|",
    ]
    for s in ir:
        found = implemented_version(s, table)
        version, opsets = found if found else ("?", [s.version])
        builder = "✓" if default_version(s.type) == f"opset{s.version}" else ""
        out.append(f"| {s.type} | {version} | {_span(opsets)} | {_outputs(s)} | {builder} "
                   f"| {_family(s)} |")
    out += [
        "",
        f"## ONNX: {len(onnx)} kernels for {len({s.type for s in onnx})} operators",
        "",
        "A node runs the newest kernel registered at or below the model's opset for its "
        f"domain. {', '.join(ENGINE_ONNX[:-1])} and {ENGINE_ONNX[-1]} become IR layers the "
        "engine runs itself (Scan becomes a TensorIterator). Operators of other domains than "
        "the default one are named with their domain (`ai.onnx.ml.Scaler`). Module "
        "`onnx_reference` runs onnx.reference's implementation of the operator.",
        "",
        "| Operator | Since opset | Outputs | Module |",
        "|---|---|---|---|",
    ]
    for s in onnx:
        out.append(f"| {s.type[5:]} | {s.version} | {_outputs(s)} | {_family(s)} |")
    have = {(s.type, v[0]) for s in ir if (v := implemented_version(s, table))}
    missing = [(name, version, opsets) for (name, version), opsets in table.items()
               if (name, version) not in have and name not in ENGINE_IR]
    out += [
        "",
        f"## OpenVINO operation versions loopdbg does not run: {len(missing)}",
        "",
        f"From the opset1..opset17 tables of {openvino_source().split(':')[0]} (copied into "
        "`loopdbg/ops/openvino_opsets.txt` by `tools/openvino_opsets.py`). That release's opset17 "
        "holds only a few types, so most types end at opset16.",
        "",
        "| Type | Version | Opsets | Why |",
        "|---|---|---|---|",
    ]
    why = refused()
    for name, version, opsets in missing:
        reason = why.get((name, opsets[0]), "no kernel yet")
        out.append(f"| {name} | {version} | {_span(opsets)} | {reason} |")
    out += onnx_node_tests()
    noted = [s for s in all_specs if s.notes]
    if noted:
        out += ["", "## Notes: departures from the specifications, and limits", ""]
        for s in noted:
            at = f"ONNX opset {s.version}" if s.type.startswith("onnx.") else f"opset{s.version}"
            out.append(f"- **{s.type}** (registered at {at}): {s.notes}")
    return "\n".join(out) + "\n"


def onnx_node_tests() -> list[str]:
    """The section on ONNX's backend node tests, from ``onnx_node_tests.txt``: the figure, and
    each test loopdbg does not pass with why."""
    lines = ONNX_NODE_TESTS.read_text().splitlines()
    figure = next((t[2:] for t in lines if t.startswith("# onnx ")), "")
    failing = [t.split("\t", 1) for t in lines if t.strip() and not t.startswith("#")]
    return ["", f"## ONNX backend node tests loopdbg does not pass: {len(failing)}", "",
            f"ONNX's own node tests (`onnx.backend.test.case`), run by "
            f"`tests/unit/test_onnx_node_tests.py`: {figure}.", "",
            "| Test | Why |", "|---|---|", *(f"| {n} | {why} |" for n, why in failing)]


def families_source() -> str:
    """``_families.py`` as the table gives it now."""
    rows = "".join(f"    {t!r}: {tuple(mods)!r},\n" for t, mods in families().items())
    vrows = "".join(f"    {t!r}: {tuple(vs)!r},\n" for t, vs in versions().items())
    return ('"""Which family modules register (or refuse) each operation type, so that a lookup '
            'imports only\nthose (``loopdbg.ops.registry``). Written from the table with '
            'docs/ops.md; do not edit by hand:\n\n'
            f'    {REGENERATE}\n\n'
            '``tests/unit/test_ops_table.py`` holds this list to the table.\n"""\n\n'
            "FAMILIES: dict[str, tuple[str, ...]] = {\n" + rows + "}\n\n"
            "# the versions each type has kernels for: a lookup that the families listed above\n"
            "# answer with another one imports every family (the list is out of date)\n"
            "VERSIONS: dict[str, tuple[int, ...]] = {\n" + vrows + "}\n")


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        FAMILIES_FILE.write_text(families_source(), encoding="utf-8")
        DOCS_FILE.write_text(render(), encoding="utf-8")
        return 0
    if argv:
        sys.stderr.write(f"usage: {REGENERATE} (or without --write: docs/ops.md to stdout)\n")
        return 2
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
