"""The runtimes loopdbg compares with, each run in a child process: the only place OpenVINO runs.

OpenVINO's CPU plugin can kill the process that calls it (SIGFPE compiling a zero-iteration Loop
on some CPUs), hang, or exhaust memory. So loopdbg never loads it: ``worker`` keeps one spawned
child (``python -m loopdbg.oracle.child``) that reads, compiles and runs models, fed arrays as
``.npy`` blobs over pipes (``wire``), never pickles. A child that raises, dies by a signal, hangs
or outgrows its memory budget becomes an ``OracleFailure`` with one sentence and a ``kind``.

    from loopdbg.oracle import OpenVINO, OracleFailure
    ov = OpenVINO("CPU")                       # OracleFailure(kind="missing") without openvino
    compiled, outputs = ov.run("model.xml", [x, y])

Imports nothing of loopdbg but ``errors``: ``check`` and the tests stand on it.
"""

from loopdbg.oracle import wire
from loopdbg.oracle.worker import (CRASH, ERROR, HANG, MEMORY, MISSING, Compiled, OpenVINO,
                                   OracleFailure, openvino_installed, shutdown)

__all__ = ["OpenVINO", "OracleFailure", "Compiled", "openvino_installed", "shutdown",
           "MISSING", "CRASH", "HANG", "MEMORY", "ERROR"]
