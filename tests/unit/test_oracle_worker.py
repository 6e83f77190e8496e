"""OpenVINO runs in a child process: its crashes, hangs and errors are reports, never our death.

The faults are injected with LOOPDBG_OPENVINO_FAULT (read by ``loopdbg.oracle.child``), so these
tests hold on every host, whether or not its CPU makes OpenVINO's plugin crash by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from loopdbg.oracle import (CRASH, ERROR, HANG, MEMORY, OpenVINO, OracleFailure,
                            openvino_installed, shutdown, wire)
from loopdbg.oracle.child import FAULT_ENV
from loopdbg.oracle.worker import _shared

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "loopdbg" / "demos"
WHILE = DEMOS / "while_loop"

pytestmark = pytest.mark.skipif(not openvino_installed(), reason="OpenVINO is not installed")


def while_inputs():
    with np.load(WHILE / "inputs.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.fixture
def fault(monkeypatch):
    """Set the fault the next child will have: a child started under another fault is stopped.
    A child started without one serves on (starting one imports OpenVINO again: ~0.6 s of CPU);
    every test that sets a fault stops its child before the fault is taken away."""
    def set_fault(value: str | None):
        if value is not None or FAULT_ENV in os.environ:
            shutdown()
        if value is None:
            monkeypatch.delenv(FAULT_ENV, raising=False)
        else:
            monkeypatch.setenv(FAULT_ENV, value)
    yield set_fault
    if FAULT_ENV in os.environ:
        shutdown()      # the next test gets a child without the fault


def loopdbg(*args, env_extra=None, timeout=120):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "loopdbg", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


# ---- the wire -------------------------------------------------------------------------------

def test_arrays_cross_as_npy_and_objects_never_do():
    r, w = os.pipe()
    try:
        values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(True), np.array([], "i8"),
                  np.array(["ab", "c"])]
        wire.send(w, {"op": "x", "n": 1}, values)
        header, got = wire.receive(r, time.monotonic() + 5)
        assert header == {"op": "x", "n": 1}
        for a, b in zip(values, got):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
        with pytest.raises(ValueError, match="pickle"):
            wire.encode({}, [np.array([{"a": 1}], dtype=object)])
    finally:
        os.close(r)
        os.close(w)


def test_a_silent_peer_is_a_timeout_not_a_hang():
    r, w = os.pipe()
    try:
        start = time.monotonic()
        with pytest.raises(wire.WireTimeout):
            wire.receive(r, time.monotonic() + 0.3)
        assert time.monotonic() - start < 2
    finally:
        os.close(r)
        os.close(w)


# ---- the worker -----------------------------------------------------------------------------

@pytest.mark.parametrize("sig", ["SIGFPE", "SIGSEGV", "SIGABRT"])
def test_a_crash_while_compiling_is_one_sentence_and_the_next_call_gets_a_new_worker(fault, sig):
    fault(f"{sig}:compile")
    ov = OpenVINO("CPU")
    with pytest.raises(OracleFailure) as info:
        ov.compile(WHILE / "model.xml", "the model")
    assert info.value.kind == CRASH
    assert str(info.value) == f"OpenVINO's CPU plugin crashed ({sig}) while compiling the model"
    fault(None)
    _, outs = OpenVINO("CPU").run(WHILE / "model.xml", while_inputs())
    np.testing.assert_array_equal(outs[0], [128.0])


def test_a_crash_while_running_names_running(fault):
    fault("SIGSEGV:infer")
    ov = OpenVINO("CPU")
    compiled = ov.compile(WHILE / "model.xml")
    with pytest.raises(OracleFailure, match=r"crashed \(SIGSEGV\) while running the model") as e:
        ov.infer(compiled, while_inputs())
    assert e.value.kind == CRASH
    with pytest.raises(OracleFailure, match="restarted since the model was compiled"):
        ov.infer(compiled, while_inputs())      # its handle died with the old worker


def test_a_hang_is_stopped_at_the_time_limit(fault):
    fault("hang:compile")
    ov = OpenVINO("CPU", timeout=1.5)
    start = time.monotonic()
    with pytest.raises(OracleFailure) as info:
        ov.compile(WHILE / "model.xml")
    assert time.monotonic() - start < 10
    assert info.value.kind == HANG
    assert str(info.value) == ("OpenVINO did not finish compiling the model within 1.5 s, so it "
                               "was stopped")


def test_an_openvino_exception_is_an_error_answer_and_the_worker_lives_on(fault, tmp_path):
    fault(None)
    ov = OpenVINO("CPU")
    bad = tmp_path / "bad.xml"
    bad.write_text("<net><layers/></net>")
    with pytest.raises(OracleFailure) as info:
        ov.compile(bad, "the broken model")
    assert info.value.kind == ERROR
    assert str(info.value).startswith("OpenVINO cannot compile the broken model: ")
    assert "\n" not in str(info.value)
    _, outs = ov.run(WHILE / "model.xml", while_inputs())      # same worker, still serving
    assert outs[0].tolist() == [128.0]


def test_a_request_names_its_runtime_and_the_other_child_refuses_it(fault):
    fault(None)
    ov = OpenVINO("CPU")
    reply, _ = ov._worker().request({"op": "hello", "runtime": "onnxruntime"}, (), "greeting",
                                    30, None)
    assert reply["ok"] is False and "this is the openvino worker" in reply["error"]
    assert ov._worker() is not _shared("onnxruntime", "onnxruntime")   # one child per runtime


def test_memory_past_the_budget_stops_the_worker(tmp_path):
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("big")
    x = b.parameter("x", "f32", [1])
    y = b.op("Broadcast", [x, np.array([1 << 28], np.int64)], name="y")     # 1 GiB
    b.result(b.op("Add", [y, x], name="z"))
    write_ir(b.build(), tmp_path / "m.xml")
    ov = OpenVINO("CPU", max_memory=64 << 20, timeout=120)
    with pytest.raises(OracleFailure) as info:
        ov.run(tmp_path / "m.xml", [np.zeros(1, np.float32)])
    assert info.value.kind == MEMORY
    assert "more than 64 MiB of memory while" in str(info.value)


CHILD_IMPORT = """
import sys
from loopdbg.oracle.backend_openvino import CONVERTER, _import_openvino
ov = _import_openvino()
print(bool(ov.get_version()), CONVERTER in sys.modules, "openvino_telemetry" in sys.modules)
for name in [n for n in sys.modules if n == "openvino" or n.startswith("openvino.")]:
    del sys.modules[name]
