"""Numeric arrays of one (graph, cluster) pair, shared by the evaluator and the solvers.

Everything the cost model needs, indexed by node position (``graph.node_ids``,
a topological order) and device position (``cluster.device_names``):

* ``lat[i, d]`` — latency of node ``i`` on device ``d`` (``inf`` if unsupported),
* ``size[i]``, ``tcost[i]`` (transfer cost of node ``i``'s output), ``backward[i]``,
* ``pays[d]``, ``link[d]``, ``capacity[d]`` (``inf`` = unlimited),
* ``esrc``, ``edst`` — data edges (artificial edges excluded: they carry nothing),
* ``preds``/``succs`` — adjacency lists over *all* edges (used for latency order),
* ``group[i]`` — colocation group index (colour classes, singletons otherwise).

Building is O(nodes x devices); the result is cached per (graph, cluster).

>>> from viz_place.model import OpGraph, Cluster
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 2.0, "fpga": 1.0}}], [])
>>> p = compile_problem(g, Cluster.paper(1, 1, None))
>>> p.lat.tolist()
[[1.0, 2.0]]
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Cluster, OpGraph


@dataclass(frozen=True, eq=False)
class CompiledProblem:
    graph: OpGraph
    cluster: Cluster
    node_ids: tuple[str, ...]
    device_names: tuple[str, ...]
    lat: np.ndarray
    size: np.ndarray
    tcost: np.ndarray
    backward: np.ndarray
    pays: np.ndarray
    link: np.ndarray
    capacity: np.ndarray
    esrc: np.ndarray
    edst: np.ndarray
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[int, ...], ...]
    data_preds: tuple[tuple[int, ...], ...]
    data_succs: tuple[tuple[int, ...], ...]
    group: np.ndarray
    groups: tuple[tuple[int, ...], ...]
    device_class: np.ndarray  # class index per device

    @property
    def n(self) -> int:
        return len(self.node_ids)

    @property
    def num_devices(self) -> int:
        return len(self.device_names)

    def to_index_array(self, placement) -> np.ndarray:
        """Device index per node (in node order) for a :class:`Placement` or mapping."""
        assignment = getattr(placement, "assignment", placement)
        dev_index = self.cluster.device_index
        return np.fromiter((dev_index(assignment[n]) for n in self.node_ids), dtype=np.int64, count=self.n)

    def to_assignment(self, dev: Any) -> dict[str, str]:
        names = self.device_names
        return {n: names[int(d)] for n, d in zip(self.node_ids, dev)}


_CACHE: "weakref.WeakKeyDictionary[OpGraph, dict[Cluster, CompiledProblem]]" = weakref.WeakKeyDictionary()


def compile_problem(graph: OpGraph, cluster: Cluster) -> CompiledProblem:
    """Arrays for ``graph`` on ``cluster`` (cached; both are immutable)."""
    per_graph = _CACHE.setdefault(graph, {})
    hit = per_graph.get(cluster)
    if hit is not None:
        return hit
    ids = graph.node_ids
    index = graph.index
    devices = cluster.devices
    n, D = len(ids), len(devices)
    nodes = [graph.node(i) for i in ids]
    lat = np.full((n, D), np.inf)
    class_names = [c.name for c in cluster.classes]
    for ci, cls in enumerate(cluster.classes):
        cols = [d for d, dev in enumerate(devices) if dev.cls.name == cls.name]
        if not cols:
            continue
        col = np.array([nd.latency.get(cls.kind, np.inf) for nd in nodes], dtype=float) / cls.speed
        lat[:, cols] = col[:, None]
    size = np.array([nd.size for nd in nodes], dtype=float)
    tcost = np.array([nd.transfer_cost for nd in nodes], dtype=float)
    backward = np.array([nd.backward for nd in nodes], dtype=bool)
    pays = np.array([d.cls.pays_communication for d in devices], dtype=bool)
    link = np.array([d.cls.link_factor for d in devices], dtype=float)
    capacity = np.array([np.inf if d.cls.memory is None else d.cls.memory for d in devices], dtype=float)
    g = graph.nx
    preds = [[] for _ in range(n)]
    succs = [[] for _ in range(n)]
    dpreds = [[] for _ in range(n)]
    dsuccs = [[] for _ in range(n)]
    es, ed = [], []
    for u, nbrs in g._succ.items():        # the adjacency itself: g.edges(data=True) order, without its views
        iu = index[u]
        su, du = succs[iu], dsuccs[iu]
        for v, a in nbrs.items():
            iv = index[v]
            preds[iv].append(iu)
            su.append(iv)
            if not a.get("artificial"):
                es.append(iu)
                ed.append(iv)
                dpreds[iv].append(iu)
                du.append(iv)
    groups = [tuple(index[m] for m in members) for members in graph.colocation_groups]
    group = np.empty(n, dtype=np.int64)
    if groups:
        group[np.fromiter((i for idx in groups for i in idx), dtype=np.int64, count=n)] = np.repeat(
            np.arange(len(groups)), [len(idx) for idx in groups])
    device_class = np.array([class_names.index(d.cls.name) for d in devices], dtype=np.int64)
    prob = CompiledProblem(
        graph=graph, cluster=cluster, node_ids=ids, device_names=cluster.device_names,
        lat=lat, size=size, tcost=tcost, backward=backward, pays=pays, link=link, capacity=capacity,
        esrc=np.array(es, dtype=np.int64), edst=np.array(ed, dtype=np.int64),
        preds=tuple(map(tuple, preds)), succs=tuple(map(tuple, succs)),
        data_preds=tuple(map(tuple, dpreds)), data_succs=tuple(map(tuple, dsuccs)),
        group=group, groups=tuple(groups), device_class=device_class,
    )
    for arr in (lat, size, tcost, backward, pays, link, capacity, group, device_class):
        arr.setflags(write=False)
    if len(per_graph) > 16:
        per_graph.clear()
    per_graph[cluster] = prob
    return prob
