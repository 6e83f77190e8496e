"""Print the table of loopdbg/ops/onnx_reference.py: the default-domain ONNX operators onnx.reference
implements and loopdbg has no hand-written kernel for, each with the opset versions that changed it
(run by hand after an onnx upgrade, not by tests; tests/unit/test_onnx_reference.py holds the table
to the installed onnx).

    python tools/onnx_reference_ops.py

It prints the ``REFERENCE_OPS`` literal to paste into the module. Operators the engine runs itself
(Constant, Loop, Scan, If), the hand-written ones, and those listed in the module's ``NOT_HERE``
(with why) are left out.
"""

from __future__ import annotations

import sys
import textwrap


def table() -> dict[str, tuple[int, ...]]:
    import onnx.defs
    from onnx.reference.ops._op_list import _build_registered_operators

    from loopdbg.ops import onnx_reference
    from loopdbg.ops.registry import specs

    implemented = _build_registered_operators()
    own = {s.type[5:] for s in specs()
           if s.type.startswith("onnx.") and s.factory.__module__ != onnx_reference.__name__}
    history: dict[str, set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain == "":
            history.setdefault(schema.name, set()).add(schema.since_version)
    out = {}
    for name, versions in sorted(history.items()):
        if name in own or name in onnx_reference.NOT_HERE or name in onnx_reference.ENGINE:
            continue
        schema = onnx.defs.get_schema(name)
        if name in implemented or schema.has_function or schema.has_context_dependent_function:
            out[name] = tuple(sorted(versions))
    return out


def main() -> int:
    body = ", ".join(f'"{k}": {v}' for k, v in table().items())
    sys.stdout.write("REFERENCE_OPS = {\n" + textwrap.indent(textwrap.fill(body, 96), "    ")
                     + "\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
