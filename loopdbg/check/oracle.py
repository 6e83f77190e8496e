"""OpenVINO as the oracle of ``check``: the shared child worker, with what a check needs on top.

OpenVINO is an optional extra (``pip install 'loopdbg[openvino]'``); it is never loopdbg's engine,
only what ``loopdbg check`` compares with, and it never runs in loopdbg's own process: every call
goes to the child of ``loopdbg.oracle`` (a crash there is a report here, not the end of loopdbg).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from loopdbg.errors import LoopdbgError
from loopdbg.ir.model import Model
from loopdbg.oracle import Compiled, OpenVINO, OracleFailure
from loopdbg.oracle.worker import INSTALL, openvino_installed

__all__ = ["CheckUnavailable", "Oracle", "OracleFailure", "Compiled", "INSTALL",
           "require_openvino"]


class CheckUnavailable(LoopdbgError):
    """The check cannot run at all: OpenVINO is missing, no such device, no inputs (exit 2)."""

    exit_code = 2


def require_openvino() -> None:
    """CheckUnavailable saying how to install OpenVINO when it is not (without importing it)."""
    if not openvino_installed():
        raise CheckUnavailable(f"loopdbg check compares with OpenVINO, which is not installed; "
                               f"install it with: {INSTALL}")


class Oracle:
    """OpenVINO on one device (in the child process), models compiled with precision f32.

    ``timeout`` (seconds per compile or run) and ``max_memory`` (bytes) bound OpenVINO's side.
    """

    def __init__(self, device: str = "CPU", *, timeout: float | None = None,
                 max_memory: int | None = None):
        require_openvino()
        try:
            self.ov = OpenVINO(device, timeout=timeout, max_memory=max_memory)
        except OracleFailure as exc:
            raise CheckUnavailable(str(exc) + ".") from None
        self.device = device
        self.version = self.ov.version
        self.precision = "f32"
        self._tmp = tempfile.TemporaryDirectory(prefix="loopdbg-check-")
        self._count = 0
        available = self.ov.devices
        if available and device.split(":")[0].split(".")[0] not in \
                {d.split(".")[0] for d in available} and not device.startswith(("AUTO", "HETERO",
                                                                              "MULTI")):
            raise CheckUnavailable(f"OpenVINO has no device '{device}' here; available: "
                                   f"{', '.join(available)}.")

    def close(self) -> None:
        self._tmp.cleanup()

    def compile_file(self, path: str | Path, what: str) -> Compiled:
        """Compile a model file as OpenVINO would read it; OracleFailure when it cannot."""
        compiled = self.ov.compile(path, what)
        self.precision = compiled.precision
        return compiled

    def compile_ir(self, model: Model, what: str) -> Compiled:
        """Write ``model`` as IR (loopdbg's writer) and compile it."""
        from loopdbg.ir.xml_writer import write_ir

        self._count += 1
        xml = Path(self._tmp.name) / f"model{self._count}.xml"
        try:
            write_ir(model, xml)
        except ValueError as exc:
            raise OracleFailure(f"{what} cannot be written as IR: {exc}", "error") from None
        return self.compile_file(xml, what)

    def infer(self, compiled: Compiled, values: Sequence, what: str = "the model") \
            -> list[np.ndarray]:
        return self.ov.infer(compiled, values, what)

    @staticmethod
    def output_names(compiled: Compiled) -> list[set[str]]:
        return [set(n) for n in compiled.outputs]
