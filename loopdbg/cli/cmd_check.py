"""``loopdbg check``: compare loopdbg with a runtime, or a converted model with its source.

Exit status: 0 when everything agrees, 1 on a divergence (or a departure), 2 when the check
could not run (the runtime missing or unable to compile the model, bad inputs, a trace of
another model...).
"""

from __future__ import annotations

import argparse

from loopdbg.cli import common

EPILOG = """examples:
  loopdbg check model.xml inputs.npz                     compare every output with OpenVINO
  loopdbg check model.onnx inputs.npz                    ... an ONNX model with onnxruntime
  loopdbg check model.xml inputs.npz --per-iteration     ... and every body iteration
  loopdbg check model.xml --trace run.ltrace --per-iteration --all-nodes
                                                         feed the bodies from a recorded run
  loopdbg check model.xml inputs.npz --against model.onnx
                                                         where the converted model departs
                                                         from its source (both run in loopdbg)
  loopdbg check model.xml inputs.npz --against model.onnx --runtimes
                                                         ... and which runtime agrees with which
  loopdbg check model.onnx inputs.npz --format json      the report as JSON (docs/check-json.md)

needs the runtime compared with: pip install 'loopdbg[openvino]' (an IR, or --runtime openvino)
or 'loopdbg[onnxruntime]' (an ONNX model); --against alone needs neither.
The runtime runs in a child process: if it crashes (e.g. SIGFPE in OpenVINO's CPU plugin), hangs
past --timeout or outgrows --max-memory, the check says so and still shows loopdbg's own outputs.
With --max-iterations, loops stopped at the cap are compared per iteration only.

--against REFERENCE runs MODEL and REFERENCE in loopdbg, each with its own format's semantics,
pairs their loops and tensors (the tensor names a converter keeps, loop order, shapes) and
reports the first iteration and tensor where MODEL departs from REFERENCE, with both values.
--runtimes also checks each model against its own runtime, per iteration, says who agrees with
whom, and says plainly when a runtime looks wrong (and from which iteration).

exit status: 0 agrees, 1 diverges or departs, 2 the check could not run or compare"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="compare loopdbg with OpenVINO or onnxruntime, or a converted model with "
                      "its source (outputs, every iteration)",
        description="Run MODEL on INPUTS with its runtime (OpenVINO for an IR, with precision "
                    "hint f32; onnxruntime for an ONNX model) and with loopdbg and compare every "
                    "output. With --per-iteration, also run each Loop/TensorIterator/Scan body "
                    "on its own in the runtime, fed loopdbg's body inputs, and report the first "
                    "iteration and node where they differ. With --against, compare MODEL with "
                    "the model it was converted from (or to), both run by loopdbg.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_model_args(p)
    p.add_argument("--per-iteration", action="store_true",
                   help="also compare every body iteration (nested bodies too)")
    p.add_argument("--all-nodes", action="store_true",
                   help="with --per-iteration: compare every body node, not only the Results")
    p.add_argument("--runtime", choices=("openvino", "onnxruntime"),
                   help="what to compare with (default: OpenVINO for an IR, onnxruntime for an "
                        "ONNX model; OpenVINO reads .onnx files too)")
    p.add_argument("--against", metavar="REFERENCE",
                   help="the model MODEL was converted from (or to), .onnx or .xml: report where "
                        "MODEL departs from it, both run by loopdbg")
    p.add_argument("--runtimes", action="store_true",
                   help="with --against: also check each model against its own runtime, per "
                        "iteration, and say which agrees with which")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or json (schema in docs/check-json.md)")
    p.add_argument("--device", default="CPU",
                   help="OpenVINO device or onnxruntime execution provider (default CPU)")
    p.add_argument("--rtol", type=_tolerance, default=1e-5,
                   help="relative tolerance for floats (default 1e-5)")
    p.add_argument("--atol", type=_tolerance, default=1e-5,
                   help="absolute tolerance for floats (default 1e-5)")
    p.add_argument("--trace", metavar="FILE.ltrace",
                   help="take loopdbg's side from a trace (`loopdbg run --trace`): its outputs "
                        "and each iteration's body inputs; INPUTS default to the trace's")
    common.add_limit_args(p)
    p.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                   help="give up on a runtime's compile or run after this long (default 600)")
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
    from loopdbg.check.oracle import CheckUnavailable, default_runtime, require_runtime

    say = common.err
    if args.against:
        return _against(args, say)
    if args.runtimes:
        raise CheckUnavailable("--runtimes compares two models: give the other one with "
                               "--against.")
    fmt = "onnx" if str(args.model).lower().endswith(".onnx") else "ir"
    runtime = args.runtime or default_runtime(fmt)
    require_runtime(runtime, fmt)       # before anything slow: say how to install it
    from loopdbg.check import check

    if args.all_nodes and not args.per_iteration:
        say("--all-nodes has no effect without --per-iteration")
    if args.trace and not args.inputs:
        import numpy as np

        from loopdbg.ir.load import read_model

        np.seterr(all="ignore")
        model, inputs, source = read_model(args.model, args.max_memory), None, "the trace's inputs"
    else:
        model, inputs, source = common.load_model_and_inputs(args, say=say)
    report = check(model, inputs, device=args.device, rtol=args.rtol, atol=args.atol,
                   per_iteration=args.per_iteration, all_nodes=args.all_nodes,
                   trace=args.trace, source=source,
                   max_memory=args.max_memory or common.default_memory_budget(),
                   max_iterations=args.max_iterations, timeout=args.timeout, runtime=runtime)
    _print(args, report)
    return report.exit_code


def _against(args, say) -> int:
    from loopdbg.check.oracle import CheckUnavailable, default_runtime, require_runtime

    for flag, given in (("--trace", args.trace), ("--runtime", args.runtime),
                        ("--per-iteration", args.per_iteration)):
        if given:
            raise CheckUnavailable(f"{flag} does not go with --against (which compares every "
                                   f"iteration of both models; --runtimes adds the runtimes).")
    from loopdbg.ir.load import read_model

    model, inputs, source = common.load_model_and_inputs(args, say=say)
    reference = read_model(args.against, args.max_memory)
    if args.runtimes:
        for m in (model, reference):
            require_runtime(default_runtime(m.format), m.format)
    from loopdbg.check.against import check_against

    budget = args.max_memory or common.default_memory_budget()
    report = check_against(model, reference, inputs, rtol=args.rtol, atol=args.atol,
                           source=source, max_memory=budget,
                           max_iterations=args.max_iterations)
    if args.runtimes:
        from loopdbg.check.verdicts import add_runtime_checks

        add_runtime_checks(report, model, reference, inputs, rtol=args.rtol, atol=args.atol,
                           device=args.device, timeout=args.timeout, max_memory=budget,
                           all_nodes=True)
    _print(args, report)
    return report.exit_code


def _print(args, report) -> None:
    if args.format == "json":
        from loopdbg.check.json_report import dumps
        print(dumps(report))
    elif hasattr(report, "reference"):
        from loopdbg.check.report_against import format_against
        common.out(format_against(report))
    else:
        from loopdbg.check import format_report
        common.out(format_report(report))
