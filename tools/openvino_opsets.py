"""Write OpenVINO's opset tables as loopdbg/ops/openvino_opsets.txt (run by hand, not by tests).

    python tools/openvino_opsets.py > loopdbg/ops/openvino_opsets.txt

Each line is one operation version: its type, its version as OpenVINO's documentation numbers it
(``Gather-8``; the C++ namespace ``v0`` counts as 1), and the opsets that hold it, that is the
``version="opsetN"`` values of IR layers that get it. The tables are the ``opsetN_tbl.hpp``
headers the openvino wheel ships; nothing is run. loopdbg itself never imports OpenVINO for this:
``loopdbg.ops.catalog`` reads the text file.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LAST_OPSET = 17
_ENTRY = re.compile(r"^_OPENVINO_OP_REG\((\w+),\s*ov::op::v(\d+)\)", re.M)


def ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3,5"``."""
    parts, start = [], None
    for k, n in enumerate(numbers):
        if start is None:
            start = n
        if k + 1 == len(numbers) or numbers[k + 1] != n + 1:
            parts.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ",".join(parts)


def main() -> int:
    import openvino

    headers = Path(openvino.__file__).parent / "include" / "openvino" / "opsets"
    held: dict[tuple[str, int], list[int]] = {}
    for n in range(1, LAST_OPSET + 1):
        for name, version in _ENTRY.findall((headers / f"opset{n}_tbl.hpp").read_text()):
            held.setdefault((name, max(int(version), 1)), []).append(n)
    out = sys.stdout
    out.write(f"# OpenVINO {openvino.__version__}: opset1..opset{LAST_OPSET} as its "
              f"opsetN_tbl.hpp headers list them.\n")
    out.write("# Written by tools/openvino_opsets.py. Each line: type, version (Gather-8 is 8), "
              "the opsets that hold that version.\n")
    for name, version in sorted(held, key=lambda key: (key[0].lower(), key[1])):
        out.write(f"{name} {version} {ranges(held[name, version])}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
