"""Print the tables of loopdbg/ops/onnx_reference.py: the ONNX operators that onnx.reference
implements and loopdbg has no hand-written kernel for, each with the opset versions that changed it
(run by hand after an onnx upgrade, not by tests; tests/unit/test_onnx_reference.py holds the
tables to the installed onnx).

    python tools/onnx_reference_ops.py

It prints the ``REFERENCE_OPS`` (default domain) and ``DOMAIN_OPS`` (ai.onnx.ml, the preview
domains) literals to paste into the module. Operators the engine runs itself (Constant, Loop,
Scan, If), the hand-written ones, and those the module lists in ``NOT_HERE`` are left out.
"""

from __future__ import annotations

import importlib
import sys

# Domain -> the onnx.reference package of its implementations.
PACKAGES = {"": "onnx.reference.ops", "ai.onnx.ml": "onnx.reference.ops.aionnxml",
            "ai.onnx.preview": "onnx.reference.ops.aionnx_preview",
            "ai.onnx.preview.training": "onnx.reference.ops.aionnx_preview_training"}


def tables() -> dict[str, dict[str, tuple[int, ...]]]:
    """Domain -> operator -> the opset versions of its schemas, for what the module runs."""
    import onnx.defs

    from loopdbg.ops import onnx_reference
    from loopdbg.ops.registry import specs

    own = {s.type for s in specs()
           if s.type.startswith("onnx.") and s.factory.__module__ != onnx_reference.__name__}
    history: dict[tuple[str, str], set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        history.setdefault((schema.domain, schema.name), set()).add(schema.since_version)
    out: dict[str, dict[str, tuple[int, ...]]] = {d: {} for d in PACKAGES}
    for domain, package in PACKAGES.items():
        implemented = importlib.import_module(package + "._op_list")._build_registered_operators()
        for (dom, name), versions in sorted(history.items()):
            if dom != domain or name in onnx_reference.ENGINE or name in onnx_reference.NOT_HERE:
                continue
            if onnx_reference.layer_type(domain, name) in own:
                continue
            schema = onnx.defs.get_schema(name, domain=domain)
            if name in implemented or (domain == "" and (
                    schema.has_function or schema.has_context_dependent_function)):
                out[domain][name] = tuple(sorted(versions))
    return out


def literal(table: dict[str, tuple[int, ...]], indent: str) -> list[str]:
    lines, line = [], ""
    for name, versions in table.items():
        item = f'"{name}": {versions}, '
        if len(line) + len(item) > 100 - len(indent):
            lines.append(indent + line.rstrip())
            line = ""
        line += item
    lines.append(indent + line.rstrip())
    return lines


def main() -> int:
    t = tables()
    out = ["REFERENCE_OPS = {", *literal(t.pop(""), "    "), "}", "DOMAIN_OPS = {"]
    for domain, table in t.items():
        out += [f'    "{domain}": {{', *literal(table, "        "), "    },"]
    sys.stdout.write("\n".join(out + ["}"]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
