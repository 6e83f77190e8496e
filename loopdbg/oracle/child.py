"""The child process: the only place loopdbg (and its tests) run OpenVINO or onnxruntime.

Started by ``loopdbg.oracle.worker`` as ``python -m loopdbg.oracle.child RUNTIME READ_FD
WRITE_FD`` would start it, but isolated (``python -I``, in ``/``: ``loopdbg.programs``, so no
module of the folder loopdbg runs in is ever imported here), RUNTIME being ``openvino`` or
``onnxruntime``; it answers one request at a time until
its input closes. Each request names its runtime (the header's ``runtime``); one meant for another
runtime is refused. The requests are those of ``backend`` (hello, compile, infer, release) plus
the runtime's own (OpenVINO: evaluate, describe; see ``backend_openvino``).

A runtime's exception becomes an ``error`` answer with its telling line; a crash (SIGFPE,
SIGSEGV ...) simply ends this process, and the parent reports it. Each runtime has a child of its
own, so one that crashes never takes the other with it.

Fault injection for tests: ``LOOPDBG_OPENVINO_FAULT`` (``LOOPDBG_ONNXRUNTIME_FAULT`` for
onnxruntime) ``=SIGFPE|SIGSEGV|SIGABRT|hang|raise`` makes every compile/infer/evaluate/describe
request fail that way; ``...:compile`` (or ``:infer``) limits it to one kind of request. The
fault fires before the runtime is imported, so a suite run with a fault on is quick. ``wrongN``
(``wrong`` for ``wrong1``) makes the runtime answer wrongly instead: from this child's N-th
``infer`` on, every float output comes back with 1 added (a plugin that goes astray mid-run).
Under any fault a ``batch`` request (many models in one, for test suites) is refused, so that its
models are asked one by one and meet the fault as they would alone.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time

from loopdbg.oracle import wire
from loopdbg.oracle.backend import first_line

BACKENDS = {"openvino": "loopdbg.oracle.backend_openvino",
            "onnxruntime": "loopdbg.oracle.backend_onnxruntime"}
FAULT_ENVS = {"openvino": "LOOPDBG_OPENVINO_FAULT", "onnxruntime": "LOOPDBG_ONNXRUNTIME_FAULT"}
FAULT_ENV = FAULT_ENVS["openvino"]
FAULTY_OPS = ("compile", "infer", "evaluate", "describe")


def main(argv: list[str]) -> int:
    runtime, rfd, wfd = argv[0], int(argv[1]), int(argv[2])
    if runtime not in BACKENDS:
        return 2
    env = FAULT_ENVS[runtime]
    backend = None
    infers = 0
    while True:
        try:
            header, arrays = wire.receive(rfd)
        except wire.WireClosed:
            return 0
        op = header.get("op")
        _maybe_fault(env, op)
        try:
            if header.get("runtime", runtime) != runtime:
                raise ValueError(f"this is the {runtime} worker, not {header.get('runtime')!r}")
            if _fault_for(env, op) == "raise":
                raise RuntimeError(f"fault injected ({env}={os.environ[env]})")
            if op == "batch" and os.environ.get(env):
                raise RuntimeError(f"no batches under fault injection ({env}={os.environ[env]})")
            if backend is None:
                backend = importlib.import_module(BACKENDS[runtime]).Backend()
            reply, out = backend.handle(op, header, arrays)
            reply["ok"] = True
            if op == "infer":
                infers += 1
                out = _maybe_wrong(env, infers, out)
        except Exception as exc:         # noqa: BLE001 - every runtime error is an answer
            reply, out = {"ok": False, "error": first_line(exc), "type": type(exc).__name__}, []
        try:
            wire.send(wfd, reply, out)
        except ValueError as exc:        # an output that cannot cross (object dtype)
            wire.send(wfd, {"ok": False, "error": str(exc), "type": "ValueError"})
        except wire.WireClosed:
            return 0


def _fault_for(env: str, op) -> str:
    """The fault injected for this kind of request ('' for none)."""
    kind, _, only = os.environ.get(env, "").partition(":")
    if not kind or op not in FAULTY_OPS or (only and only != op):
        return ""
    return kind


def _maybe_wrong(env: str, infers: int, out: list) -> list:
    kind = _fault_for(env, "infer")
    if not kind.startswith("wrong") or infers < int(kind[5:] or 1):
        return out
    return [a + a.dtype.type(1) if getattr(a, "dtype", None) is not None and a.dtype.kind == "f"
            else a for a in out]


def _maybe_fault(env: str, op) -> None:
    kind = _fault_for(env, op)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
