"""``loopdbg demo [NAME]``: the demos that ship inside the package.

``loopdbg demo`` lists them, one line each, in the order the lessons are meant to be read;
``loopdbg demo NAME`` opens the debugger on one (with the options of ``loopdbg open``);
``loopdbg demo NAME --copy DIR`` writes its files (model, inputs, lesson) into DIR to play with.
The demos live in ``loopdbg/demos/<name>/`` (``tools/build_demos.py`` builds them), so a wheel
carries them as much as a clone does.
"""

from __future__ import annotations

import re

from loopdbg.cli import common

MODEL_FILES = ("model.xml", "model.onnx")


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="list the bundled demos, open one, or copy one out",
                       description="The demos that come with loopdbg: small models teaching one "
                                   "idea each about Loop and TensorIterator, each with a lesson. "
                                   "Without NAME, list them; with NAME, open the debugger on it.")
    p.add_argument("name", nargs="?", metavar="NAME", help="the demo to open (see the list)")
    p.add_argument("inputs", nargs="?", metavar="INPUTS",
                   help="inputs.npz to run it on instead of the demo's own")
    p.add_argument("--copy", metavar="DIR",
                   help="write the demo's files (model, inputs.npz, README.md) into DIR instead "
                        "of opening it (DIR is made if missing; existing files are left alone)")
    p.add_argument("--path", action="store_true",
                   help="print where the demo's model is (to give it to other commands)")
    from loopdbg.cli import cmd_open
    cmd_open.add_session_args(p)
    p.set_defaults(handler=run)


def demos_root():
    """The folder of the demos inside the installed package (a Traversable)."""
    from importlib import resources      # (~30 ms: only when a demo is asked for)

    return resources.files("loopdbg") / "demos"


def catalogue() -> list[tuple[str, str]]:
    """(name, one line) of every demo, in the order of the demos' README (then any others)."""
    root = demos_root()
    found = {}
    for entry in root.iterdir():
        if entry.is_dir() and any((entry / f).is_file() for f in MODEL_FILES):
            found[entry.name] = _summary(entry)
    index = root / "README.md"
    order = re.findall(r"\[([A-Za-z0-9_]+)/\]\(", index.read_text("utf-8")) if index.is_file() else []
    names = [n for n in dict.fromkeys(order) if n in found]
    names += sorted(set(found) - set(names))
    return [(n, found[n]) for n in names]


def _summary(entry) -> str:
    """The lesson's title after its dash: ``# for_loop — a counted loop`` -> ``a counted loop``."""
    lesson = entry / "README.md"
    if not lesson.is_file():
        return ""
    first = lesson.read_text("utf-8").splitlines()[0] if lesson.read_text("utf-8") else ""
    return first.lstrip("# ").partition(" — ")[2].strip()


def model_file(name: str):
    from loopdbg.errors import LoopdbgError

    known = dict(catalogue())
    if name not in known:
        raise LoopdbgError(f"there is no demo {name!r}; the demos are: {', '.join(known)} "
                           f"(`loopdbg demo` lists them with what each teaches).")
    folder = demos_root() / name
    return next(folder / f for f in MODEL_FILES if (folder / f).is_file())


def run(args) -> int:
    if not args.name:
        if args.copy or args.path:
            common.err("loopdbg: demo: name the demo to copy (`loopdbg demo NAME --copy DIR`).")
            return 2
        rows = catalogue()
        width = max(len(n) for n, _ in rows)
        common.out("The demos (open one with `loopdbg demo NAME`; its lesson: "
                   "`loopdbg demo NAME --copy DIR`, then read DIR/README.md):")
        for name, line in rows:
            common.out(f"  {name:<{width}}  {line}")
        return 0
    model = model_file(args.name)
    if args.copy:
        return _copy(args.name, model.parent, args.copy)
    if args.path:
        common.out(str(model))
        return 0
    from loopdbg.cli import cmd_open
    from importlib import resources

    with resources.as_file(model.parent) as folder:
        args.model = str(folder / model.name)
        if not args.inputs and (folder / "inputs.npz").is_file():
            args.inputs = str(folder / "inputs.npz")
        args.title = f"demo {args.name}"
        return cmd_open.run(args)


def _copy(name: str, source, target: str) -> int:
    import os

    from loopdbg.files.write import Output, OutputError

    files = sorted(e for e in source.iterdir() if e.is_file())
    try:
        os.makedirs(target, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot make the folder {target}: {exc.strerror or exc}.") from None
    there = [e.name for e in files if os.path.lexists(os.path.join(target, e.name))]
    if there:
        raise OutputError(f"{target} already holds {', '.join(there)}; loopdbg demo --copy "
                          f"never overwrites a file: choose an empty folder.")
    for entry in files:
        Output(os.path.join(target, entry.name), what=f"the demo's {entry.name}") \
            .write_bytes(entry.read_bytes())
    model = next(f for f in MODEL_FILES if (source / f).is_file())
    common.out(f"copied the demo {name} to {common.safe(target)}: "
               f"{', '.join(e.name for e in files)}")
    common.out(f"open it with: loopdbg {common.safe(os.path.join(target, model))}")
    return 0
