"""ONNX models as read, kept between runs (ir/model_cache.py): a second reading of the same bytes
under the same path gives the same Model without parsing the file again, and whatever differs
(the bytes, the path, the reader) reads the file again; what cannot be read back, or should not be
kept, is read as before."""

from __future__ import annotations

import importlib.util
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("onnx")
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.errors import ModelError  # noqa: E402
from loopdbg.ir import model as irm  # noqa: E402
from loopdbg.ir import model_cache, onnx_lib  # noqa: E402
from loopdbg.ir.load import read_model  # noqa: E402


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(where))
    return where


@pytest.fixture
def parses(monkeypatch):
    """Count the ONNX files parsed."""
    seen = []
    real = onnx_lib.parse_model

    def spy(data):
        seen.append(len(data))
        return real(data)

    monkeypatch.setattr(onnx_lib, "parse_model", spy)
    return seen


def _save(m, path):
    path.write_bytes(m.SerializeToString())
    return path


def _graph_facts(g: irm.Graph):
    """Everything a graph holds, recursively, arrays as (dtype, shape, bytes)."""
    layers = []
    for lid, la in g.layers.items():
        value = None if la.value is None else (la.value.dtype.str, la.value.shape,
                                               la.value.tobytes())
        subs = [(s.role, _graph_facts(s.graph), s.inputs, s.outputs, s.back_edges)
                for s in la.subgraphs]
        layers.append((lid, la.name, la.type, la.version, repr(la.data), la.inputs, la.outputs,
                       subs, value, la.ir_type, la.line))
    return g.name, layers, g.edges, g.parameters, g.results


def test_a_second_reading_gives_the_same_model_without_parsing(tmp_path, cache_dir, parses):
    m, feeds = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    first = read_model(path)
    assert len(parses) == 1 and len(list(cache_dir.glob("*.model"))) == 1
    second = read_model(path)
    assert len(parses) == 1                         # read back, not parsed
    assert second is not first
    assert _graph_facts(second.graph) == _graph_facts(first.graph)
    values = [la.value for la in second.graph.layers.values() if la.value is not None]
    assert values and not any(v.flags.writeable for v in values)   # views of the kept file
    assert (second.path, second.format, second.opsets, second.ir_version, second.warnings,
            second.data_files) == (first.path, first.format, first.opsets, first.ir_version,
                                   first.warnings, first.data_files)
    a = list(Engine(first).run(feeds))
    b = list(Engine(second).run(feeds))
    assert [type(e) for e in a] == [type(e) for e in b]
    for name, value in a[-1].outputs.items():
        np.testing.assert_array_equal(b[-1].outputs[name], value)


def test_other_bytes_or_another_path_are_read_again(tmp_path, cache_dir, parses):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    read_model(path)
    m.graph.name = "renamed"
    _save(m, path)                                  # the same path, other bytes
    assert read_model(path).graph.name == "renamed"
    other = _save(m, tmp_path / "copy.onnx")        # the same bytes, another path
    assert read_model(other).path == str(other)
    assert len(parses) == 3


def test_a_model_kept_with_a_warning_says_it_again(tmp_path, cache_dir, parses):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    first = read_model(path)
    kept, = cache_dir.glob("*.model")
    model = model_cache.unpack(kept.read_bytes())
    assert model.warnings == first.warnings and model.path == str(path)


def test_a_damaged_or_foreign_file_is_read_again_and_replaced(tmp_path, cache_dir, parses):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    read_model(path)
    kept, = cache_dir.glob("*.model")
    for junk in (kept.read_bytes()[:100], pickle.dumps({"not": "a model"}),
                 model_cache.pack({"not": "a model"})):
        kept.write_bytes(junk)
        assert read_model(path).graph.layers
        assert read_model(path).graph.layers        # replaced: read back again
    assert len(parses) == 4                         # the first reading and one per junk


def test_off_or_an_unsafe_directory_keeps_nothing(tmp_path, monkeypatch, parses):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", "off")
    read_model(path)
    read_model(path)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)                       # others may write there: not used
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", str(open_dir))
    read_model(path)
    read_model(path)
    assert len(parses) == 4 and not list(open_dir.iterdir())


