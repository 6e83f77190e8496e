"""`loopdbg run --trace` records the run; the trace tools read it back."""

from pathlib import Path

from loopdbg.cli import main
from loopdbg.trace.reader import TraceReader

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_run_with_trace_records_every_iteration(tmp_path, capsys):
    trace = tmp_path / "run.ltrace"
    model = str(CORPUS / "loop_while_iter" / "model.xml")
    assert main(["run", model, "--trace", str(trace), "-q"]) == 0
    assert main(["trace", "info", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "loop: 7 iterations" in out and "complete" in out
    with TraceReader(trace) as reader:
        assert not reader.truncated


def test_two_recordings_of_the_same_run_are_identical(tmp_path, capsys):
    model = str(CORPUS / "ti_lstm_forward" / "model.xml")
    a, b = tmp_path / "a.ltrace", tmp_path / "b.ltrace"
    assert main(["run", model, "--trace", str(a), "-q"]) == 0
    assert main(["run", model, "--trace", str(b), "-q"]) == 0
    assert main(["trace", "diff", str(a), str(b)]) == 0
    assert "identical" in capsys.readouterr().out
