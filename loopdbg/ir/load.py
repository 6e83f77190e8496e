"""Open any model file loopdbg understands, chosen by its suffix."""

from __future__ import annotations

import stat
from pathlib import Path

from loopdbg.errors import ModelError
from loopdbg.files import kind_of
from loopdbg.ir.bulk import paused
from loopdbg.ir.model import Model


def read_model(path: str | Path, limit: int | None = None) -> Model:
    """Read an OpenVINO IR (.xml with its .bin beside it) or an ONNX model (.onnx); ``limit``:
    the memory budget (``--max-memory``) reading an ONNX model's own bytes must fit in."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"{path}: no such file.")
    if path.is_dir():
        xml = path / "model.xml"
        if xml.exists():
            return read_model(xml, limit)
        raise ModelError(f"{path} is a folder without a model.xml.")
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):          # a FIFO or /dev/zero would hang or feed without end
        raise ModelError(f"{path} is {kind_of(mode)}, not a regular file; loopdbg reads only "
                         f"regular files.")
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        from loopdbg.ir.onnx_file import read_onnx
        with paused():
            return read_onnx(path, limit)
    if suffix == ".xml":
        from loopdbg.ir.xml_reader import read_ir
        with paused():
            return read_ir(path)
    raise ModelError(f"{path}: loopdbg reads OpenVINO IR (.xml + .bin) and ONNX (.onnx) models, "
                     f"not '{suffix or 'no suffix'}' files.")
