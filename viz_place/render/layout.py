"""Node positions for drawing an operator graph as a layered DAG.

Graphviz ``dot`` (through the optional ``pygraphviz`` package) gives the
nicest pictures; without it a fast layered layout is used: nodes go to columns
by topological generation (left to right) and, inside a column, are ordered by
the mean height of their predecessors (one barycentre sweep), which keeps
chains straight and branches apart (no folding: the explorer draws large
graphs collapsed into groups instead, see :mod:`viz_place.render.drawing`).
2,000 nodes take well under a second.

Positions are cached per (graph, method): graphs are immutable.

>>> from viz_place.model import OpGraph
>>> g = OpGraph.from_records([{"id": "a"}, {"id": "b"}, {"id": "c"}], [("a", "b"), ("a", "c")])
>>> pos = layered_layout(g, method="layered")
>>> pos.shape, float(pos[0, 0]) < float(pos[1, 0]) == float(pos[2, 0])
((3, 2), True)
"""
from __future__ import annotations

import importlib.util
import threading
import weakref

import networkx as nx
import numpy as np

from ..model import OpGraph

METHODS = ("auto", "dot", "layered")

# Cache of positions per graph (graphs are immutable; entries die with the graph).
_CACHE: "weakref.WeakKeyDictionary[OpGraph, dict[str, np.ndarray]]" = weakref.WeakKeyDictionary()


def dot_available() -> bool:
    """Whether Graphviz ``dot`` can be used (``pygraphviz`` importable)."""
    return importlib.util.find_spec("pygraphviz") is not None


def layered_layout(graph: OpGraph, *, method: str = "auto") -> np.ndarray:
    """``(n, 2)`` positions in ``graph.node_ids`` order (x grows along the data flow).

    ``method``: ``"dot"`` (needs pygraphviz), ``"layered"`` (built in) or
    ``"auto"`` (``dot`` when available and the graph has at most 3,000 nodes,
    else ``layered``). The result is read-only and cached.
    """
    if method not in METHODS:
        raise ValueError(f"layout method {method!r} is not one of {METHODS}")
    if method == "auto":
        method = "dot" if dot_available() and graph.num_nodes <= 3000 else "layered"
    per_graph = _CACHE.setdefault(graph, {})
    hit = per_graph.get(method)
    if hit is not None:
        return hit
    pos = _dot_positions(graph) if method == "dot" else _layered_positions(graph)
    pos.setflags(write=False)
    per_graph[method] = pos
    return pos


def _layered_positions(graph: OpGraph) -> np.ndarray:
    g = graph.nx
    index = graph.index
    pos = np.zeros((graph.num_nodes, 2))
    for col, generation in enumerate(nx.topological_generations(g)):
        keyed = []
        for n in generation:
            preds = [index[p] for p in g.predecessors(n)]
            bary = float(np.mean(pos[preds, 1])) if preds else 0.0
            keyed.append((bary, index[n], n))
        keyed.sort()
        m = len(keyed)
        # Centred on 0 (no drift: chains stay straight); order from the barycentres.
        for row, (_, i, _n) in enumerate(keyed):
            pos[i, 0] = col
            pos[i, 1] = row - (m - 1) / 2.0
    return pos


_STDERR_LOCK = threading.Lock()


def quiet_layout(a) -> None:
    """``a.layout("dot")``, minus the harmless "Fontconfig warning" the wheel's bundled
    fontconfig prints on stderr when it reads the system's newer config (it would show in
    red under the notebook cell); anything else graphviz writes there is passed on."""
    import os
    import sys
    import tempfile

    try:
        fd = sys.__stderr__.fileno()
    except (AttributeError, OSError, ValueError):   # no real stderr (some embedders)
        a.layout(prog="dot")
        return
    with _STDERR_LOCK, tempfile.TemporaryFile() as tmp:
        saved = os.dup(fd)
        try:
            os.dup2(tmp.fileno(), fd)
            a.layout(prog="dot")
        finally:
            os.dup2(saved, fd)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    rest = [line for line in text.splitlines() if line.strip() and not line.startswith("Fontconfig warning")]
    if rest:
        sys.stderr.write("\n".join(rest) + "\n")


def _dot_positions(graph: OpGraph) -> np.ndarray:  # pragma: no cover - needs pygraphviz
    import pygraphviz  # noqa: F401  (optional dependency)

    a = nx.nx_agraph.to_agraph(nx.DiGraph(list(graph.nx.edges)))
    for n in graph.node_ids:
        a.add_node(n)
    a.graph_attr.update(rankdir="LR", nodesep="0.1", ranksep="0.3")
    quiet_layout(a)
    pos = np.zeros((graph.num_nodes, 2))
    for n, i in graph.index.items():
        x, y = (float(v) for v in a.get_node(n).attr["pos"].split(","))
        pos[i] = (x / 72.0, y / 72.0)
    return pos
