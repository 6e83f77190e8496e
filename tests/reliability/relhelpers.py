"""Helpers of the reliability tests (conftest.py holds the fixtures): one-line error checks, the
environment of a child ``python -m loopdbg``, and small models built with loopdbg's own builder.

A module of its own, not conftest.py: ``from conftest import ...`` would find tests/tui's conftest
when the whole suite runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def subprocess_env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                PYTHONUNBUFFERED="1")


def assert_refused(outcome: Outcome, *fragments: str) -> str:
    """Non-zero exit, stderr exactly one line ``loopdbg: ...`` naming every fragment."""
    err = outcome.err
    assert outcome.code not in (0, None), (outcome.code, err)
    assert "Traceback" not in err and "Traceback" not in outcome.out, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("loopdbg: "), line
    for fragment in fragments:
        assert str(fragment) in line, f"{fragment!r} not in {line!r}"
    return line


def assert_refused_but_inputs_line(outcome: Outcome, *fragments: str) -> str:
    """``assert_refused``, after the line that says which inputs a run took when none were
    given (``inputs: .../inputs.npz``)."""
    err = "".join(line for line in outcome.err.splitlines(keepends=True)
                  if not line.startswith("inputs: "))
    return assert_refused(Outcome(outcome.code, outcome.out, err), *fragments)


# -- small models, built with loopdbg's own builder ----------------------------------------------

def accumulate_loop(folder: Path, trip: int = 3) -> tuple[Path, Path]:
    """A Loop summing the rows of ``seq`` into ``acc`` (sliced, merged, current_iteration, scan).

    Body layer ids: 0 x_t, 1 acc, 2 iter, 3 acc_new (Add), 4 its Result, 5 Const 5, 6 keep (Less),
    7 its Result (the execution condition).
    """
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("accumulate")
    seq = b.parameter("seq", "f32", [4, 2])
    acc0 = b.parameter("acc0", "f32", [1, 2])
    loop = b.loop("loop", trip=trip, cond=True)
    x_t = loop.sliced_input(seq, "x_t", axis=0)
    acc = loop.merged_input(acc0, "acc")
    it = loop.current_iteration("iter")
    acc_new = loop.body.op("Add", [acc, x_t], name="acc_new")
    loop.back_edge(acc_new, acc)
    loop.condition(loop.body.op("Less", [it, np.array([5], np.int64)], name="keep"))
    b.result(loop.output_last(acc_new, name="acc_final"))
    b.result(loop.output_concat(acc_new, axis=0, name="acc_seq"))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    inputs = folder / "in.npz"
    np.savez(inputs, seq=np.arange(8, dtype=np.float32).reshape(4, 2),
             acc0=np.zeros((1, 2), np.float32))
    return xml, inputs


def endless_loop(folder: Path, *, scan: bool = False, width: int = 4) -> tuple[Path, Path]:
    """trip -1 and a constant-true body condition: only a cap, a budget or Ctrl+C stops it."""
    from loopdbg.builder import GraphBuilder
    from loopdbg.ir.xml_writer import write_ir

    b = GraphBuilder("endless")
    x0 = b.parameter("x0", "f32", [1, width])
    loop = b.loop("spin", trip=-1, cond=True)
    x = loop.merged_input(x0, "x")
    x2 = loop.body.op("Add", [x, np.ones((1, width), np.float32)], name="x_next")
    loop.back_edge(x2, x)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(x2, name="x_final"))
    if scan:
        b.result(loop.output_concat(x2, axis=0, name="x_seq"))
    folder.mkdir(parents=True, exist_ok=True)
    xml, _ = write_ir(b.build(), folder / "model.xml")
    inputs = folder / "in.npz"
    np.savez(inputs, x0=np.zeros((1, width), np.float32))
    return xml, inputs


# -- fuzzers (test_fuzz_parser.py, test_fuzz_onnx.py) ------------------------------------------
def run_fuzz_worker(worker: str, cfg: dict, timeout: float) -> list[dict]:
    """Run a fuzzer's ``worker`` script (its cases from ``cfg``, which the script reads as JSON)
    in a child process; its per-case JSON results. A worker that dies fails the test, naming
    the case it was running."""
    import json
    import subprocess
    import sys

    import pytest

    proc = subprocess.run([sys.executable, "-c", worker, str(Path(__file__).parent),
                           json.dumps(cfg)], capture_output=True, text=True, env=subprocess_env(),
                          timeout=timeout)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [r for r in lines if "case" in r]
    if proc.returncode != 0 or len(results) != len(cfg["cases"]):
        started = [r["start"] for r in lines if "start" in r]
        pytest.fail(f"the worker died (exit {proc.returncode}) during case "
                    f"{started[-1] if started else '?'} ({cfg['out']}):\n{proc.stderr[-3000:]}")
    return results


def fuzz_problem(r: dict) -> str | None:
    """Why a fuzz case's outcome is not a run or one clear error; None when it is fine."""
    if r["exc"] is not None:
        return r["exc"]
    if r["out_has_traceback"] or "Traceback" in r["err"]:
        return "a traceback was printed:\n" + r["err"]
    if r["code"] == 0:
        return None
    lines = r["err"].strip("\n").split("\n")
    if r["code"] != 2 or len(lines) != 1 or not lines[0].startswith("loopdbg: "):
        return f"exit {r['code']} with stderr:\n{r['err']}"
    return None


def assert_fuzz_results(results: list[dict]) -> None:
    """Every case ran or failed clearly, and the mutations were neither all fatal nor all
    harmless."""
    bad = [(r, fuzz_problem(r)) for r in results if fuzz_problem(r) is not None]
    report = "\n\n".join(f"case {r['case']} ({r['source']}: {r['mutation']}; "
                          f"loopdbg {' '.join(r['argv'])}):\n{why}" for r, why in bad[:5])
    assert not bad, f"{len(bad)} of {len(results)} cases failed:\n{report}"
    if len(results) >= 40:
        assert {0, 2} <= {r["code"] for r in results}
