"""The model as plain data, and the readers and writers of model files.

``read_ir`` is exported lazily (module ``__getattr__``) so that ``import loopdbg.ir`` stays cheap:
lxml and the reader are only imported when a model is actually read.
"""

from __future__ import annotations

__all__ = ["read_ir", "parse_shape"]


def __getattr__(name: str):
    if name == "read_ir":
        from loopdbg.ir.xml_reader import read_ir
        return read_ir
    if name == "parse_shape":
        from loopdbg.ir.shapes import parse_shape
        return parse_shape
    raise AttributeError(f"module 'loopdbg.ir' has no attribute {name!r}")
