"""Build the converter-made test models of tests/converted/ (issue 16, item 5).

Run from the repository root with the generator venv (TensorFlow/Keras, PyTorch, OpenVINO, onnx;
none of them is a dependency of loopdbg):

    /work/genvenv/bin/python tests/converted/make_models.py [NAME ...]

For each model (all, or the NAMEs given) this writes tests/converted/<name>/:
  model.xml, model.bin   what ``openvino.convert_model`` made of the Keras / TensorFlow / PyTorch /
                         ONNX model, saved by ``ov.save_model(..., compress_to_fp16=False)``; the
                         only edit is naming the inputs and outputs (one tensor name each)
  inputs.npz             small seeded inputs, by input name
  expected.npz           OpenVINO's outputs, by output name: its CPU plugin with the f32 precision
                         hint, run in a child process (the plugin dies with SIGFPE on some models on
                         some CPUs); if that child dies, ``ov.Model.evaluate`` (the reference
                         implementations) in another child, and manifest.json says so
  manifest.json          what the model is, what the converter produced (each Loop /
                         TensorIterator with its body's operation counts), versions, sizes

The architectures are in build_keras.py (Keras, TensorFlow) and build_torch.py (TorchScript, ONNX).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
CHILD_TIMEOUT = 600


# ----------------------------------------------------------------------------------------------
# Child processes: OpenVINO runs the model here, never in the process that built it.

def _feed(ports, inputs: dict) -> dict:
    feed = {}
    for port in ports:
        key = next((n for n in port.get_names() if n in inputs), None)
        if key is None:
            raise SystemExit(f"inputs.npz has no input for {port.get_names()}")
        feed[port] = inputs[key]
    return feed


def _only_name(port) -> str:
    names = port.get_names()
    if len(names) != 1:
        raise SystemExit(f"output {names} should have exactly one name")
    return next(iter(names))


def child_expected(folder: Path) -> None:
    """Run model.xml on inputs.npz with the CPU plugin; write expected.npz."""
    import openvino as ov

    inputs = dict(np.load(folder / "inputs.npz"))
    compiled = ov.Core().compile_model(str(folder / "model.xml"), "CPU", CPU_CONFIG)
    request = compiled.create_infer_request()
    request.infer(_feed(compiled.inputs, inputs))
    out = {_only_name(port): np.array(request.get_tensor(port).data) for port in compiled.outputs}
    np.savez(folder / "expected.npz", **out)


def child_evaluate(folder: Path) -> None:
    """Evaluate model.xml on inputs.npz with OpenVINO's reference implementations."""
    import openvino as ov

    inputs = dict(np.load(folder / "inputs.npz"))
    model = ov.Core().read_model(str(folder / "model.xml"))
    feed = _feed([p.output(0) for p in model.get_parameters()], inputs)
    ins = [ov.Tensor(np.ascontiguousarray(v)) for v in feed.values()]
    outs = [ov.Tensor(r.get_element_type(), ov.Shape([0] * len(r.get_output_partial_shape(0))))
            for r in model.get_results()]
    if not model.evaluate(outs, ins):
        raise SystemExit("Model.evaluate returned false")
    out = {_only_name(r.input_value(0)): np.array(t.data)
           for r, t in zip(model.get_results(), outs)}
    np.savez(folder / "expected.npz", **out)


def expected(folder: Path) -> str:
    """expected.npz for ``folder`` from a child process; says where the values came from."""
    for mode, source in (("--expected", "OpenVINO CPU plugin, INFERENCE_PRECISION_HINT=f32"),
                         ("--evaluate", "OpenVINO ov.Model.evaluate (reference implementations)")):
        proc = subprocess.run([sys.executable, __file__, mode, str(folder)], capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT, check=False)
        if proc.returncode == 0:
            return source
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        print(f"  {mode[2:]} failed (exit {proc.returncode}): {tail}", file=sys.stderr)
    raise SystemExit(f"{folder.name}: OpenVINO could not compute the expected outputs")


# ----------------------------------------------------------------------------------------------
# Building

