"""A command never overwrites a file it reads, every file (issue 26, item 3).

Besides the model, its ``.bin`` and the inputs: an ONNX model's external data files (weights
beside ``model.onnx`` named by its initializers' ``location``), and the model a trace names when
the trace is replayed. Files are compared by device and inode, so a hard link to one of them, or
another spelling of its path, is refused too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from relhelpers import ROOT, accumulate_loop
from relhelpers import assert_refused_but_inputs_line as assert_refused

NEVER = "never overwrites a file it reads"
EXTERNAL = "the model's external data"


def external_model(folder: Path, location: str) -> tuple[Path, Path, Path]:
    """loop_running_sum with ``x`` an initializer kept in the external file ``location``."""
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from _onnx_models import loop_running_sum

    m, feeds = loop_running_sum(m_value=3)
    x = [i for i in m.graph.input if i.name == "x"][0]
    m.graph.input.remove(x)
    m.graph.initializer.append(numpy_helper.from_array(feeds.pop("x"), "x"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=0)
    inputs = folder / "in.npz"
    np.savez(inputs, **feeds)
    return path, folder / location, inputs


def test_the_reader_knows_the_external_data_files(tmp_path):
    from loopdbg.ir.load import read_model

    path, data, _ = external_model(tmp_path, "weights.data")
    assert data.exists()
    model = read_model(path)
    assert [Path(f).resolve() for f in model.data_files] == [data.resolve()]


@pytest.mark.parametrize("how", ["itself", "through a linked folder", "other spelling"])
def test_run_never_writes_over_external_data(cli, tmp_path, how):
    """(onnx refuses external data with several hard links, so no hard link here: the IR's
    files are checked through hard links below and in test_outputs.py.)"""
    path, data, inputs = external_model(tmp_path / "m", "weights.data")
    before = data.read_bytes()
    target = {"itself": data, "through a linked folder": tmp_path / "alias" / data.name,
              "other spelling": data.parent / "." / data.name}[how]
    if how == "through a linked folder":
        (tmp_path / "alias").symlink_to(data.parent)
    for flag in ("-o", "--trace"):
        assert_refused(cli("run", path, inputs, flag, target), EXTERNAL, NEVER)
    assert_refused(cli("inputs", path, "-o", target), EXTERNAL, NEVER)
    assert data.read_bytes() == before
    assert cli("run", path, inputs, "-q").code == 0           # the model still reads


def test_graph_and_plot_never_write_over_external_data(cli, tmp_path):
    for name, argv in (("body.dot", ("graph", "{model}", "-o", "{data}")),
                       ("plot.png", ("plot", "{model}", "{inputs}", "mean(acc_out)", "-o",
                                     "{data}"))):
        if name.endswith(".png"):
            pytest.importorskip("matplotlib")
        path, data, inputs = external_model(tmp_path / name, name)
        before = data.read_bytes()
        r = cli(*(a.format(model=path, data=data, inputs=inputs) for a in argv))
        assert_refused(r, EXTERNAL, NEVER)
        assert data.read_bytes() == before


def test_the_recording_api_never_writes_over_external_data(tmp_path):
    from loopdbg.engine import Engine
    from loopdbg.engine.inputs import load_npz
    from loopdbg.errors import LoopdbgError
    from loopdbg.ir.load import read_model
    from loopdbg.trace import record

    path, data, inputs = external_model(tmp_path, "weights.data")
    before = data.read_bytes()
    model, values = read_model(path), load_npz(inputs)
    with pytest.raises(LoopdbgError, match=NEVER):
        record(Engine(model).run(values), data, model=model, inputs=values)
    assert data.read_bytes() == before


def test_a_replayed_trace_protects_the_model_it_names(cli, tmp_path):
    """graph/plot of a trace replay the model the trace names: its files are read too."""
    xml, given = accumulate_loop(tmp_path / "m")
    bin_ = xml.with_suffix(".bin")
    trace = tmp_path / "t.ltrace"
    assert cli("run", xml, given, "--trace", trace, "-q").code == 0
    victims = {xml: xml.read_bytes(), bin_: bin_.read_bytes()}
    dot = tmp_path / "bin.dot"
    os.link(bin_, dot)                          # graph needs a .dot/.svg/.png name
    assert_refused(cli("graph", trace, "-o", dot), "the model's weights", NEVER)
    try:
        import matplotlib  # noqa: F401
        png = tmp_path / "xml.png"
        os.link(xml, png)
        assert_refused(cli("plot", trace, "mean(acc_new)", "-o", png), "the model", NEVER)
    except ImportError:
        pass
    for p, data in victims.items():
        assert p.read_bytes() == data, p
