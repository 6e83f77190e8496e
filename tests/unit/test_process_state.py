"""Running a model changes nothing of the process (issue 26, item 8): not the locale, numpy's
error handling or print options, the recursion limit, the environment or the working folder.

onnx.reference's StringNormalizer sets the process locale to its ``locale`` attribute; other
operators run by onnx.reference are held to the same rule by ``loopdbg.ops.process_state.kept``.
"""

from __future__ import annotations

import locale

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.ops import process_state  # noqa: E402


def _normalizer(loc: str):
    node = helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER",
                            is_case_sensitive=1, stopwords=["drop"], locale=loc)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING,
                                                                      [3])],
                          [helper.make_tensor_value_info("y", TensorProto.STRING, None)])
    return from_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)],
                                        ir_version=8))


@pytest.mark.parametrize("loc", ["C", "POSIX", "en_US.UTF-8", "tr_TR.UTF-8"])
def test_string_normalizer_leaves_the_locale_alone(loc):
    before = process_state.snapshot()
    final = Engine(_normalizer(loc)).run_to_end({"x": np.array(["abc", "drop", "déf"])})
    assert list(final.outputs["y"]) == ["ABC", "DEF"]   # (onnx.reference strips accents)
    assert process_state.snapshot() == before
    assert locale.setlocale(locale.LC_ALL) == before[0]


def test_kept_puts_back_what_a_kernel_changed(monkeypatch, tmp_path):
    import os
    import sys

    before = process_state.snapshot()

    def meddling(x):
        np.seterr(all="raise")
        np.set_printoptions(precision=2)
        sys.setrecursionlimit(before[3] + 100)
        os.environ["LOOPDBG_TEST_MARK"] = "1"
        del os.environ["PATH"]
        os.chdir(tmp_path)
        locale.setlocale(locale.LC_ALL, "C")
        return x + 1

    assert process_state.kept(meddling, 1) == 2
    assert process_state.snapshot() == before
