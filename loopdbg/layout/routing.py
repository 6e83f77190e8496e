"""Graphviz ``dot``'s answer turned into boxes and orthogonal paths on a grid of terminal cells.

``dot`` (run by ``dot.py``, once per body) decides what it is good at: the rank of every node,
the left-to-right order and x position of the boxes, and where an edge that spans several ranks
slips between the boxes of the ranks it crosses. The rest is done here, on the character grid,
so that it fits box-drawing characters:

* every rank is a band of rows, boxes top-aligned; between two bands a gap of rows holds one
  horizontal *track* per bundle of edges that must move sideways, ordered so that few edges cross;
* an edge leaves its source through the bottom border, runs down (jogging sideways only on its
  track in each gap) and ends in an arrowhead ``▼`` just above its target's top border;
* Parameters sit on the top rank, Results on the bottom one, and every back edge (Result →
  Parameter) runs around the picture: down below the Results, along its own lane on the right,
  up, and over the top into its Parameter. Back edges are given to ``dot`` with
  ``constraint=false`` so they do not bend the ranking.

Cells are ~2:1 (tall), so x and y use separate scales (``boxes.XS``, ``boxes.YS``). Nothing here
imports a UI toolkit.
"""

from __future__ import annotations

import itertools

from loopdbg.layout.boxes import BOX_GAP, XS, Box, EdgePath, Layout, box_text
from loopdbg.layout.graph import BodyGraph


def build_layout(bg: BodyGraph, sizes: dict[int, tuple[int, int]], dot_json: dict,
                 value_width: int) -> Layout:
    """The layout of ``bg`` from ``dot -Tjson``'s answer for ``dot.layout_dot_source``."""
    return _Builder(bg, sizes, dot_json, value_width).build()


def _bezier_samples(pos: str, steps: int = 12) -> list[tuple[float, float]]:
    """Points along the spline of a ``pos`` attribute (``e,x,y`` / ``s,x,y`` prefixes dropped)."""
    first = pos.split(";")[0].split()
    pts = []
    for tok in first:
        if tok.startswith(("e,", "s,")):
            continue
        x, y = tok.split(",")[:2]
        pts.append((float(x), float(y)))
    out = []
    for i in range(0, len(pts) - 3, 3):
        p0, p1, p2, p3 = pts[i:i + 4]
        for s in range(steps + 1):
            t = s / steps
            a, b, c, d = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3
            out.append((a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0],
                        a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]))
    return out or pts


