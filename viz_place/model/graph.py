"""The operator graph: a validated, immutable view over ``networkx.DiGraph``.

Node ids are strings. Node attributes (all validated by :func:`validate_graph`):

==================  ==========================================================
``name``            display name (defaults to the id)
``op_type``         operator type (``"MatMul"``, ``"layer"`` ...), default ``"op"``
``latency``         ``{device kind: time}``; a missing kind = unsupported there
``size``            memory the node needs on a memory-limited device (bytes)
``backward``        ``True`` for backward (gradient) nodes
``color_class``     colocation group: nodes sharing it share a device (or None)
``transfer_cost``   time to move the node's output between a device and host
``output_bytes``    bytes of the node's output, where known (or None)
``flops``           floating-point operations, where known (or None)
``artificial``      ``True`` for twins added by the loader (zero cost)
``layer``           layer id the op belongs to (for coarsening), or None
==================  ==========================================================

Edge attributes: ``bytes`` (or None) and ``artificial`` (structural edges that
carry no data and cost nothing). A transfer is priced per *source* node, as in
the paper: every device that receives ``u``'s output pays ``transfer_cost(u)``
once, however many edges lead there.

>>> g = OpGraph.from_records(
...     [{"id": "a", "latency": {"cpu": 2.0, "fpga": 1.0}, "transfer_cost": 0.5},
...      {"id": "b", "latency": {"cpu": 3.0}}],
...     [("a", "b")])
>>> g.num_nodes, g.num_edges, g.node("b").supported_on("fpga")
(2, 1, False)
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

import networkx as nx

from ..errors import GraphValidationError

NODE_FIELDS = (
    "name", "op_type", "latency", "size", "backward", "color_class",
    "transfer_cost", "output_bytes", "flops", "artificial", "layer",
)
EDGE_FIELDS = ("bytes", "artificial")


@dataclass(frozen=True)
class Node:
    """A read-only record of one operator (see the module docstring)."""

    id: str
    name: str
    op_type: str
    latency: Mapping[str, float]
    size: float
    backward: bool
    color_class: str | None
    transfer_cost: float
    output_bytes: float | None = None
    flops: float | None = None
    artificial: bool = False
    layer: str | None = None

    def supported_on(self, kind: str) -> bool:
        return kind in self.latency

    def to_attrs(self) -> dict[str, Any]:
        return {
            "name": self.name, "op_type": self.op_type, "latency": dict(self.latency),
            "size": self.size, "backward": self.backward, "color_class": self.color_class,
            "transfer_cost": self.transfer_cost, "output_bytes": self.output_bytes,
            "flops": self.flops, "artificial": self.artificial, "layer": self.layer,
        }


def _num(value: Any, where: str, *, allow_none: bool = False, default: float | None = 0.0, node: str | None = None,
         field: str | None = None) -> float | None:
    if value is None:
        if allow_none:
            return None
        if default is not None:
            return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GraphValidationError(f"{where} must be a number, got {value!r}", node=node, field=field)
    value = float(value)
    if math.isnan(value):
        raise GraphValidationError(f"{where} is NaN", node=node, field=field)
    if value < 0:
        raise GraphValidationError(f"{where} is negative ({value})", node=node, field=field)
    if math.isinf(value):
        raise GraphValidationError(f"{where} is infinite", node=node, field=field)
    return value


def _flag(value: Any, where: str, **names: Any) -> bool:
    """A boolean attribute: true/false (or 0/1); ``"maybe"`` or ``3`` are refused, not read as true."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise GraphValidationError(f"{where} must be true or false, got {value!r}", **names)


def _normalise_node(node_id: str, attrs: Mapping[str, Any]) -> Node:
    unknown = set(attrs) - set(NODE_FIELDS) - {"id"}
    if unknown:
        raise GraphValidationError(f"node {node_id!r}: unknown attribute(s) {sorted(unknown)}", node=node_id,
                                   field=sorted(unknown)[0])
    lat = attrs.get("latency", {})
    if not isinstance(lat, Mapping):
        raise GraphValidationError(f"node {node_id!r}: field 'latency' must map device kinds to times", node=node_id,
                                   field="latency")
    latency = {}
    for kind, t in lat.items():
        latency[str(kind)] = _num(t, f"node {node_id!r}: latency on {kind!r}", default=None, node=node_id,
                                  field="latency")
    cc = attrs.get("color_class")
    return Node(
        id=node_id,
        name=str(attrs.get("name") or node_id),
        op_type=str(attrs.get("op_type") or "op"),
        latency=MappingProxyType(latency),
        size=_num(attrs.get("size"), f"node {node_id!r}: field 'size'", node=node_id, field="size"),
        backward=_flag(attrs.get("backward", False), f"node {node_id!r}: field 'backward'", node=node_id,
                       field="backward"),
        color_class=None if cc is None else str(cc),
        transfer_cost=_num(attrs.get("transfer_cost"), f"node {node_id!r}: field 'transfer_cost'", node=node_id,
                           field="transfer_cost"),
        output_bytes=_num(attrs.get("output_bytes"), f"node {node_id!r}: field 'output_bytes'", node=node_id,
                          field="output_bytes", allow_none=True),
        flops=_num(attrs.get("flops"), f"node {node_id!r}: field 'flops'", node=node_id, field="flops",
                   allow_none=True),
        artificial=_flag(attrs.get("artificial", False), f"node {node_id!r}: field 'artificial'", node=node_id,
                         field="artificial"),
        layer=None if attrs.get("layer") is None else str(attrs.get("layer")),
    )


