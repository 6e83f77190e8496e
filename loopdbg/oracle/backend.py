"""What every runtime does in the child process: compiled models kept by handle, requests answered.

A backend (``backend_openvino``, ``backend_onnxruntime``) says how to start its runtime
(``hello``), compile a model file and run a compiled model; this class keeps the compiled models
under integer handles and answers the requests every runtime shares::

    hello                              -> the runtime's version and devices
    compile  path device precision     -> a handle, the precision used, input/output tensor names
    infer    handle + arrays (names)   -> the outputs, one per model output, in order
    release  handle

A request for anything else (``evaluate``, ``describe``) goes to the backend's ``op_<name>``
method when it has one. Imports nothing of loopdbg: the child stays small.
"""

from __future__ import annotations


class Backend:
    """One runtime in the child; subclasses define ``hello``, ``compile`` and ``infer``."""

    name = "?"

    def __init__(self):
        self._compiled: dict[int, object] = {}
        self._next = 1

    def handle(self, op, header: dict, arrays: list):
        if op == "hello":
            return self.hello(), []
        if op == "compile":
            compiled, reply = self.compile(header)
            handle = self._next
            self._next += 1
            self._compiled[handle] = compiled
            reply["handle"] = handle
            return reply, []
        if op == "infer":
            compiled = self._compiled.get(header.get("handle"))
            if compiled is None:
                raise ValueError(f"no compiled model has handle {header.get('handle')!r}")
            return {}, self.infer(compiled, arrays, header.get("names"))
        if op == "release":
            self._compiled.pop(header.get("handle"), None)
            return {}, []
        method = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if method is None:
            raise ValueError(f"{self.name} has no request {op!r}")
        return method(header, arrays)

    # -- what a runtime defines ---------------------------------------------------------------
    def hello(self) -> dict:
        raise NotImplementedError

    def compile(self, header: dict) -> tuple[object, dict]:
        """(the compiled model, the reply: precision, inputs and outputs as lists of names)."""
        raise NotImplementedError

    def infer(self, compiled, arrays: list, names: list | None) -> list:
        raise NotImplementedError


def first_line(exc: BaseException) -> str:
    """The telling line of a runtime's error (OpenVINO's run to many lines of C++ context)."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from", "Check '"))
              and not ln.endswith(":")]
    if useful:
        return useful[-1].rstrip(".")
    return (lines[-1] if lines else type(exc).__name__).rstrip(".")
