"""``loopdbg check``: compare loopdbg with a runtime, or a converted model with its source.

    from loopdbg.check import check, format_report
    report = check(read_model("model.xml"), inputs, per_iteration=True, all_nodes=True)
    print(format_report(report))
    report.exit_code                # 0 agrees, 1 diverges, 2 could not run

    from loopdbg.check.against import check_against        # MODEL --against REFERENCE
    from loopdbg.check.report_against import format_against

The runtimes (OpenVINO for an IR, onnxruntime for an ONNX model) are optional extras and never
run in loopdbg's process: ``oracle`` reaches them through the child processes of
``loopdbg.oracle``. Modules: ``compare`` (docs/semantics.md rule 14), ``extract`` and
``extract_onnx`` (a body as a standalone model), ``oracle`` (the runtime), ``checker`` (the
check) with ``results`` (what it found) and ``from_trace`` (loopdbg's side from a trace),
``bookkeeping`` (naming the part of a loop that differs when its bodies agree), ``pairing`` and
``against`` (a converted model against its source), ``verdicts`` (who agrees with whom),
``report``, ``report_against``, ``text`` (the texts) and ``json_report`` (docs/check-json.md).
"""

from loopdbg.check.checker import check
from loopdbg.check.compare import Comparison, compare
from loopdbg.check.oracle import CheckUnavailable
from loopdbg.check.report import format_report
from loopdbg.check.results import CheckReport, Divergence, LoopCheck

__all__ = ["check", "CheckReport", "Divergence", "LoopCheck", "Comparison", "compare",
           "CheckUnavailable", "format_report"]
