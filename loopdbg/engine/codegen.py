"""Generated Python that a debugger can show: each source is compiled under a file name of its own
and registered with ``linecache`` (as attrs and dataclasses do), so a traceback through generated
code shows its lines, ``pdb`` lists them and ``inspect.getsource`` finds them.

File names are positional (``<loopdbg plan 7>``), never made from a model file. A source is
forgotten by ``linecache`` when the object that owns it (its plan) is collected. A big source's
code object is kept between runs (``codecache``), renamed to this run's file name when read back.
"""

from __future__ import annotations

import itertools
import linecache
import types
import weakref

from loopdbg.engine import codecache

_counter = itertools.count(1)


def compile_source(source: str, what: str, owner: object = None) -> tuple[types.CodeType, str]:
    """``source`` compiled under the new file name ``<loopdbg WHAT N>``, registered with
    ``linecache`` while ``owner`` lives (for ever when it is None); (module code, file name)."""
    filename = f"<loopdbg {what} {next(_counter)}>"
    code = codecache.load(source, filename)         # a big source compiled by an earlier run
    if code is None:
        code = compile(source, filename, "exec")
        codecache.store(source, code)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if owner is not None:
        weakref.finalize(owner, linecache.cache.pop, filename, None)
    return code, filename


def function_code(module: types.CodeType) -> types.CodeType:
    """The code object of the (first) function a compiled module defines."""
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


def layer_kind(kind: str) -> str:
    """A layer type as the comment of a generated line writes it (``  # Add 'x_plus_1'``, the
    layer's name through ``repr``): as it is when it is a name, else through ``repr`` too, so no
    text from a file becomes code."""
    return kind if kind.isidentifier() else repr(kind)
