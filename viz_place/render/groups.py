"""A hierarchy of groups over a graph's nodes, for drawing it collapsed and expanding by a tap.

Two sources, tried in this order:

* **module paths** — when the nodes carry ``layer`` ids like ``/h/0/attn`` (as
  the torch and ONNX importers give), one group per module, nested as the
  paths are. A module with a single op is not boxed, and a module whose only
  content is one sub-module is merged with it (``h/0``).
* **structure** — otherwise, the graph is cut where a single tensor flows
  (a *series* cut: in a topological order, a gap crossed only by the edges of
  one node, such as the end of a residual block), consecutive blocks are
  gathered into at most :data:`MAX_CHILDREN` groups, and a block with no
  such cut splits into its parallel branches (the weakly connected parts
  between its entry and exit). Regions with neither are cut into contiguous
  chunks of the topological order.

Group ids are ``"g0"`` (the root, the whole graph), ``"g1"``...; node members
are indices into ``graph.node_ids``. Hierarchies are cached per graph.

>>> from viz_place.samples import make_graph
>>> h = hierarchy(make_graph("residual", 40))
>>> h.source, h.root, len(h.members(h.root)) == 40
('structure', 'g0', True)
>>> len(set(h.visible_items(set()))) < 40 <= len(set(h.visible_items(h.all_groups())))
True
>>> len(set(h.visible_items(default_expanded(h, limit=30)))) <= 30
True
"""
from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..model import OpGraph
from ..model.components import weak_components

#: Most children a structural group gets (consecutive blocks are gathered beyond that).
MAX_CHILDREN = 12
#: Regions of at most this many nodes are not split further.
LEAF_SIZE = 6

_CACHE: "weakref.WeakKeyDictionary[OpGraph, Hierarchy]" = weakref.WeakKeyDictionary()


@dataclass
class Group:
    """One group: a label, its parent, child groups and the nodes directly in it."""

    id: str
    label: str
    parent: str | None
    children: list[str] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    size: int = 0


@dataclass
class Hierarchy:
    """Groups by id, the root id, and where the grouping came from (``"modules"``/``"structure"``)."""

    groups: dict[str, Group]
    root: str
    source: str
    num_nodes: int
    _members: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def members(self, gid: str) -> np.ndarray:
        """Every node index under group ``gid`` (sorted)."""
        hit = self._members.get(gid)
        if hit is None:
            g = self.groups[gid]
            parts = [np.asarray(g.nodes, dtype=np.int64)] + [self.members(c) for c in g.children]
            hit = self._members[gid] = np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        return hit

    def ancestors(self, gid: str) -> list[str]:
        """``gid``'s ancestors from its parent up to the root."""
        out = []
        p = self.groups[gid].parent
        while p is not None:
            out.append(p)
            p = self.groups[p].parent
        return out

    def group_of_node(self) -> list[str]:
        """The innermost group of every node."""
        out = [self.root] * self.num_nodes
        for g in self.groups.values():
            for i in g.nodes:
                out[i] = g.id
        return out

    def visible_items(self, expanded) -> list[str]:
        """Per node, what is drawn for it: ``"n<i>"`` (the node itself) or the id of the
        collapsed group that hides it. The root is always expanded."""
        out = [""] * self.num_nodes
        stack = [self.root]
        while stack:
            gid = stack.pop()
            g = self.groups[gid]
            if gid == self.root or gid in expanded:
                for i in g.nodes:
                    out[i] = f"n{i}"
                stack.extend(g.children)
            else:
                for i in self.members(gid):
                    out[int(i)] = gid
        return out

    def expanded_groups(self, expanded) -> list[str]:
        """The non-root groups drawn as open frames (expanded, with every ancestor expanded)."""
        out = []
        stack = list(self.groups[self.root].children)
        while stack:
            gid = stack.pop()
            if gid in expanded:
                out.append(gid)
                stack.extend(self.groups[gid].children)
        return sorted(out, key=lambda x: int(x[1:]))

    def path_to(self, node_index: int) -> list[str]:
        """The groups to expand (outermost first) so that node ``node_index`` is drawn itself."""
        gid = self.group_of_node()[node_index]
        chain = [gid] + self.ancestors(gid)
        return [g for g in reversed(chain) if g != self.root]

    def all_groups(self) -> list[str]:
        return [g for g in self.groups if g != self.root]


