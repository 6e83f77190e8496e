"""``loopdbg inputs``: write a template .npz with one array per model input."""

from __future__ import annotations

from loopdbg.cli import common


def add_parser(sub) -> None:
    p = sub.add_parser("inputs", help="write a template inputs.npz (seeded random data)",
                       description="Write an .npz with one array per model input, filled with "
                                   "seeded random data, to edit or to run with.")
    common.add_model_args(p, inputs=False)
    p.add_argument("-o", "--output", required=True, metavar="INPUTS.npz")
    p.add_argument("--seed", type=common.seed, default=0, help="random seed (default 0)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="the shape of an input with dynamic dimensions (repeatable)")
    p.set_defaults(handler=run)


def parse_shapes(items) -> dict:
    from loopdbg.errors import InputError
    shapes = {}
    for item in items:
        name, _, dims = item.partition("=")
        try:
            shapes[name] = tuple(int(d) for d in dims.split(",") if d.strip()) if dims else ()
        except ValueError:
            raise InputError(f"--shape {item!r} is not NAME=D1,D2,... with whole numbers.") from None
        if not name or any(d < 0 for d in shapes[name]):
            raise InputError(f"--shape {item!r} is not NAME=D1,D2,... with sizes >= 0.")
    return shapes


def run(args) -> int:
    from loopdbg.engine.inputs import input_specs, random_inputs
    from loopdbg.files import Output
    from loopdbg.ir.load import read_model

    model = read_model(args.model)
    output = Output(args.output, common.model_reads(model), npz=True, what="the inputs template")
    arrays = random_inputs(model, seed=args.seed, shapes=parse_shapes(args.shape))
    output.write_npz(arrays)
    for spec in input_specs(model):
        a = arrays[spec.name]
        common.out(f"  {common.safe(spec.name)}: {a.dtype} {tuple(a.shape)}")
    common.err(f"wrote {common.safe(output.path)}{common.safe(output.note)}")
    return 0
