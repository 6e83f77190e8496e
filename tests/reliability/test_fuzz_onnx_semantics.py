"""A semantic differential fuzzer of ONNX control flow: random valid Loop/Scan/If models
(onnx_cf_models.py) run by loopdbg, by onnxruntime (in its child process: it can die by SIGFPE)
and by onnx.reference, outputs compared (docs/semantics.md rule 14; f16 with rtol 1e-3).

loopdbg must agree with at least one of the two on every case. A case fails when

* loopdbg refuses or fails on the model while a runtime runs it (the models are valid), or
* loopdbg's outputs differ from those of every runtime that answered (both, or the only one),

once each runtime's *documented departures* (docs/semantics.md, "Where the runtimes depart from
the ONNX text") are set aside. Each departure is a narrow predicate below, on the case's features
and the values: onnxruntime's uninitialised pass-through scan outputs, its ``iteration_num``
scan holding the count of iterations, its Scan-8 states over zero-length sequences and outputs
over a batch of 0, its 0 dims (``(0,)`` for an open rank) in a zero-iteration Loop's scan output
of open shape; onnx.reference's Loop without ``cond`` (no iteration) and its
``np.vstack`` of scan values, its Scan-8 read with Scan-9's signature, its empty ``Optional``
that holds an element. A runtime that raises or dies on a case (onnxruntime's SIGFPE on
some zero-length Scans) did not answer; the other one decides. When neither answers and the
loop runs no iteration, the operator texts decide: the carried values (Scan states) are the
initial ones and the scan outputs are empty.

CI runs LOOPDBG_ONNX_SEMANTIC_CASES cases (default 80) from LOOPDBG_ONNX_SEMANTIC_SEED
(default 0); a case is named by its seed: ``generate(seed)`` rebuilds it.

    LOOPDBG_ONNX_SEMANTIC_CASES=3000 python -m pytest -q tests/reliability/test_fuzz_onnx_semantics.py
"""

from __future__ import annotations

import collections
import os
import signal
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx_cf_models import Case, generate  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.oracle import OnnxRuntime, OracleFailure, onnxruntime_installed  # noqa: E402

pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(not onnxruntime_installed(), reason="onnxruntime is missing")]

CASES = int(os.environ.get("LOOPDBG_ONNX_SEMANTIC_CASES", "80"))
SEED = int(os.environ.get("LOOPDBG_ONNX_SEMANTIC_SEED", "0"))
CASE_SECONDS = 30
TALLY: collections.Counter = collections.Counter()
REASONS: collections.Counter = collections.Counter()     # why a runtime did not answer


# -- the runs -------------------------------------------------------------------------------------
def run_loopdbg(case: Case):
    """loopdbg's outputs by name, or the exception it raised."""
    try:
        return Engine(from_proto(case.model)).run_to_end(case.feeds).outputs
    except Exception as exc:  # noqa: BLE001 - every failure is an outcome to compare
        return exc


def run_onnxruntime(case: Case, path) -> dict | OracleFailure:
    try:
        compiled, outs = OnnxRuntime("CPU", timeout=CASE_SECONDS).run(path, case.feeds)
    except OracleFailure as exc:
        return exc
    return {min(names): out for names, out in zip(compiled.outputs, outs)}


def run_reference(case: Case) -> dict | Exception:
    from onnx.reference import ReferenceEvaluator

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outs = ReferenceEvaluator(case.model).run(None, dict(case.feeds))
    except Exception as exc:  # noqa: BLE001 - onnx.reference raises many kinds
        return exc
    return {o.name: np.asarray(v) for o, v in zip(case.model.graph.output, outs)}


def same(ours, theirs) -> bool:
    """Rule 14 of docs/semantics.md (f16: rtol 1e-3)."""
    ours, theirs = (np.asarray(v) if isinstance(v, np.generic) else v for v in (ours, theirs))
    if not isinstance(ours, np.ndarray) or not isinstance(theirs, np.ndarray):
        return False
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        return False
    if ours.dtype.kind == "f":
        tol = 1e-3 if ours.dtype == np.float16 else 1e-5
        return bool(np.allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol,
                                atol=tol, equal_nan=True))
    return bool(np.array_equal(ours, theirs))


# -- the runtimes' documented departures (docs/semantics.md) ---------------------------------------
def _body_output(case: Case, name: str) -> str | None:
    return dict(case.features.get("scans", ())).get(name)


def ort_departs(case: Case, name: str, ours, theirs) -> str | None:
    """Why onnxruntime's ``theirs`` for output ``name`` is one of its known departures."""
    f = case.features
    if name in f.get("passthrough_outputs", ()):
        return "a Scan body output that is a body input passed straight through (uninitialised)"
    if case.kind == "loop" and _body_output(case, name) == f.get("iteration_num") and \
            isinstance(ours, np.ndarray) and theirs.shape == ours.shape and \
            ours.ndim == 1 and np.all(theirs == ours.shape[0]):
        return "a Loop scan output that is iteration_num: every entry the count of iterations"
    if case.kind == "scan8" and f.get("zero_length") and name in f.get("state_outputs", ()):
        return "Scan-8 states over zero-length sequences (garbage)"
    if case.kind == "scan8" and f.get("zero_batch"):
        return "Scan-8 over a batch of 0 (garbage)"
    if case.kind == "loop" and isinstance(ours, np.ndarray) and ours.size == 0 and \
            ours.ndim > 1 and ours.shape[0] == 0 and theirs.size == 0 and \
            (theirs.shape == (0,) or (theirs.ndim == ours.ndim and all(
                t in (0, o) for t, o in zip(theirs.shape, ours.shape)))):
        return "a zero-iteration Loop's scan output: unknown dims 0, unknown rank (0,)"
    return None


