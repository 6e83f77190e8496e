"""The parent's side: one long-lived child per runtime and process, replaced when it dies.

Starting OpenVINO costs about half a second, so one worker serves every call (a test run makes
thousands); onnxruntime has a worker of its own, so a crash of one never stops the other. Each
call has a time limit and, when a memory budget is given, a watch on the child's resident memory.
Whatever goes wrong in the child — an exception, a signal (SIGFPE and SIGSEGV from a CPU plugin),
a hang, a memory blow-up — comes back as ``OracleFailure`` with one sentence and a ``kind``; the
child is replaced on the next call. loopdbg's own process never loads a runtime.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from loopdbg import programs
from loopdbg.errors import LoopdbgError
from loopdbg.oracle import wire

INSTALL = "pip install 'loopdbg[openvino]'"
INSTALL_ORT = "pip install 'loopdbg[onnxruntime]'"
TIMEOUT_ENV = "LOOPDBG_OPENVINO_TIMEOUT"     # both runtimes: the name predates onnxruntime's
DEFAULT_TIMEOUT = 600.0          # seconds per request; a hung compile or infer is given up
START_TIMEOUT = 120.0            # importing the runtime and listing its devices

MISSING, CRASH, HANG, MEMORY, ERROR = "missing", "crash", "hang", "memory", "error"


class OracleFailure(LoopdbgError):
    """A runtime could not answer: ``kind`` is missing, crash, hang, memory or error."""

    exit_code = 2

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Compiled:
    """A model compiled in a child: its handle there and its output tensor names."""

    handle: int
    generation: int
    outputs: tuple = field(default=())      # a frozenset of tensor names per output
    inputs: tuple = field(default=())
    precision: str = "f32"


def installed(module: str) -> bool:
    """Whether ``import module`` would find the package (without importing it here)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def openvino_installed() -> bool:
    return installed("openvino")


def onnxruntime_installed() -> bool:
    return installed("onnxruntime")


def default_timeout() -> float:
    try:
        return float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


class Runtime:
    """A runtime in its shared child process (one per runtime); subclasses name it.

    ``timeout`` bounds each request in seconds; ``max_memory`` bounds the child's resident memory
    above what it held once the runtime was loaded. Both raise OracleFailure when exceeded.
    """

    key = ""                 # the child's RUNTIME argument and the requests' "runtime"
    label = ""               # how sentences name it
    module = ""              # what ``import`` loads in the child
    install = ""

    def __init__(self, device: str = "CPU", *, timeout: float | None = None,
                 max_memory: int | None = None):
        if not installed(self.module):
            raise OracleFailure(f"this needs {self.label}, which is not installed; install it "
                                f"with: {self.install}", MISSING)
        self.device = device
        self.timeout = default_timeout() if timeout is None else timeout
        self.max_memory = max_memory
        hello = self._worker().request({"op": "hello", "runtime": self.key}, (),
                                       f"starting {self.label}", START_TIMEOUT, None)[0]
        if not hello.get("ok"):
            raise OracleFailure(f"{self.label} does not start: {hello.get('error', '?')}", ERROR)
        self.version: str = hello["version"]
        self.devices: list[str] = hello["devices"]

    def _worker(self) -> "_Worker":
        return _shared(self.key, self.label)

    def compile(self, path: str | Path, what: str = "the model") -> Compiled:
        """Read and compile a model file (precision f32 where the runtime takes a hint)."""
        reply, _ = self._call({"op": "compile", "path": programs.absolute(path), "device": self.device,
                               "precision": "f32"}, (), f"compiling {what}",
                              f"cannot compile {what}")
        return Compiled(reply["handle"], self._worker().generation,
                        tuple(frozenset(n) for n in reply["outputs"]),
                        tuple(frozenset(n) for n in reply["inputs"]), reply["precision"])

    def infer(self, compiled: Compiled, values: Sequence[np.ndarray] | Mapping[str, np.ndarray],
              what: str = "the model") -> list[np.ndarray]:
        """Run a compiled model on ``values`` (one per input in order, or by input tensor name)."""
        if compiled.generation != self._worker().generation:
            raise OracleFailure(f"{self.label}'s worker was restarted since {what} was compiled",
                                CRASH)
        header = {"op": "infer", "handle": compiled.handle}
        if isinstance(values, Mapping):
            header["names"] = list(values)
            values = list(values.values())
        return self._call(header, values, f"running {what}", f"failed running {what}")[1]

    def release(self, compiled: Compiled) -> None:
        worker = self._worker()
        if compiled.generation == worker.generation and worker.alive:
            try:
                worker.request({"op": "release", "runtime": self.key, "handle": compiled.handle},
                               (), "releasing", self.timeout, None)
            except OracleFailure:
                pass

    def run(self, path: str | Path, values: Sequence[np.ndarray] | Mapping[str, np.ndarray],
            what: str = "the model") -> tuple[Compiled, list[np.ndarray]]:
        """Compile and run once: (the compiled model's description, its outputs)."""
        compiled = self.compile(path, what)
        try:
            return compiled, self.infer(compiled, values, what)
        finally:
            self.release(compiled)

    def _call(self, header: dict, arrays, doing: str, refusal: str):
        header["runtime"] = self.key
        reply, out = self._worker().request(header, arrays, doing, self.timeout,
                                            self.max_memory, self.device)
        if not reply.get("ok"):
            raise OracleFailure(f"{self.label} {refusal}: {reply.get('error', '?')}", ERROR)
        return reply, out


