"""Parser fuzzer: mutate the corpus models' XML and .bin, and require a run or one clear error.

Each case takes a corpus model (tests/corpus/*, tests/data/*), applies seeded mutations — an
attribute's value changed or removed, an element removed, duplicated, moved or renamed, a <dim>
rewritten, the XML truncated or a byte flipped, the .bin truncated, extended or flipped — and runs
``loopdbg run`` (in-process ``loopdbg.cli.main``, with random inputs or the model's own), or
sometimes ``loopdbg explain`` or ``loopdbg graph -o body.dot``, on the result. The outcome must
be exit 0, or a non-zero exit with exactly one stderr line ``loopdbg: ...``; an exception
escaping ``main`` (a traceback) or a case that runs past its time limit (a hang) fails the test
with the case's mutation and its files.

Cases run in worker processes (one per shard) with an address-space limit, so a mutated shape
that asks numpy for terabytes fails with MemoryError instead of swapping the machine; each case
also has its own alarm, and each worker a wall-clock limit. Runs are bounded with
--max-iterations and --max-memory, because a flipped trip count may legitimately mean "loop for
a very long time".

CI runs LOOPDBG_PARSER_FUZZ_CASES cases (default 240) from seed LOOPDBG_PARSER_FUZZ_SEED
(default 0); see README.md for a long run.
"""

from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path

import pytest

from relhelpers import ROOT, assert_fuzz_results, run_fuzz_worker

CASES = int(os.environ.get("LOOPDBG_PARSER_FUZZ_CASES", "240"))
SEED = int(os.environ.get("LOOPDBG_PARSER_FUZZ_SEED", "0"))
SHARDS = 4
CASE_SECONDS = 20
MEMORY_LIMIT = 3 << 30

CORPUS = sorted(p.parent for p in (ROOT / "tests" / "corpus").glob("*/model.xml")) + \
    sorted(p.parent for p in (ROOT / "tests" / "data").glob("*/model.xml"))

VALUES = ["", " ", "-1", "0", "1", "2", "3", "7", "-7", "65536", "2147483648", "-2147483649",
          "99999999999999999999999", "1.5", "-0.0", "nan", "inf", "abc", "?", "...", "1..3",
          "-1..2", "0,1", "1, 2, 3", ",", "2,,3", "true", "false", "f32", "f16", "i32", "i64",
          "u8", "u1", "i4", "boolean", "string", "dynamic", "bf16", "FP32", "I64", "BOOL",
          "numpy", "none", "pdpd", "opset1", "opset5", "opset99", "Parameter", "Result", "Const",
          "Loop", "TensorIterator", "current_iteration", "execution_condition", "\u00e9\u00df",
          "\\,", "x" * 300]
TAGS = ["layer", "layers", "edge", "edges", "port", "input", "output", "data", "dim", "body",
        "port_map", "back_edges", "net", "operation", "rt_info", "junk"]


# ---------------------------------------------------------------------------------------------
# Mutations (deterministic from the case's own Random)


