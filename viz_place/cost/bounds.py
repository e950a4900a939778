"""Lower bounds that hold for every valid placement, computed in near-linear time.

:func:`simple_lower_bound` returns ``(value, source_text)``: no placement of the
graph on the cluster that keeps every op on a device that supports it and every
device within its memory (pins or not, contiguous or not) has a smaller
objective. The bounds, for ``"max_load"``:

* **largest unit** — a colocation group (a colour class with its backward twins,
  or a single op) runs on one device, so some device carries at least the
  group's compute at its fastest allowed device (one that runs every member and
  holds its memory); for training graphs this is the merged forward + backward
  work of the class;
* **total work / total speed** — a device of speed ``s`` doing work ``w``
  (latency times speed, at the group's best kind) takes ``w / s``; the loads of
  all devices that can run anything add up to at least the total work, so the
  max-load is at least total work / their total speed; and at least the sum of
  the groups' fastest latencies / the number of such devices;
* **packing** (:mod:`.packing`) — groups are indivisible: pigeonhole and
  bin-packing arguments over a subset of the devices (e.g. the accelerators,
  when the CPU is too slow to take a group below the bound).

Communication only adds to a load, so these hold with or without it (and with
``overlap``). ``"max_forward_plus_max_backward"`` is at least the max-load, so it
gets the same bound. ``"latency"``: the longest chain of fastest latencies
(each op starts after its predecessors and takes at least its fastest
allowed latency; units give nothing more, since CPU-like devices run their ops
in parallel).

>>> from viz_place.model import OpGraph, Cluster
>>> g = OpGraph.from_records([
...     {"id": "a", "latency": {"cpu": 4.0, "fpga": 2.0}},
...     {"id": "b", "latency": {"cpu": 4.0, "fpga": 2.0}},
...     {"id": "c", "latency": {"cpu": 9.0}}], [("a", "b"), ("b", "c")])
>>> simple_lower_bound(g, Cluster.paper(2, 1, None))
(9.0, "largest unit: node 'c' takes at least 9 on its fastest allowed device")
>>> value, why = simple_lower_bound(g, Cluster.paper(2, 1, None), "latency")
>>> value, why.split(":")[0]
(13.0, 'longest chain of fastest latencies')
"""
from __future__ import annotations

import math

import numpy as np

from ..model import Cluster, OpGraph, canonical_objective
from .compiled import compile_problem
from .packing import packing_lower_bound


def gap(value: float | None, bound: float | None) -> float | None:
    """The gap, in the one sense the tool uses everywhere: ``value / bound - 1``.

    It is how far a placement's value lies above a proven lower bound: 0.01 means "at most
    1 % above the optimum". Solver messages, progress reports, the explorer, sweeps, the
    benchmarks and the MILPs' ``gap`` option (stop once the gap is at most it) all mean
    this. Clipped at 0 (rounding); ``None`` when either side is unknown or not finite, or
    the bound is not positive (0 when value and bound are both 0).

    >>> gap(11.0, 10.0), gap(9.999999999, 10.0), gap(1.0, 0.0), gap(0.0, 0.0), gap(None, 1.0)
    (0.10000000000000009, 0.0, None, 0.0, None)
    """
    if not (_finite(value) and _finite(bound)):
        return None
    if bound <= 0:
        return 0.0 if abs(value) < 1e-12 and abs(bound) < 1e-12 else None
    return max(0.0, value / bound - 1.0)


def _finite(x) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and math.isfinite(x)


def _group_name(prob, g: int) -> str:
    members = prob.groups[g]
    first = prob.node_ids[members[0]]
    cc = prob.graph.node(first).color_class
    if len(members) == 1 or cc is None:
        return f"node {first!r}"
    return f"colour class {cc!r} ({len(members)} nodes)"


def _group_latencies(prob) -> np.ndarray:
    """Latency of each group on each device, ``inf`` where a member is unsupported or the group does not fit."""
    G, D = len(prob.groups), prob.num_devices
    out = np.full((G, D), np.inf)
    for g, members in enumerate(prob.groups):
        m = list(members)
        lat = prob.lat[m, :].sum(axis=0)
        fits = prob.size[m].sum() <= prob.capacity * (1 + 1e-12)
        out[g] = np.where(fits, lat, np.inf)
    return out