def test_a_model_with_external_data_is_not_kept(tmp_path, cache_dir, parses):
    weight = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    m = om.model([node], [om.vi("x", TensorProto.FLOAT, [1, 64])],
                 [om.vi("y", TensorProto.FLOAT, [1, 64])], inits=[weight])
    path = tmp_path / "ext.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, location="ext.data",
                    size_threshold=0)
    assert read_model(path).data_files
    read_model(path)
    assert len(parses) == 2 and not list(cache_dir.glob("*.model"))


def test_bad_files_say_the_same_sentence_every_time_and_are_not_kept(tmp_path, cache_dir):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01 not a protobuf at all \xff\xff")
    for _ in range(2):
        with pytest.raises(ModelError, match="not a readable ONNX model"):
            read_model(bad)
    node = helper.make_node("Relu", ["x"], [])        # a node without its output
    m = om.model([node], [om.vi("x", TensorProto.FLOAT, [2])], [om.vi("x", TensorProto.FLOAT, [2])])
    odd = _save(m, tmp_path / "odd.onnx")
    for _ in range(2):
        with pytest.raises(ModelError, match="1 output|outputs"):
            read_model(odd)
    assert not list(cache_dir.glob("*.model"))


def test_the_key_follows_the_reader_and_onnx(tmp_path, cache_dir, monkeypatch):
    data = b"bytes of a model"
    name = model_cache.key(data, "m.onnx")
    assert name == model_cache.key(data, "m.onnx") and name.endswith(".model")
    assert model_cache.key(data + b"!", "m.onnx") != name
    assert model_cache.key(data, "./m.onnx") != name
    edited = tmp_path / "reader.py"
    edited.write_text("# the reader\n")
    monkeypatch.setattr(model_cache, "reader_files", lambda: [str(edited)])
    name = model_cache.key(data, "m.onnx")
    edited.write_text("# the reader, edited\n")           # (another size)
    assert model_cache.key(data, "m.onnx") != name
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "onnx" else real_find(n, *a))
    assert model_cache.key(data, "m.onnx") is None      # no onnx: read (and told how to get it)
    monkeypatch.undo()
    monkeypatch.setattr(model_cache, "MAX_FILE", len(data) - 1)
    assert model_cache.key(data, "m.onnx") is None      # too big to keep a copy of
    monkeypatch.undo()
    monkeypatch.setenv("LOOPDBG_CODE_CACHE", "off")
    assert model_cache.key(data, "m.onnx") is None      # nowhere to keep it: not even hashed


def test_the_loopdbg_program_reads_a_kept_model_without_importing_onnx(tmp_path, cache_dir):
    m, feeds = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feeds)
    probe = ("import sys, runpy; sys.argv = ['loopdbg', 'run', sys.argv[1], sys.argv[2]]\n"
             "try:\n    runpy.run_module('loopdbg', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\n"
             "print('onnx imported' if 'onnx' in sys.modules else 'no onnx', code)\n")
    env = dict(os.environ, LOOPDBG_CODE_CACHE=str(cache_dir))
    runs = [subprocess.run([sys.executable, "-c", probe, str(path), str(tmp_path / "in.npz")],
                           capture_output=True, text=True, env=env, timeout=120)
            for _ in range(2)]
    assert runs[0].stdout.splitlines()[-1] == "onnx imported 0"
    assert runs[1].stdout.splitlines()[-1] == "no onnx 0"
    assert runs[0].stdout.splitlines()[:-1] == runs[1].stdout.splitlines()[:-1]


def test_packed_arrays_come_back_equal_aligned_and_read_only():
    import ml_dtypes

    values = {"f32": np.arange(7, dtype=np.float32), "odd": np.arange(3, dtype=np.int8),
              "f64": np.linspace(0, 1, 5), "strided": np.arange(20.0)[::3],
              "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
              "empty": np.zeros((0, 4), np.float32), "text": np.array(["a", "bc"]),
              "bf16": np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16),
              "scalar": np.array(3, np.int64), "bool": np.array([True, False])}
    back = model_cache.unpack(model_cache.pack(values))
    assert list(back) == list(values)
    for name, value in values.items():
        got = back[name]
        assert (got.dtype, got.shape) == (value.dtype, value.shape), name
        np.testing.assert_array_equal(got.astype(np.float64) if name == "bf16" else got,
                                      value.astype(np.float64) if name == "bf16" else value)
        assert got.flags.aligned, name
    assert not back["f64"].flags.writeable
    with pytest.raises(ValueError):
        model_cache.unpack(model_cache.pack(values)[:-1])     # a buffer cut short


