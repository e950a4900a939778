"""Where everything goes when a graph is drawn with some groups collapsed.

The *items* drawn are the nodes of open groups and one box per collapsed
group (see :mod:`viz_place.render.groups`). Their quotient graph (an edge
between two items when a graph edge joins their members) is laid out by
Graphviz ``dot`` (left to right, open groups as ``dot`` clusters, so a group's
members stay together inside its frame and edges are routed as splines
around them), or, beyond :data:`DOT_MAX_ITEMS` items or without
``pygraphviz``, by the built-in layered layout (topological columns, no
folding; frames are the bounding boxes of their members).

Units are inches (dot's). Layouts are cached per (graph, open groups, method).

>>> from viz_place.samples import make_graph
>>> from viz_place.render.groups import hierarchy
>>> g = make_graph("residual", 40)
>>> d = item_drawing(g, set(), method="layered")
>>> len(d.boxes) > 0 and int(np.isnan(d.node_xy[:, 0]).sum()) > 0   # nodes inside collapsed boxes
True
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import networkx as nx
import numpy as np

from ..model import OpGraph
from .groups import Hierarchy, hierarchy
from .layout import dot_available, quiet_layout

#: Above this many drawn items the built-in layout is used instead of ``dot``
#: (measured with ``benchmarks/explorer.py --layout``: about 0.1 s of CPU for 400 items, 0.33 s for
#: 1,000, 1.1 s for 2,000 — see the README).
DOT_MAX_ITEMS = 400

NODE_IN = 0.32          # an op's footprint in dot (inches)
BOX_W, BOX_H = 1.7, 0.62
LAYER_DX, LAYER_DY = 0.75, 0.55   # built-in layout spacing

_CACHE: "weakref.WeakKeyDictionary[OpGraph, dict]" = weakref.WeakKeyDictionary()


@dataclass(eq=False)
class ItemDrawing:
    """Positions of a drawing with some groups open.

    ``node_xy``: (n, 2) per graph node, NaN when inside a collapsed box;
    ``boxes``: gid -> (x, y, w, h) of collapsed groups (centre, size);
    ``frames``: gid -> (x0, y0, x1, y1) of open groups;
    ``edge_items``: per graph edge, the index of the drawn edge it belongs to (-1: inside one box);
    ``edge_lines``: per drawn edge, its polyline ``(xs, ys)``;
    ``bounds``: (x0, y0, x1, y1) of everything; ``method``: ``"dot"`` or ``"layered"``.
    """

    node_xy: np.ndarray
    boxes: dict[str, tuple[float, float, float, float]]
    frames: dict[str, tuple[float, float, float, float]]
    edge_items: np.ndarray
    edge_lines: list[tuple[np.ndarray, np.ndarray]]
    bounds: tuple[float, float, float, float]
    method: str
    items: list[str]


def item_drawing(graph: OpGraph, expanded, *, method: str = "auto", hier: Hierarchy | None = None) -> ItemDrawing:
    """Lay out ``graph`` with the groups in ``expanded`` open (the root always is)."""
    h = hier or hierarchy(graph)
    expanded = frozenset(g for g in expanded if g in h.groups)
    items = h.visible_items(expanded)
    distinct = list(dict.fromkeys(items))
    if method == "auto":
        method = "dot" if dot_available() and len(distinct) <= DOT_MAX_ITEMS else "layered"
    if method not in ("dot", "layered"):
        raise ValueError(f"layout method {method!r} is not one of ('auto', 'dot', 'layered')")
    key = (expanded, method)
    per_graph = _CACHE.setdefault(graph, {})
    hit = per_graph.get(key)
    if hit is not None:
        return hit
    index = graph.index
    pairs: dict[tuple[str, str], int] = {}
    edge_items = np.full(graph.num_edges, -1, dtype=np.int64)
    for k, (u, v) in enumerate(graph.edges):
        a, b = items[index[u]], items[index[v]]
        if a != b:
            edge_items[k] = pairs.setdefault((a, b), len(pairs))
    qedges = list(pairs)
    frames_open = h.expanded_groups(expanded)
    if method == "dot":
        pos, frames, lines = _dot(h, distinct, qedges, frames_open, items)
    else:
        pos, frames, lines = _layered(h, distinct, qedges, frames_open, items)
    node_xy = np.full((graph.num_nodes, 2), np.nan)
    boxes = {}
    for i, it in enumerate(items):
        if it[0] == "n":
            node_xy[i] = pos[it]
    for it in distinct:
        if it[0] == "g":
            x, y = pos[it]
            boxes[it] = (x, y, BOX_W, _box_h(h.groups[it].size))
    xs = [p[0] for p in pos.values()] + [f[0] for f in frames.values()] + [f[2] for f in frames.values()]
    ys = [p[1] for p in pos.values()] + [f[1] for f in frames.values()] + [f[3] for f in frames.values()]
    pad = BOX_W
    bounds = (min(xs, default=0) - pad, min(ys, default=0) - pad, max(xs, default=0) + pad, max(ys, default=0) + pad)
    out = ItemDrawing(node_xy, boxes, frames, edge_items, lines, bounds, method, items)
    if len(per_graph) > 64:
        per_graph.clear()
    per_graph[key] = out
    return out


def _box_h(size: int) -> float:
    return BOX_H + 0.12 * math.log2(max(size, 1))


def _dot(h: Hierarchy, distinct, qedges, frames_open, items):
    import pygraphviz

    a = pygraphviz.AGraph(directed=True, strict=False)
    a.graph_attr.update(rankdir="LR", nodesep="0.12", ranksep="0.35", splines="spline", outputorder="edgesfirst")
    a.node_attr.update(shape="circle", fixedsize="true", width=str(NODE_IN), height=str(NODE_IN), label="")
    a.edge_attr.update(arrowhead="none")
    for it in distinct:
        if it[0] == "g":
            a.add_node(it, shape="box", width=str(BOX_W), height=f"{_box_h(h.groups[it].size):.3f}")
        else:
            a.add_node(it)
    # open groups as nested clusters; each lists every item inside it (graphviz adds a node
    # to a nested subgraph only if its parent subgraph holds it already)
    direct: dict[str, list[str]] = {g: [] for g in frames_open}
    open_set = set(frames_open)
    gon = h.group_of_node()
    for it in distinct:
        owner = h.groups[it].parent if it[0] == "g" else gon[int(it[1:])]
        while owner is not None:
            if owner in open_set:
                direct[owner].append(it)
            owner = h.groups[owner].parent
    subs = {}
    for gid in frames_open:   # parents come before children (depth-first ids)
        parent = h.groups[gid].parent
        host = subs.get(parent, a)
        # a blank label makes dot keep a strip free at the top of the frame for its header
        subs[gid] = host.add_subgraph(direct[gid], name=f"cluster_{gid}", label="\u00a0", labelloc="t",
                                      fontsize="12", margin="6")
    for u, v in qedges:
        a.add_edge(u, v)
    quiet_layout(a)
    pos = {}
    for it in distinct:
        x, y = (float(t) for t in a.get_node(it).attr["pos"].split(","))
        pos[it] = (x / 72.0, y / 72.0)
    frames = {}
    stack = list(a.subgraphs())   # fresh handles: the ones made before layout do not see nested results
    while stack:
        sub = stack.pop()
        stack.extend(sub.subgraphs())
        bb = sub.graph_attr.get("bb")
        name = sub.name or ""
        if bb and name.startswith("cluster_"):
            x0, y0, x1, y1 = (float(t) / 72.0 for t in bb.split(","))
            frames[name[len("cluster_"):]] = (x0, y0, x1, y1)
    lines = []
    for u, v in qedges:
        lines.append(_spline_points(a.get_edge(u, v).attr.get("pos", ""), pos[u], pos[v]))
    return pos, frames, lines


def _spline_points(spec: str, p0, p1) -> tuple[np.ndarray, np.ndarray]:
    """Sample dot's cubic B-spline control points (``pos`` of an edge) as a polyline."""
    pts = []
    for tok in spec.split():
        if tok.startswith(("e,", "s,")):
            continue
        try:
            x, y = (float(t) for t in tok.split(","))
        except ValueError:
            continue
        pts.append((x / 72.0, y / 72.0))
    if len(pts) < 4:
        return np.array([p0[0], p1[0]]), np.array([p0[1], p1[1]])
    P = np.asarray(pts)
    segs = (len(P) - 1) // 3
    t = np.linspace(0, 1, 6)[:-1][:, None]
    out = []
    for s in range(segs):
        b0, b1, b2, b3 = P[3 * s: 3 * s + 4]
        out.append((1 - t) ** 3 * b0 + 3 * (1 - t) ** 2 * t * b1 + 3 * (1 - t) * t ** 2 * b2 + t ** 3 * b3)
    out.append(P[3 * segs][None, :])
    Q = np.vstack(out)
    return Q[:, 0], Q[:, 1]


