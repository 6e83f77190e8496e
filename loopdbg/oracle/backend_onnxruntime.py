"""onnxruntime in the child process (``python -m loopdbg.oracle.child onnxruntime ...``).

``compile`` opens an ``InferenceSession`` on an .onnx file with the execution provider named by
the device (``CPU`` -> ``CPUExecutionProvider``) and onnxruntime's default graph optimisations,
as a user's session would; ``infer`` feeds the inputs in order or by name and returns every
output in order. The devices are the available execution providers without the suffix.
"""

from __future__ import annotations

import numpy as np

from loopdbg.oracle.backend import Backend as _Backend

SUFFIX = "ExecutionProvider"


class Backend(_Backend):
    name = "onnxruntime"

    def __init__(self):
        super().__init__()
        import onnxruntime
        self.ort = onnxruntime
        try:
            onnxruntime.set_default_logger_severity(3)      # errors only: they come back as replies
        except Exception:                # noqa: BLE001 - older versions: their warnings stay
            pass

    def hello(self) -> dict:
        providers = list(self.ort.get_available_providers())
        return {"version": str(self.ort.__version__),
                "devices": [p[:-len(SUFFIX)] if p.endswith(SUFFIX) else p for p in providers]}

    def compile(self, header: dict):
        device = header.get("device") or "CPU"
        provider = device if device.endswith(SUFFIX) else device + SUFFIX
        options = self.ort.SessionOptions()
        options.log_severity_level = 3
        session = self.ort.InferenceSession(header["path"], options, providers=[provider])
        reply = {"precision": "the model's",
                 "outputs": [[o.name] for o in session.get_outputs()],
                 "inputs": [[i.name] for i in session.get_inputs()]}
        return session, reply

    def infer(self, session, arrays: list, names: list | None) -> list:
        if names is None:
            names = [i.name for i in session.get_inputs()]
            if len(names) != len(arrays):
                raise ValueError(f"the model has {len(names)} inputs, {len(arrays)} were given")
        feeds = {n: np.asarray(v) for n, v in zip(names, arrays)}
        return [np.asarray(v) for v in session.run(None, feeds)]
