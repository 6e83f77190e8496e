"""The core stays free of the UI: no core module imports textual or rich, and the CLI starts lazily.

Every check runs in a fresh interpreter (a subprocess), because this test process has long since
imported everything. Modules are found by walking each package, so a new core module is covered
without editing this file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import loopdbg

ROOT = Path(loopdbg.__file__).resolve().parent
CORE = ["ir", "ops", "builder", "engine", "debug", "trace", "teach", "layout", "check", "view",
        "cli"]
UI = ("textual", "rich")

# Imports each module of the packages named in turn, and reports, per package, the modules imported
# and the first module after whose import a UI package showed up in sys.modules (then it stops:
# what the packages after it import can no longer be told apart).
PROBE = r"""
import importlib, json, pkgutil, sys
ui = tuple(sys.argv[1].split(","))
reports = {}
for package in sys.argv[2:]:
    pkg = importlib.import_module(package)
    names = [package]
    if hasattr(pkg, "__path__"):
        names += sorted(m.name for m in pkgutil.walk_packages(pkg.__path__, package + "."))
    report = reports[package] = {"modules": [], "leaks": {}}
    for name in names:
        importlib.import_module(name)
        report["modules"].append(name)
        loaded = sorted(m for m in ui if m in sys.modules)
        if loaded:
            report["leaks"][name] = loaded
            break
    if report["leaks"]:
        break
print(json.dumps(reports))
"""


def run_python(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT.parent, env={**os.environ, **(env or {})})


def present(package: str) -> bool:
    return (ROOT / package).is_dir() or (ROOT / f"{package}.py").is_file()


def probe(*packages: str) -> dict:
    proc = run_python("-c", PROBE, ",".join(UI), *packages)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def core_probe() -> dict:
    """One fresh interpreter imports every core package in turn (a process each cost ~0.4 s of
    CPU, mostly numpy again). A UI package loaded by any module shows up right after the first
    one that imports it, so one process tells every package's verdict up to the first leak; a
    package after a leak is probed alone, in a process of its own."""
    return probe(*(f"loopdbg.{p}" for p in CORE if present(p)))


@pytest.mark.xdist_group("core_probe")      # the probe is shared by the cases on one worker
@pytest.mark.parametrize("package", CORE)
def test_core_package_imports_neither_textual_nor_rich(package, core_probe):
    if not present(package):
        pytest.skip(f"loopdbg.{package} does not exist")
    name = f"loopdbg.{package}"
    report = core_probe.get(name)
    if report is None:                   # after a leak in another package: alone
        report = probe(name)[name]
    assert report["modules"], "no module imported"
    assert not report["leaks"], (
        f"importing {next(iter(report['leaks']))} loads {report['leaks']} "
        f"(after {len(report['modules'])} modules of loopdbg.{package})")


def test_the_probe_sees_a_ui_import():
    """The probe itself works: the UI package does import textual."""
    report = probe("loopdbg.tui.app")["loopdbg.tui.app"]
    assert "textual" in report["leaks"].get("loopdbg.tui.app", [])


def imported_modules(stderr: str) -> set[str]:
    """Module names from ``-X importtime`` output ('import time: self | cumulative | name')."""
    out = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                out.add(name)
    return out


def test_version_does_not_import_numpy():
    proc = run_python("-X", "importtime", "-m", "loopdbg", "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"loopdbg {loopdbg.__version__}"
    modules = imported_modules(proc.stderr)
    assert "loopdbg.cli" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in ("numpy", "lxml", "textual", "rich"))
    assert not heavy, f"loopdbg --version imports {heavy}"


def test_version_console_script_does_not_import_numpy():
    script = shutil.which("loopdbg")
    if script is None:
        pytest.skip("the loopdbg console script is not installed")
    proc = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"loopdbg {loopdbg.__version__}"
    modules = imported_modules(proc.stderr)
    assert "loopdbg.cli" in modules, "the console script runs another loopdbg"
    assert not any(m.split(".")[0] == "numpy" for m in modules)


def test_help_does_not_import_numpy():
    """The CLI's docstring promises that --help starts fast too (sub-commands import lazily)."""
    proc = run_python("-X", "importtime", "-m", "loopdbg", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: loopdbg")
    modules = imported_modules(proc.stderr)
    heavy = sorted(m for m in modules if m.split(".")[0] in ("numpy", "lxml", "textual", "rich"))
    assert not heavy, f"loopdbg --help imports {heavy}"


def test_run_imports_only_what_a_run_uses(tmp_path):
    """`loopdbg run` of a model without ml_dtypes types prints its report without importing
    ml_dtypes (its element types load at their first need), the debugger's session modules
    (`debug.report` alone prints the outputs) or the trace recorder."""
    model = ROOT.parent / "tests" / "corpus" / "loop_for_accum_scan" / "model.xml"
    proc = run_python("-X", "importtime", "-m", "loopdbg", "run", str(model),
                      env={"LOOPDBG_CODE_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "outputs:" in proc.stdout
    modules = imported_modules(proc.stderr)
    assert {"loopdbg.engine.runner", "loopdbg.debug.report"} <= modules    # the probe sees them
    unused = sorted(m for m in modules if m.split(".")[0] in ("ml_dtypes", "textual", "rich")
                    or m.startswith(("loopdbg.debug.session", "loopdbg.debug.breakpoints",
                                     "loopdbg.debug.expr", "loopdbg.trace"))
                    or m in ("hashlib", "_hashlib"))     # (OpenSSL: files.cache.digest)
    assert not unused, f"loopdbg run imports {unused}"


def test_big_code_is_found_in_the_cache_without_hashlib(tmp_path):
    """A decoder's loop code (hundreds of KB) is looked up under a BLAKE2b key made by CPython's
    own module: no hashlib, whose import loads OpenSSL (~4 ms of a start)."""
    look = ("import sys\nfrom loopdbg.engine import codecache\n"
            "source = 'x = 1\\n' * 100000\n"
            "assert codecache.load(source, 'f') is None\n"
            "print(sorted(m for m in ('hashlib', '_hashlib') if m in sys.modules))")
    proc = run_python("-c", look, env={"LOOPDBG_CODE_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# Counts the dataclasses a `loopdbg run` defines (each ~1 ms of the start: ir.record), then runs it.
COUNT_DATACLASSES = r"""
import dataclasses, sys
made = []
process = dataclasses._process_class
def counted(cls, *args, **kwargs):
    made.append(f"{cls.__module__}.{cls.__qualname__}")
    return process(cls, *args, **kwargs)
dataclasses._process_class = counted
from loopdbg.cli import main
code = main(sys.argv[1:])
print("\n" + " ".join(made))
sys.exit(code)
"""


def test_run_defines_only_the_models_dataclasses(tmp_path):
    """The records a run makes (ports, edges, events, loop forms, kernel specs ...) are
    ``ir.record.Record`` classes, made with the module: only the model's Layer, Graph, SubGraph
    and Model (which ``dataclasses.replace`` is used on) are dataclasses of loopdbg."""
    model = ROOT.parent / "tests" / "corpus" / "loop_for_accum_scan" / "model.xml"
    proc = run_python("-c", COUNT_DATACLASSES, "run", str(model), "-q",
                      env={"LOOPDBG_CODE_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    made = proc.stdout.strip().splitlines()[-1].split()
    ours = sorted(m for m in made if m.startswith("loopdbg."))
    assert ours == ["loopdbg.ir.model.Graph", "loopdbg.ir.model.Layer", "loopdbg.ir.model.Model",
                    "loopdbg.ir.model.SubGraph"]
