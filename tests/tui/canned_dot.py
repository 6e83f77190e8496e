"""Graphviz's answers for the snapshot tests, canned: the SVG snapshots draw the body graph, and
another version of ``dot`` places boxes a column apart, which is not a change of loopdbg's. The
snapshots therefore lay bodies out from ``canned_dot.json`` (dot's JSON for each DOT source the
snapshots ask for, keyed by the source's SHA-256, trimmed to what ``layout.routing`` reads).

A source not in the file fails the test with how to add it: run the snapshot tests with
``LOOPDBG_RECORD_DOT=1`` (real ``dot`` then answers and its answers are saved) and commit the file.
That real ``dot`` still lays bodies out is tested on its own (``test_real_dot_still_lays_out``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

FILE = Path(__file__).with_name("canned_dot.json")
_lock = threading.Lock()


def _key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _trim(result: dict) -> dict:
    """Only what ``routing.build_layout`` reads of dot's answer."""
    return {"objects": [{k: o[k] for k in ("name", "pos", "_gvid") if k in o}
                        for o in result.get("objects", [])],
            "edges": [{k: e[k] for k in ("id", "pos") if k in e}
                      for e in result.get("edges", [])]}


def canned_run_dot(real_run_dot):
    """A stand-in for ``loopdbg.layout.dot._run_dot`` that answers from the canned file (or, with
    ``LOOPDBG_RECORD_DOT=1``, asks ``real_run_dot`` and saves the answer)."""
    record = os.environ.get("LOOPDBG_RECORD_DOT") == "1"

    def run_dot(source: str) -> dict:
        key = _key(source)
        with _lock:
            table = json.loads(FILE.read_text()) if FILE.exists() else {}
            if key in table:
                return table[key]
            if not record:
                raise AssertionError(f"no canned dot layout for this body ({key[:12]}); run the "
                                     f"snapshot tests with LOOPDBG_RECORD_DOT=1 to add it")
            table[key] = _trim(real_run_dot(source))
            FILE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
            return table[key]

    run_dot.__wrapped__ = real_run_dot
    return run_dot
