"""ONNX reader fuzzer: mutate the ONNX models of the tests, and require a run or one clear error.

Each case takes an ONNX model of tests/ and applies seeded mutations at the protobuf level — a
node's input or output dropped, added or renamed, an op type swapped, an integer or float
attribute (num_scan_inputs, axis, ...) rewritten, a tensor's dims, data type or raw data changed
(short, long, empty), an initializer dropped, a graph input's shape rewritten — or flips and cuts
bytes of the serialized file, then runs ``loopdbg run`` (in-process ``loopdbg.cli.main``,
sometimes ``explain``) on it. The outcome must be exit 0, or exit 2 with exactly one stderr line
``loopdbg: ...``; a traceback or a hang fails the test with the case's mutation.

Cases run in worker processes with an address-space limit and an alarm per case, like the IR
fuzzer (test_fuzz_parser.py). CI runs LOOPDBG_ONNX_FUZZ_CASES cases (default 160) from seed
LOOPDBG_ONNX_FUZZ_SEED (default 0).
"""

from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path

import pytest

from relhelpers import ROOT, assert_fuzz_results, run_fuzz_worker

onnx = pytest.importorskip("onnx")

CASES = int(os.environ.get("LOOPDBG_ONNX_FUZZ_CASES", "160"))
SEED = int(os.environ.get("LOOPDBG_ONNX_FUZZ_SEED", "0"))
SHARDS = 2
CASE_SECONDS = 20
MEMORY_LIMIT = 3 << 30

CORPUS = sorted(p for p in (ROOT / "tests").rglob("*.onnx") if p.stat().st_size < 20_000)
INTS = [-(2**63), -(2**31), -7, -2, -1, 0, 1, 2, 3, 5, 64, 2**31 - 1, 2**40]
OPS = ["Add", "Identity", "Loop", "Scan", "If", "Constant", "Concat", "Gather", "Reshape",
       "Unsqueeze", "Squeeze", "MatMul", "Shape", "Slice", "NoSuchOp", "SequenceInsert", "Cast"]


def _graphs(g):
    yield g
    for node in g.node:
        for a in node.attribute:
            if a.type == a.GRAPH:
                yield from _graphs(a.g)
            elif a.type == a.GRAPHS:
                for sub in a.graphs:
                    yield from _graphs(sub)


