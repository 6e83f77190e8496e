"""Compiled generated code kept between runs (engine/codecache.py): a second opening of a model
reads its loop's code back instead of compiling it, and that code behaves as compiled code does:
the same events, tracebacks through its lines, a failing layer named. What cannot be trusted or
read is not used."""

from __future__ import annotations

import builtins
import linecache
import os
import traceback

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine import Engine, codecache
from loopdbg.errors import LoopdbgError

from test_engine_loopcode import _same


def _model(bad: bool = False, steps: int = 150):
    """A loop whose body has ``steps`` Adds (its code is past MIN_LINES); ``bad``: its last step
    is a Reshape that cannot be, failing at iteration 0."""
    b = GraphBuilder("deep")
    x = b.parameter("x0", "f32", [2])
    loop = b.loop("deep", trip=3, cond=True)
    h = xb = loop.merged_input(x, "x")
    for k in range(steps):
        h = loop.body.op("Add", [h, np.float32(1)], name=f"add{k}")
    if bad:
        h = loop.body.op("Reshape", [h, np.array([3], np.int64)], name="bad_reshape",
                         special_zero="false")
    loop.back_edge(h, xb)
    loop.condition(loop.body.const("true", np.array(True)))
    b.result(loop.output_last(h, name="x_last"))
    b.result(loop.output_concat(h, axis=0, name="x_all"))
    return b.build()


INPUTS = {"x0": np.zeros(2, np.float32)}


def _compiles(monkeypatch):
    """Count the compilations of generated loop code."""
    seen = []
    real = builtins.compile

    def spy(source, filename, *args, **kwargs):
        if str(filename).startswith("<loopdbg loop code"):
            seen.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", spy)
    return seen


def _loop_code(engine):
    (_, filename, source), = [c for c in engine.generated_code() if c[0] == "loop 'deep'"]
    return filename, source


def test_a_second_opening_reads_the_code_back(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(tmp_path / "cache"))
    seen = _compiles(monkeypatch)
    first = Engine(_model())
    assert len(seen) == 1 and len(list((tmp_path / "cache").glob("*.code"))) == 1
    second = Engine(_model())
    assert len(seen) == 1                               # read back, not compiled
    (name1, source1), (name2, source2) = _loop_code(first), _loop_code(second)
    assert name1 != name2 and source1 == source2
    assert "".join(linecache.getlines(name2)) == source2
    a, b = list(first.run(INPUTS)), list(second.run(INPUTS))
    assert [type(e).__name__ for e in a] == [type(e).__name__ for e in b]
    _same(a[-1].outputs, b[-1].outputs)
    assert a[-1].outputs["x_last"].tolist() == [450, 450]


def test_read_back_code_names_its_lines_and_its_failing_layer(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(tmp_path))
    Engine(_model(bad=True))
    seen = _compiles(monkeypatch)
    engine = Engine(_model(bad=True))
    assert not seen
    filename, _ = _loop_code(engine)
    with pytest.raises(LoopdbgError, match="iteration 0.*'bad_reshape'") as caught:
        engine.run_to_end(INPUTS)
    frames = traceback.extract_tb(caught.value.__context__.__traceback__)
    shown = [f for f in frames if f.filename == filename]
    assert shown and "# Reshape 'bad_reshape'" in shown[-1].line


def test_a_damaged_file_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(tmp_path))
    Engine(_model())
    kept, = tmp_path.glob("*.code")
    kept.write_bytes(kept.read_bytes()[:100])          # cut short
    seen = _compiles(monkeypatch)
    engine = Engine(_model())
    assert len(seen) == 1 and kept.stat().st_size > 100
    assert engine.run_to_end(INPUTS).outputs["x_last"].tolist() == [450, 450]


def test_a_directory_others_may_write_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(shared))
    assert codecache.directory() is None
    (shared / "planted.code").write_bytes(b"")
    Engine(_model())
    assert [p.name for p in shared.iterdir()] == ["planted.code"]


def test_a_relative_directory_is_not_used(tmp_path, monkeypatch):
    """A relative path would be found in whatever folder loopdbg runs in (a model's)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", "cache")
    assert codecache.directory() is None
    monkeypatch.delenv("LOOPDBG_CODE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "xdg")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert codecache.directory() == tmp_path / "home" / ".cache" / "loopdbg" / "code"
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "cache").exists()


def test_off_keeps_nothing_and_small_sources_are_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", "off")
    assert codecache.directory() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    Engine(_model())
    assert not (tmp_path / "xdg").exists()
    monkeypatch.delenv("LOOPDBG_CODE_CACHE")
    Engine(_model(steps=1))                             # under MIN_LINES: compiled each time
    assert not list((tmp_path / "xdg").glob("loopdbg/code/*.code"))
    Engine(_model())
    assert len(list((tmp_path / "xdg").glob("loopdbg/code/*.code"))) == 1


def test_the_directory_keeps_under_its_size_the_recently_used(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(tmp_path))
    Engine(_model(steps=120))
    older, = tmp_path.glob("*.code")
    os.utime(older, (1, 1))
    monkeypatch.setattr(codecache, "MAX_BYTES", 2 * older.stat().st_size)   # one more fits
    Engine(_model(steps=130))
    kept = list(tmp_path.glob("*.code"))
    assert len(kept) == 1 and kept[0] != older