def structure(model) -> dict:
    """Operation counts of the top graph and of every loop body (and If branch), nested too."""
    def walk(graph, path: str, loops: list) -> dict:
        ops = graph.get_ordered_ops()
        for op in ops:
            kind = op.get_type_name()
            if kind in ("Loop", "TensorIterator"):
                bodies = [(f"{path}/{op.get_friendly_name()}".lstrip("/"), op.get_function())]
            elif kind == "If":
                bodies = [(f"{path}/{op.get_friendly_name()}:{b}".lstrip("/"), op.get_function(k))
                          for k, b in enumerate(("then", "else"))]
            else:
                continue
            for where, body in bodies:
                entry = {"path": where, "type": kind, "opset": op.get_type_info().version_id}
                loops.append(entry)
                body_ops = body.get_ordered_ops()
                entry["body_layers"] = len(body_ops)
                entry["body_ops"] = walk(body, where, loops)
        return {f"{t}-{v}": n for (t, v), n in sorted(Counter(
            (o.get_type_name(), o.get_type_info().version_id) for o in ops).items())}

    loops: list = []
    top = walk(model, "", loops)
    return {"top_ops": top, "subgraphs": loops}


def compare(want, reference: dict) -> dict:
    """How far OpenVINO's outputs are from the framework's own (largest absolute difference;
    a shape or dtype kind that differs is said in words)."""
    out = {}
    for k in want.files:
        a, b = want[k], np.asarray(reference[k])
        if a.shape != b.shape:
            out[k] = f"shape {list(a.shape)} vs framework {list(b.shape)}"
        elif a.dtype.kind == "f" or b.dtype.kind == "f":
            out[k] = float(np.max(np.abs(a.astype(np.float64) - b), initial=0.0))
        else:
            out[k] = "equal" if np.array_equal(a, b) else "DIFFERENT"
    return out


def name_outputs(model, names) -> None:
    if names is None:
        return
    if len(names) != len(model.outputs):
        raise SystemExit(f"{len(model.outputs)} outputs, {len(names)} names")
    for port, name in zip(model.outputs, names):
        port.get_tensor().set_names({name})


def build(name: str, builder) -> dict:
    import openvino as ov

    rng = np.random.default_rng(zlib.crc32(name.encode()))
    print(f"{name}: building", file=sys.stderr)
    model, inputs, out_names, about, reference = builder(rng)
    name_outputs(model, out_names)
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    ov.save_model(model, str(folder / "model.xml"), compress_to_fp16=False)
    np.savez(folder / "inputs.npz", **inputs)
    source = expected(folder)
    saved = ov.Core().read_model(str(folder / "model.xml"))
    want = np.load(folder / "expected.npz")
    manifest = {
        "name": name, "about": about, "expected_from": source,
        "openvino": ov.__version__, "converted_by": "openvino.convert_model",
        "inputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in inputs.items()},
        "outputs": {k: {"shape": list(want[k].shape), "dtype": str(want[k].dtype)}
                    for k in want.files},
        "openvino_vs_framework": compare(want, reference),
        "bytes": {f: (folder / f).stat().st_size
                  for f in ("model.xml", "model.bin", "inputs.npz", "expected.npz")},
        **structure(saved),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def builders() -> dict:
    sys.path.insert(0, str(HERE))
    import build_keras
    import build_torch
    return {**build_keras.BUILDERS, **build_torch.BUILDERS}


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] in ("--expected", "--evaluate"):
        (child_expected if argv[0] == "--expected" else child_evaluate)(Path(argv[1]))
        return 0

    known = builders()
    chosen = argv or list(known)
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {', '.join(known)}")
    for name in chosen:
        m = build(name, known[name])
        loops = ", ".join(f"{s['type']} ({s['body_layers']} layers)" for s in m["subgraphs"])
        size = sum(m["bytes"].values())
        print(f"{name}: {size} bytes; {loops}; expected from {m['expected_from']}; "
              f"OpenVINO vs framework: {m['openvino_vs_framework']}")
    total = sum(f.stat().st_size for f in HERE.glob("*/*") if f.is_file())
    print(f"total {total} bytes in {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
