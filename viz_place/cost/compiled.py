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
        idx = np.asarray(dev).astype(np.int64, copy=False).tolist()   # int() of each entry, in one call
        return {n: names[d] for n, d in zip(self.node_ids, idx)}


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
    n = len(ids)
    nodes = graph.nodes()
    inf = np.inf
    # latency per class (its kind's figure / its speed), one column per device: a class's devices are consecutive
    per_class = [[nd.latency.get(cls.kind, inf) / cls.speed for nd in nodes] for cls in cluster.classes]
    lat = np.repeat(np.array(per_class, dtype=float).reshape(len(per_class), n).T,
                    [cls.count for cls in cluster.classes], axis=1)
    size = np.array([nd.size for nd in nodes], dtype=float)
    tcost = np.array([nd.transfer_cost for nd in nodes], dtype=float)
    backward = np.array([nd.backward for nd in nodes], dtype=bool)
    pays = np.array([d.cls.pays_communication for d in devices], dtype=bool)
    link = np.array([d.cls.link_factor for d in devices], dtype=float)
    capacity = np.array([inf if d.cls.memory is None else d.cls.memory for d in devices], dtype=float)
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[tuple[int, ...]] = [()] * n
    dpreds: list[list[int]] = [[] for _ in range(n)]
    dsuccs: list[tuple[int, ...]] = [()] * n
    es, ed = [], []
    for u, nbrs in graph.nx._succ.items():   # the adjacency itself: g.edges(data=True) order, without its views
        iu = index[u]
        row, data = [], []
        for v, a in nbrs.items():
            iv = index[v]
            row.append(iv)
            preds[iv].append(iu)
            if not a.get("artificial"):
                data.append(iv)
                dpreds[iv].append(iu)
        succs[iu] = tuple(row)
        dsuccs[iu] = tuple(data)
        es.extend([iu] * len(data))
        ed.extend(data)
    groups = [tuple(map(index.__getitem__, members)) for members in graph.colocation_groups]
    group_of = [0] * n
    for gi, idx in enumerate(groups):
        for i in idx:
            group_of[i] = gi
    group = np.array(group_of, dtype=np.int64)
    class_of = {c.name: ci for ci, c in enumerate(cluster.classes)}
    device_class = np.array([class_of[d.cls.name] for d in devices], dtype=np.int64)
    prob = CompiledProblem(
        graph=graph, cluster=cluster, node_ids=ids, device_names=cluster.device_names,
        lat=lat, size=size, tcost=tcost, backward=backward, pays=pays, link=link, capacity=capacity,
        esrc=np.array(es, dtype=np.int64), edst=np.array(ed, dtype=np.int64),
        preds=tuple(map(tuple, preds)), succs=tuple(succs),
        data_preds=tuple(map(tuple, dpreds)), data_succs=tuple(dsuccs),
        group=group, groups=tuple(groups), device_class=device_class,
    )
    for arr in (lat, size, tcost, backward, pays, link, capacity, group, device_class):
        arr.setflags(write=False)
    if len(per_graph) > 16:
        per_graph.clear()
    per_graph[cluster] = prob
    return prob
