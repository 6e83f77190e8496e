"""OpenVINO in the child process (``python -m loopdbg.oracle.child openvino ...``).

Besides the requests of every runtime (``backend``), OpenVINO answers three of its own:

    evaluate  path + arrays  -> the outputs computed node by node by OpenVINO's reference
                                implementations (``Node.evaluate``), no plugin involved
    describe  path           -> every node's output element types and shapes, by name, nested
                                bodies too (what OpenVINO's reader inferred)
    batch     cases + arrays -> many small models answered in one request (for test suites):
                                each case ``{"kind": "run"|"evaluate", "path", "inputs": n}``
                                takes the next n arrays; the ``run`` cases are compiled together
                                as one model (one compile instead of one each: a compile costs
                                ~30 ms however small the model), each alone when that fails.
                                The reply's ``results`` say per case ``{"ok", "outputs": m}`` or
                                ``{"ok": false, "error"}``; the outputs follow in case order.

``compile`` reads a model file (.xml with its .bin, or .onnx through OpenVINO's ONNX frontend)
and compiles it with the precision hint asked for (f32), falling back to the device's default
when the device refuses the hint.
"""

from __future__ import annotations

import sys

import numpy as np

from loopdbg.oracle.backend import Backend as _Backend
from loopdbg.oracle.backend import first_line


class Backend(_Backend):
    name = "OpenVINO"

    def __init__(self):
        super().__init__()
        self.ov = _import_openvino()
        self._core = None

    @property
    def core(self):
        if self._core is None:
            self._core = self.ov.Core()
        return self._core

    def hello(self) -> dict:
        ov = self.ov
        version = ov.get_version() if hasattr(ov, "get_version") else "?"
        try:
            devices = list(self.core.available_devices)
        except Exception:                # noqa: BLE001 - a plugin failing to load is not fatal
            devices = []
        return {"version": str(version), "devices": devices}

    def compile(self, header: dict):
        model = self.core.read_model(header["path"])
        compiled, precision = self._compile_model(model, header.get("device", "CPU"),
                                                  header.get("precision", "f32"))
        reply = {"precision": precision,
                 "outputs": [sorted(_names(p)) for p in compiled.outputs],
                 "inputs": [sorted(_names(p)) for p in compiled.inputs]}
        return (compiled, compiled.create_infer_request()), reply

    def _compile_model(self, model, device: str, precision: str):
        """(the compiled model, the precision used): the hint asked for, or the device's default
        when the device refuses the hint."""
        config = {"INFERENCE_PRECISION_HINT": precision} if precision else {}
        try:
            return self.core.compile_model(model, device, config), precision
        except Exception as exc:         # noqa: BLE001
            if not config or "precision" not in str(exc).lower():
                raise
            return self.core.compile_model(model, device), "device default"

    def infer(self, compiled, arrays: list, names: list | None) -> list:
        model, request = compiled
        request.infer({(names[k] if names else k): np.array(v) for k, v in enumerate(arrays)})
        return [np.array(request.get_output_tensor(k).data, copy=True)
                for k in range(len(model.outputs))]

    def op_batch(self, header: dict, arrays: list):
        cases, feeds, k = header["cases"], [], 0
        for case in cases:
            feeds.append(list(arrays[k:k + case["inputs"]]))
            k += case["inputs"]
        runs = [i for i, case in enumerate(cases) if case["kind"] == "run"]
        answers: dict = {}
        try:
            together = self._run_together([cases[i]["path"] for i in runs], [feeds[i] for i in runs],
                                          header)
            answers.update(zip(runs, together))
        except Exception:                # noqa: BLE001 - a case the plugin refuses: each alone
            answers.update((i, self._answer(self._run_alone, cases[i]["path"], feeds[i], header))
                           for i in runs)
        answers.update((i, self._answer(self._evaluate_alone, case["path"], feeds[i], header))
                       for i, case in enumerate(cases) if case["kind"] == "evaluate")
        results, out = [], []
        for i in range(len(cases)):
            if isinstance(answers[i], str):
                results.append({"ok": False, "error": answers[i]})
            else:
                results.append({"ok": True, "outputs": len(answers[i])})
                out += answers[i]
        return {"results": results}, out

    @staticmethod
    def _answer(how, path, values, header):
        try:
            return how(path, values, header)
        except Exception as exc:         # noqa: BLE001 - that case's error; the others go on
            return first_line(exc)

    def _run_alone(self, path, values, header):
        compiled, _ = self.compile({**header, "path": path})
        return self.infer(compiled, values, None)

    def _evaluate_alone(self, path, values, header):
        return self.op_evaluate({"path": path}, values)[1]

    def _run_together(self, paths, feeds, header):
        """Every model's outputs, the models compiled as one (their Parameters and Results side
        by side, nothing shared), so one compile serves them all."""
        if not paths:
            return []
        models = [self.core.read_model(path) for path in paths]
        params = [p for m in models for p in m.get_parameters()]
        results = [r for m in models for r in m.get_results()]
        compiled = self._compile_model(self.ov.Model(results, params),
                                       header.get("device", "CPU"),
                                       header.get("precision", "f32"))[0]
        request = compiled.create_infer_request()
        flat = [np.array(v) for values in feeds for v in values]
        if len(flat) != len(params):
            raise ValueError(f"{len(flat)} inputs for {len(params)} Parameters")
        request.infer(dict(enumerate(flat)))
        outs, k = [], 0
        for m in models:
            n = len(m.outputs)
            outs.append([np.array(request.get_output_tensor(k + j).data, copy=True)
                         for j in range(n)])
            k += n
        return outs

    def op_evaluate(self, header: dict, arrays: list):
        ov = self.ov
        model = self.core.read_model(header["path"])
        values: dict = {}
        for k, p in enumerate(model.get_parameters()):
            values[(p.get_friendly_name(), 0)] = ov.Tensor(np.ascontiguousarray(arrays[k]))
        for node in model.get_ordered_ops():
            kind = node.get_type_name()
            if kind in ("Parameter", "Result"):
                continue
            ins = [values[(i.get_source_output().get_node().get_friendly_name(),
                           i.get_source_output().get_index())] for i in node.inputs()]
            outs = [ov.Tensor(node.get_output_element_type(k), _static(node, k))
                    for k in range(node.get_output_size())]
            if not node.evaluate(outs, ins):
                raise RuntimeError(f"OpenVINO's reference cannot evaluate {kind} "
                                   f"'{node.get_friendly_name()}'")
            for k, t in enumerate(outs):
                values[(node.get_friendly_name(), k)] = t
        result = []
        for r in model.get_results():
            src = r.input(0).get_source_output()
            result.append(np.array(values[(src.get_node().get_friendly_name(),
                                           src.get_index())].data, copy=True))
        return {}, result

    def op_describe(self, header: dict, arrays: list):
        return {"model": _describe(self.core.read_model(header["path"]))}, []