def test_kept_models_are_trimmed_to_their_own_size_and_leave_code_alone(tmp_path, cache_dir,
                                                                         monkeypatch):
    m, _ = om.loop_running_sum()
    first = _save(m, tmp_path / "a.onnx")
    read_model(first)
    older, = cache_dir.glob("*.model")
    os.utime(older, (1, 1))
    code = cache_dir / ("0" * 64 + ".code")
    code.write_bytes(b"x" * (4 * older.stat().st_size))       # code over the models' size
    monkeypatch.setattr(model_cache, "MAX_BYTES", older.stat().st_size + 100)   # one fits
    read_model(_save(m, tmp_path / "b.onnx"))                   # another path: another file
    kept = list(cache_dir.glob("*.model"))
    assert len(kept) == 1 and kept[0] != older and code.exists()


@pytest.fixture
def hashed(monkeypatch):
    """Count the kept models looked up by their bytes' hash (``model_cache.key``)."""
    seen = []
    real = model_cache.key

    def spy(data, path):
        seen.append(path)
        return real(data, path)

    monkeypatch.setattr(model_cache, "key", spy)
    return seen


@pytest.fixture
def settled(monkeypatch):
    """Files as if written long ago: their stat is trusted at once (``model_cache.SETTLED``)."""
    monkeypatch.setattr(model_cache, "SETTLED", 0.0)


def test_a_file_left_alone_is_found_by_its_stat_without_hashing(tmp_path, cache_dir, parses,
                                                                  hashed, settled):
    m, feeds = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    first = read_model(path)                        # parsed, kept, noted
    assert len(list(cache_dir.glob("*.seen"))) == 1
    hashes = len(hashed)
    second = read_model(path)
    assert (len(parses), len(hashed)) == (1, hashes)    # neither parsed nor hashed again
    assert _graph_facts(second.graph) == _graph_facts(first.graph)
    assert second.path == first.path and second.warnings == first.warnings
    other = _save(m, tmp_path / "copy.onnx")        # the same bytes under another path
    assert read_model(other).path == str(other)


def test_a_file_just_written_is_not_noted(tmp_path, cache_dir, parses, hashed):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    read_model(path)
    hashes = len(hashed)
    read_model(path)                                # found by its bytes' hash, every time
    assert (len(parses), len(hashed)) == (1, hashes + 1)
    assert not list(cache_dir.glob("*.seen"))


def test_a_file_rewritten_with_its_size_and_times_put_back_is_read_again(tmp_path, cache_dir,
                                                                         parses, settled):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    read_model(path)
    before = path.stat()
    m.graph.name = "x" * len(m.graph.name)          # other bytes, as many of them
    for _ in range(100):                            # until the change time has moved on
        _save(m, path)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = path.stat()
        if after.st_ctime_ns != before.st_ctime_ns:
            break
        time.sleep(0.01)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)
    assert read_model(path).graph.name == m.graph.name
    assert len(parses) == 2


def test_a_damaged_note_or_a_trimmed_model_reads_the_file_again(tmp_path, cache_dir, parses,
                                                               settled):
    m, _ = om.loop_running_sum()
    path = _save(m, tmp_path / "m.onnx")
    read_model(path)
    noted, = cache_dir.glob("*.seen")
    for junk in (b"", b"../../elsewhere.model", b"f" * 64 + b".code"):
        noted.write_bytes(junk)
        assert read_model(path).graph.layers        # found by its hash, and noted again
        assert noted.read_bytes().endswith(b".model")
    for kept in cache_dir.glob("*.model"):
        kept.unlink()
    assert read_model(path).graph.layers and len(parses) == 2
