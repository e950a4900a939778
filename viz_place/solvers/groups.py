"""Colocation groups and device sets: helpers every solver folder shares.

A colocation group is a colour class with its backward twins, or a single node
(``CompiledProblem.groups``); every solver moves whole groups.

* :func:`allowed_devices` — the devices each group may use (support, pins,
  memory), raising :class:`~viz_place.errors.InfeasibleError` naming the group
  when none is left;
* :func:`group_label` — how messages name a group;
* :func:`group_sizes`, :func:`group_lat`, :func:`pinned_groups` — per-group memory,
  latency on a device, and pins by group;
* :func:`nonconvex_devices` — devices whose node set is not convex;
* :func:`pipeline_order`, :func:`device_cycle`, :func:`device_sequence` —
  pipeline splits (the DP's set): devices in an order where every ordering edge
  stays on a device or goes forward; :func:`set_text` names the sets
  (``bound_set``) in messages;
* :func:`host_assignment` — every group at its pin, else on the first device that runs all its nodes
  with unlimited memory (a host CPU).

>>> from viz_place.testing import random_instance
>>> from viz_place.cost import compile_problem
>>> inst = random_instance(3)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> len(allowed_devices(prob, inst.pins)) == len(prob.groups)
True
>>> nonconvex_devices(prob, [0] * prob.n)
set()
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..cost.compiled import CompiledProblem
from ..errors import InfeasibleError
from ..model import Cluster, OpGraph


def group_label(prob: CompiledProblem, g: int) -> str:
    members = prob.groups[g]
    first = prob.node_ids[members[0]]
    cc = prob.graph.node(first).color_class
    if len(members) == 1 or cc is None:
        return f"node {first!r}"
    return f"colour class {cc!r} (nodes {', '.join(repr(prob.node_ids[i]) for i in members[:4])}" + \
        (" ..." if len(members) > 4 else "") + ")"


def allowed_devices(prob: CompiledProblem, pins: dict[str, str], *,
                    restrict: Callable[[int], bool] | None = None) -> list[list[int]]:
    """Device indices each colocation group may go to (ordered)."""
    D = prob.num_devices
    index = prob.graph.index
    pinned_group: dict[int, int] = {}
    for node, dev in pins.items():
        g = int(prob.group[index[node]])
        pinned_group[g] = prob.cluster.device_index(dev)
    out: list[list[int]] = []
    for g, members in enumerate(prob.groups):
        m = list(members)
        lat_ok = np.isfinite(prob.lat[m, :]).all(axis=0)
        size = float(prob.size[m].sum())
        if g in pinned_group:
            cands = [pinned_group[g]]
        else:
            cands = [d for d in range(D) if restrict is None or restrict(d)]
        ok = [d for d in cands if lat_ok[d] and size <= prob.capacity[d] * (1 + 1e-12)]
        if not ok:
            where = f"pinned to {prob.device_names[cands[0]]}" if g in pinned_group else "on any device"
            unsupported = [prob.device_names[d] for d in cands if not lat_ok[d]]
            too_big = [prob.device_names[d] for d in cands if lat_ok[d]]
            why = []
            if unsupported:
                why.append(f"unsupported on {', '.join(unsupported)}")
            if too_big:
                why.append(f"its memory {size:.6g} exceeds the capacity of {', '.join(too_big)}")
            raise InfeasibleError(f"infeasible: {group_label(prob, g)} cannot be placed {where}: "
                                  + "; ".join(why or ["no device"]))
        out.append(ok)
    return out


def group_sizes(prob) -> list[float]:
    return [float(prob.size[list(g)].sum()) for g in prob.groups]


def group_lat(prob, g: int, d: int) -> float:
    return float(prob.lat[list(prob.groups[g]), d].sum())


def pinned_groups(prob, pins: dict[str, str]) -> dict[int, int]:
    """Group index -> pinned device index."""
    index = prob.graph.index
    return {int(prob.group[index[n]]): prob.cluster.device_index(d) for n, d in pins.items()}


def nonconvex_devices(prob: CompiledProblem, dev: Sequence[int], nodes: Sequence[bool] | None = None) -> set[int]:
    """Devices whose set (restricted to ``nodes`` if given, over all edges between them) is not convex."""
    n = prob.n
    use = [True] * n if nodes is None else list(nodes)
    anc = [0] * n
    for v in range(n):
        if not use[v]:
            continue
        m = 0
        for u in prob.preds[v]:
            if use[u]:
                m |= anc[u] | (1 << int(dev[u]))
        anc[v] = m
    desc = [0] * n
    bad = 0
    for v in range(n - 1, -1, -1):
        if not use[v]:
            continue
        m = 0
        for w in prob.succs[v]:
            if use[w]:
                m |= desc[w] | (1 << int(dev[w]))
        desc[v] = m
        bad |= anc[v] & m & ~(1 << int(dev[v]))
    return {d for d in range(prob.num_devices) if bad >> d & 1}


#: How messages name each ``bound_set`` (every "optimal" says which set it is proven for).
SET_TEXT = {"pipeline": "pipeline splits", "convex": "per-device convex sets", "any": "all placements"}


def set_text(bound_set: str) -> str:
    """``"among pipeline splits"``, ``"among per-device convex sets"``, ``"over all placements"``.

    >>> set_text("pipeline"), set_text("any")
    ('among pipeline splits', 'over all placements')
    """
    return ("over " if bound_set == "any" else "among ") + SET_TEXT.get(bound_set, bound_set)


def pipeline_order(prob: CompiledProblem):
    """The DP's order on the graph: ``(supernode of each node, supernode DAG edges)``.

    Supernodes are colocation groups (a colour class with its backward twins)
    with the cycles that contracting them creates fused; the edges run between
    forward nodes, plus the paper's mirrored ordering edges for backward classes
    without a forward node (:func:`viz_place.solvers.dp.contraction.contract`, no
    coarsening). A placement is a *pipeline split* when its devices can be put in
    an order in which every one of these edges stays on a device or goes forward
    (equivalently: the device sets are ``I1``, ``I2 - I1``, ... for a chain of ideals).
    """
    from .dp.contraction import contract   # (late: the DP package imports this module)
    ct = contract(prob.graph, prob.cluster, zero_cost_leaves="off")
    return ct.node_super, ct.edges


def _device_digraph(prob: CompiledProblem, dev: Sequence[int], order):
    import networkx as nx
    node_super, edges = order if order is not None else pipeline_order(prob)
    on: dict[int, set[int]] = {}
    for v, s in enumerate(node_super.tolist()):
        on.setdefault(int(s), set()).add(int(dev[v]))
    dg = nx.DiGraph()
    dg.add_nodes_from(range(prob.num_devices))
    for ds in on.values():          # one supernode on several devices: they must feed each other
        for a in ds:
            dg.add_edges_from((a, b) for b in ds if b != a)
    for s, t in edges:
        dg.add_edges_from((a, b) for a in on[s] for b in on[t] if a != b)
    return dg


def device_cycle(prob: CompiledProblem, dev: Sequence[int], order=None) -> list[int] | None:
    """Devices that feed each other in a cycle (so ``dev`` is no pipeline split), or ``None``.

    >>> from viz_place.model import OpGraph, Cluster
    >>> from viz_place.cost import compile_problem
    >>> g = OpGraph.from_records([{"id": i, "latency": {"cpu": 1.0}} for i in "abc"], [("a", "b"), ("b", "c")])
    >>> prob = compile_problem(g, Cluster.paper(0, 2, None))
    >>> device_cycle(prob, [0, 1, 1]) is None, device_cycle(prob, [0, 1, 0])
    (True, [0, 1])
    """
    import networkx as nx
    dg = _device_digraph(prob, dev, order)
    try:
        cycle = nx.find_cycle(dg)
    except nx.NetworkXNoCycle:
        return None
    return [int(u) for u, _ in cycle]


def device_sequence(prob: CompiledProblem, dev: Sequence[int], order=None) -> list[int]:
    """The devices of a pipeline split in pipeline order (unused ones last).

    Raises ``ValueError`` when ``dev`` is no pipeline split."""
    import networkx as nx
    dg = _device_digraph(prob, dev, order)
    if not nx.is_directed_acyclic_graph(dg):
        raise ValueError("not a pipeline split")
    used = set(int(d) for d in dev)
    seq = list(nx.lexicographical_topological_sort(dg))
    return [d for d in seq if d in used] + [d for d in seq if d not in used]


def host_assignment(graph: OpGraph, cluster: Cluster, pins=None) -> dict[str, str]:
    """Every colocation group at its pin, else on the first device (cluster order) that can run all its nodes and
    has unlimited memory; failing that the first that can run them; failing that the first device.

    >>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "fpga": 0.5}}], [])
    >>> host_assignment(g, Cluster.paper(2, 1, 10.0))
    {'a': 'cpu:0'}
    """
    pins = dict(pins or {})
    devices = cluster.devices
    assignment: dict[str, str] = {}
    for group in graph.colocation_groups:
        pinned = next((pins[n] for n in group if n in pins), None)
        if pinned is not None:
            target = pinned
        else:
            kinds_ok = [d for d in devices if all(graph.node(n).supported_on(d.cls.kind) for n in group)]
            unlimited = [d for d in kinds_ok if d.cls.memory is None]
            target = (unlimited or kinds_ok or list(devices))[0].name
        for n in group:
            assignment[n] = target
    return assignment