def ref_departs(case: Case, name: str, ours, theirs) -> str | None:
    """Why onnx.reference's ``theirs`` for output ``name`` is one of its known departures."""
    if loop_without_cond(case.model.graph):
        return "a Loop without cond runs no iteration"
    if case.kind == "scan8":
        return "Scan-8 read with Scan-9's signature (no batch axis)"
    if makes_empty_optional(case.model.graph) and isinstance(ours, np.ndarray) and \
            ours.dtype == bool and ours.shape == () and not ours and theirs.shape == () and \
            bool(theirs):
        return "an empty Optional holds an element (OptionalHasElement gives true)"
    if case.kind == "loop" and _body_output(case, name) is not None and \
            isinstance(ours, np.ndarray) and ours.ndim != 2 and ours.size == theirs.size and \
            ours.size and theirs.shape == _vstacked(ours.shape) and \
            same(ours, theirs.reshape(ours.shape)):
        return "scan values joined by np.vstack"
    return None


def any_node(graph, test) -> bool:
    """Does ``graph`` or a graph in it hold a node for which ``test(node)`` is true?"""
    for node in graph.node:
        if test(node):
            return True
        for a in node.attribute:
            subs = [a.g] if a.type == a.GRAPH else list(a.graphs)
            if any(any_node(g, test) for g in subs):
                return True
    return False


def loop_without_cond(graph) -> bool:
    """Does ``graph`` (or a graph in it) hold a Loop whose ``cond`` input is omitted?"""
    return any_node(graph, lambda n: n.op_type == "Loop" and
                    (len(n.input) < 2 or not n.input[1]))


def makes_empty_optional(graph) -> bool:
    """Does ``graph`` (or a graph in it) make an empty optional (``Optional`` without input)?"""
    return any_node(graph, lambda n: n.op_type == "Optional" and not any(n.input))


def _vstacked(shape: tuple) -> tuple:
    """The shape np.vstack gives K values of shape ``shape[1:]``."""
    k, rest = shape[0], shape[1:]
    if not rest:
        return (k, 1)
    return (k * rest[0],) + rest[1:]


def differences(case: Case, ours: dict, theirs: dict, departs) -> list[str]:
    """The outputs that differ, save the runtime's documented departures (tallied)."""
    out = []
    for name, want in theirs.items():
        have = ours.get(name)
        if same(have, want):
            continue
        why = departs(case, name, have, want)
        if why is not None:
            TALLY[f"departure: {why}"] += 1
            continue
        out.append(f"{name}: loopdbg {_show(have)} vs {_show(want)}")
    return out


def _show(v) -> str:
    if isinstance(v, np.ndarray):
        flat = np.array2string(v.reshape(-1)[:8], threshold=8)
        return f"{v.dtype}{list(v.shape)} {flat}"
    return repr(v)


def verdict(case: Case, ours, ort, ref) -> str | None:
    """None when loopdbg agrees with a runtime (or neither answered), else what is wrong."""
    answered = {}
    if isinstance(ort, dict):
        answered["onnxruntime"] = (ort, ort_departs)
    elif ort.kind == "crash" and case.features.get("zero_length"):
        TALLY["departure: onnxruntime died on a zero-length Scan"] += 1
    else:
        TALLY[f"onnxruntime did not answer ({ort.kind})"] += 1
        REASONS[f"onnxruntime: {str(ort).split('.onnx')[-1][:200]}"] += 1
    if isinstance(ref, dict) and not loop_without_cond(case.model.graph):
        answered["onnx.reference"] = (ref, ref_departs)
    elif isinstance(ref, dict):
        TALLY["departure: onnx.reference without cond"] += 1
    else:
        TALLY["onnx.reference did not answer"] += 1
        REASONS[f"onnx.reference: {str(ref)[:150]}"] += 1
    if not answered:
        TALLY["neither runtime answered"] += 1
        wrong = text_check(case, ours)
        if wrong is not None:
            TALLY["checked by the text (no iteration)"] += 1
        return wrong or None
    if isinstance(ours, Exception):
        return f"loopdbg failed ({type(ours).__name__}: {ours}) where " \
               f"{' and '.join(answered)} ran the model"
    found = {who: differences(case, ours, values, departs)
             for who, (values, departs) in answered.items()}
    agreeing = [who for who, diffs in found.items() if not diffs]
    if agreeing:
        TALLY[f"agrees with {' and '.join(agreeing)}"] += 1
        return None
    return "; ".join(f"{who}: {', '.join(d)}" for who, d in found.items())


