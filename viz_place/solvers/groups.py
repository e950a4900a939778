"""Colocation groups and device sets: helpers every solver folder shares.

A colocation group is a colour class with its backward twins, or a single node
(``CompiledProblem.groups``); every solver moves whole groups.

* :func:`allowed_devices` — the devices each group may use (support, pins,
  memory), raising :class:`~viz_place.errors.InfeasibleError` naming the group
  when none is left;
* :func:`group_label` — how messages name a group;
* :func:`group_sizes`, :func:`group_lat`, :func:`pinned_groups` — per-group memory,
  latency on a device, and pins by group;
* :func:`nonconvex_devices` — devices whose node set is not convex.

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
