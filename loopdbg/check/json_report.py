"""``loopdbg check --format json``: the report as one JSON object, for CI jobs to gate on.

The schema (``loopdbg.check/1``) is documented, field by field, in docs/check-json.md; fields are
only ever added to it. Floats that JSON cannot hold (NaN, infinities) are the strings ``"nan"``,
``"inf"`` and ``"-inf"``; names are written as they are (JSON escapes what it must; the output is
ASCII). ``to_json`` gives the object, ``dumps`` the text.
"""

from __future__ import annotations

import json
import math

import numpy as np

from loopdbg.check.compare import Comparison
from loopdbg.check.text import SIDE_BY_SIDE

SCHEMA = "loopdbg.check/1"


def dumps(report) -> str:
    return json.dumps(to_json(report), indent=2, ensure_ascii=True, allow_nan=False)


def to_json(report) -> dict:
    from loopdbg.check.against import AgainstReport

    if isinstance(report, AgainstReport):
        return _against(report)
    return _check(report)


def _check(r) -> dict:
    from loopdbg.check.report import verdict

    return {
        "schema": SCHEMA, "kind": "check", "exit_code": r.exit_code, "verdict": verdict(r),
        "model": r.model, "inputs": r.source, "trace": r.trace,
        "runtime": {"name": r.runtime, "version": r.version, "device": r.device,
                    "precision": r.precision if r.runtime == "OpenVINO" else None,
                    "error": r.runtime_error, "failure": r.runtime_failure},
        "tolerance": {"rtol": _num(r.rtol), "atol": _num(r.atol)},
        "per_iteration": r.per_iteration, "all_nodes": r.all_nodes,
        "outputs": [comparison(c) for c in r.outputs],
        "loops": [{"path": lc.path, "kind": lc.kind, "layer": lc.layer_name,
                   "runs": lc.executions, "iterations": lc.iterations, "tensors": lc.tensors,
                   "max_abs": _num(lc.max_abs), "max_rel": _num(lc.max_rel),
                   "skipped": lc.skipped, "error": lc.error, "failure": lc.failure,
                   "note": lc.note,
                   "divergence": divergence(lc.divergence)} for lc in r.loops.values()],
        "divergence": divergence(r.divergence),
        "findings": [{"loop": f.path, "aspect": f.aspect, "rule": f.rule, "text": f.text,
                      "outputs": list(f.outputs)} for f in r.findings],
        "confirmed": r.confirmed,
        "runtime_looks_wrong": r.runtime_wrong,
        "notices": [{"loop": p, "text": t, "rule": rule} for p, t, rule in r.notices],
        "notes": list(r.notes),
    }


def _against(r) -> dict:
    from loopdbg.check.report_against import verdict

    return {
        "schema": SCHEMA, "kind": "against", "exit_code": r.exit_code, "verdict": verdict(r),
        "model": r.model, "reference": r.reference, "inputs": r.source,
        "tolerance": {"rtol": _num(r.rtol), "atol": _num(r.atol)},
        "outputs": [dict(comparison(c), reference_name=other)
                    for c, (_, other) in zip(r.outputs, r.output_pairs)],
        "loops": [{"path": pc.pair.path, "reference": pc.pair.reference,
                   "paired_by": pc.pair.how,
                   "tensors": [{"model": a, "reference": b, "tensor": t}
                               for a, b, t in pc.pair.values],
                   "runs": pc.executions, "iterations": pc.iterations,
                   "max_abs": _num(pc.max_abs), "max_rel": _num(pc.max_rel),
                   "skipped": pc.skipped, "departure": departure(pc.departure)}
                  for pc in r.loops],
        "unpaired": {"model": list(r.lone_model), "reference": list(r.lone_reference)},
        "departure": departure(r.departure),
        "runtimes": ({side: _check(rep) for side, rep in r.runtime_checks.items()}
                     if r.runtime_checks else None),
        "agreement": [{"output": oa.name, "sources": list(oa.sources),
                       "groups": [[oa.sources[k] for k in g] for g in oa.groups()]}
                      for oa in r.agreement],
        "judgements": [{"runtime": j.runtime, "model": j.model, "wrong": j.wrong,
                        "text": j.text, "loop": j.loop, "outer": list(j.outer),
                        "iteration": j.iteration, "tensor": j.tensor} for j in r.judgements],
        "notes": list(r.notes),
    }


def comparison(c: Comparison | None) -> dict | None:
    if c is None:
        return None
    return {"name": c.name, "ok": c.ok, "why": c.why, "note": c.note,
            "shape": _shape(c.shape), "dtype": c.dtype,
            "other_shape": _shape(c.other_shape), "other_dtype": c.other_dtype,
            "max_abs": _num(c.max_abs), "max_rel": _num(c.max_rel),
            "worst": list(c.worst) if c.worst is not None else None}


def divergence(d) -> dict | None:
    if d is None:
        return None
    t = d.target
    return {"loop": d.path, "kind": d.kind, "outer": list(d.outer), "iteration": d.iteration,
            "target": None if t is None else {
                "kind": t.kind, "name": t.name,
                "layer": t.layer.name if t.layer is not None else None,
                "layer_type": t.layer.type if t.layer is not None else None},
            "error": d.error, "inner": d.inner, "comparison": comparison(d.comparison),
            "values": window(d.ours, d.theirs), "others": list(d.others)}


def departure(d) -> dict | None:
    if d is None:
        return None
    return {"loop": d.path, "reference_loop": d.reference, "outer": list(d.outer),
            "iteration": d.iteration, "kind": d.kind, "tensor": d.tensor, "value": d.value,
            "layer_type": d.layer_type, "reference_value": d.reference_value,
            "comparison": comparison(d.comparison), "values": window(d.ours, d.theirs),
            "others": list(d.others), "text": d.text or None}


def window(ours, theirs) -> dict | None:
    """Up to eight values around the largest difference (all of them when shapes differ)."""
    if ours is None or theirs is None:
        return None
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape or a.size == 0:
        return {"indices": None, "ours": [_num(x) for x in a.reshape(-1)[:SIDE_BY_SIDE]],
                "theirs": [_num(x) for x in b.reshape(-1)[:SIDE_BY_SIDE]]}
    from loopdbg.check.compare import errors

    fa = a.astype(np.float64) if a.dtype.kind in "biu" else a
    fb = b.astype(np.float64) if b.dtype.kind in "biu" else b
    flat = errors(fa, fb)[0].reshape(-1)
    worst = int(np.argmax(flat))
    lo = max(0, min(worst - SIDE_BY_SIDE // 2, flat.size - SIDE_BY_SIDE))
    ks = range(lo, min(lo + SIDE_BY_SIDE, flat.size))
    return {"indices": [[int(i) for i in np.unravel_index(k, a.shape)] for k in ks],
            "ours": [_num(a.reshape(-1)[k]) for k in ks],
            "theirs": [_num(b.reshape(-1)[k]) for k in ks]}


def _shape(s) -> list | None:
    return None if s is None else [int(d) for d in s]


def _num(x):
    """A JSON value for a number: bools and ints as they are, non-finite floats as strings."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, complex) or isinstance(x, np.complexfloating):
        return str(complex(x))
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x
