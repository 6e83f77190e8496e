"""OpenVINO as the oracle: imported lazily, compiled with f32 inference precision, run on arrays.

OpenVINO is an optional extra (``pip install 'loopdbg[openvino]'``); it is never loopdbg's engine,
only what ``loopdbg check`` compares with. Nothing here imports it before a check starts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from loopdbg.errors import LoopdbgError
from loopdbg.ir.model import Model

INSTALL = "pip install 'loopdbg[openvino]'"


class CheckUnavailable(LoopdbgError):
    """The check cannot run: OpenVINO is missing, or cannot read or compile the model (exit 2)."""

    exit_code = 2


def load_openvino():
    """The ``openvino`` module, or CheckUnavailable saying how to install it."""
    try:
        import openvino
    except ImportError:
        raise CheckUnavailable(f"loopdbg check compares with OpenVINO, which is not installed; "
                               f"install it with: {INSTALL}") from None
    return openvino


class Oracle:
    """One OpenVINO Core on one device; compiles models with INFERENCE_PRECISION_HINT=f32."""

    def __init__(self, device: str = "CPU"):
        self.ov = load_openvino()
        self.core = self.ov.Core()
        self.device = device
        self.version = self.ov.get_version() if hasattr(self.ov, "get_version") else "?"
        self.precision = "f32"
        self._tmp = tempfile.TemporaryDirectory(prefix="loopdbg-check-")
        self._count = 0
        try:
            available = list(self.core.available_devices)
        except Exception:           # noqa: BLE001 - a plugin failing to load is not fatal here
            available = []
        if available and device.split(":")[0].split(".")[0] not in \
                {d.split(".")[0] for d in available} and not device.startswith(("AUTO", "HETERO",
                                                                              "MULTI")):
            raise CheckUnavailable(f"OpenVINO has no device '{device}' here; available: "
                                   f"{', '.join(available)}.")

    def close(self) -> None:
        self._tmp.cleanup()

    # -- compiling --------------------------------------------------------------------------
    def compile_file(self, path: str | Path, what: str):
        """Read and compile a model file as OpenVINO would (.xml with its .bin, or .onnx)."""
        try:
            model = self.core.read_model(str(path))
        except Exception as exc:   # noqa: BLE001 - OpenVINO raises RuntimeError and friends
            raise CheckUnavailable(f"OpenVINO cannot read {what}: {first_line(exc)}.") from None
        return self._compile(model, what)

    def compile_model(self, model: Model, what: str):
        """Write ``model`` as IR (loopdbg's writer) and compile it."""
        from loopdbg.ir.xml_writer import write_ir

        self._count += 1
        xml = Path(self._tmp.name) / f"model{self._count}.xml"
        try:
            write_ir(model, xml)
        except ValueError as exc:
            raise CheckUnavailable(f"{what} cannot be written as IR: {exc}.") from None
        return self.compile_file(xml, what)

    def _compile(self, model, what: str):
        try:
            return self.core.compile_model(model, self.device,
                                           {"INFERENCE_PRECISION_HINT": self.precision})
        except Exception as exc:   # noqa: BLE001
            text = first_line(exc)
            if "INFERENCE_PRECISION_HINT" in text or "precision" in text.lower():
                try:                # a device without the property: its default precision
                    compiled = self.core.compile_model(model, self.device)
                    self.precision = "device default"
                    return compiled
                except Exception as exc2:   # noqa: BLE001
                    text = first_line(exc2)
            raise CheckUnavailable(f"OpenVINO ({self.device}) cannot compile {what}: {text}.") \
                from None

    # -- running ----------------------------------------------------------------------------
    @staticmethod
    def infer(compiled, values: Sequence, request=None) -> list[np.ndarray]:
        """Run ``compiled`` on ``values`` (one per input, in order); its outputs, copied."""
        req = request if request is not None else compiled.create_infer_request()
        req.infer({k: np.array(v) for k, v in enumerate(values)})
        return [np.array(req.get_output_tensor(k).data, copy=True)
                for k in range(len(compiled.outputs))]

    @staticmethod
    def output_names(compiled) -> list[set[str]]:
        out = []
        for port in compiled.outputs:
            try:
                out.append(set(port.get_names()))
            except Exception:   # noqa: BLE001
                out.append(set())
        return out


def first_line(exc: BaseException) -> str:
    """The telling line of an OpenVINO error (they run to many lines of C++ context)."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from", "Check '"))
              and not ln.endswith(":")]
    if useful:
        return useful[-1].rstrip(".")
    return (lines[-1] if lines else type(exc).__name__).rstrip(".")
