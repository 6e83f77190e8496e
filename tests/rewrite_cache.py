"""Test modules with their asserts rewritten are kept, so each is rewritten once, not once a process.

pytest rewrites the ``assert`` statements of every test module and conftest it imports (to say
what each side of a failed comparison held) and keeps the result beside the source as a ``.pyc``,
unless bytecode is not to be written: with ``PYTHONDONTWRITEBYTECODE=1`` (set here and in CI) every
process rewrote every module again, each xdist worker the whole suite (~200 modules: parse,
rewrite, compile, 4-6 s of CPU a worker, a third of its collection).

``install`` keeps each rewritten module's code (``marshal``) in a folder outside the source tree:
pytest's cache (``LOOPDBG_TEST_CACHE``) where there is one, else the session's own temporary
folder, which the xdist workers share. An entry is named after the file's path and a hash of its
source, pytest's version and the options that shape the rewriting, so an edited test is rewritten
(its older entry removed), never served stale. Under xdist, before collecting, each worker
rewrites its share of the modules (every N-th), so on a fresh clone the suite's modules are
rewritten about once between the workers instead of once per worker; a module whose entry is not
there yet is rewritten as before. A write is a complete file renamed into place, so concurrent
workers only ever read whole entries. The rewritten code is pytest's own; only where it is kept
changes.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from pathlib import Path


def install(config, folder: str | None) -> None:
    """Serve pytest's rewriting of test modules from ``folder`` (and fill it)."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    rewrite_test = getattr(rewrite, "_rewrite_test", None)
    if folder is None or rewrite_test is None or getattr(config.pluginmanager, "rewrite_hook",
                                                         None) not in sys.meta_path:
        return                    # no rewriting (--assert=plain), or a pytest laid out otherwise
    import pytest

    hook_pass = config.getini("enable_assertion_pass_hook")
    salt = f"{sys.version}|{pytest.__version__}|{hook_pass}".encode()
    store = Path(folder) / f"rewritten-{sys.implementation.cache_tag}"

    def cached(fn, config_):
        fn = Path(fn)
        source = fn.read_bytes()
        place = hashlib.sha1(str(fn).encode()).hexdigest()[:16]
        entry = store / f"{place}-{hashlib.sha1(salt + source).hexdigest()[:24]}.code"
        try:
            return os.stat(fn), marshal.loads(entry.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            pass
        stat, code = rewrite_test(fn, config_)
        if fn.read_bytes() == source:             # (not edited while it was rewritten)
            _keep(store, place, entry, code)
        return stat, code

    rewrite._rewrite_test = cached
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(
        "PYTEST_XDIST_WORKER_COUNT")
    if worker and count and count.isdigit() and int(count) > 1:
        _rewrite_share(config, cached, int(worker.removeprefix("gw") or 0), int(count))


def _keep(store: Path, place: str, entry: Path, code) -> None:
    try:
        store.mkdir(parents=True, exist_ok=True)
        for old in store.glob(f"{place}-*.code"):     # the file's older versions
            if old != entry:
                old.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=store, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(code))
        os.replace(tmp, entry)
    except OSError:
        pass                      # not kept: rewritten again next time, as without the cache


def _rewrite_share(config, cached, index: int, count: int) -> None:
    """Rewrite (and keep) every ``count``-th of the test modules this run will collect."""
    names = config.getini("python_files")
    files: list[Path] = []
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if p.name == "conftest.py" or
                            any(p.match(name) for name in names))
    for path in files[index::count]:
        try:
            cached(path.absolute(), config)
        except (OSError, SyntaxError, ValueError):
            pass                  # collection reports it as it would have
