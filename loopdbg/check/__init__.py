"""``loopdbg check``: compare loopdbg with OpenVINO, on the outputs and iteration by iteration.

    from loopdbg.check import check, format_report
    report = check(read_model("model.xml"), inputs, per_iteration=True, all_nodes=True)
    print(format_report(report))
    report.exit_code                # 0 agrees, 1 diverges, 2 could not run

OpenVINO is an optional extra (``pip install 'loopdbg[openvino]'``) and never runs in loopdbg's
process: ``oracle`` reaches it through the child process of ``loopdbg.oracle``. Modules: ``compare`` (docs/semantics.md rule 14), ``extract`` (a body as a
standalone model), ``oracle`` (OpenVINO), ``checker`` (the check), ``bookkeeping`` (naming the
part of a loop that differs when its bodies agree), ``report`` (the text).
"""

from loopdbg.check.checker import check
from loopdbg.check.compare import Comparison, compare
from loopdbg.check.oracle import CheckUnavailable
from loopdbg.check.report import format_report
from loopdbg.check.results import CheckReport, Divergence, LoopCheck

__all__ = ["check", "CheckReport", "Divergence", "LoopCheck", "Comparison", "compare",
           "CheckUnavailable", "format_report"]
