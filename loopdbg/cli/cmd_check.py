"""``loopdbg check``: compare loopdbg with OpenVINO, on the outputs and iteration by iteration.

Exit status: 0 when everything agrees, 1 on a divergence, 2 when the check could not run
(OpenVINO missing or unable to compile the model, bad inputs, a trace of another model...).
"""

from __future__ import annotations

import argparse

from loopdbg.cli import common

EPILOG = """examples:
  loopdbg check model.xml inputs.npz                     compare every output with OpenVINO
  loopdbg check model.xml inputs.npz --per-iteration     ... and every body iteration
  loopdbg check model.xml --trace run.ltrace --per-iteration --all-nodes
                                                         feed the bodies from a recorded run

needs OpenVINO: pip install 'loopdbg[openvino]'
OpenVINO runs in a child process: if it crashes (e.g. SIGFPE in its CPU plugin), hangs past
--timeout or outgrows --max-memory, the check says so and still shows loopdbg's own outputs.
With --max-iterations, loops stopped at the cap are compared per iteration only.

exit status: 0 agrees, 1 diverges, 2 the check could not run or compare"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="compare loopdbg's results with OpenVINO's (outputs, every iteration)",
        description="Run MODEL on INPUTS with OpenVINO (precision hint f32) and with loopdbg and "
                    "compare every output. With --per-iteration, also run each Loop/"
                    "TensorIterator body on its own in OpenVINO, fed loopdbg's body inputs, and "
                    "report the first iteration and node where they differ.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_model_args(p)
    p.add_argument("--per-iteration", action="store_true",
                   help="also compare every body iteration (nested bodies too)")
    p.add_argument("--all-nodes", action="store_true",
                   help="with --per-iteration: compare every body node, not only the Results")
    p.add_argument("--device", default="CPU", help="OpenVINO device (default CPU)")
    p.add_argument("--rtol", type=_tolerance, default=1e-5,
                   help="relative tolerance for floats (default 1e-5)")
    p.add_argument("--atol", type=_tolerance, default=1e-5,
                   help="absolute tolerance for floats (default 1e-5)")
    p.add_argument("--trace", metavar="FILE.ltrace",
                   help="take loopdbg's side from a trace (`loopdbg run --trace`): its outputs "
                        "and each iteration's body inputs; INPUTS default to the trace's")
    common.add_limit_args(p)
    p.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                   help="give up on an OpenVINO compile or run after this long (default 600)")
    p.set_defaults(handler=run)


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _seconds(text: str) -> float:
    value = _tolerance(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def run(args) -> int:
    from loopdbg.check.oracle import require_openvino

    require_openvino()                  # before anything slow: say how to install it
    from loopdbg.check import check, format_report

    say = common.err
    if args.all_nodes and not args.per_iteration:
        say("--all-nodes has no effect without --per-iteration")
    if args.trace and not args.inputs:
        import numpy as np

        from loopdbg.ir.load import read_model

        np.seterr(all="ignore")
        model, inputs, source = read_model(args.model), None, "the trace's inputs"
    else:
        model, inputs, source = common.load_model_and_inputs(args, say=say)
    report = check(model, inputs, device=args.device, rtol=args.rtol, atol=args.atol,
                   per_iteration=args.per_iteration, all_nodes=args.all_nodes,
                   trace=args.trace, source=source,
                   max_memory=args.max_memory or common.default_memory_budget(),
                   max_iterations=args.max_iterations, timeout=args.timeout)
    common.out(format_report(report))
    return report.exit_code
