"""The runtime's own script, as a user writes it: read, compile and run a model (a child process
of tests/benchmark_runtimes.py; OpenVINO never runs in loopdbg's process).

    python benchmark_runtime_child.py openvino|onnxruntime MODEL INPUTS.npz [INFERS]

With INFERS (a number), the model is compiled once and inferred that many times, and the best
inference time in seconds is printed as the last line; without, it is inferred once (the whole
process is what is measured).
"""

import sys
import time

import numpy as np


def main(argv):
    runtime, model, inputs = argv[:3]
    infers = int(argv[3]) if len(argv) > 3 else 1
    feed = dict(np.load(inputs))
    if runtime == "openvino":
        import openvino as ov

        compiled = ov.Core().compile_model(model, "CPU")
        names = [p.get_any_name() for p in compiled.inputs]
        feed = {n: feed[n] for n in names if n in feed} if all(n in feed for n in names) else \
            list(feed.values())

        def infer():
            return compiled(feed)
    else:
        import onnxruntime as ort

        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])

        def infer():
            return session.run(None, feed)
    best = float("inf")
    for _ in range(infers):
        t0 = time.perf_counter()
        infer()
        best = min(best, time.perf_counter() - t0)
    if len(argv) > 3:
        print(best)


if __name__ == "__main__":
    main(sys.argv[1:])