def _spread(prefs: list[int], lo: int, hi: int, sep: int = 2) -> list[int]:
    """Columns as close to ``prefs`` (sorted) as possible, ``sep`` apart, within ``[lo, hi]``."""
    n = len(prefs)
    if n == 0:
        return []
    room = hi - lo
    if n > 1 and (n - 1) * sep > room:
        sep = max(1, room // (n - 1))
        if (n - 1) * sep > room:
            return [lo + (room * k) // max(n - 1, 1) for k in range(n)]
    xs: list[int] = []
    for p in prefs:
        xs.append(max(min(max(p, lo), hi), xs[-1] + sep) if xs else min(max(p, lo), hi))
    nxt = hi
    for k in range(n - 1, -1, -1):
        xs[k] = min(xs[k], nxt)
        nxt = xs[k] - sep
    return xs


class _Builder:
    """One layout computation (see the module docstring for the plan)."""

    def __init__(self, bg: BodyGraph, sizes, dot_json: dict, value_width: int):
        self.bg = bg
        self.sizes = sizes
        self.dot = dot_json
        self.value_width = value_width

    def build(self) -> Layout:
        self._read_dot()
        self._place_columns()
        self._route_columns()
        self._ports()
        self._tracks()
        self._rows()
        return self._assemble()

    # dot's answer: node centres, ranks, splines
    def _read_dot(self) -> None:
        centre: dict[int, tuple[float, float]] = {}
        by_gvid: dict[int, int] = {}
        nodes = self.bg.nodes
        for obj in self.dot.get("objects", []):
            name = obj.get("name", "")
            if "pos" in obj and name.startswith("n"):
                nid = nodes[int(name[1:])].id          # named by its place in bg.nodes
                x, y = (float(v) for v in obj["pos"].split(",")[:2])
                centre[nid] = (x, y)
                by_gvid[obj["_gvid"]] = nid
        for n in self.bg.nodes:           # a node dot did not place (should not happen)
            centre.setdefault(n.id, (0.0, 0.0))
        ys = sorted({round(y, 1) for _, y in centre.values()}, reverse=True)
        rank_of_y = {y: k for k, y in enumerate(ys)}
        self.rank_y = ys
        self.centre = centre
        self.rank = {nid: rank_of_y[round(y, 1)] for nid, (_, y) in centre.items()}
        self.n_ranks = len(ys)
        self.splines: dict[int, list[tuple[float, float]]] = {}
        for e in self.dot.get("edges", []):
            eid = e.get("id", "")
            if eid.startswith("e") and "pos" in e:
                self.splines[int(eid[1:])] = _bezier_samples(e["pos"])

    # boxes: x from dot, no overlaps within a rank
    def _place_columns(self) -> None:
        self.left: dict[int, int] = {}
        by_rank: dict[int, list[int]] = {}
        for n in self.bg.nodes:
            w, _ = self.sizes[n.id]
            c = round(self.centre[n.id][0] / XS)
            self.left[n.id] = c - w // 2
            by_rank.setdefault(self.rank[n.id], []).append(n.id)
        self.by_rank = by_rank
        for ids in by_rank.values():
            ids.sort(key=lambda i: (self.left[i], i))
            for a, b in zip(ids, ids[1:]):
                need = self.left[a] + self.sizes[a][0] + BOX_GAP
                if self.left[b] < need:
                    self.left[b] = need

    def _right(self, nid: int) -> int:
        return self.left[nid] + self.sizes[nid][0] - 1

    def _centre_col(self, nid: int) -> int:
        return self.left[nid] + self.sizes[nid][0] // 2

    # long edges: the column where each crosses an intermediate rank
    def _route_columns(self) -> None:
        self.data = [(k, e) for k, e in enumerate(self.bg.edges) if not e.back]
        blocked: dict[int, list[tuple[int, int]]] = {
            r: [(self.left[i] - 1, self._right(i) + 1) for i in ids]
            for r, ids in self.by_rank.items()}
        used: dict[int, set[int]] = {r: set() for r in range(self.n_ranks)}
        self.waypoints: dict[int, list[int]] = {}
        # Shorter edges first: they have the least freedom.
        order = sorted(self.data,
                       key=lambda ke: (self.rank[ke[1].dst] - self.rank[ke[1].src], ke[0]))
        for k, e in order:
            ru, rv = self.rank[e.src], self.rank[e.dst]
            cols = []
            samples = self.splines.get(k, [])
            for r in range(ru + 1, rv):
                y = self.rank_y[r]
                if samples:
                    x = min(samples, key=lambda p: abs(p[1] - y))[0]
                    want = round(x / XS)
                else:
                    a, b = self._centre_col(e.src), self._centre_col(e.dst)
                    want = round(a + (b - a) * (r - ru) / max(rv - ru, 1))
                c = self._free_column(want, blocked.get(r, []), used[r])
                used[r].add(c)
                cols.append(c)
            self.waypoints[k] = cols

    @staticmethod
    def _free_column(want: int, blocked, used: set[int]) -> int:
        def ok(c: int, strict: bool) -> bool:
            if any(lo <= c <= hi for lo, hi in blocked) or c in used:
                return False
            return not strict or (c - 1 not in used and c + 1 not in used)

        for strict in (True, False):
            for d in range(0, 400):
                for c in ((want,) if d == 0 else (want + d, want - d)):
                    if ok(c, strict):
                        return c
        return want

    # where edges leave and enter boxes
    def _ports(self) -> None:
        self.exit_col: dict[int, int] = {}
        self.entry_col: dict[int, int] = {}
        outs: dict[int, dict[int, list[int]]] = {}
        for k, e in self.data:
            outs.setdefault(e.src, {}).setdefault(e.src_port, []).append(k)

        for nid, ports in outs.items():
            if len(ports) == 1:
                for ks in ports.values():
                    for k in ks:
                        self.exit_col[k] = self._centre_col(nid)
                continue
            order = sorted(ports)            # dot was told the ports in this order
            lo, hi = self.left[nid] + 2, self._right(nid) - 2
            n = len(order)
            prefs = [self.left[nid] + round((j + 0.5) * self.sizes[nid][0] / n - 0.5)
                     for j in range(n)]
            for p, c in zip(order, _spread(prefs, lo, hi)):
                for k in ports[p]:
                    self.exit_col[k] = c
        ins: dict[int, list[int]] = {}
        for k, e in self.data:
            ins.setdefault(e.dst, []).append(k)

        def arrival(k: int) -> int:
            wp = self.waypoints[k]
            return wp[-1] if wp else self.exit_col[k]

        for nid, ks in ins.items():
            ks.sort(key=lambda k: (arrival(k), self.bg.edges[k].dst_port))
            lo, hi = self.left[nid] + 1, self._right(nid) - 1
            for k, c in zip(ks, _spread([arrival(k) for k in ks], lo, hi)):
                self.entry_col[k] = c
        self.cols = {}
        for k, _ in self.data:
            self.cols[k] = [self.exit_col[k]] + self.waypoints[k] + [self.entry_col[k]]

    # one horizontal track per bundle of edges that moves sideways in a gap
    def _tracks(self) -> None:
        self.track: dict[tuple[int, int], int] = {}      # (gap, x_in) -> track index
        self.n_tracks = [0] * max(self.n_ranks, 1)
        for g in range(self.n_ranks - 1):
            groups: dict[int, set[int]] = {}
            for k, e in self.data:
                ru, rv = self.rank[e.src], self.rank[e.dst]
                if ru <= g < rv:
                    c = self.cols[k]
                    groups.setdefault(c[g - ru], set()).add(c[g - ru + 1])
            jog = [(xin, outs) for xin, outs in groups.items() if outs != {xin}]
            if not jog:
                continue
            spans = {xin: (min(outs | {xin}), max(outs | {xin})) for xin, outs in jog}
            outs_of = dict(jog)

            def cost(a: int, b: int) -> int:
                """Crossings (overlaps count 10) when bundle ``a`` runs above bundle ``b``."""
                (alo, ahi), (blo, bhi) = spans[a], spans[b]
                n = 0
                if b in outs_of[a]:
                    n += 10
                elif alo < b < ahi:
                    n += 1
                for o in outs_of[a]:
                    if o == a:
                        continue
                    if o in outs_of[b]:
                        n += 10
                    elif blo < o < bhi:
                        n += 1
                return n

            keys = sorted(spans)
            # weight[a][b] > 0: a above b saves that many crossings (an overlap counts 10)
            weight: dict[int, dict[int, int]] = {a: {} for a in keys}
            for a, b in itertools.combinations(keys, 2):
                if spans[a][0] <= spans[b][1] and spans[b][0] <= spans[a][1]:
                    d = cost(b, a) - cost(a, b)
                    if d > 0:
                        weight[a][b] = d
                    elif d < 0:
                        weight[b][a] = -d
            order = _order(keys, weight)
            placed: list[int] = []
            for a in order:
                t = 0
                for b in placed:
                    if spans[a][0] <= spans[b][1] + 1 and spans[b][0] <= spans[a][1] + 1:
                        t = max(t, self.track[(g, b)] + 1)
                self.track[(g, a)] = t
                placed.append(a)
            self.n_tracks[g] = 1 + max(self.track[(g, a)] for a in keys)

    # rows: bands of boxes and the gaps between them
    def _rows(self) -> None:
        self.back = [(k, e) for k, e in enumerate(self.bg.edges) if e.back]
        nb = len(self.back)
        top = nb + 1 if nb else 0
        self.band_top, self.band_bottom = [], []
        for r in range(self.n_ranks):
            h = max(self.sizes[i][1] for i in self.by_rank.get(r, [])) if r in self.by_rank else 1
            self.band_top.append(top)
            self.band_bottom.append(top + h - 1)
            top = top + h + self.n_tracks[r] + 2

    def _track_row(self, g: int, xin: int) -> int:
        return self.band_bottom[g] + 2 + self.track[(g, xin)]

    def _assemble(self) -> Layout:
        y_of = {nid: self.band_top[self.rank[nid]] for nid in self.left}
        paths: list[EdgePath] = []
        for k, e in self.data:
            ru, rv = self.rank[e.src], self.rank[e.dst]
            c = self.cols[k]
            src_bottom = y_of[e.src] + self.sizes[e.src][1] - 1
            pts = [(c[0], src_bottom + 1)]
            if rv <= ru:                     # not expected in a DAG ranked by dot
                pts.append((c[-1], y_of[e.dst] - 1))
            for g in range(ru, rv):
                xin, xout = c[g - ru], c[g - ru + 1]
                if xin != xout:
                    ty = self._track_row(g, xin)
                    pts += [(xin, ty), (xout, ty)]
                if g + 1 == rv:
                    pts.append((xout, y_of[e.dst] - 1))
            paths.append(EdgePath(e.src, e.dst, _simplify(pts), "down", False,
                                  e.src_port, e.dst_port))
        # shift everything right so the leftmost cell used is column 1
        xs = [self.left[i] for i in self.left] + [x for p in paths for x, _ in p.points]
        dx = 1 - min(xs) if xs else 1
        self.left = {i: x + dx for i, x in self.left.items()}
        paths = [EdgePath(p.src, p.dst, tuple((x + dx, y) for x, y in p.points), p.direction,
                          p.back, p.src_port, p.dst_port) for p in paths]
        right = max([self._right(i) for i in self.left] + [x for p in paths for x, _ in p.points]
                    + [0])
        height = (self.band_bottom[-1] + 1) if self.n_ranks else 1
        paths += self._back_paths(y_of, right)
        if self.back:
            height = self.band_bottom[-1] + 2 + len(self.back)
            right = max(x for p in paths for x, _ in p.points)
        boxes = []
        nodes = {n.id: n for n in self.bg.nodes}
        for nid in self.left:
            n = nodes[nid]
            w, h = self.sizes[nid]
            title, lines = box_text(n)
            boxes.append(Box(nid, self.left[nid], y_of[nid], w, h, lines, n.kind, n.roles,
                             n.role_text, n.name, title, n.type))
        boxes.sort(key=lambda b: (b.y, b.x))
        return Layout(self.bg.name, right + 2, height, tuple(boxes), tuple(paths),
                      self.value_width)

    def _back_paths(self, y_of, right: int) -> list[EdgePath]:
        """Back edges around the picture, nested so that few of them cross (see module doc)."""
        nb = len(self.back)
        if not nb:
            return []
        bottom_band = self.band_bottom[-1]
        # Where each back edge leaves its Result and enters its Parameter.
        def spread_ports(ids_of: dict[int, list[int]]) -> dict[int, int]:
            cols = {}
            for nid, ks in ids_of.items():
                lo, hi = self.left[nid] + 2, self._right(nid) - 2
                n = len(ks)
                prefs = [self._centre_col(nid)] if n == 1 else \
                    [lo + round((j + 0.5) * (hi - lo + 1) / n - 0.5) for j in range(n)]
                for k, c in zip(ks, _spread(prefs, lo, hi)):
                    cols[k] = c
            return cols

        by_src: dict[int, list[int]] = {}
        by_dst: dict[int, list[int]] = {}
        for k, e in self.back:
            by_src.setdefault(e.src, []).append(k)
            by_dst.setdefault(e.dst, []).append(k)
        xr = spread_ports(by_src)
        xp = spread_ports(by_dst)
        ks = [k for k, _ in self.back]

        def crossings(order: tuple[int, ...]) -> int:
            n = 0
            for i, j in itertools.combinations(range(len(order)), 2):
                inner, outer = order[i], order[j]
                n += (xp[outer] > xp[inner]) + (xr[outer] > xr[inner])
            return n

        if nb <= 6:
            best = min(itertools.permutations(ks), key=crossings)
        else:
            best = tuple(sorted(ks, key=lambda k: -(xp[k] + xr[k])))
        paths = []
        for o, k in enumerate(best):              # o = 0: innermost
            e = self.bg.edges[k]
            lane = right + 3 + 2 * o
            top_row = nb - 1 - o
            bottom_row = bottom_band + 2 + o
            r_bottom = y_of[e.src] + self.sizes[e.src][1] - 1
            pts = [(xr[k], r_bottom + 1), (xr[k], bottom_row), (lane, bottom_row),
                   (lane, top_row), (xp[k], top_row), (xp[k], y_of[e.dst] - 1)]
            paths.append(EdgePath(e.src, e.dst, _simplify(pts), "down", True))
        paths.sort(key=lambda p: (p.src, p.dst))
        return paths


def _order(keys: list[int], weight: dict[int, dict[int, int]]) -> list[int]:
    """Keys ordered so that ``a`` comes before ``b`` when ``weight[a][b] > 0``, as far as possible.

    A topological order of the preferences; where they form a cycle, the key whose preceding
    preferences weigh least goes first.
    """
    incoming = {k: 0 for k in keys}
    for a in keys:
        for b, w in weight[a].items():
            incoming[b] += w
    left = set(keys)
    order = []
    while left:
        best = min(left, key=lambda k: (incoming[k], -sum(weight[k].values()), k))
        order.append(best)
        left.discard(best)
        for b, w in weight[best].items():
            incoming[b] -= w
    return order


def _simplify(pts: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Drop repeated and collinear points of an orthogonal polyline."""
    out: list[tuple[int, int]] = []
    for p in pts:
        if out and out[-1] == p:
            continue
        if len(out) >= 2:
            (x0, y0), (x1, y1) = out[-2], out[-1]
            if (x0 == x1 == p[0]) or (y0 == y1 == p[1]):
                out[-1] = p
                continue
        out.append(p)
    return tuple(out)