def no_iteration(case: Case) -> bool:
    """Does the model's loop run no iteration (read from its inputs)?"""
    f = case.features
    if case.kind == "loop":
        return bool(f.get("zero_trip_M") or f.get("cond_false"))
    return bool(f.get("zero_length") or f.get("zero_batch"))


def text_check(case: Case, ours) -> str | None:
    """When neither runtime answers, what the operator texts say of a loop that runs no
    iteration: the carried values (Scan states) are the initial ones, the scan outputs empty.
    None: nothing to say (the loop iterates), "": all as the text says, else what is not."""
    if not no_iteration(case):
        return None
    if isinstance(ours, Exception):
        return f"loopdbg failed ({type(ours).__name__}: {ours}) on a loop of no iteration"
    wrong = []
    for out, given in case.features.get("unchanged_if_no_iteration", ()):
        if not same(ours.get(out), case.feeds[given]):
            wrong.append(f"{out}: loopdbg {_show(ours.get(out))} vs its initial value "
                         f"{_show(case.feeds[given])}")
    for out in case.features.get("scan_outputs", ()):
        v = ours.get(out)
        if not isinstance(v, np.ndarray) or v.size != 0:
            wrong.append(f"{out}: loopdbg {_show(v)}, not empty")
    return "; ".join(wrong)


def _alarm(seconds: int):
    def hung(signum, frame):
        raise TimeoutError(f"the case took more than {seconds} s")

    return signal.signal(signal.SIGALRM, hung)


@pytest.mark.no_alarm
def test_loopdbg_agrees_with_onnxruntime_or_onnx_reference(tmp_path):
    failures = []
    for seed in range(SEED, SEED + CASES):
        case = generate(seed)
        path = tmp_path / f"case{seed}.onnx"
        path.write_bytes(case.model.SerializeToString())
        old = _alarm(CASE_SECONDS)
        signal.alarm(CASE_SECONDS)
        try:
            ours = run_loopdbg(case)
            ref = run_reference(case)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        ort = run_onnxruntime(case, path)
        TALLY[case.kind] += 1
        wrong = verdict(case, ours, ort, ref)
        if wrong is not None:
            failures.append(f"{case}: {wrong}")
    print(f"\n{CASES} cases from seed {SEED}: " +
          ", ".join(f"{k} {v}" for k, v in sorted(TALLY.items())))
    if os.environ.get("LOOPDBG_ONNX_SEMANTIC_REASONS"):
        print("\n".join(f"{v:5d} {k}" for k, v in REASONS.most_common()))
    assert not failures, f"{len(failures)} of {CASES} cases:\n" + "\n".join(failures[:20])


def test_the_generator_reaches_every_feature():
    """What issue 32 asks the fuzzer to draw, all drawn within the first 200 seeds (or the
    cases asked for, when more)."""
    wanted = {"M omitted": lambda c: c.kind == "loop" and "M" not in c.feeds,
              "cond omitted": lambda c: c.features.get("cond_omitted"),
              "zero or negative M": lambda c: c.features.get("zero_trip_M"),
              "carried shape changes": lambda c: c.features.get("shape_changes"),
              "0-d scan values": lambda c: c.features.get("scan_of_0d"),
              "outer-scope reads": lambda c: c.features.get("outer_read"),
              "nested loops": lambda c: c.features.get("nested_loop"),
              "If in Loop": lambda c: c.features.get("if_in_loop"),
              "carried sequence": lambda c: c.features.get("carried_sequence"),
              "carried optional": lambda c: c.features.get("carried_optional"),
              "optional starts empty": lambda c: c.features.get("optional_starts_empty"),
              "optional made empty": lambda c: c.features.get("optional_made_empty"),
              "Scan axis other than 0": lambda c: any(c.features.get("input_axes", ())),
              "Scan backward": lambda c: any(c.features.get("input_directions", ())),
              "Scan-8": lambda c: c.kind == "scan8",
              "Scan-8 reads a Scan input by name": lambda c: c.kind == "scan8" and
              c.features.get("reads_scan_input_by_name"),
              "zero-length scan axis": lambda c: c.features.get("zero_length"),
              "Scan-8 over a batch of 0": lambda c: c.features.get("zero_batch"),
              "Scan in Loop": lambda c: c.features.get("scan_in_loop"),
              "Loop in Scan": lambda c: c.features.get("loop_in_scan"),
              "If in Scan": lambda c: c.features.get("if_in_scan"),
              "scan output of iteration_num": lambda c: c.features.get("scan_of_iteration_num"),
              "Scan output passing its element": lambda c: bool(
                  c.features.get("passthrough_outputs")),
              "six dtypes": lambda c: len({v.dtype for v in c.feeds.values()}) >= 3,
              "carried boolean": lambda c: c.features.get("carried_bool")}
    seen = set()
    for seed in range(SEED, SEED + max(CASES, 200)):
        case = generate(seed)
        seen |= {k for k, test in wanted.items() if test(case)}
    assert seen == set(wanted), f"never drawn: {sorted(set(wanted) - seen)}"