def mutate(rng: random.Random, xml: bytes, weights: bytes) -> tuple[bytes, bytes, str]:
    """One to three mutations of the model; returns the new files and what was done."""
    from lxml import etree

    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["attr", "attr", "attr", "drop_attr", "drop", "dup", "move", "dim",
                           "tag", "add_attr", "cut_xml", "flip_xml", "cut_bin", "flip_bin",
                           "grow_bin"])
        if kind in ("cut_xml", "flip_xml"):
            if not xml:
                continue
            pos = rng.randrange(len(xml))
            if kind == "cut_xml":
                xml = xml[:pos]
            else:
                xml = xml[:pos] + bytes([xml[pos] ^ (1 << rng.randrange(8))]) + xml[pos + 1:]
            done.append(f"{kind}@{pos}")
            continue
        if kind in ("cut_bin", "flip_bin", "grow_bin"):
            if kind == "grow_bin":
                weights += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
                done.append("grow_bin")
            elif weights:
                pos = rng.randrange(len(weights))
                weights = weights[:pos] if kind == "cut_bin" else \
                    weights[:pos] + bytes([rng.randrange(256)]) + weights[pos + 1:]
                done.append(f"{kind}@{pos}")
            continue
        try:
            root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError:
            continue                      # already broken by a byte mutation: keep it as it is
        nodes = [el for el in root.iter() if isinstance(el.tag, str)]
        loopish = [el for el in nodes if el.getparent() is not None and
                   el.getparent().tag in ("port_map", "back_edges")]
        el = rng.choice(loopish if loopish and rng.random() < 0.4 else nodes)
        where = f"<{el.tag}> line {el.sourceline}"
        if kind in ("attr", "drop_attr") and el.attrib:
            key = rng.choice(sorted(el.attrib))
            if kind == "attr":
                value = rng.choice(VALUES + [el.attrib[key][:-1], el.attrib[key] * 2])
                el.set(key, value)
                done.append(f"{where} {key}={value!r}")
            else:
                del el.attrib[key]
                done.append(f"{where} drop {key}")
        elif kind == "add_attr":
            key = rng.choice(["axis", "start", "end", "stride", "part_size", "purpose", "id",
                              "element_type", "shape", "offset", "size", "version", "names",
                              "condition", "internal_layer_id", "external_port_id", "from-port"])
            value = rng.choice(VALUES)
            el.set(key, value)
            done.append(f"{where} add {key}={value!r}")
        elif kind == "drop" and el is not root:
            el.getparent().remove(el)
            done.append(f"{where} removed")
        elif kind == "dup" and el is not root:
            el.addnext(etree.fromstring(etree.tostring(el)))
            done.append(f"{where} duplicated")
        elif kind == "move" and el is not root:
            target = rng.choice(nodes)
            if target is not el and el not in target.iterancestors():
                el.getparent().remove(el)
                target.append(el)
                done.append(f"{where} moved into <{target.tag}> line {target.sourceline}")
        elif kind == "dim":
            dims = [d for d in nodes if d.tag == "dim"]
            if dims:
                d = rng.choice(dims)
                d.text = rng.choice(VALUES)
                done.append(f"<dim> line {d.sourceline} = {d.text!r}")
        elif kind == "tag" and el is not root:
            new = rng.choice(TAGS)
            done.append(f"{where} renamed <{new}>")
            el.tag = new
        xml = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    return xml, weights, "; ".join(done) or "unchanged"


# ---------------------------------------------------------------------------------------------
# The worker: runs a shard of cases in its own process and reports one JSON line per case

WORKER = textwrap.dedent("""
    import contextlib, io, json, random, resource, shutil, signal, sys, time, traceback
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from test_fuzz_parser import mutate
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
        xml, weights, what = mutate(rng, (src / "model.xml").read_bytes(),
                                    (src / "model.bin").read_bytes())
        case = out_dir / f"case{i}"
        case.mkdir()
        (case / "model.xml").write_bytes(xml)
        (case / "model.bin").write_bytes(weights)
        argv = ["run", str(case / "model.xml"), "-q", "--max-iterations", "2000",
                "--max-memory", "256M"]
        if rng.random() < 0.5:
            argv.insert(2, str(src / "inputs.npz"))
        face = rng.random()
        if face < 0.15:
            argv = ["explain", str(case / "model.xml")]
        elif face < 0.25:
            argv = ["graph", str(case / "model.xml"), "-o", str(case / "body.dot")]
        print(json.dumps({"start": i}), flush=True)
        out, err = io.StringIO(), io.StringIO()
        start = time.monotonic()
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
                          "out_has_traceback": "Traceback" in out.getvalue(),
                          "seconds": round(time.monotonic() - start, 3)}), flush=True)
        if code in (0, 2) and exc is None:
            shutil.rmtree(case)
""")


def run_shard(shard: int, out_dir: Path) -> list[dict]:
    cases = [i for i in range(CASES) if i % SHARDS == shard]
    cfg = {"cases": cases, "seed": SEED, "corpus": [str(p) for p in CORPUS], "out": str(out_dir),
           "seconds": CASE_SECONDS, "memory": MEMORY_LIMIT}
    return run_fuzz_worker(WORKER, cfg, CASE_SECONDS * len(cases) + 120)


@pytest.mark.no_alarm             # each case has its alarm, each worker a time limit
@pytest.mark.parametrize("shard", range(SHARDS))
def test_mutated_models_run_or_fail_clearly(shard, tmp_path):
    assert_fuzz_results(run_shard(shard, tmp_path))


def test_mutate_is_deterministic():
    src = CORPUS[0]
    a = mutate(random.Random("s:1"), (src / "model.xml").read_bytes(),
               (src / "model.bin").read_bytes())
    b = mutate(random.Random("s:1"), (src / "model.xml").read_bytes(),
               (src / "model.bin").read_bytes())
    assert a == b
