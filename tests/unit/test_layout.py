"""The body layout: boxes and edge paths from Graphviz, drawn with box-drawing characters."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopdbg import programs
from loopdbg.engine.runner import Engine
from loopdbg.ir.load import read_model
from loopdbg.ir.model import Edge, Graph, Layer, Port
from loopdbg.layout import (LayoutUnavailable, body_graph, clear_cache, dot_available,
                            graph_from_parts, graph_to_dot, layout_body, render, render_text)
from loopdbg.layout import dot as dotmod

CORPUS = Path(__file__).parents[1] / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "model.xml").exists())
ARROWS = "▼▲◀▶"
STEP = {"down": (0, 1), "up": (0, -1), "left": (-1, 0), "right": (1, 0)}

needs_dot = pytest.mark.skipif(not dot_available(), reason="Graphviz 'dot' is not installed")


def corpus_bodies(case: str):
    engine = Engine(read_model(CORPUS / case / "model.xml"))
    return list(engine.loops.items())


def path_cells(path):
    """Every cell of an edge path with its orientation ('v' or 'h')."""
    out = []
    for (x0, y0), (x1, y1) in zip(path.points, path.points[1:]):
        assert x0 == x1 or y0 == y1, f"path {path.points} is not orthogonal"
        if x0 == x1:
            s = 1 if y1 > y0 else -1
            out += [(x0, y, "v") for y in range(y0, y1 + s, s)]
        else:
            s = 1 if x1 > x0 else -1
            out += [(x, y0, "h") for x in range(x0, x1 + s, s)]
    return out


def synthetic_body(n_ops: int, seed: int = 0, n_params: int = 4, n_results: int = 3):
    """A random DAG body with back edges, for sizes the corpus does not reach."""
    rnd = random.Random(seed)
    layers, edges, params, ops, results = {}, [], [], [], []
    lid = 0
    for k in range(n_params):
        layers[lid] = Layer(lid, f"p{k}", "Parameter", "opset1", outputs=(Port(0, 0),))
        params.append(lid)
        lid += 1
    avail = list(params)
    for k in range(n_ops):
        kind = rnd.choice(["Add", "Multiply", "Tanh", "Sigmoid", "Concat", "MatMul"])
        srcs = rnd.sample(avail[-8:], 1 if kind in ("Tanh", "Sigmoid") else 2)
        layers[lid] = Layer(lid, f"{kind.lower()}_{k}", kind, "opset1", outputs=(Port(0, 0),))
        edges += [Edge(s, 0, lid, j) for j, s in enumerate(srcs)]
        avail.append(lid)
        ops.append(lid)
        lid += 1
    for k in range(n_results):
        layers[lid] = Layer(lid, f"r{k}", "Result", "opset1")
        edges.append(Edge(ops[-1 - 3 * k], 0, lid, 0))
        results.append(lid)
        lid += 1
    graph = Graph("synthetic", layers, tuple(edges), tuple(params), tuple(results))
    back = [(results[k], params[k]) for k in range(min(n_params, n_results))]
    return graph_from_parts(graph, {p: "merged" for p in params},
                            {r: "last value" for r in results}, back)


def check_layout(layout, bg) -> None:
    """The geometric promises of a Layout, checked on its own data and on its rendering."""
    text = render_text(layout)
    grid = [row.ljust(layout.width) for row in text.split("\n")]
    assert len(grid) <= layout.height
    grid += [" " * layout.width] * (layout.height - len(grid))
    # Boxes lie inside the canvas and do not overlap (borders included).
    for b in layout.boxes:
        assert 0 <= b.x and b.right < layout.width and 0 <= b.y and b.bottom < layout.height
    for a in layout.boxes:
        for b in layout.boxes:
            if a.id < b.id:
                apart = a.right < b.x or b.right < a.x or a.bottom < b.y or b.bottom < a.y
                assert apart, f"boxes {a.id} and {b.id} overlap"
    # One path per edge of the graph, data and back.
    assert sorted((e.src, e.dst, e.back) for e in layout.edges) == \
        sorted((e.src, e.dst, e.back) for e in bg.edges)
    seen: dict[tuple, set] = {}
    inside = {(x, y) for b in layout.boxes
              for y in range(b.y, b.bottom + 1) for x in range(b.x, b.right + 1)}
    for e in layout.edges:
        cells = path_cells(e)
        for x, y, _ in cells:
            assert 0 <= x < layout.width and 0 <= y < layout.height
            assert (x, y) not in inside, f"edge {e.src}->{e.dst} crosses a box at {x},{y}"
            assert grid[y][x] != " ", f"edge {e.src}->{e.dst} not drawn at {x},{y}"
        # Ends in an arrowhead right next to its target box.
        ax, ay = e.arrow
        assert grid[ay][ax] in ARROWS
        dx, dy = STEP[e.direction]
        assert layout.box_at(ax + dx, ay + dy) is layout.box(e.dst)
        # Leaves its source box: the first cell touches the source's border.
        sx, sy = e.points[0]
        assert layout.box_at(sx, sy - 1) is layout.box(e.src)
        # Edges from different outputs never run on top of each other.
        key = (e.src, e.src_port, e.back)
        for x, y, o in cells:
            others = seen.setdefault((x, y, o), set())
            assert not (others - {key}), f"edge {e.src}->{e.dst} overlaps {others} at {x},{y}"
            others.add(key)
    # Every label line is printed inside its box.
    for b in layout.boxes:
        for k, line in enumerate(b.lines):
            assert grid[b.y + 1 + k][b.x + 2:b.x + 2 + len(line)] == line


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


@needs_dot
@pytest.mark.parametrize("case", CASES)
def test_corpus_bodies_lay_out_cleanly(case):
    for _, spec in corpus_bodies(case):
        bg = body_graph(spec)
        layout = layout_body(spec)
        check_layout(layout, bg)
        names = {spec.body.graph.layers[n.id].name for n in bg.nodes}
        text = render_text(layout)
        assert all(name in text for name in names)
        assert len(layout.boxes) == len(bg.nodes)


@needs_dot
@pytest.mark.parametrize("consts", ["small", "show"])
def test_constants_can_be_boxes(consts):
    (_, spec), = corpus_bodies("ti_lstm_forward")
    bg = body_graph(spec, consts=consts)
    layout = layout_body(bg)
    check_layout(layout, bg)
    kinds = [b.kind for b in layout.boxes]
    assert ("const" in kinds) and (consts == "show" or kinds.count("const") == 3)


def test_roles_and_folded_constants():
    (_, spec), = corpus_bodies("loop_while_iter")
    bg = body_graph(spec)
    by_name = {n.name: n for n in bg.nodes}
    assert by_name["body_iter"].roles == ("current_iteration",)
    assert by_name["body_x"].roles == ("merged",)
    assert by_name["body_limit"].roles == ("invariant",)
    assert by_name["Result_5536"].roles == ("last value", "concatenated")
    assert by_name["Result_5535"].roles == ("execution condition",)
    assert by_name["Multiply_5524"].lines == ("Multiply", "Multiply_5524", "const 1.5")
    assert not any(n.kind == "const" for n in bg.nodes)
    back = {(bg.node(e.src).name, bg.node(e.dst).name) for e in bg.back_edges}
    assert back == {("Result_5536", "body_x"), ("Result_5537", "body_count")}
    (_, ti), = corpus_bodies("ti_lstm_forward")
    roles = {n.name: n.role_text for n in body_graph(ti).nodes if n.kind == "parameter"}
    assert roles["body_X"] == "sliced axis 1"


@needs_dot
def test_values_and_highlights_are_rendered():
    (_, spec), = corpus_bodies("loop_while_iter")
    layout = layout_body(spec)
    ids = {b.lines[0]: b.id for b in layout.boxes}       # the type is in the border now
    add, less = ids["Add_5526"], ids["Less_5527"]
    assert layout.box(add).title == "Add" and layout.box(add).lines == ("Add_5526",)
    params = [b for b in layout.boxes if b.kind == "parameter"]
    assert {b.title for b in params} >= {"param · merged", "param · invariant"}
    canvas = render(layout, {add: "= 3.25", less: "x" * 100}, changed={add}, current=less)
    text = canvas.text()
    assert "= 3.25" in text and "─ Add ─" in text
    first = min(layout.boxes, key=lambda b: (b.y, b.x))
    canvas = render(layout, selected=first.id)
    assert canvas.styles[first.y][first.x] == "box:selected"
    canvas = render(layout, {add: "= 3.25", less: "x" * 100}, changed={add}, current=less)
    box = layout.box(less)
    row = canvas.lines[box.y + 1 + len(box.lines)]
    assert row[box.x + 2:box.right - 1].rstrip().endswith("…")
    tags = {t for r in canvas.styles for t in r}
    assert {"box", "box:changed", "box:current", "edge", "back", "role", "title",
            "value:changed", "value"} <= tags
    b = layout.box(add)
    assert canvas.styles[b.y][b.x] == "box:changed"
    assert canvas.styles[box.y][box.x] == "box:current"
    assert len(canvas.styles) == canvas.height
    assert all(len(r) == canvas.width for r in canvas.styles)
    assert "".join(t for t, _ in canvas.runs(b.y + 1)) == canvas.lines[b.y + 1]
    # The cached static picture is not changed by a render.
    assert "= 3.25" not in render_text(layout)


@needs_dot
def test_back_edges_are_dashed_and_ascii_fallback():
    (_, spec), = corpus_bodies("ti_lstm_forward")
    layout = layout_body(spec)
    text = render_text(layout)
    assert "┆" in text and "┄" in text
    plain = render_text(layout, ascii=True)
    assert plain.isascii()
    assert len(plain.split("\n")) == len(text.split("\n"))


@needs_dot
def test_dot_runs_once_per_body(monkeypatch):
    calls = []
    real = dotmod._run_dot

    def counting(source):
        calls.append(source)
        return real(source)

    monkeypatch.setattr(dotmod, "_run_dot", counting)
    n_bodies = 0
    for case in ("loop_while_iter", "ti_lstm_forward"):
        for _ in range(2):                      # a second Engine: same bodies, no new dot run
            for _, spec in corpus_bodies(case):
                first = layout_body(spec)
                assert layout_body(spec) is first
        n_bodies += len(corpus_bodies(case))
    assert len(calls) == n_bodies
    clear_cache()
    for _, spec in corpus_bodies("loop_while_iter"):
        layout_body(spec)
    assert len(calls) == n_bodies + 1


def test_missing_dot_says_how_to_install(monkeypatch):
    (_, spec), = corpus_bodies("loop_while_iter")
    monkeypatch.setattr(programs.shutil, "which", lambda *a, **k: None)
    with pytest.raises(LayoutUnavailable) as err:
        layout_body(spec)
    for hint in ("apt-get install graphviz", "brew install graphviz", "conda install graphviz"):
        assert hint in str(err.value)


def test_empty_path_means_no_dot(monkeypatch):
    (_, spec), = corpus_bodies("ti_gru")
    monkeypatch.setenv("PATH", "")
    with pytest.raises(LayoutUnavailable, match="install graphviz"):
        layout_body(spec)


@needs_dot
@pytest.mark.parametrize("seed", range(6))
def test_random_bodies_lay_out_cleanly(seed):
    bg = synthetic_body(40, seed=seed)
    check_layout(layout_body(bg), bg)


@needs_dot
def test_large_body_and_render_speed():
    big = synthetic_body(200, seed=1)
    layout = layout_body(big)
    check_layout(layout, big)
    assert len(layout.boxes) == 207
    small = layout_body(synthetic_body(30, seed=2))
    values = {b.id: "f32[2,16] 0.25" for b in small.boxes}
    render(small, values)                          # draws and caches the static part
    start = time.perf_counter()
    for k in range(20):
        render(small, values, changed={small.boxes[k].id}, current=small.boxes[k + 1].id)
    per_render = (time.perf_counter() - start) / 20
    assert per_render < 0.05, f"{per_render * 1000:.1f} ms per render"


@needs_dot
@pytest.mark.parametrize("case", ["loop_while_iter", "ti_lstm_forward"])
def test_graph_to_dot_renders(case):
    (_, spec), = corpus_bodies(case)
    source = graph_to_dot(spec)
    assert "constraint=false" in source and "cluster_body" in source
    assert "output 0" in source
    proc = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"<svg" in proc.stdout


def test_layout_imports_no_ui_toolkit():
    code = ("import sys, loopdbg.layout, loopdbg.layout.canvas; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


@needs_dot
def test_show_one_body(capsys):
    """Prints a body (see it with ``pytest -s`` or in the captured log of a failure)."""
    (_, spec), = corpus_bodies("ti_lstm_forward")
    layout = layout_body(spec)
    text = render_text(layout, {b.id: "= …" for b in layout.boxes})
    print(text)
    assert "LSTMCell" in capsys.readouterr().out
