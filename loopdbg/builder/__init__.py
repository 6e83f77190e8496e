"""Build models in Python: the test-case factory for loopdbg (and for anyone writing a small IR).

    b = GraphBuilder("net")
    seq = b.parameter("seq", "f32", [4, 2])
    acc0 = b.parameter("acc0", "f32", [1, 2])
    loop = b.loop("loop", trip=-1, cond=True)      # a LoopBuilder with its own body GraphBuilder
    x_t = loop.sliced_input(seq, "x_t", axis=0)
    acc = loop.merged_input(acc0, "acc")
    it = loop.current_iteration("iter")
    acc_new = loop.body.op("Add", [acc, x_t], name="acc_new")
    loop.back_edge(acc_new, acc)
    loop.condition(loop.body.op("Less", [it, np.array([2], np.int64)]))
    b.result(loop.output_last(acc_new, name="acc_final"))
    b.result(loop.output_concat(acc_new, axis=0, name="acc_seq"))
    model = b.build()              # a loopdbg.ir.model.Model, ready for write_ir(model, path)

Everything is recorded first and turned into a ``Model`` by ``build()``: only then are port types
and shapes inferred (by the op table's shape rules), because a body's shapes depend on how its
loop is fed and on its back edges, which are often declared after the body. Layer ids follow
creation order within each graph, so Parameter and Result order (the model's inputs and outputs) is
creation order too. The result is exactly what ``read_ir`` returns for the written file: canonical
types with the IR spelling in ``ir_type``, ``<data>`` as strings, Const values as they decode from
the ``.bin``.

Layers: the builder stands above ``ops`` (``ir`` → ``ops`` → ``builder``), because writing a layer
takes what the op table knows (default versions, output counts, shape rules; see
``loopdbg.ops.registry``). Modules, each importing only those listed before it: ``nodes`` (what
is recorded), ``control`` (Loop, TensorIterator and If builders), ``assemble`` (records to
``Model``) and ``graph`` (``GraphBuilder``).
"""

from loopdbg.builder.graph import GraphBuilder, format_attr
from loopdbg.builder.nodes import ResultRef, Tensor

__all__ = ["GraphBuilder", "ResultRef", "Tensor", "format_attr"]