def simple_lower_bound(graph: OpGraph, cluster: Cluster, objective: str = "max_load", *,
                       exact_nodes: int = 2000) -> tuple[float, str]:
    """``(value, source_text)``: a lower bound on ``objective`` over every valid placement (see the module
    docstring); ``inf`` when no valid placement exists (a group fits on no device). ``exact_nodes``: the
    search budget of the exact packing checks (:func:`~viz_place.cost.packing.packing_lower_bound`; the
    MILPs spend more)."""
    objective = canonical_objective(objective)
    prob = compile_problem(graph, cluster)
    if prob.n == 0:
        return 0.0, "empty graph"
    glat = _group_latencies(prob)
    best = glat.min(axis=1)
    if not np.isfinite(best).all():
        g = int(np.flatnonzero(~np.isfinite(best))[0])
        return math.inf, f"no valid placement: {_group_name(prob, g)} runs or fits on no device"
    if objective == "latency":
        return _latency_bound(prob, glat)
    candidates = []
    g = int(np.argmax(best))
    candidates.append((float(best[g]), f"largest unit: {_group_name(prob, g)} takes at least {best[g]:.6g} on its "
                                       "fastest allowed device"))
    usable = np.isfinite(glat).any(axis=0)
    speed = np.array([d.cls.speed for d in cluster.devices], dtype=float)
    with np.errstate(invalid="ignore"):
        work = np.where(np.isfinite(glat), glat * speed[None, :], np.inf).min(axis=1)
    total_speed = float(speed[usable].sum())
    candidates.append((float(work.sum()) / total_speed,
                       f"total work {work.sum():.6g} / total speed {total_speed:.6g} of the "
                       f"{int(usable.sum())} devices that can run anything"))
    candidates.append((float(best.sum()) / int(usable.sum()),
                       f"sum of fastest latencies {best.sum():.6g} / {int(usable.sum())} devices that can run anything"))
    base = max(c[0] for c in candidates)
    for in_a, what in _device_splits(prob, cluster, usable):
        v, why = packing_lower_bound(glat[:, usable], in_a, base, exact_nodes=exact_nodes)
        if v > base * (1 + 1e-12):
            candidates.append((v, f"{why} ({what}; at least {v:.6g})"))
    value, text = max(candidates, key=lambda t: t[0])
    if objective == "max_forward_plus_max_backward":
        text += " (max forward + max backward load >= max-load)"
    return value, text


def _device_splits(prob, cluster: Cluster, usable: np.ndarray):
    """Device subsets ``A`` for :func:`~viz_place.cost.packing.packing_lower_bound` (masks over the usable
    devices): all of them, the communication-paying ones, and each device class."""
    names = [c.name for c in cluster.classes]
    cls = prob.device_class[usable]
    pays = prob.pays[usable]
    out = [(np.ones(int(usable.sum()), dtype=bool), "all devices")]
    if pays.any() and not pays.all():
        out.append((pays.copy(), "the devices that pay communication"))
    if len(set(cls.tolist())) > 1:
        for c in sorted(set(cls.tolist())):
            m = cls == c
            if not (pays.any() and not pays.all() and (m == pays).all()):
                out.append((m, f"the {names[c]} devices"))
    return out


def _latency_bound(prob, glat: np.ndarray) -> tuple[float, str]:
    node_best = np.zeros(prob.n)
    for g, members in enumerate(prob.groups):
        allowed = np.isfinite(glat[g])
        for v in members:
            node_best[v] = float(prob.lat[v, allowed].min())
    finish = np.zeros(prob.n)
    for v in range(prob.n):   # node indices are in topological order
        start = max((finish[u] for u in prob.preds[v]), default=0.0)
        finish[v] = start + node_best[v]
    v = int(np.argmax(finish))
    return float(finish[v]), f"longest chain of fastest latencies: {finish[v]:.6g}, ending at node {prob.node_ids[v]!r}"