sys.path.insert(0, sys.argv[1])        # an OpenVINO that cannot be imported without its converter
print(_import_openvino().convert_model(), CONVERTER in sys.modules)
"""


def test_the_child_imports_openvino_without_its_model_converter(tmp_path):
    """The child never converts a model: OpenVINO's converter (its import scans every installed
    package's metadata and starts telemetry) is left out, unless OpenVINO cannot do without."""
    fake = tmp_path / "openvino"
    (fake / "tools" / "ovc").mkdir(parents=True)
    (fake / "__init__.py").write_text("from openvino.tools.ovc import convert_model\n")
    (fake / "tools" / "__init__.py").write_text("")
    (fake / "tools" / "ovc" / "__init__.py").write_text("def convert_model():\n    return 'whole'\n")
    proc = subprocess.run([sys.executable, "-c", CHILD_IMPORT, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.split() == ["True", "False", "False", "whole", "True"], proc.stderr


# ---- loopdbg check ----------------------------------------------------------------------------

@pytest.mark.parametrize("sig", ["SIGFPE", "SIGSEGV"])
def test_check_reports_a_plugin_crash_and_still_shows_its_own_outputs(sig):
    proc = loopdbg("check", str(WHILE / "model.xml"), env_extra={FAULT_ENV: sig})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    out = proc.stdout
    assert f"outputs: not compared: OpenVINO's CPU plugin crashed ({sig}) while compiling the " \
           f"model." in out
    assert "loopdbg's own outputs:" in out and "x_final" in out and "128 .. 128" in out
    assert out.rstrip().endswith("loopdbg's own run finished (its outputs are above).")


def test_check_per_iteration_survives_a_crash_in_a_body_run():
    proc = loopdbg("check", str(WHILE / "model.xml"), "--per-iteration",
                   env_extra={FAULT_ENV: "SIGFPE:infer"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "not checked: at iteration 0: OpenVINO's CPU plugin crashed (SIGFPE) while running " \
           "the body of loop 'doubling'" in proc.stdout


def test_check_gives_up_on_a_hung_openvino():
    proc = loopdbg("check", str(WHILE / "model.xml"), "--timeout", "1",
                   env_extra={FAULT_ENV: "hang:compile"})
    assert proc.returncode == 2
    assert "OpenVINO did not finish compiling the model within 1 s, so it was stopped" in \
        proc.stdout


def test_check_honours_max_iterations_on_an_endless_loop():
    proc = loopdbg("check", str(DEMOS / "infinite_loop" / "model.xml"), "--max-iterations", "50",
                   "--per-iteration", timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "at the iteration cap (--max-iterations 50)" in proc.stdout
    assert "iterations" in proc.stdout and " 50 " in proc.stdout


def test_loopdbg_itself_never_loads_openvino():
    code = ("import sys; from loopdbg.cli import main; "
            f"rc = main(['check', {str(WHILE / 'model.xml')!r}, '--per-iteration']); "
            "print(rc, 'openvino' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env)
    assert proc.stdout.strip().splitlines()[-1] == "0 False", proc.stdout + proc.stderr


CHECK_EACH = """
import contextlib, io, json, sys
from loopdbg.cli import main
for model in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["check", model, "--max-iterations", "200"])
        except SystemExit as exc:
            code = exc.code
    print(json.dumps([model, code, out.getvalue(), err.getvalue()]), flush=True)
"""


def test_check_on_every_demo_ends_with_its_own_words(tmp_path):
    """0, 1 or 2 and a verdict line, never a signal or a traceback, on every host.

    One process runs ``loopdbg check`` on each demo in turn (as ``python -m loopdbg`` would, its
    words captured per demo): a signal or an exception escaping ``main`` ends it, which fails
    the test as a process per demo would, without starting Python and OpenVINO 15 times."""
    demos = sorted(str(p / "model.xml") for p in DEMOS.iterdir() if (p / "model.xml").exists())
    proc = subprocess.run([sys.executable, "-c", CHECK_EACH, *demos], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r[0] for r in results] == demos
    for model, code, out, err in results:
        assert code in (0, 1, 2), (model, code, err)
        assert "Traceback" not in err, model
        assert "verdict:" in out, (model, out, err)


@pytest.mark.soak
def test_the_oracle_tests_stay_green_when_openvino_crashes_on_every_call():
    """A host whose OpenVINO dies on every compile skips those cases, with the reason; it does
    not end or fail the run. (The whole ``-m oracle`` set was run this way too; this sample
    covers each way the tests consult OpenVINO. It runs a suite of its own, 0.5-2 minutes, so
    it is opt-in: ``LOOPDBG_SOAK=1``; the crash of each call is tested above in seconds.)"""
    files = ["tests/unit/test_demos.py", "tests/unit/test_check.py",
             "tests/unit/test_ir_builder.py", "tests/reliability/test_fuzz_differential.py",
             "tests/unit/test_check_converted.py", "tests/unit/test_onnx_oracle.py"]
    env = dict(os.environ, **{FAULT_ENV: "SIGFPE:compile", "LOOPDBG_FUZZ_EXAMPLES": "3",
                              "LOOPDBG_ONNXRUNTIME_FAULT": "SIGSEGV:compile"})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "oracle", "-p",
                           "no:cacheprovider", *files], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=env)
    tail = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" in tail and "failed" not in tail and "error" not in tail, tail
    assert "crashed (SIGFPE) while compiling" in proc.stdout
    assert "onnxruntime crashed (SIGSEGV) while compiling" in proc.stdout