def _layered(h: Hierarchy, distinct, qedges, frames_open, items):
    g = nx.DiGraph()
    g.add_nodes_from(distinct)
    g.add_edges_from(qedges)
    order = {it: k for k, it in enumerate(distinct)}
    pos: dict[str, tuple[float, float]] = {}
    for col, gen in enumerate(nx.topological_generations(g)):
        keyed = []
        for it in gen:
            preds = [pos[p][1] for p in g.predecessors(it)]
            keyed.append((float(np.mean(preds)) if preds else 0.0, order[it], it))
        keyed.sort()
        m = len(keyed)
        for row, (_, _, it) in enumerate(keyed):
            pos[it] = (col * (LAYER_DX + (BOX_W if any(k[2][0] == "g" for k in keyed) else 0)),
                       (row - (m - 1) / 2.0) * LAYER_DY * (2 if it[0] == "g" else 1))
    frames = {}
    gon = h.group_of_node()
    members: dict[str, list[tuple[float, float]]] = {gid: [] for gid in frames_open}
    open_set = set(frames_open)
    for it in distinct:
        owner = h.groups[it].parent if it[0] == "g" else gon[int(it[1:])]
        while owner is not None:
            if owner in open_set:
                members[owner].append(pos[it])
            owner = h.groups[owner].parent
    for gid, pts in members.items():
        if pts:
            P = np.asarray(pts)
            frames[gid] = (P[:, 0].min() - 0.3, P[:, 1].min() - 0.3, P[:, 0].max() + 0.3, P[:, 1].max() + 0.45)
    lines = []
    for u, v in qedges:
        (x0, y0), (x1, y1) = pos[u], pos[v]
        span = abs(x1 - x0)
        bend = 0.25 * math.sqrt(span) * (1 if order[u] % 2 == 0 else -1) if span > 2.5 * LAYER_DX else 0.0
        step = min(0.4, span / 4) * (1 if x1 >= x0 else -1)
        lines.append((np.array([x0, x0 + step, x1 - step, x1]), np.array([y0, y0 + bend, y1 + bend, y1])))
    return pos, frames, lines


def join_lines(lines, which=None) -> tuple[np.ndarray, np.ndarray]:
    """Polylines (all, or those indexed by ``which``) as one NaN-separated ``(xs, ys)``.

    >>> xs, ys = join_lines([(np.array([0., 1.]), np.array([0., 0.])), (np.array([2., 3.]), np.array([1., 1.]))])
    >>> xs.tolist()[:3], bool(np.isnan(xs[2]))
    ([0.0, 1.0, nan], True)
    """
    sel = lines if which is None else [lines[int(k)] for k in which]
    if not sel:
        return np.zeros(0), np.zeros(0)
    nan = np.array([np.nan])
    xs = np.concatenate([p for x, _ in sel for p in (x, nan)][:-1])
    ys = np.concatenate([p for _, y in sel for p in (y, nan)][:-1])
    return xs, ys
