"""Element types numpy lacks (ml_dtypes: bfloat16, float8, int4 ...) and strings, in ONNX models:
the reader, the kernels, inputs and their messages, .npz files and traces.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.cli import main  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.engine.inputs import load_npz  # noqa: E402
from loopdbg.engine.npz import save_npz  # noqa: E402
from loopdbg.errors import InputError  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e4m3fn)
I4 = np.dtype(ml_dtypes.int4)


def _one(op, in_type, out_type, shape=(3,), opset=21, inits=(), extra_inputs=(), **attrs):
    node = helper.make_node(op, ["x", *extra_inputs], ["y"], **attrs)
    return om.model([node], [om.vi("x", in_type, list(shape))], [om.vi("y", out_type, None)],
                    opset=opset, inits=inits)


def test_initializers_keep_their_ml_dtypes_and_strings_become_unicode():
    inits = [numpy_helper.from_array(np.array([1.5, -2.0], BF16), "b"),
             numpy_helper.from_array(np.array([0.5, 448.0], F8), "f"),
             numpy_helper.from_array(np.array([-8, 7], I4), "i"),
             helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", "\u00e9".encode()])]
    nodes = [helper.make_node("Identity", [n], [n + "_out"]) for n in "bfis"]
    m = om.model(nodes, [], [om.vi(n + "_out", t, [2]) for n, t in
                             zip("bfis", (TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN,
                                          TensorProto.INT4, TensorProto.STRING))],
                 opset=21, inits=inits)
    out = Engine(from_proto(m)).run_to_end({}).outputs
    assert out["b_out"].dtype == BF16 and out["b_out"].tolist() == [1.5, -2.0]
    assert out["f_out"].dtype == F8 and out["f_out"].astype(np.float32).tolist() == [0.5, 448.0]
    assert out["i_out"].dtype == I4 and out["i_out"].astype(int).tolist() == [-8, 7]
    assert out["s_out"].dtype.kind == "U" and out["s_out"].tolist() == ["ab", "\u00e9"]


@pytest.mark.parametrize("elem, name", [(TensorProto.BFLOAT16, "bfloat16"),
                                        (TensorProto.FLOAT8E4M3FN, "float8_e4m3fn"),
                                        (TensorProto.INT4, "int4")])
def test_an_input_of_the_wrong_type_names_the_type_the_model_expects(elem, name):
    engine = Engine(from_proto(_one("Identity", elem, elem)))
    with pytest.raises(InputError, match=f"has dtype float32, but the model expects {name}"):
        engine.run_to_end({"x": np.zeros(3, np.float32)})
    with pytest.raises(InputError, match=f"the model expects x {name} \\(3,\\)"):
        engine.run_to_end({})


def test_raw_bytes_numpy_saved_for_bfloat16_are_taken_as_the_declared_type(tmp_path):
    x = np.array([1.0, 2.5, -3.0], BF16)
    np.savez(tmp_path / "numpy.npz", x=x)                    # numpy writes |V2
    raw = load_npz(tmp_path / "numpy.npz")["x"]
    assert raw.dtype.kind == "V"
    engine = Engine(from_proto(_one("Identity", TensorProto.BFLOAT16, TensorProto.BFLOAT16)))
    out = engine.run_to_end({"x": raw}).outputs["y"]
    assert out.dtype == BF16 and out.tolist() == [1.0, 2.5, -3.0]
    f8 = Engine(from_proto(_one("Identity", TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FN)))
    with pytest.raises(InputError, match=r"has dtype \|V2 \(raw bytes\), which is not numeric "
                                         r"\(loopdbg takes numbers, booleans and strings\); the "
                                         r"model expects float8_e4m3fn"):
        f8.run_to_end({"x": raw})


@pytest.mark.parametrize("value", [np.array([1.5, -2, 3], BF16), np.array([0.5, 2, -4], F8),
                                   np.array([1, -2, 7], I4), np.array(["a", "bc", ""])])
def test_npz_files_keep_ml_dtypes_by_name_and_strings(tmp_path, value):
    save_npz(tmp_path / "v.npz", {"v": value})
    back = load_npz(tmp_path / "v.npz")["v"]
    assert back.dtype == value.dtype and back.tobytes() == value.tobytes()
    with np.load(tmp_path / "v.npz", allow_pickle=False) as plain:    # numpy reads it too
        assert plain["v"].dtype == value.dtype


def test_strings_run_through_onnx_reference_and_python_strings_are_accepted():
    m = _one("StringNormalizer", TensorProto.STRING, TensorProto.STRING, case_change_action="UPPER")
    engine = Engine(from_proto(m))
    out = engine.run_to_end({"x": np.array(["ab", "Cd", "e"], dtype=object)}).outputs["y"]
    assert out.dtype.kind == "U" and out.tolist() == ["AB", "CD", "E"]
    with pytest.raises(InputError, match="holds Python objects, not numbers or strings"):
        engine.run_to_end({"x": np.array(["a", 1, None], dtype=object)})


def test_bfloat16_arithmetic_keeps_bfloat16_as_onnx_types_it():
    m = om.model([helper.make_node("MatMul", ["x", "w"], ["m"]),
                  helper.make_node("Add", ["m", "x"], ["y"])],
                 [om.vi("x", TensorProto.BFLOAT16, [2, 2])], [om.vi("y", TensorProto.BFLOAT16, None)],
                 inits=[numpy_helper.from_array(np.eye(2, dtype=BF16), "w")])
    x = np.array([[1, 2], [3, 4]], BF16)
    y = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    assert y.dtype == BF16 and y.tolist() == [[2, 4], [6, 8]]


@pytest.mark.parametrize("to, saturate", [(TensorProto.FLOAT8E4M3FN, 1),
                                          (TensorProto.FLOAT8E4M3FN, 0),
                                          (TensorProto.FLOAT8E5M2FNUZ, 1), (TensorProto.INT4, 1),
                                          (TensorProto.BFLOAT16, 1), (TensorProto.STRING, 1)])
def test_casts_to_types_numpy_lacks_are_onnx_references(to, saturate):
    from onnx.reference import ReferenceEvaluator

    attrs = {"to": to} if to in (TensorProto.INT4, TensorProto.STRING) else \
        {"to": to, "saturate": saturate}
    m = _one("Cast", TensorProto.FLOAT, to, shape=(6,), **attrs)
    x = np.array([0.3, -1000.0, 1e9, np.inf, -np.inf, 7.7], np.float32)
    if to == TensorProto.INT4:
        x = np.array([0.3, -8.0, 7.0, 2.6, -3.2, 1.0], np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    if want.dtype == object:
        assert got.tolist() == want.tolist()
    else:
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_trace_keeps_bfloat16_values(tmp_path, capsys):
    """A loop over bfloat16 state, traced and read back: the dtype survives the .npy headers."""
    from loopdbg.trace import TraceReader

    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "h_in"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [om.vi("i", TensorProto.INT64, []), om.vi("cond_in", TensorProto.BOOL, []),
         om.vi("h_in", TensorProto.BFLOAT16, [2])],
        [om.vi("cond_out", TensorProto.BOOL, []), om.vi("h_out", TensorProto.BFLOAT16, [2])])
    m = om.model([helper.make_node("Loop", ["M", "", "h0"], ["h"], body=body, name="doubling")],
                 [om.vi("M", TensorProto.INT64, []), om.vi("h0", TensorProto.BFLOAT16, [2])],
                 [om.vi("h", TensorProto.BFLOAT16, [2])])
    onnx.save(m, str(tmp_path / "m.onnx"))
    save_npz(tmp_path / "in.npz", {"M": np.array(3, np.int64), "h0": np.array([1, 3], BF16)})
    rc = main(["run", str(tmp_path / "m.onnx"), str(tmp_path / "in.npz"), "--trace",
               str(tmp_path / "t.ltrace"), "-o", str(tmp_path / "out.npz")])
    assert rc in (0, None), capsys.readouterr().err
    assert "h  bfloat16 (2,) [ 8., 24.]" in capsys.readouterr().out
    with TraceReader(tmp_path / "t.ltrace") as t:
        h = t.frame("doubling", 2).back_edges["h_in"]
        assert h.dtype == BF16 and h.tolist() == [8, 24]
    assert load_npz(tmp_path / "out.npz")["h"].dtype == BF16


def test_the_ui_and_the_report_show_ml_dtypes_values_and_strings():
    pytest.importorskip("textual")
    from loopdbg.debug.report import fmt_value
    from loopdbg.tui.widgets.valuetext import value_text
    from loopdbg.tui.widgets.inspector import describe
    from loopdbg.tui.widgets.tables import stats

    b = np.array([1.5, -2.0], BF16)
    assert describe(b).plain.startswith("dtype bfloat16  shape (2,)  size 2\nmin -2  max 1.5")
    assert value_text(b) == "[1.5 -2.] bfloat16" and stats(b) == ("-2", "1.5", "-0.25")
    assert fmt_value(np.array([3, -4], I4)) == "int4 (2,) [ 3, -4]"
    s = np.array(["ab", "c"])
    assert value_text(s) == "(2) string" and stats(s) == ("", "", "")
    assert fmt_value(s) == "string (2,) ['ab', 'c']"


@pytest.mark.parametrize("code", [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13])
@pytest.mark.parametrize("dims,n", [((2, 3), 6), ((), 1), ((0, 4), 0), ((2, 2), 3), ((5,), 5)])
def test_raw_tensors_read_directly_are_what_numpy_helper_reads(code, dims, n):
    """The reader's direct path for plain raw_data tensors (to_array): the same dtype, shape,
    values and read-only flag as numpy_helper, and the same error for bytes that do not fit."""
    from loopdbg.ir.onnx_types import to_array

    dtype = helper.tensor_dtype_to_np_dtype(code)
    t = TensorProto(data_type=code, dims=list(dims),
                    raw_data=np.arange(n).astype(dtype).tobytes() + b"\x01" * (code == 7 and n == 3))

    def read(fn):
        try:
            a = fn(t)
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            return type(exc), str(exc)
        return a.dtype, a.shape, a.tobytes(), a.flags.writeable

    assert read(to_array) == read(numpy_helper.to_array)


def test_a_fresh_loopdbg_reads_bfloat16_models_and_inputs_it_has_not_imported_ml_dtypes_for(
        tmp_path):
    """ml_dtypes is imported at the first need of one of its types (elements, npz headers, a
    kept model's arrays), not with loopdbg: a fresh process still reads a bfloat16 model, its
    bfloat16 .npz and the model kept from it by the run before, and writes bfloat16 outputs."""
    import os
    import subprocess
    import sys

    m = om.model([helper.make_node("Add", ["x", "w"], ["y"])],
                 [om.vi("x", TensorProto.BFLOAT16, [2])], [om.vi("y", TensorProto.BFLOAT16, None)],
                 inits=[numpy_helper.from_array(np.array([0.5, 1], BF16), "w")])
    onnx.save(m, str(tmp_path / "m.onnx"))
    save_npz(tmp_path / "in.npz", {"x": np.array([1, 3], BF16)})
    probe = ("import sys, runpy; sys.argv = ['loopdbg', 'run', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('loopdbg', run_name='__main__')\n"
             "except SystemExit as e:\n    print('exit', e.code)\n")
    env = dict(os.environ, LOOPDBG_CODE_CACHE=str(tmp_path / "cache"))
    for n in range(2):                      # read, then read back from the cache
        out = tmp_path / f"out{n}.npz"
        proc = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "m.onnx"),
                               str(tmp_path / "in.npz"), "-o", str(out)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.stdout.splitlines()[-1] == "exit 0", proc.stderr
        assert "y  bfloat16 (2,) [1.5, 4. ]" in proc.stdout
        assert load_npz(out)["y"].dtype == BF16
    assert list((tmp_path / "cache").glob("*.model"))
    alone = ("import sys\nfrom loopdbg.engine.inputs import load_npz\n"
             "before = 'ml_dtypes' in sys.modules\n"
             "print(before, load_npz(sys.argv[1])['x'].dtype)\n")
    proc = subprocess.run([sys.executable, "-c", alone, str(tmp_path / "in.npz")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.split() == ["False", "bfloat16"], proc.stderr     # the header, read again
