"""Preprocessing for the exact DP: contract a training/inference graph to a DAG of *supernodes*.

Steps (the paper's, each keeping the optimum over contiguous placements):

1. **Colour classes** are contracted: every colocation group (forward nodes and
   their backward twins) becomes one supernode. The DAG on supernodes is built
   from edges between *forward* nodes only; backward nodes ride along.
2. **Orphaned backward classes** (whose forward node is an artificial twin
   added by :class:`~viz_place.model.OpGraph`) get the paper's mirrored
   ordering edges: for a backward edge ``ub -> vb`` with an orphaned end, an
   edge ``fwd(vb) -> fwd(ub)``.
3. **Cycles** created by steps 1–2 are fused (a contiguous set holding two
   nodes of a cycle holds the whole cycle).
4. Optional coarsenings (change the optimum, documented as such):
   ``contract_layers`` merges nodes sharing a ``layer`` id, ``linearize`` adds
   a chain along a topological order (then there are only ``K + 1`` ideals).
5. **Zero-cost leaves** are merged into their only neighbour: a supernode with
   no pin, zero size, zero latency on every device kind of
   the cluster, adjacent (by any edge) to exactly one other supernode. Moving
   it next to that neighbour never raises any device's load, so the optimum is
   kept (the authors' "trivial node optimisation", made safe for memory and pins).
   A non-zero size is allowed when the whole graph fits in every memory-limited
   device (memory can then never bind), which is the case on the paper's inputs.

>>> from viz_place.model import OpGraph, Cluster
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}, {"id": "b", "latency": {"cpu": 1.0}}],
...                          [("a", "b")])
>>> c = contract(g, Cluster.paper(1, 1, None))
>>> c.num, c.edges
(2, ((0, 1),))
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ...cost import compile_problem
from ...errors import InternalError
from ...model import Cluster, OpGraph


@dataclass(frozen=True)
class Contracted:
    """Supernodes in topological order.

    ``members[s]`` — node positions (in ``prob.node_ids``) of supernode ``s``;
    ``node_super[i]`` — supernode of node ``i``; ``edges`` — DAG edges
    ``(s, t)`` with ``s < t``; ``reasons`` — notes on what was fused and why.
    """

    num: int
    members: tuple[np.ndarray, ...]
    node_super: np.ndarray
    edges: tuple[tuple[int, int], ...]
    reasons: tuple[str, ...] = field(default=())
    unsafe_merges: int = 0   # zero-cost leaves merged although their size could break a memory limit

    @property
    def pred_masks(self) -> list[int]:
        """Bitmask (Python int) of the direct predecessors of each supernode."""
        masks = [0] * self.num
        for s, t in self.edges:
            masks[t] |= 1 << s
        return masks

    @property
    def succ_lists(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.num)]
        for s, t in self.edges:
            out[s].append(t)
        return out


class _UnionFind:
    def __init__(self, n: int, parent: list[int] | None = None) -> None:
        self.parent = list(range(n)) if parent is None else parent

    def roots(self) -> list[int]:
        """The root of every element (``find`` of each, in plain Python: faster than arrays at every size the
        DP reaches)."""
        p = self.parent
        out = p[:]
        for a, r in enumerate(out):
            if p[r] != r:
                r = self.find(r)
                p[a] = r
                out[a] = r
        return out

    def find(self, a: int) -> int:
        p = self.parent
        while p[a] != a:
            p[a] = p[p[a]]
            a = p[a]
        return a

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True


def contract(graph: OpGraph, cluster: Cluster, *, pins: dict[str, str] | None = None,
             contract_layers: bool = False, linearize: bool = False,
             zero_cost_leaves: str = "safe") -> Contracted:
    """Contract ``graph`` to a DAG of supernodes for the DP (see the module docstring).

    ``zero_cost_leaves``: ``"safe"`` (step 5 as above), ``"always"`` (also
    merge leaves with a size when memory could bind: the authors' rule, which
    may then miss the optimum), ``"off"``.
    """
    prob = compile_problem(graph, cluster)
    n = prob.n
    backward = prob.backward.tolist()
    # colour classes: every member joins its group's first (smallest) member, the root union() would give it
    parent = [0] * n
    for members in prob.groups:
        first = members[0]
        for m in members:
            parent[m] = first
    uf = _UnionFind(n, parent)
    reasons: list[str] = []
    if contract_layers:
        by_layer: dict[str, int] = {}
        for i, nid in enumerate(prob.node_ids):
            layer = graph.node(nid).layer
            if layer is None:
                continue
            if layer in by_layer:
                uf.union(by_layer[layer], i)
            else:
                by_layer[layer] = i
    nodes = graph.nodes()        # in prob.node_ids order
    artificial = [node.artificial for node in nodes]
    # orphaned colour classes: every forward member is an artificial twin
    orphan = [False] * n
    for members in prob.groups:
        if all(artificial[m] for m in members if not backward[m]):
            for m in members:
                orphan[m] = True
    # every edge, artificial too: between forward nodes (kept as is), and between backward nodes with an orphaned
    # end (mirrored: the ordering edge fwd(vb) -> fwd(ub))
    fwd_edges, mirrored = [], []
    for u, succ in enumerate(prob.succs):
        if backward[u]:
            for v in succ:
                if backward[v] and (orphan[u] or orphan[v]):
                    mirrored.append((v, u))
        else:
            fwd_edges.extend((u, v) for v in succ if not backward[v])

    def forward_edges() -> set[tuple[int, int]]:
        """Edges between the roots of forward nodes, and the mirrored ordering edge of every backward edge with an
        orphaned end."""
        root = uf.roots()
        out = {(root[a], root[b]) for a, b in fwd_edges}
        out.update((root[a], root[b]) for a, b in mirrored)
        return {e for e in out if e[0] != e[1]}

    # fuse cycles until the supernode graph is a DAG (a topological order exists: the common case, no networkx)
    while True:
        roots = sorted(set(uf.roots()))
        edges = forward_edges()
        if lexicographic_order(roots, edges) is not None:
            break
        dg = nx.DiGraph()
        dg.add_nodes_from(roots)
        dg.add_edges_from(edges)
        for comp in nx.strongly_connected_components(dg):
            if len(comp) > 1:
                comp = sorted(comp)
                names = [prob.node_ids[c] for c in comp[:4]]
                reasons.append(f"fused {len(comp)} groups into one (cycle after contracting colour classes: "
                               f"{', '.join(names)}{' ...' if len(comp) > 4 else ''})")
                for c in comp[1:]:
                    uf.union(comp[0], c)
    unsafe = 0
    if zero_cost_leaves != "off":
        unsafe = _merge_zero_cost_leaves(graph, cluster, prob, uf, pins or {}, always=zero_cost_leaves == "always",
                                         nodes=nodes)
        roots = sorted(set(uf.roots()))
        edges = forward_edges()
    order = lexicographic_order(roots, edges)
    if order is None:
        raise InternalError("dp: merging zero-cost leaves created a cycle among supernodes")
    pos = {r: k for k, r in enumerate(order)}
    edges = {(pos[a], pos[b]) for a, b in edges}
    if linearize:
        edges |= {(k, k + 1) for k in range(len(order) - 1)}
    node_super = [pos[r] for r in uf.roots()]
    by_super: list[list[int]] = [[] for _ in order]       # node positions grouped by supernode, ascending
    for i, s in enumerate(node_super):
        by_super[s].append(i)
    members = tuple(np.array(m, dtype=np.int64) for m in by_super)
    return Contracted(num=len(order), members=members, node_super=np.array(node_super, dtype=np.int64),
                      edges=tuple(sorted(edges)), reasons=tuple(reasons), unsafe_merges=unsafe)


def lexicographic_order(nodes: list[int], edges: set[tuple[int, int]]) -> list[int] | None:
    """The topological order taking the smallest available node first (as networkx's
    ``lexicographical_topological_sort``), or ``None`` when ``edges`` have a cycle.

    >>> lexicographic_order([0, 1, 2, 3], {(2, 1), (0, 3)}), lexicographic_order([0, 1], {(0, 1), (1, 0)})
    ([0, 2, 1, 3], None)
    """
    indeg = dict.fromkeys(nodes, 0)
    out: dict[int, list[int]] = {v: [] for v in nodes}
    for a, b in edges:
        indeg[b] += 1
        out[a].append(b)
    heap = [v for v in nodes if not indeg[v]]
    heapq.heapify(heap)
    order = []
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        v = pop(heap)
        order.append(v)
        for w in out[v]:
            indeg[w] -= 1
            if not indeg[w]:
                push(heap, w)
    return order if len(order) == len(nodes) else None


def _merge_zero_cost_leaves(graph: OpGraph, cluster: Cluster, prob, uf: _UnionFind, pins: dict[str, str], *,
                            always: bool = False, nodes=None) -> int:
    """Merge zero-cost supernodes adjacent to a single other supernode (see step 5).

    ``nodes``: ``graph.nodes()`` when the caller has it. Returns how many merges moved memory that could break a
    limit (only with ``always``)."""
    n = prob.n
    kinds = {c.kind for c in cluster.classes}
    pinned = {prob.graph.index[p] for p in pins}
    # memory can never bind when the whole graph fits on every memory-limited device
    caps = [c.memory for c in cluster.classes if c.memory is not None and c.count > 0]
    memory_free = not caps or float(prob.size.sum()) <= min(caps)
    unsafe = 0
    # candidate nodes (forward or backward): zero latency on every kind, zero size (or memory never binds), not pinned
    ok_node = []
    for i, node in enumerate(graph.nodes() if nodes is None else nodes):
        ok = (node.size == 0 or memory_free or always) and i not in pinned
        if ok:
            lat = node.latency
            for k in kinds:
                if lat.get(k, math.inf) != 0:
                    ok = False
                    break
        ok_node.append(ok)
    members: dict[int, list[int]] = {}
    all_ok: dict[int, bool] = {}
    for i, r in enumerate(uf.roots()):
        members.setdefault(r, []).append(i)
        all_ok[r] = all_ok.get(r, True) and ok_node[i]

    def sole_neighbour(root: int) -> int | None:
        neigh = set()
        for i in members[root]:
            for j in prob.succs[i] + prob.preds[i]:
                rj = uf.find(j)
                if rj != root:
                    neigh.add(rj)
            if len(neigh) > 1:
                return None
        return neigh.pop() if neigh else None

    # Merge the qualifying root with the smallest member first, as a rescan from the start after every merge would:
    # a merge only changes whether the merged root qualifies (the leaf's one neighbour is the one it joins).
    heap = [(mem[0], r) for r, mem in members.items() if all_ok[r]]
    heapq.heapify(heap)
    while heap:
        _, root = heapq.heappop(heap)
        if uf.find(root) != root:
            continue                                  # merged away since it was queued
        other = sole_neighbour(root)
        if other is None:
            continue
        mem = members.pop(root)
        uf.union(root, other)
        unsafe += not memory_free and any(prob.size[i] > 0 for i in mem)
        merged = uf.find(root)
        members[merged] = sorted(mem + members.pop(other))
        all_ok[merged] = all_ok.pop(root) and all_ok.pop(other)
        if all_ok[merged]:
            heapq.heappush(heap, (members[merged][0], merged))
    return unsafe
