"""Body nodes grouped by the scope their names carry, or the scope inferred from their weights."""

from loopdbg.layout.groups import group_tree, name_scope, scopes_of, weight_scope


def test_scopes_written_in_operation_names():
    assert name_scope("/blocks.4/attn/MatMul") == ("blocks.4", "attn")
    assert name_scope("functional_1/lstm_1/while/MatMul") == ("functional_1", "lstm_1", "while")
    assert name_scope("__module.blocks.0.attn/aten::matmul/MatMul") == ("blocks.0", "attn")
    assert name_scope("/MatMul") == ()
    # OpenVINO's PyTorch frontend: the op, not a scope
    assert name_scope("aten::linear/MatMul_97") == ()
    assert name_scope("Add_12") == ()


def test_scopes_written_in_weight_names():
    assert weight_scope("self.blocks.0.qkv.weight") == ("blocks.0", "qkv")
    assert weight_scope("self.blocks.0.qkv.weight_compressed") == ("blocks.0", "qkv")
    assert weight_scope("blocks.11.fc2.bias") == ("blocks.11", "fc2")
    assert weight_scope("Constant_12928_compressed") == ()
    assert weight_scope("aten::embedding/Constant") == ()
    assert weight_scope("seq.13") == ()             # a tensor called seq, number 13


def _ov_frontend_block(k: int, x: int, start: int):
    """One transformer-ish block as OpenVINO's PyTorch frontend names it: only weights carry
    the module; returns (names, types, edges, output id)."""
    names, types, edges = {}, {}, []

    def node(i, name, typ, *inputs):
        names[i], types[i] = name, typ
        edges.extend((j, i) for j in inputs)
        return i

    i = start
    w1 = node(i, f"self.blocks.{k}.qkv.weight_compressed", "Const")
    c1 = node(i + 1, f"self.blocks.{k}.qkv.weight", "Convert", w1)
    mm = node(i + 2, "aten::linear/MatMul_1", "MatMul", x, c1)
    b1 = node(i + 3, "Constant_77", "Const")
    add = node(i + 4, "aten::linear/Add", "Add", mm, b1)
    shp = node(i + 5, "aten::size/ShapeOf", "ShapeOf", add)
    idx = node(i + 6, "Constant_5", "Const")
    g = node(i + 7, "aten::size/Gather", "Gather", shp, idx)
    rs = node(i + 8, "aten::view/Reshape", "Reshape", add, g)
    sm = node(i + 9, "aten::softmax/Softmax", "Softmax", rs)
    w2 = node(i + 10, f"self.blocks.{k}.proj.weight", "Const")
    mm2 = node(i + 11, "aten::linear/MatMul_2", "MatMul", sm, w2)
    res = node(i + 12, "aten::add/Add", "Add", x, mm2)     # the residual
    return names, types, edges, res


def test_scopes_inferred_from_weights_plumbing_joins_and_shape_pieces_fold():
    names, types, edges = {0: "x", 1: "out"}, {0: "Parameter", 1: "Result"}, []
    x, start = 0, 10
    for k in range(2):
        n, t, e, x = _ov_frontend_block(k, x, start)
        names |= n
        types |= t
        edges += e
        start += 20
    edges.append((x, 1))
    scopes = scopes_of(names, types, edges)
    assert scopes[0] == () and scopes[1] == ()                   # parameters, results: top
    assert scopes[12] == ("blocks.0", "qkv")                     # reads the qkv weight
    assert scopes[14] == ("blocks.0", "qkv")                     # its bias Add: the same
    assert scopes[11] == ("blocks.0", "qkv")                     # the decompression Convert
    assert scopes[19] == ("blocks.0",)                           # between qkv and proj
    assert scopes[18] == ("blocks.0",)
    assert scopes[15] == scopes[17] == scopes[18]                # shape pieces: what they feed
    assert scopes[21] == ("blocks.0", "proj")
    assert scopes[32] == ("blocks.1", "qkv")


def test_the_tree_nests_orders_naturally_and_dissolves_small_groups():
    scopes = {1: ("blocks.10", "attn"), 2: ("blocks.10", "attn"), 3: ("blocks.10",),
              4: ("blocks.2", "attn"), 5: ("blocks.2", "attn"), 6: ("blocks.2", "mlp"),
              7: ("blocks.2",), 8: ("lonely",), 9: ()}
    root = group_tree(scopes)
    assert [g.name for g in root.children] == ["blocks.2", "blocks.10"]
    b2 = root.children[0]
    assert [g.name for g in b2.children] == ["blocks.2/attn"]     # mlp had one node
    assert sorted(b2.nodes) == [6, 7]
    assert sorted(root.nodes) == [8, 9]                          # "lonely" had one node
    assert root.size == 9 and sorted(root.all_nodes()) == list(range(1, 10))


def test_a_scope_every_node_shares_and_a_lone_inner_group_say_nothing():
    scopes = {1: ("functional_1", "lstm_1", "while"), 2: ("functional_1", "lstm_1", "while"),
              3: ("functional_1", "dense"), 4: ("functional_1", "dense")}
    root = group_tree(scopes)
    assert [g.name for g in root.children] == ["dense", "lstm_1/while"]


def test_names_that_fit_drop_what_every_name_says_and_cut_in_the_middle():
    from loopdbg.ir.model import Graph, Layer
    from loopdbg.layout.graph import fit_middle, graph_from_parts, shared_prefix

    assert fit_middle("aten::linear/MatMul_97") == "aten::linear/MatMul_97"
    cut = fit_middle("functional_1/lstm_1/while/body/MatMul_3")
    assert len(cut) == 28 and cut.startswith("functional") and cut.endswith("body/MatMul_3")
    assert shared_prefix(["model/lstm/while/a", "model/lstm/while/b/c"]) == "model/lstm/while/"
    assert shared_prefix(["while/a", "while/b"], "while") == "while/"
    assert shared_prefix(["aten::add/Add", "aten::mul/Mul"]) == ""
    assert shared_prefix(["x/a", "x/a"]) == "x/"
    layers = {k: Layer(k, name, "Relu", "opset1", inputs=[], outputs=[])
              for k, name in enumerate(["functional_1/lstm_1/while/body/gates",
                                        "functional_1/lstm_1/while/body/cell_next"])}
    bg = graph_from_parts(Graph("body", layers, (), (), ()))
    assert [n.lines[1] for n in bg.nodes] == ["gates", "cell_next"]
    assert bg.nodes[0].name == "functional_1/lstm_1/while/body/gates"    # the full name kept


def test_one_group_holding_everything_but_the_parameters_is_no_group():
    scopes = {0: (), 1: (), 2: ("functional_1", "lstm_1", "while"), 3: ("functional_1", "lstm_1",
                                                                        "while", "cell"),
              4: ("functional_1", "lstm_1", "while", "cell"), 5: ("functional_1", "lstm_1",
                                                                  "while")}
    root = group_tree(scopes)
    assert [g.name for g in root.children] == ["functional_1/lstm_1/while/cell"]
    assert sorted(root.nodes) == [0, 1, 2, 5]