def hierarchy(graph: OpGraph) -> Hierarchy:
    """The group hierarchy of ``graph`` (module paths if any, else structure); cached."""
    hit = _CACHE.get(graph)
    if hit is None:
        hit = _module_hierarchy(graph)
        if hit is None:
            hit = _structural_hierarchy(graph)
        _CACHE[graph] = hit
    return hit


def default_expanded(h: Hierarchy, limit: int = 30) -> set[str]:
    """Groups to open so that the top of the hierarchy shows at most ``limit`` items:
    open the hierarchy level by level (every group of a depth at once, so one level of
    modules is boxed alike) while the count stays within ``limit``.

    The explorer opens graphs of more than 500 nodes, and graphs with module paths, this way.
    """
    expanded: set[str] = set()
    count = len(h.groups[h.root].children) + len(h.groups[h.root].nodes)
    level = list(h.groups[h.root].children)
    while level:
        extra = sum(len(h.groups[g].children) + len(h.groups[g].nodes) - 1 for g in level)
        if count + extra > limit:
            break
        expanded.update(level)
        count += extra
        level = [c for g in level for c in h.groups[g].children]
    return expanded


# --- module paths ---------------------------------------------------------------------

def _split_path(layer: str) -> list[str]:
    return [p for p in layer.replace(".", "/").split("/") if p]


