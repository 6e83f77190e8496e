"""The runtime ``check`` compares with: OpenVINO or onnxruntime, in their child processes.

Both are optional extras (``pip install 'loopdbg[openvino]'``, ``'loopdbg[onnxruntime]'``); they
are never loopdbg's engine, only what ``loopdbg check`` compares with, and they never run in
loopdbg's own process: every call goes to a child of ``loopdbg.oracle`` (a crash there is a
report here, not the end of loopdbg). An IR model is compared with OpenVINO; an ONNX model with
onnxruntime by default, or with OpenVINO (which reads .onnx files too). A loop body is written
in the model's own format: IR through loopdbg's writer (``extract``), ONNX as a copy of the
body graph in the file (``extract_onnx``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from loopdbg.check.extract import Target, standalone_body
from loopdbg.errors import LoopdbgError
from loopdbg.ir.model import Model
from loopdbg.oracle import RUNTIMES, Compiled, OracleFailure, installed

__all__ = ["CheckUnavailable", "Oracle", "OracleFailure", "Compiled", "require_runtime",
           "default_runtime", "RUNTIME_NAMES"]

RUNTIME_NAMES = tuple(RUNTIMES)          # ("openvino", "onnxruntime")


class CheckUnavailable(LoopdbgError):
    """The check cannot run at all: no runtime, no such device, no inputs (exit 2)."""

    exit_code = 2


def default_runtime(model_format: str) -> str:
    """onnxruntime for an ONNX model, OpenVINO for an IR."""
    return "onnxruntime" if model_format == "onnx" else "openvino"


def require_runtime(runtime: str = "openvino", model_format: str | None = None) -> None:
    """CheckUnavailable when ``runtime`` is not installed (how to install it) or cannot read the
    model's format; nothing is imported."""
    cls = RUNTIMES[runtime]
    if not installed(cls.module):
        raise CheckUnavailable(f"loopdbg check compares with {cls.label}, which is not installed; "
                               f"install it with: {cls.install}")
    if runtime == "onnxruntime" and model_format not in (None, "onnx"):
        raise CheckUnavailable("onnxruntime runs ONNX models only; compare an IR with OpenVINO "
                               "(--runtime openvino).")


class Oracle:
    """A runtime on one device (in its child process); models compiled with precision f32 where
    the runtime takes a hint. ``timeout`` (seconds per compile or run) and ``max_memory``
    (bytes) bound the runtime's side."""

    def __init__(self, device: str = "CPU", *, runtime: str = "openvino",
                 timeout: float | None = None, max_memory: int | None = None):
        require_runtime(runtime)
        cls = RUNTIMES[runtime]
        try:
            self.rt = cls(device, timeout=timeout, max_memory=max_memory)
        except OracleFailure as exc:
            raise CheckUnavailable(str(exc) + ".") from None
        self.runtime = runtime
        self.label = cls.label
        self.device = device
        self.version = self.rt.version
        self.precision = "f32" if runtime == "openvino" else "the model's"
        self._tmp = tempfile.TemporaryDirectory(prefix="loopdbg-check-")
        self._count = 0
        self._protos: dict[str, tuple] = {}
        available = self.rt.devices
        if available and device.split(":")[0].split(".")[0] not in \
                {d.split(".")[0] for d in available} and not device.startswith(("AUTO", "HETERO",
                                                                              "MULTI")):
            raise CheckUnavailable(f"{self.label} has no device '{device}' here; available: "
                                   f"{', '.join(available)}.")

    def close(self) -> None:
        self._tmp.cleanup()

    def _file(self, suffix: str) -> Path:
        self._count += 1
        return Path(self._tmp.name) / f"model{self._count}{suffix}"

    def compile_file(self, path: str | Path, what: str) -> Compiled:
        """Compile a model file as the runtime would read it; OracleFailure when it cannot."""
        compiled = self.rt.compile(path, what)
        if self.runtime == "openvino":
            self.precision = compiled.precision
        return compiled

    def compile_whole(self, model: Model, what: str = "the model") -> Compiled:
        """The whole model: its file when it has one, else (an IR built in memory) written."""
        path = model.path
        if path and Path(path).exists():
            return self.compile_file(path, what)
        if model.format == "onnx":
            raise OracleFailure(f"{what} has no .onnx file to give {self.label}", "error")
        return self.compile_ir(model, what)

    def compile_ir(self, model: Model, what: str) -> Compiled:
        """Write ``model`` as IR (loopdbg's writer) and compile it."""
        from loopdbg.ir.xml_writer import write_ir

        xml = self._file(".xml")
        try:
            write_ir(model, xml)
        except ValueError as exc:
            raise OracleFailure(f"{what} cannot be written as IR: {exc}", "error") from None
        return self.compile_file(xml, what)

    def compile_body(self, model: Model, spec, parent, values: Sequence, all_nodes: bool,
                     what: str) -> tuple[Compiled, list[Target]]:
        """One loop body as a standalone model in ``model``'s format, compiled for ``values``'
        types; OracleFailure when it cannot be written or compiled."""
        if model.format != "onnx":
            body, targets = standalone_body(spec.body, values, all_nodes=all_nodes,
                                            name=f"{spec.path} body")
            return self.compile_ir(body, what), targets
        from loopdbg.check.extract_onnx import NoBody, body_key, standalone_onnx_body

        try:
            proto, index = self._onnx(model)
            key = body_key(spec, parent)
            node = index.get(key)
            if node is None:
                raise NoBody(f"no {key[0]} node with outputs {', '.join(key[1])} is in "
                             f"{model.path}")
            data, targets = standalone_onnx_body(proto, node, spec, values, all_nodes=all_nodes)
        except NoBody as exc:
            raise OracleFailure(f"{what} cannot be extracted: {exc}", "error") from None
        path = self._file(".onnx")
        path.write_bytes(data)
        return self.compile_file(path, what), targets

    def _onnx(self, model: Model):
        """The .onnx file's ModelProto and its Loop/Scan nodes (read once per model)."""
        from loopdbg.check.extract_onnx import NoBody
        from loopdbg.ir.onnx_bodies import read_bodies

        path = str(model.path or "")
        if path not in self._protos:
            if not path or not Path(path).exists():
                raise NoBody("the model has no .onnx file to copy it from")
            try:
                self._protos[path] = read_bodies(path)
            except ValueError as exc:
                raise NoBody(str(exc)) from None
        return self._protos[path]

    def feed(self, model: Model, values: Sequence) -> Sequence | Mapping:
        """The model's input values as the runtime takes them: by name for onnxruntime (whose
        inputs need not be in the file's order), in order for OpenVINO."""
        if self.runtime != "onnxruntime":
            return list(values)
        g = model.graph
        return {g.layers[p].name: np.asarray(v) for p, v in zip(g.parameters, values)}

    def infer(self, compiled: Compiled, values: Sequence | Mapping, what: str = "the model") \
            -> list[np.ndarray]:
        return self.rt.infer(compiled, values, what)

    @staticmethod
    def output_names(compiled: Compiled) -> list[set[str]]:
        return [set(n) for n in compiled.outputs]