def _tensors(g):
    for t in g.initializer:
        yield t
    for node in g.node:
        for a in node.attribute:
            if a.type == a.TENSOR:
                yield a.t
            elif a.type == a.TENSORS:
                yield from a.tensors


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One to three seeded mutations of a serialized ModelProto; returns the bytes and what."""
    if rng.random() < 0.15:                      # bytes: flips and cuts
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(b))
            b[k] = rng.randrange(256)
        if rng.random() < 0.4:
            b = b[:rng.randrange(1, len(b))]
        return bytes(b), "bytes flipped/cut"
    m = onnx.ModelProto()
    m.ParseFromString(data)
    graphs = list(_graphs(m.graph))
    done = []
    for _ in range(rng.randint(1, 3)):
        g = rng.choice(graphs)
        kind = rng.choice(["input", "output", "op", "int", "float", "tensor", "init", "vi"])
        nodes = list(g.node)
        if kind in ("input", "output", "op", "int", "float") and not nodes:
            continue
        node = rng.choice(nodes) if nodes else None
        if kind in ("input", "output"):
            field = node.input if kind == "input" else node.output
            act = rng.choice(["drop", "add", "rename", "blank"])
            if act == "drop" and len(field):
                del field[rng.randrange(len(field))]
            elif act == "add":
                field.append(rng.choice(["", "x", "nowhere", *list(node.input), *list(node.output)]))
            elif act in ("rename", "blank") and len(field):
                field[rng.randrange(len(field))] = "" if act == "blank" else "renamed"
            done.append(f"{node.op_type} {kind} {act}")
        elif kind == "op":
            old, node.op_type = node.op_type, rng.choice(OPS)
            done.append(f"{old} -> {node.op_type}")
        elif kind in ("int", "float"):
            attrs = [a for a in node.attribute
                     if (a.type == a.INT if kind == "int" else a.type == a.FLOAT)]
            ints = [a for a in node.attribute if a.type == a.INTS]
            if attrs:
                a = rng.choice(attrs)
                if kind == "int":
                    a.i = rng.choice(INTS)
                else:
                    a.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
                done.append(f"{node.op_type}.{a.name} = {a.i if kind == 'int' else a.f}")
            elif ints:
                a = rng.choice(ints)
                a.ints[:] = [rng.choice(INTS) for _ in range(rng.randint(0, 3))]
                done.append(f"{node.op_type}.{a.name} = {list(a.ints)}")
        elif kind == "tensor":
            ts = list(_tensors(g))
            if ts:
                t = rng.choice(ts)
                act = rng.choice(["dims", "type", "short", "long", "empty"])
                if act == "dims":
                    t.dims[:] = [rng.choice(INTS[3:]) for _ in range(rng.randint(0, 4))]
                elif act == "type":
                    t.data_type = rng.choice([0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 16, 17, 21, 99])
                elif act == "short":
                    t.raw_data = t.raw_data[:len(t.raw_data) // 2]
                elif act == "long":
                    t.raw_data = t.raw_data + b"\x01" * rng.randint(1, 9)
                else:
                    t.ClearField("raw_data")
                done.append(f"tensor '{t.name}' {act}")
        elif kind == "init" and len(g.initializer):
            k = rng.randrange(len(g.initializer))
            done.append(f"initializer '{g.initializer[k].name}' dropped")
            del g.initializer[k]
        elif kind == "vi" and len(g.input):
            vi = rng.choice(list(g.input))
            shape = vi.type.tensor_type.shape
            if len(shape.dim):
                d = rng.choice(list(shape.dim))
                d.dim_value = rng.choice(INTS[5:])
                done.append(f"input '{vi.name}' dim = {d.dim_value}")
    return m.SerializeToString(), "; ".join(done) or "unchanged"


WORKER = textwrap.dedent("""
    import contextlib, io, json, random, resource, signal, sys, time, traceback
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from test_fuzz_onnx import mutate
    from loopdbg.cli import main

    cfg = json.loads(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory"], cfg["memory"]))

    class Hang(BaseException):
        pass

    def alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    out_dir = Path(cfg["out"])
    for i in cfg["cases"]:
        rng = random.Random(f"{cfg['seed']}:{i}")
        src = Path(rng.choice(cfg["corpus"]))
        data, what = mutate(rng, src.read_bytes())
        path = out_dir / f"case{i}.onnx"
        path.write_bytes(data)
        argv = ["run", str(path), "-q", "--max-iterations", "500", "--max-memory", "256M"]
        if rng.random() < 0.15:
            argv = ["explain", str(path)]
        print(json.dumps({"start": i}), flush=True)
        out, err = io.StringIO(), io.StringIO()
        exc = None
        signal.alarm(cfg["seconds"])
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        except Hang:
            code, exc = None, "hang: no result in %d s" % cfg["seconds"]
        except SystemExit as e:
            code = e.code
        except BaseException:
            code, exc = None, traceback.format_exc()
        finally:
            signal.alarm(0)
        print(json.dumps({"case": i, "source": src.name, "mutation": what, "argv": argv,
                          "code": code, "err": err.getvalue(), "exc": exc,
                          "out_has_traceback": "Traceback" in out.getvalue()}), flush=True)
""")


def run_shard(shard: int, out_dir: Path) -> list[dict]:
    cases = [i for i in range(CASES) if i % SHARDS == shard]
    cfg = {"cases": cases, "seed": SEED, "corpus": [str(p) for p in CORPUS], "out": str(out_dir),
           "seconds": CASE_SECONDS, "memory": MEMORY_LIMIT}
    return run_fuzz_worker(WORKER, cfg, CASE_SECONDS * len(cases) + 120)


def test_the_corpus_has_onnx_models():
    assert len(CORPUS) >= 5, CORPUS


@pytest.mark.no_alarm             # each case has its alarm, each worker a time limit
@pytest.mark.parametrize("shard", range(SHARDS))
def test_mutated_onnx_models_run_or_fail_clearly(shard, tmp_path):
    assert_fuzz_results(run_shard(shard, tmp_path))


def test_mutate_is_deterministic():
    data = CORPUS[0].read_bytes()
    assert mutate(random.Random("s:1"), data) == mutate(random.Random("s:1"), data)