def _module_hierarchy(graph: OpGraph) -> Hierarchy | None:
    nodes = graph.nodes()
    paths = [_split_path(n.layer) if n.layer else [] for n in nodes]
    if sum(1 for p in paths if p) < max(2, graph.num_nodes // 2):
        return None
    # a trie of path tuples
    trie: dict[tuple, dict] = {(): {"children": [], "nodes": []}}
    for i, p in enumerate(paths):
        for k in range(1, len(p) + 1):
            key = tuple(p[:k])
            if key not in trie:
                trie[key] = {"children": [], "nodes": []}
                trie[key[:-1]]["children"].append(key)
        trie[tuple(p)]["nodes"].append(i)
    if len(trie) < 3:
        return None
    groups: dict[str, Group] = {}
    counter = [0]

    def build(key: tuple, parent: str | None, label: str) -> tuple[str | None, list[int]]:
        """Returns (group id or None if flattened, nodes to hoist into the parent)."""
        t = trie[key]
        gid = f"g{counter[0]}"
        counter[0] += 1
        g = Group(gid, label, parent, nodes=list(t["nodes"]))
        groups[gid] = g
        for ck in t["children"]:
            # "h" / "0" reads as "h.0" (a numbered child is named with its parent)
            cid, hoisted = build(ck, gid, f"{key[-1]}.{ck[-1]}" if ck[-1].isdigit() and key else ck[-1])
            if cid is not None:
                g.children.append(cid)
            g.nodes.extend(hoisted)
        # merge a lone sub-module into this one ("h" + "0" -> "h/0")
        while parent is not None and not g.nodes and len(g.children) == 1:
            child = groups.pop(g.children[0])
            g.label = f"{g.label}/{child.label}"
            g.children, g.nodes = child.children, child.nodes
            for c in g.children:
                groups[c].parent = gid
        g.size = len(g.nodes) + sum(groups[c].size for c in g.children)
        if parent is not None and g.size <= 1:
            del groups[gid]
            return None, g.nodes
        return gid, []

    root, _ = build((), None, graph.name)
    # a root that is one module wide (e.g. "/m/..."): open it
    r = groups[root]
    while not r.nodes and len(r.children) == 1:
        child = groups.pop(r.children[0])
        r.children, r.nodes = child.children, child.nodes
        for c in r.children:
            groups[c].parent = root
    for g in groups.values():
        g.nodes.sort()
    return _renumber(groups, root, "modules", graph.num_nodes)


# --- structure ---------------------------------------------------------------------------

def _structural_hierarchy(graph: OpGraph) -> Hierarchy:
    g = graph.nx
    index = graph.index
    n = graph.num_nodes
    succ = [[] for _ in range(n)]
    for u, v in g.edges:
        succ[index[u]].append(index[v])
    pred = [[] for _ in range(n)]
    for u in range(n):
        for v in succ[u]:
            pred[v].append(u)
    # ALAP-leaning topological order: sources sit just before their first consumer
    topo = [index[x] for x in nx.lexicographical_topological_sort(g, key=lambda x: index[x])]
    height = [0] * n
    for u in reversed(topo):
        height[u] = 1 + max((height[v] for v in succ[u]), default=0)
    rank = {u: k for k, u in enumerate(topo)}
    order = sorted(range(n), key=lambda u: (-height[u], rank[u]))
    # keep it topological: a stable sort by (-height) is one (height strictly decreases along edges)
    ops = [x.op_type for x in graph.nodes()]
    groups: dict[str, Group] = {}
    counter = [0]

    def new_group(parent: str | None, label: str) -> Group:
        gid = f"g{counter[0]}"
        counter[0] += 1
        grp = Group(gid, label, parent)
        groups[gid] = grp
        return grp

    def summary(nodes: list[int]) -> str:
        top = Counter(ops[i] for i in nodes).most_common(2)
        return ", ".join(f"{op}\u00d7{c}" if c > 1 else op for op, c in top)

    def series_cuts(nodes: list[int]) -> list[list[int]]:
        """Split ``nodes`` (in topological order) at gaps crossed by one node's edges only."""
        pos = {u: k for k, u in enumerate(nodes)}
        m = len(nodes)
        cover = np.zeros(m + 2, dtype=np.int64)
        for u in nodes:
            far = max((pos[v] for v in succ[u] if v in pos), default=None)
            if far is not None and far >= pos[u] + 2:
                cover[pos[u] + 2] += 1       # u's edges cross the gaps before positions pos[u]+1 .. far;
                cover[far + 1] -= 1          # counted from pos[u]+2 on (the gap right after u is u's own)
        crossing = np.cumsum(cover)[:m]   # crossing[k]: sources other than node k-1 crossing gap k-1|k
        segments, cur = [], []
        for k, u in enumerate(nodes):
            if k > 0 and crossing[k] == 0:
                segments.append(cur)
                cur = []
            cur.append(u)
        segments.append(cur)
        return segments

    def branches(nodes: list[int]) -> list[list[int]]:
        comps = weak_components(nodes[1:-1], pred, succ)
        return sorted((sorted(c, key=lambda x: pos_all[x]) for c in comps), key=lambda c: pos_all[c[0]])

    def chunk(items: list[list[int]], k: int) -> list[list[list[int]]]:
        """Consecutive runs of ``items`` with about equal node counts, at most ``k`` runs."""
        total = sum(len(x) for x in items)
        out, cur, acc = [], [], 0
        for it in items:
            cur.append(it)
            acc += len(it)
            if acc >= total * (len(out) + 1) / k and len(out) < k - 1:
                out.append(cur)
                cur = []
        if cur:
            out.append(cur)
        return out

    def fill(grp: Group, nodes: list[int], depth: int) -> None:
        if len(nodes) <= LEAF_SIZE or depth > 40:
            grp.nodes.extend(nodes)
            return
        segs = series_cuts(nodes)
        if len(segs) > 1:
            if len(segs) > MAX_CHILDREN:
                for run in chunk(segs, MAX_CHILDREN):
                    flat = [u for s in run for u in s]
                    if len(run) == 1:
                        fill_series(grp, run, depth)
                        continue
                    child = new_group(grp.id, f"blocks {_block_no(segs, run)} \u00b7 {summary(flat)}")
                    fill(child, flat, depth + 1)
                return
            fill_series(grp, segs, depth)
            return
        comps = branches(nodes)
        if len(comps) > 1:
            grp.nodes.extend([nodes[0], nodes[-1]])
            for b_i, comp in enumerate(comps[:MAX_CHILDREN]):
                if len(comp) == 1:
                    grp.nodes.extend(comp)
                    continue
                child = new_group(grp.id, f"branch {b_i + 1} \u00b7 {summary(comp)}")
                fill(child, comp, depth + 1)
            for comp in comps[MAX_CHILDREN:]:
                grp.nodes.extend(comp)
            return
        # no structure found: contiguous chunks of the topological order
        k = min(MAX_CHILDREN, max(2, len(nodes) // LEAF_SIZE))
        step = -(-len(nodes) // k)
        for c_i in range(0, len(nodes), step):
            part = nodes[c_i:c_i + step]
            child = new_group(grp.id, f"part {c_i // step + 1} \u00b7 {summary(part)}")
            fill(child, part, depth + 1)

    def fill_series(grp: Group, segs: list[list[int]], depth: int) -> None:
        for k, seg in enumerate(segs):
            if len(seg) == 1:
                grp.nodes.extend(seg)
                continue
            child = new_group(grp.id, f"block {seg_no.get(seg[0], k + 1)} \u00b7 {summary(seg)}")
            fill(child, seg, depth + 1)

    pos_all = {u: k for k, u in enumerate(order)}
    top_segments = series_cuts(order)
    seg_no = {seg[0]: k + 1 for k, seg in enumerate(top_segments) if seg}

    def _block_no(segs, run):   # noqa: ANN001 - closure helper
        a, b = seg_no.get(run[0][0]), seg_no.get(run[-1][0])
        if a is None or b is None:
            return f"{segs.index(run[0]) + 1}\u2013{segs.index(run[-1]) + 1}"
        return f"{a}\u2013{b}" if a != b else str(a)

    root = new_group(None, graph.name)
    fill(root, order, 0)
    _collapse_trivial(groups, root.id)
    for grp in groups.values():
        grp.nodes.sort()
    return _renumber(groups, root.id, "structure", n)


def _collapse_trivial(groups: dict[str, Group], root: str) -> None:
    """Remove groups with a single child and no nodes (keep the child), and compute sizes."""
    def visit(gid: str) -> int:
        g = groups[gid]
        for c in list(g.children):
            visit(c)
        while gid != root and not g.nodes and len(g.children) == 1:
            child = groups.pop(g.children[0])
            g.children, g.nodes = child.children, child.nodes
            for c in g.children:
                groups[c].parent = gid
        g.size = len(g.nodes) + sum(groups[c].size for c in g.children)
        return g.size
    # children were registered via parent links only: rebuild child lists first
    for g in groups.values():
        g.children = []
    for gid, g in groups.items():
        if g.parent is not None:
            groups[g.parent].children.append(gid)
    visit(root)


def _renumber(groups: dict[str, Group], root: str, source: str, n: int) -> Hierarchy:
    """Ids ``g0`` (root), ``g1``... in depth-first order."""
    mapping: dict[str, str] = {}
    order = []
    stack = [root]
    while stack:
        gid = stack.pop()
        mapping[gid] = f"g{len(mapping)}"
        order.append(gid)
        stack.extend(reversed(groups[gid].children))
    out: dict[str, Group] = {}
    for gid in order:
        g = groups[gid]
        out[mapping[gid]] = Group(mapping[gid], g.label, mapping.get(g.parent) if g.parent else None,
                                  [mapping[c] for c in g.children], list(g.nodes), g.size)
    return Hierarchy(out, "g0", source, n)