class OpGraph:
    """An immutable, validated operator graph.

    Build one with :meth:`from_records` (lists of node dicts and edges) or from
    a ``networkx.DiGraph`` whose node attributes follow the table above. The
    constructor validates (see :func:`validate_graph`) and adds the paper's
    artificial forward twins for orphaned backward colour classes, recording
    each in :attr:`notes`.

    ``default_cluster`` is the device set that came with the file (the paper's
    ``maxFPGAs``/``maxCPUs``/``maxSizePerFPGA``), or ``None``.

    ``source`` records where an imported graph came from, so the same model
    can be rebuilt (for a PyTorch import: ``spec``, ``overrides``, ``batch``,
    ``seq_len``, ``seed``, ``granularity``, ``depth``, ``tracer``,
    ``training``...), or ``None``. It must be a JSON-like mapping with string keys.
    """

    def __init__(self, graph: nx.DiGraph, *, name: str = "graph", default_cluster=None,
                 notes: Sequence[str] = (), source: Mapping[str, Any] | None = None) -> None:
        if not isinstance(graph, nx.DiGraph) or isinstance(graph, nx.MultiDiGraph):
            raise GraphValidationError("graph must be a networkx.DiGraph (not a multigraph)")
        g = nx.DiGraph()
        records: dict[str, Node] = {}
        for raw_id, attrs in graph.nodes(data=True):
            node_id = str(raw_id)
            if node_id in records:
                raise GraphValidationError(f"duplicate node id {node_id!r}", node=node_id)
            records[node_id] = _normalise_node(node_id, attrs)
        for u, v, attrs in graph.edges(data=True):
            unknown = set(attrs) - set(EDGE_FIELDS)
            if unknown:
                raise GraphValidationError(f"edge {u} -> {v}: unknown attribute(s) {sorted(unknown)}", edge=(u, v),
                                           field=sorted(unknown)[0])
        self.name = name
        self.default_cluster = default_cluster
        self.notes: list[str] = list(notes)
        self.source: dict[str, Any] | None = _check_source(source)
        for node_id, rec in records.items():
            g.add_node(node_id, **rec.to_attrs())
        for u, v, attrs in graph.edges(data=True):
            g.add_edge(str(u), str(v),
                       bytes=_num(attrs.get("bytes"), f"edge {u} -> {v}: field 'bytes'", allow_none=True),
                       artificial=_flag(attrs.get("artificial", False), f"edge {u} -> {v}: field 'artificial'",
                                        edge=(str(u), str(v)), field="artificial"))
        validate_graph(g)
        self.notes.extend(_add_artificial_forward_twins(g))
        nx.freeze(g)
        self._g = g
        self._nodes = {n: Node(id=n, **{k: g.nodes[n][k] for k in NODE_FIELDS}) for n in g.nodes}

    # --- construction helpers ---------------------------------------------
    @classmethod
    def from_records(cls, nodes: Iterable[Mapping[str, Any]], edges: Iterable[Any], **kwargs: Any) -> "OpGraph":
        """Build from node dicts (each with ``id``) and edges ``(u, v)`` or ``(u, v, attrs)``.

        Duplicate ids and edges to unknown nodes are rejected here, by name.
        """
        g = nx.DiGraph()
        for i, rec in enumerate(nodes):
            if not isinstance(rec, Mapping) or "id" not in rec:
                raise GraphValidationError(f"node #{i}: must be an object with an 'id'")
            node_id = str(rec["id"])
            if node_id in g:
                raise GraphValidationError(f"duplicate node id {node_id!r}", node=node_id)
            g.add_node(node_id, **{k: v for k, v in rec.items() if k != "id"})
        for e in edges:
            u, v, attrs = (e[0], e[1], e[2] if len(e) > 2 else {})
            u, v = str(u), str(v)
            for end, label in ((u, "source"), (v, "destination")):
                if end not in g:
                    raise GraphValidationError(f"edge {u} -> {v}: unknown {label} node {end!r}", edge=(u, v), node=end)
            if g.has_edge(u, v):
                raise GraphValidationError(f"edge {u} -> {v}: duplicate edge", edge=(u, v))
            g.add_edge(u, v, **attrs)
        return cls(g, **kwargs)

    # --- read-only access -----------------------------------------------
    @property
    def nx(self) -> nx.DiGraph:
        """The underlying (frozen) ``networkx.DiGraph``."""
        return self._g

    @cached_property
    def node_ids(self) -> tuple[str, ...]:
        """Node ids in a deterministic topological order (ties by insertion)."""
        # networkx's lexicographical_topological_sort with the insertion index as key (unique, so the same order),
        # without its per-node generator overhead
        g = self._g
        position = self._insertion
        names = list(g.nodes)
        # when every edge goes forward in insertion order (files usually list nodes so), that order is the answer:
        # the smallest available position is then always the next one
        if all(position[u] < position[v] for u, nbrs in g._succ.items() for v in nbrs):
            return tuple(names)
        indeg = [len(g._pred[n]) for n in names]
        heap = [i for i, d in enumerate(indeg) if d == 0]
        heapq.heapify(heap)
        out = []
        while heap:
            i = heapq.heappop(heap)
            n = names[i]
            out.append(n)
            for w in g._succ[n]:
                j = position[w]
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, j)
        if len(out) != len(names):   # validate_graph refuses cycles; keep networkx's error if one slipped through
            return tuple(nx.lexicographical_topological_sort(g, key=self._order_key))
        return tuple(out)

    @cached_property
    def _insertion(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self._g.nodes)}

    def _order_key(self, n: str) -> int:
        return self._insertion[n]

    @cached_property
    def index(self) -> dict[str, int]:
        """Node id -> position in :attr:`node_ids`."""
        return {n: i for i, n in enumerate(self.node_ids)}

    def node(self, node_id: str) -> Node:
        try:
            return self._nodes[str(node_id)]
        except KeyError:
            raise GraphValidationError(f"unknown node {node_id!r}", node=node_id) from None

    def has_node(self, node_id: str) -> bool:
        return str(node_id) in self._nodes

    def nodes(self) -> list[Node]:
        return [self._nodes[n] for n in self.node_ids]

    @property
    def edges(self) -> list[tuple[str, str]]:
        return list(self._g.edges)

    @property
    def num_nodes(self) -> int:
        return self._g.number_of_nodes()

    @property
    def num_edges(self) -> int:
        return self._g.number_of_edges()

    def predecessors(self, node_id: str) -> list[str]:
        return list(self._g.predecessors(node_id))

    def successors(self, node_id: str) -> list[str]:
        return list(self._g.successors(node_id))

    @cached_property
    def is_training(self) -> bool:
        return any(n.backward for n in self._nodes.values())

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        """Device kinds some node has a latency for."""
        return tuple(sorted({k for n in self._nodes.values() for k in n.latency}))

    @cached_property
    def colocation_groups(self) -> tuple[tuple[str, ...], ...]:
        """Groups of nodes that must share a device (colour classes; singletons otherwise),
        in topological order of their first node."""
        by_cc: dict[str, list[str]] = {}
        groups: list[list[str]] = []
        for n in self.node_ids:
            cc = self._nodes[n].color_class
            if cc is None:
                groups.append([n])
            elif cc in by_cc:
                by_cc[cc].append(n)
            else:
                by_cc[cc] = [n]
                groups.append(by_cc[cc])
        return tuple(tuple(g) for g in groups)

    @cached_property
    def total_flops(self) -> float | None:
        vals = [n.flops for n in self._nodes.values() if not n.artificial]
        if not vals or any(v is None for v in vals):
            return None
        return float(sum(vals))

    def __repr__(self) -> str:
        return f"OpGraph({self.name!r}, nodes={self.num_nodes}, edges={self.num_edges})"

    def to_records(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Node dicts and edge dicts, the inverse of :meth:`from_records`."""
        nodes = [{"id": n.id, **n.to_attrs()} for n in self.nodes()]
        edges = [{"source": u, "target": v, **self._g.edges[u, v]} for u, v in self._g.edges]
        return nodes, edges


#: Largest total of a figure over the graph (latency per device kind, size, transfer cost) that is
#: accepted. Solvers add and subtract such sums in double precision; past this the small figures are
#: lost next to a huge one (``1e308 + 7 - 1e308 == 0``) or the sum overflows.
MAX_TOTAL = 1e15


def check_totals(g: nx.DiGraph) -> None:
    """Refuse a graph whose latencies (per kind), sizes or transfer costs sum past :data:`MAX_TOTAL`,
    naming the node with the largest such figure.

    >>> g = nx.DiGraph()
    >>> g.add_node("a", latency={"cpu": 1e308}, size=0.0, transfer_cost=0.0)
    >>> check_totals(g)
    Traceback (most recent call last):
    ...
    viz_place.errors.GraphValidationError: node 'a': latency on 'cpu' 1e+308 brings the graph's total to 1e+308, above the largest total accepted (1e+15): such sums lose the small figures in floating point
    """
    totals: dict[str, list] = {}   # figure -> [total, largest value, its node]
    fields: dict[str, str] = {}

    def add(what: str, node, value: float, field: str) -> None:
        fields[what] = field
        t = totals.setdefault(what, [0.0, -1.0, node])
        t[0] += value
        if value > t[1]:
            t[1], t[2] = value, node
    for n, a in g.nodes(data=True):
        for kind, t in (a.get("latency") or {}).items():
            add(f"latency on {kind!r}", n, float(t), "latency")
        add("field 'size'", n, float(a.get("size") or 0.0), "size")
        add("field 'transfer_cost'", n, float(a.get("transfer_cost") or 0.0), "transfer_cost")
    for what, (total, value, node) in totals.items():
        if not total <= MAX_TOTAL:
            raise GraphValidationError(
                f"node {node!r}: {what} {value:.6g} brings the graph's total to {total:.6g}, above the largest "
                f"total accepted ({MAX_TOTAL:.6g}): such sums lose the small figures in floating point",
                node=str(node), field=fields[what])


def _check_source(source: Any) -> dict[str, Any] | None:
    if source is None:
        return None
    if not isinstance(source, Mapping) or not all(isinstance(k, str) for k in source):
        raise GraphValidationError(f"graph field 'source' must be an object with string keys, got {source!r:.80}")
    return dict(source)


def validate_graph(g: nx.DiGraph) -> None:
    """Reject malformed graphs with a message naming the culprit.

    Checks: at least one node, self-loops, cycles (naming one),
    negative/NaN/infinite numbers and missing latencies (done while normalising
    attributes), backward -> forward edges, totals past :data:`MAX_TOTAL`.
    """
    if g.number_of_nodes() == 0:
        raise GraphValidationError("graph has no nodes: there is nothing to place", field="nodes")
    check_totals(g)
    for u, v in nx.selfloop_edges(g):
        raise GraphValidationError(f"edge {u} -> {v}: self-loop", edge=(u, v), node=u)
    if not nx.is_directed_acyclic_graph(g):
        cycle = nx.find_cycle(g)
        path = " -> ".join([str(u) for u, _ in cycle] + [str(cycle[0][0])])
        raise GraphValidationError(f"graph has a cycle: {path}", edge=(cycle[0][0], cycle[0][1]), node=cycle[0][0])
    for u, v in g.edges:
        if g.nodes[u].get("backward") and not g.nodes[v].get("backward"):
            raise GraphValidationError(f"edge {u} -> {v}: goes from a backward node to a forward node", edge=(u, v))


def _add_artificial_forward_twins(g: nx.DiGraph) -> list[str]:
    """The paper's rule for backward colour classes without a forward node.

    Each such class gets an artificial zero-cost forward node (supported on
    every kind, no memory, no edges), so that "backward nodes ride with their
    forward twin" holds everywhere. Returns a note per twin added.
    """
    fwd_of_cc: dict[str, str] = {}
    orphans: dict[str, str] = {}
    for n, a in g.nodes(data=True):
        cc = a.get("color_class")
        if a.get("backward"):
            continue
        if cc is not None:
            fwd_of_cc.setdefault(cc, n)
    notes: list[str] = []
    twin_of_cc: dict[str, str] = {}
    for n, a in list(g.nodes(data=True)):
        if not a.get("backward"):
            continue
        cc = a.get("color_class")
        if cc is None:
            cc = f"__bwd_{n}"
            g.nodes[n]["color_class"] = cc
        if cc in fwd_of_cc:
            continue
        if cc not in twin_of_cc:
            twin = f"__fwd_twin_{cc}"
            while twin in g:
                twin += "_"
            g.add_node(twin, name=twin, op_type="artificial", latency={}, size=0.0, backward=False,
                       color_class=cc, transfer_cost=0.0, output_bytes=None, flops=0.0, artificial=True,
                       layer=None)
            twin_of_cc[cc] = twin
            fwd_of_cc[cc] = twin
            notes.append(f"backward node {n!r} (colour class {cc!r}) has no forward twin: "
                         f"added artificial zero-cost forward node {twin!r}")
        orphans[n] = cc
    # Artificial twins run everywhere at zero cost. They get no edges here: the
    # exact solvers add the paper's mirrored ordering constraints when they
    # contract colour classes (and fuse any cycles that creates).
    for twin in twin_of_cc.values():
        g.nodes[twin]["latency"] = {k: 0.0 for k in _all_kinds(g)}
    return notes


def _all_kinds(g: nx.DiGraph) -> set[str]:
    return {k for _, a in g.nodes(data=True) for k in a.get("latency", {})}
