"""The child process: the only place loopdbg (and its tests) run OpenVINO.

Started by ``loopdbg.oracle.worker`` as ``python -m loopdbg.oracle.child READ_FD WRITE_FD``; it
answers one request at a time until its input closes. Requests (the header's ``op``):

    hello                           -> OpenVINO's version and devices
    compile   path device precision -> a handle, the precision used, input/output tensor names
    infer     handle + arrays       -> the outputs (one per model output, in order); the
                                       arrays feed the inputs in order, or by ``names``
    release   handle
    evaluate  path + arrays         -> the outputs computed node by node by OpenVINO's reference
                                       implementations (``Node.evaluate``), no plugin involved
    describe  path                  -> every node's output element types and shapes, by name,
                                       nested bodies too (what OpenVINO's reader inferred)

An OpenVINO exception becomes an ``error`` answer with its telling line; a crash (SIGFPE,
SIGSEGV ...) simply ends this process, and the parent reports it.

Fault injection for tests: ``LOOPDBG_OPENVINO_FAULT=SIGFPE|SIGSEGV|SIGABRT|hang|raise`` makes
every compile/infer/evaluate/describe request fail that way; ``...:compile`` (or ``:infer``)
limits it to one kind of request. The fault fires before OpenVINO is imported, so a suite run
with a fault on is quick.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

from loopdbg.oracle import wire

FAULT_ENV = "LOOPDBG_OPENVINO_FAULT"
FAULTY_OPS = ("compile", "infer", "evaluate", "describe")


def main(argv: list[str]) -> int:
    rfd, wfd = int(argv[0]), int(argv[1])
    state = _State()
    while True:
        try:
            header, arrays = wire.receive(rfd)
        except wire.WireClosed:
            return 0
        op = header.get("op")
        _maybe_fault(op)
        try:
            reply, out = state.handle(op, header, arrays)
            reply["ok"] = True
        except Exception as exc:         # noqa: BLE001 - every OpenVINO error is an answer
            reply, out = {"ok": False, "error": first_line(exc), "type": type(exc).__name__}, []
        try:
            wire.send(wfd, reply, out)
        except ValueError as exc:        # an output that cannot cross (object dtype)
            wire.send(wfd, {"ok": False, "error": str(exc), "type": "ValueError"})
        except wire.WireClosed:
            return 0


def _fault_for(op) -> str:
    """The fault injected for this kind of request ('' for none)."""
    kind, _, only = os.environ.get(FAULT_ENV, "").partition(":")
    if not kind or op not in FAULTY_OPS or (only and only != op):
        return ""
    return kind


def _maybe_fault(op) -> None:
    kind = _fault_for(op)
    if not kind:
        return
    if kind == "hang":
        while True:
            time.sleep(3600)
    sig = getattr(signal, kind.upper(), None)
    if isinstance(sig, signal.Signals):
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(5)                    # the signal is delivered before this returns


class _State:
    def __init__(self):
        self._ov = None
        self._core = None
        self._compiled: dict[int, tuple] = {}
        self._next = 1

    @property
    def ov(self):
        if self._ov is None:
            import openvino
            self._ov = openvino
        return self._ov

    @property
    def core(self):
        if self._core is None:
            self._core = self.ov.Core()
        return self._core

    def handle(self, op, header: dict, arrays: list):
        if _fault_for(op) == "raise":
            raise RuntimeError(f"fault injected ({FAULT_ENV}={os.environ[FAULT_ENV]})")
        if op == "hello":
            ov = self.ov
            version = ov.get_version() if hasattr(ov, "get_version") else "?"
            try:
                devices = list(self.core.available_devices)
            except Exception:            # noqa: BLE001 - a plugin failing to load is not fatal
                devices = []
            return {"version": str(version), "devices": devices}, []
        if op == "compile":
            return self._compile(header)
        if op == "infer":
            compiled, request = self._compiled[header["handle"]]
            names = header.get("names")
            request.infer({(names[k] if names else k): np.array(v)
                           for k, v in enumerate(arrays)})
            outs = [np.array(request.get_output_tensor(k).data, copy=True)
                    for k in range(len(compiled.outputs))]
            return {}, outs
        if op == "release":
            self._compiled.pop(header["handle"], None)
            return {}, []
        if op == "evaluate":
            return {}, self._evaluate(header["path"], arrays)
        if op == "describe":
            model = self.core.read_model(header["path"])
            return {"model": _describe(model)}, []
        raise ValueError(f"unknown request {op!r}")

    def _compile(self, header: dict):
        model = self.core.read_model(header["path"])
        device, precision = header.get("device", "CPU"), header.get("precision", "f32")
        config = {"INFERENCE_PRECISION_HINT": precision} if precision else {}
        try:
            compiled = self.core.compile_model(model, device, config)
        except Exception as exc:         # noqa: BLE001
            if not config or "precision" not in str(exc).lower():
                raise
            compiled = self.core.compile_model(model, device)
            precision = "device default"
        handle = self._next
        self._next += 1
        self._compiled[handle] = (compiled, compiled.create_infer_request())
        return {"handle": handle, "precision": precision,
                "outputs": [sorted(_names(p)) for p in compiled.outputs],
                "inputs": [sorted(_names(p)) for p in compiled.inputs]}, []

    def _evaluate(self, path: str, arrays: list) -> list:
        ov = self.ov
        model = self.core.read_model(path)
        values: dict = {}
        for k, p in enumerate(model.get_parameters()):
            values[(p.get_friendly_name(), 0)] = ov.Tensor(np.ascontiguousarray(arrays[k]))
        for node in model.get_ordered_ops():
            kind = node.get_type_name()
            if kind in ("Parameter", "Result"):
                continue
            ins = [values[(i.get_source_output().get_node().get_friendly_name(),
                           i.get_source_output().get_index())] for i in node.inputs()]
            outs = [ov.Tensor(node.get_output_element_type(k), _static(node, k, ins))
                    for k in range(node.get_output_size())]
            if not node.evaluate(outs, ins):
                raise RuntimeError(f"OpenVINO's reference cannot evaluate {kind} "
                                   f"'{node.get_friendly_name()}'")
            for k, t in enumerate(outs):
                values[(node.get_friendly_name(), k)] = t
        result = []
        for r in model.get_results():
            src = r.input(0).get_source_output()
            result.append(np.array(values[(src.get_node().get_friendly_name(),
                                           src.get_index())].data, copy=True))
        return result


def _static(node, k: int, ins):
    shape = node.get_output_partial_shape(k)
    if shape.is_static:
        return shape.to_shape()
    return [0] * shape.rank.get_length() if shape.rank.is_static else []


def _names(port) -> set:
    try:
        return set(port.get_names())
    except Exception:                    # noqa: BLE001
        return set()


def _describe(model) -> dict:
    nodes = {}
    for node in model.get_ordered_ops():
        outs = []
        for k in range(node.get_output_size()):
            shape = node.get_output_partial_shape(k)
            dims = None if shape.rank.is_dynamic else \
                [d.get_length() if d.is_static else -1 for d in shape]
            outs.append([node.get_output_element_type(k).get_type_name(), dims])
        bodies = {}
        kind = node.get_type_name()
        if kind in ("Loop", "TensorIterator"):
            bodies["body"] = _describe(node.get_function())
        elif kind == "If":
            bodies["then_body"] = _describe(node.get_then_body())
            bodies["else_body"] = _describe(node.get_else_body())
        nodes[node.get_friendly_name()] = {"type": kind, "outputs": outs, "bodies": bodies}
    return {"nodes": nodes,
            "inputs": [{"names": sorted(_names(p)),
                        "rank_dynamic": p.get_partial_shape().rank.is_dynamic}
                       for p in model.inputs],
            "outputs": [{"names": sorted(_names(p))} for p in model.outputs]}


def first_line(exc: BaseException) -> str:
    """The telling line of an OpenVINO error (they run to many lines of C++ context)."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from", "Check '"))
              and not ln.endswith(":")]
    if useful:
        return useful[-1].rstrip(".")
    return (lines[-1] if lines else type(exc).__name__).rstrip(".")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
