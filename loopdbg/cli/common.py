"""Pieces shared by the sub-commands: opening a model with its inputs, the files a command reads
(which its outputs must not overwrite), and printing.

Everything a command prints goes through ``out`` / ``err``: control characters that came from a
file (a name, a path, a trace header) are shown escaped, never sent to the terminal (see
``loopdbg.text``). Reports put a file's names in with ``safe(name)``, so that a newline in a name
cannot forge a line of the report either.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from loopdbg.text import safe, safe_lines

@contextlib.contextmanager
def kept():
    """Reading and planning a model to run it: in the loopdbg program, without the cyclic
    collector (main() starts it paused: the modules a command imports live as long as the
    process too), and what they made is then left out of its passes for good (``gc.freeze``):
    some 100,000 objects that live until the process ends, one pass over which costs ~20 ms on
    a real model; the collector runs again after. Called in another process
    (``loopdbg.cli.PROGRAM`` False), nothing."""
    from loopdbg import cli

    if not cli.PROGRAM:
        yield
        return
    import gc

    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        gc.enable()


def collecting() -> None:
    """The cyclic collector runs again (in the loopdbg program, main() starts it paused)."""
    from loopdbg import cli

    if cli.PROGRAM:
        import gc

        gc.enable()


def out(text: str = "") -> None:
    """Print to stdout, every control character from a file escaped (newlines kept)."""
    print(safe_lines(text))


def err(text: str) -> None:
    """Print to stderr, every control character from a file escaped (newlines kept)."""
    print(safe_lines(text), file=sys.stderr)


def model_reads(model, inputs_file=None) -> list[tuple[str, str | None]]:
    """The files a command on ``model`` reads, as ``loopdbg.files`` wants them: its outputs must
    never be one of these."""
    path = getattr(model, "path", None) if not isinstance(model, (str, Path)) else str(model)
    reads = [("the model", path),
             ("the model's weights (.bin)", getattr(model, "weights_path", None))]
    if path and str(path).lower().endswith(".xml"):
        reads.append(("the model's weights (.bin)", str(Path(path).with_suffix(".bin"))))
    reads += [("the model's external data", f) for f in getattr(model, "data_files", ())]
    if inputs_file:
        reads.append(("the inputs file", str(inputs_file)))
    return reads


def add_model_args(p, inputs: bool = True) -> None:
    p.add_argument("model", help="model.xml (OpenVINO IR, with its .bin beside it) or model.onnx")
    if inputs:
        p.add_argument("inputs", nargs="?", help="inputs.npz, arrays named as the model's inputs "
                                                 "or by position (0, 1, ... or numpy.savez's "
                                                 "arr_0, arr_1, ...); default: inputs.npz beside "
                                                 "the model, else seeded random data")
        p.add_argument("--seed", type=seed, default=0, help="seed for random inputs (default 0)")


def add_limit_args(p) -> None:
    p.add_argument("--max-iterations", type=positive_int, metavar="N",
                   help="stop every loop after N iterations (runaway loops)")
    p.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                   help="what a run may add to loopdbg's memory, e.g. 512M or 4G: concatenated "
                        "outputs, kernel outputs sized by input values, and the process's growth "
                        "between iterations (default: a quarter of the machine's memory)")


def seed(text: str) -> int:
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**128:
        raise argparse.ArgumentTypeError("must be a whole number from 0 to 2**128 - 1")
    return value


def positive_int(text: str) -> int:
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def memory_size(text: str) -> int:
    import argparse
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().rstrip("B")
    try:
        size = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 512M or 4G") from None
    if size < 1:        # 0 would silently fall back to the default budget
        raise argparse.ArgumentTypeError(f"{text!r}: the budget must be at least 1 byte")
    return size


def add_trace_size_arg(p) -> None:
    p.add_argument("--max-trace-size", type=memory_size, metavar="SIZE",
                   help="with --trace: stop the run when the trace reaches SIZE, e.g. 2G, and "
                        "close it readable (default: half the free space where it is written)")


def trace_size_cap(args) -> int:
    """--max-trace-size, or half the free space of the trace's folder (1 GiB if unknown)."""
    if args.max_trace_size:
        return args.max_trace_size
    import os
    import shutil
    try:
        folder = os.path.dirname(os.path.abspath(args.trace)) or "."
        return max(shutil.disk_usage(folder).free // 2, 1 << 20)
    except OSError:
        return 1 << 30


def default_memory_budget() -> int:
    """A quarter of physical memory (or 4 GiB when that cannot be read)."""
    try:
        import os
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def replay_budget(limit: int) -> None:
    """A trace's replay recomputes each iteration's body from its recorded inputs: it starts
    as a run does, under ``limit`` (and under the backstop's cap, where one is held)."""
    from loopdbg.ops import budget

    budget.start(limit)


def load_model_and_inputs(args, *, say=None):
    """Read the model and its inputs as the CLI promises: INPUTS, else inputs.npz beside, else random."""
    import numpy as np

    from loopdbg.engine.inputs import load_npz, random_inputs
    from loopdbg.ir.load import read_model

    np.seterr(all="ignore")      # overflow and log(0) are values to look at, not warnings to print
    model = read_model(args.model, getattr(args, "max_memory", None))
    say = say or err
    source = getattr(args, "inputs", None)
    limit = getattr(args, "max_memory", None)          # inputs count against the budget too
    if source:
        args.inputs_file = source
        return model, load_npz(source, limit, model), source
    beside = Path(model.path or args.model).with_name("inputs.npz")
    if beside.exists():
        say(f"inputs: {safe(beside)}")
        args.inputs_file = str(beside)
        return model, load_npz(beside, limit, model), str(beside)
    say(f"inputs: none given and no inputs.npz beside the model; using random data "
        f"(seed {getattr(args, 'seed', 0)})")
    inputs = random_inputs(model, seed=getattr(args, "seed", 0), limit=limit)
    args.random_inputs = inputs           # a failure then suggests `loopdbg inputs --shape`
    return model, inputs, "random inputs"
