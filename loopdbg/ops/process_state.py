"""No operator changes the state of the whole process (issue 26, item 8).

A kernel runs inside a debugger that keeps going after it: a model must not be able to change the
locale, numpy's floating-point error handling or print options, the recursion limit, the
environment or the working directory of loopdbg's process. loopdbg's own kernels never touch them
(numpy's error state only inside ``np.errstate``); onnx.reference's implementations, which run the
long tail of ONNX operators, are run by ``kept``, which puts back whatever one changed, and
StringNormalizer's ``setlocale`` (to the node's ``locale`` attribute) is made a no-op beforehand
(``no_locale_changes``): Python's ``str.lower``/``upper`` do not depend on the locale anyway.
"""

from __future__ import annotations

import contextlib
import locale
import os
import sys

import numpy as np


def _environment() -> dict:
    """The environment as the process holds it (os.environ's encoded mapping: copying it costs
    about a microsecond, ``dict(os.environ)`` a hundred times more)."""
    data = getattr(os.environ, "_data", None)
    return dict(data) if isinstance(data, dict) else dict(os.environ)


def snapshot() -> tuple:
    """The process-wide settings a kernel could change (for ``kept`` and for tests)."""
    return (locale.setlocale(locale.LC_ALL), np.geterr(), np.get_printoptions(),
            sys.getrecursionlimit(), _environment(), os.getcwd())


def kept(fn, *args):
    """``fn(*args)`` (a third-party kernel); whatever of ``snapshot()`` it changed is put back."""
    before = snapshot()
    try:
        return fn(*args)
    finally:
        if snapshot() != before:
            _restore(before)


def _restore(before: tuple) -> None:
    loc, err, printing, limit, env, cwd = before
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_ALL, loc)
    np.seterr(**err)
    np.set_printoptions(**printing)
    sys.setrecursionlimit(limit)
    if _environment() != env:
        decode = getattr(os.environ, "decodekey", lambda k: k)
        decode_value = getattr(os.environ, "decodevalue", lambda v: v)
        os.environ.clear()
        os.environ.update({decode(k): decode_value(v) for k, v in env.items()})
    with contextlib.suppress(OSError):
        os.chdir(cwd)


class _FixedLocale:
    """Stands in for the ``locale`` module in an op module that would call ``setlocale``: the
    query is answered, a change is ignored."""

    Error = locale.Error
    LC_ALL, LC_CTYPE = locale.LC_ALL, locale.LC_CTYPE

    @staticmethod
    def getlocale(*args):
        return locale.getlocale(*args)

    @staticmethod
    def setlocale(category, value=None):       # noqa: ARG004 - the value is never applied
        return locale.setlocale(category)


def no_locale_changes(module) -> None:
    """Make ``module``'s (an onnx.reference op module's) ``setlocale`` calls change nothing."""
    for name in ("pylocale", "locale"):
        if getattr(module, name, None) is locale:
            setattr(module, name, _FixedLocale)