CONVERTER = "openvino.tools.ovc"


def _import_openvino():
    """``import openvino`` without its model converter: the package imports ``ovc`` when it is
    imported (``convert_model``, if it can), and ovc's import scans the metadata of every
    installed package and starts OpenVINO's telemetry: ~0.25 s of CPU, 40% of this child's
    start. The child never converts a model (ONNX files are read by OpenVINO's own frontend).
    An OpenVINO that cannot be imported without its converter is imported whole."""
    if CONVERTER in sys.modules:
        import openvino
        return openvino
    sys.modules[CONVERTER] = None             # `from openvino.tools.ovc import ...` fails
    try:
        import openvino
    except ImportError:
        for name in [n for n in sys.modules if n == "openvino" or n.startswith("openvino.")]:
            del sys.modules[name]
        import openvino
    finally:
        if sys.modules.get(CONVERTER, 0) is None:
            del sys.modules[CONVERTER]
    return openvino


def _static(node, k: int):
    shape = node.get_output_partial_shape(k)
    if shape.is_static:
        return shape.to_shape()
    return [0] * shape.rank.get_length() if shape.rank.is_static else []


def _names(port) -> set:
    try:
        return set(port.get_names())
    except Exception:                    # noqa: BLE001
        return set()


def _describe(model) -> dict:
    nodes = {}
    for node in model.get_ordered_ops():
        outs = []
        for k in range(node.get_output_size()):
            shape = node.get_output_partial_shape(k)
            dims = None if shape.rank.is_dynamic else \
                [d.get_length() if d.is_static else -1 for d in shape]
            outs.append([node.get_output_element_type(k).get_type_name(), dims])
        bodies = {}
        kind = node.get_type_name()
        if kind in ("Loop", "TensorIterator"):
            bodies["body"] = _describe(node.get_function())
        elif kind == "If":
            bodies["then_body"] = _describe(node.get_then_body())
            bodies["else_body"] = _describe(node.get_else_body())
        nodes[node.get_friendly_name()] = {"type": kind, "outputs": outs, "bodies": bodies}
    return {"nodes": nodes,
            "inputs": [{"names": sorted(_names(p)),
                        "rank_dynamic": p.get_partial_shape().rank.is_dynamic}
                       for p in model.inputs],
            "outputs": [{"names": sorted(_names(p))} for p in model.outputs]}
