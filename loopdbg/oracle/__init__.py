"""The runtimes loopdbg compares with, each run in a child process: the only place they run.

OpenVINO's CPU plugin can kill the process that calls it (SIGFPE compiling a zero-iteration Loop
on some CPUs), hang, or exhaust memory; onnxruntime is kept out the same way. So loopdbg never
loads either: ``worker`` keeps one spawned child per runtime (``loopdbg.oracle.child RUNTIME``
run as ``python -I`` in ``/``, see ``loopdbg.programs``) that reads, compiles and runs models, fed arrays as ``.npy`` blobs over pipes
(``wire``), never pickles. ``backend`` is what every runtime answers there; ``backend_openvino``
and ``backend_onnxruntime`` say how. A child that raises, dies by a signal, hangs or outgrows its
memory budget becomes an ``OracleFailure`` with one sentence and a ``kind``.

    from loopdbg.oracle import OnnxRuntime, OpenVINO, OracleFailure
    ov = OpenVINO("CPU")                       # OracleFailure(kind="missing") without openvino
    compiled, outputs = ov.run("model.xml", [x, y])
    compiled, outputs = OnnxRuntime("CPU").run("model.onnx", {"x": x, "y": y})

Imports nothing of loopdbg but ``errors``: ``check`` and the tests stand on it.
"""

from loopdbg.oracle import wire
from loopdbg.oracle.worker import (CRASH, ERROR, HANG, MEMORY, MISSING, RUNTIMES, Compiled,
                                   OnnxRuntime, OpenVINO, OracleFailure, Runtime, installed,
                                   onnxruntime_installed, openvino_installed, shutdown)

__all__ = ["OpenVINO", "OnnxRuntime", "Runtime", "RUNTIMES", "OracleFailure", "Compiled",
           "installed", "openvino_installed", "onnxruntime_installed", "shutdown",
           "MISSING", "CRASH", "HANG", "MEMORY", "ERROR", "wire"]