class OpenVINO(Runtime):
    """OpenVINO on one device, run in its shared child process."""

    key, label, module, install = "openvino", "OpenVINO", "openvino", INSTALL

    def evaluate(self, path: str | Path, values: Sequence[np.ndarray],
                 what: str = "the model") -> list[np.ndarray]:
        """Outputs computed by OpenVINO's reference implementations (no plugin), node by node."""
        return self._call({"op": "evaluate", "path": programs.absolute(path)}, values,
                          f"evaluating {what}", f"cannot evaluate {what}")[1]

    def batch(self, cases: Sequence[tuple[str, str | Path, Sequence[np.ndarray]]],
              what: str = "a batch of models") -> list[list[np.ndarray] | str]:
        """Many small models answered in one request (for test suites): each case is ``("run",
        path, values)`` (compiled and run on the device, all such cases compiled together as one
        model) or ``("evaluate", path, values)``; per case its outputs, or its error sentence.
        A crash, hang or memory blow-up of the child fails the whole batch (OracleFailure)."""
        header = {"op": "batch", "device": self.device, "precision": "f32",
                  "cases": [{"kind": kind, "path": programs.absolute(path), "inputs": len(values)}
                            for kind, path, values in cases]}
        arrays = [v for _, _, values in cases for v in values]
        reply, out = self._call(header, arrays, f"running {what}", f"cannot run {what}")
        answers, k = [], 0
        for result in reply["results"]:
            if not result.get("ok"):
                answers.append(f"{self.label}: {result.get('error', '?')}")
                continue
            answers.append(out[k:k + result["outputs"]])
            k += result["outputs"]
        return answers

    def describe(self, path: str | Path, what: str = "the model") -> dict:
        """What OpenVINO's reader makes of a model: every node's output types and shapes."""
        return self._call({"op": "describe", "path": programs.absolute(path)}, (), f"reading {what}",
                          f"cannot read {what}")[0]["model"]


class OnnxRuntime(Runtime):
    """onnxruntime with one execution provider (``CPU``: CPUExecutionProvider), in its child."""

    key, label, module, install = "onnxruntime", "onnxruntime", "onnxruntime", INSTALL_ORT


RUNTIMES = {r.key: r for r in (OpenVINO, OnnxRuntime)}


# -- the process -------------------------------------------------------------------------------
class _Worker:
    """One runtime's child process and its pipes; restarted on the first request after it died."""

    def __init__(self, runtime: str, label: str):
        self.runtime, self.label = runtime, label
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.generation = 0
        self.baseline = 0          # the child's resident bytes once the runtime was loaded

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def request(self, header: dict, arrays, doing: str, timeout: float,
                max_memory: int | None, device: str = "CPU") -> tuple[dict, list]:
        with self.lock:
            if not self.alive:
                self._start()
            deadline = time.monotonic() + timeout
            watch = self._memory_watch(max_memory) if max_memory else None
            try:
                wire.send(self.to_child, header, arrays)
                reply = wire.receive(self.from_child, deadline, watch)
            except wire.WireTimeout:
                self.stop()
                raise OracleFailure(f"{self.label} did not finish {doing} within {timeout:g} s, so "
                                    f"it was stopped", HANG) from None
            except _OverBudget as over:
                self.stop()
                raise OracleFailure(f"{self.label} needed more than {_size(over.limit)} of memory "
                                    f"while {doing} (--max-memory), so it was stopped",
                                    MEMORY) from None
            except wire.WireClosed:
                raise OracleFailure(self._death(doing, device), CRASH) from None
            except ValueError as exc:            # a garbled answer: the child is not trusted on
                self.stop()
                raise OracleFailure(f"{self.label}'s worker gave a malformed answer while {doing} "
                                    f"({exc})", CRASH) from None
            except BaseException:                # Ctrl+C, an alarm: the exchange is half done
                self.stop()
                raise
            if header["op"] == "hello":
                self.baseline = _rss(self.proc.pid)
            return reply

    def _start(self) -> None:
        self.stop()
        c_read, p_write = os.pipe()
        p_read, c_write = os.pipe()
        self.log = tempfile.TemporaryFile()
        try:        # isolated, in a neutral folder: no code from the folder loopdbg runs in
            self.proc = subprocess.Popen(
                programs.python_argv("loopdbg.oracle.child", self.runtime, c_read, c_write),
                pass_fds=(c_read, c_write), stdin=subprocess.DEVNULL, stdout=self.log,
                stderr=self.log, cwd=programs.NEUTRAL)
        finally:
            os.close(c_read)
            os.close(c_write)
        self.to_child, self.from_child = p_write, p_read

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        self.generation += 1           # what the old child compiled died with it
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        self.log.close()

    def _death(self, doing: str, device: str) -> str:
        proc = self.proc
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        self.stop()
        who = self.label
        if self.runtime == "openvino" and doing.startswith(("compiling", "running")):
            who = f"OpenVINO's {device} plugin"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{who} crashed ({name}) while {doing}"
        return f"{who} exited unexpectedly (status {code}) while {doing}"

    def _memory_watch(self, max_memory: int):
        pid, limit = self.proc.pid, max_memory + self.baseline

        def watch():
            if _rss(pid) > limit:
                raise _OverBudget(max_memory)
        return watch


class _OverBudget(Exception):
    def __init__(self, limit: int):
        self.limit = limit


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


_WORKERS: dict[str, _Worker] = {}
_WORKER_LOCK = threading.Lock()


def _shared(runtime: str, label: str) -> _Worker:
    with _WORKER_LOCK:
        worker = _WORKERS.get(runtime)
        if worker is None:
            worker = _WORKERS[runtime] = _Worker(runtime, label)
            atexit.register(worker.stop)
        return worker


def shutdown(runtime: str | None = None) -> None:
    """Stop the shared child of ``runtime`` (every one by default); the next request restarts it."""
    for key, worker in list(_WORKERS.items()):
        if runtime is None or key == runtime:
            with worker.lock:
                worker.stop()
