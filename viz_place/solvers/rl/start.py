"""Starting placements for the sweeps: contiguous fills in topological order.

:func:`initial_placement` returns the best (by the environment's objective, from
the shared evaluator) of the equal-work :func:`~.env.topo_fill` and of
:func:`threshold_fill` at a few thresholds around the smallest one that fits,
for a few fill orders (:func:`device_orders`: where the host devices sit among
the accelerators) and, when the accelerators' memory binds, with groups picked
for the host beforehand (:func:`host_relief`). :func:`threshold_fill` walks the groups in topological order
and fills the devices one after another, moving on when the next group
would push the device's compute above ``T`` or overflow its memory; a group the
current device cannot run goes to the least-loaded device that can. A binary
search finds the smallest ``T`` for which everything fits — on memory-tight
clusters this decides how much work the slow host must take.

>>> from viz_place.samples import make_graph
>>> from viz_place.cost import compile_problem
>>> from viz_place.solvers.rl.env import PlacementEnv
>>> g = make_graph("fork_join", 30, seed=1, training=True)
>>> env = PlacementEnv(compile_problem(g, g.default_cluster))
>>> len(initial_placement(env)) == g.num_nodes
True
"""
from __future__ import annotations

import math

import numpy as np

from ...cost import evaluate_indices
from ...errors import InfeasibleError
from .env import PlacementEnv, topo_fill

_TOL = 1e-9


def device_orders(env: PlacementEnv, limit: int = 5) -> list[list[int]]:
    """Fill orders: the accelerators in cluster order with the host devices inserted as one block
    at (up to ``limit``) evenly spread positions, last first."""
    prob = env.prob
    acc = [d for d in range(env.D) if prob.pays[d]]
    host = [d for d in range(env.D) if not prob.pays[d]]
    if not host or not acc:
        return [acc + host]
    positions = sorted({round(x) for x in np.linspace(0, len(acc), min(limit, len(acc) + 1))}, reverse=True)
    return [acc[:p] + host + acc[p:] for p in positions]


def threshold_fill(env: PlacementEnv, T: float, order: list[int] | None = None,
                   fixed: dict[int, int] | None = None, rotate: int = 0) -> list[int] | None:
    """Contiguous fill with compute at most ``T`` per device (see module docstring); ``None`` if it fails.

    ``order`` is the order devices are filled in (default: accelerators, then hosts);
    ``fixed`` maps groups to devices placed beforehand (like pins); ``rotate`` > 0 starts the walk at that
    group and wraps around, so the first device filled takes the end and the start of the order
    (a non-contiguous placement with one piece fewer cut than a split at the same two points).
    """
    prob = env.prob
    if order is None:
        order = device_orders(env)[0]
    fixed = fixed or {}
    cap = env.cap
    load = [0.0] * env.D
    mem = [0.0] * env.D
    dev = [0] * prob.n
    glat = env.glat
    allowed = env.allowed
    for g in range(len(env.members)):
        d = int(env.pinned[g]) if env.pinned[g] >= 0 else fixed.get(g, -1)
        if d >= 0:
            load[d] += glat[g, d]
            mem[d] += env.gsize[g]
            for i in env.members[g]:
                dev[i] = d
    pos = 0
    G = len(env.members)
    for g in (range(G) if not rotate else [*range(rotate % G, G), *range(rotate % G)]):
        if env.pinned[g] >= 0 or g in fixed:
            continue
        size = env.gsize[g]
        chosen = -1
        while pos < len(order):
            d = order[pos]
            if not allowed[g, d]:     # an op this device cannot run: place it beside, keep filling d
                room = [e for e in order if allowed[g, e] and mem[e] + size <= cap[e] * (1 + _TOL)]
                if room:
                    chosen = min(room, key=lambda e: (load[e] + glat[g, e], e))
                break
            if mem[d] + size <= cap[d] * (1 + _TOL) and load[d] + glat[g, d] <= T * (1 + _TOL):
                chosen = d
                break
            pos += 1
        if chosen < 0:
            return None
        load[chosen] += glat[g, chosen]
        mem[chosen] += size
        for i in env.members[g]:
            dev[i] = chosen
    return dev


def host_relief(env: PlacementEnv, slack: float) -> dict[int, int]:
    """When the accelerators' memory binds: groups for the host devices, chosen by most memory
    per unit of host time, until the rest fills the accelerators to ``slack`` of their memory."""
    prob = env.prob
    acc = [d for d in range(env.D) if prob.pays[d]]
    hosts = [d for d in range(env.D) if not prob.pays[d]]
    if not acc or not hosts:
        return {}
    need = float(env.gsize.sum()) - slack * float(sum(env.cap[d] for d in acc))
    if need <= 0:
        return {}
    free = [g for g in range(len(env.members)) if env.pinned[g] < 0]
    host_lat = {g: min(env.glat[g, h] for h in hosts) for g in free}
    cands = [g for g in free if math.isfinite(host_lat[g]) and env.gsize[g] > 0]
    cands.sort(key=lambda g: (-env.gsize[g] / max(host_lat[g], 1e-12), g))
    load = {h: 0.0 for h in hosts}
    out: dict[int, int] = {}
    for g in cands:
        if need <= 0:
            break
        h = min((h for h in hosts if env.allowed[g, h]), key=lambda h: (load[h] + env.glat[g, h], h))
        out[g] = h
        load[h] += env.glat[g, h]
        need -= env.gsize[g]
    return out


def random_start(env: PlacementEnv, rng: np.random.Generator, tries: int = 100) -> list[int] | None:
    """A random valid placement: each group on a uniformly random device that can take it
    (support, pins, memory), groups in random order; ``None`` if ``tries`` attempts all get stuck."""
    prob = env.prob
    for _ in range(tries):
        mem = np.zeros(env.D)
        dev = [0] * prob.n
        for g in range(len(env.members)):
            if env.pinned[g] >= 0:
                mem[env.pinned[g]] += env.gsize[g]
        ok = True
        for g in rng.permutation(len(env.members)).tolist():
            if env.pinned[g] >= 0:
                d = int(env.pinned[g])
            else:
                room = np.flatnonzero(env.allowed[g] & (mem + env.gsize[g] <= prob.capacity * (1 + _TOL)))
                if room.size == 0:
                    ok = False
                    break
                d = int(room[rng.integers(room.size)])
                mem[d] += env.gsize[g]
            for i in env.members[g]:
                dev[i] = d
        if ok:
            return dev
    return None


def placement_value(env: PlacementEnv, dev: list[int]) -> float:
    """The environment's objective of placement ``dev`` (from the shared evaluator)."""
    ev = evaluate_indices(env.prob, np.asarray(dev))
    return ev.latency if env.objective_name == "latency" else ev.max_load


def initial_placement(env: PlacementEnv) -> list[int]:
    """The best of the equal-work fill and threshold fills near the smallest threshold that fits."""
    return start_candidates(env)[0]


def start_candidates(env: PlacementEnv) -> list[list[int]]:
    """All distinct fills :func:`initial_placement` chooses from, best first (never empty:
    raises the named :class:`~viz_place.errors.InfeasibleError` instead)."""
    candidates: list[list[int]] = []
    try:
        candidates.append(topo_fill(env))
    except InfeasibleError:
        pass
    if env.objective_name == "latency":
        try:
            candidates.append(topo_fill(env, balance=False))
        except InfeasibleError:
            pass
    work = np.where(env.allowed, env.glat, np.inf).min(axis=1)
    floor = max(float(work.sum()) / max(env.D, 1), float(work.max(initial=0.0)))
    variants = [(order, None, 0) for order in device_orders(env)]
    for slack in (0.97, 0.93, 0.88):
        fixed = host_relief(env, slack)
        if fixed:
            variants.append((device_orders(env)[0], fixed, 0))
    G = len(env.members)
    if G >= 8:      # wrap-around fills: the first device takes both ends of the order
        variants += [(variants[0][0], variants[-1][1], round(G * f)) for f in (0.1, 0.2, 0.3)]
    for order, fixed, rotate in variants:
        loose = threshold_fill(env, math.inf, order, fixed, rotate)
        if loose is None:
            continue
        candidates.append(loose)
        lo, hi = floor, max(evaluate_indices(env.prob, np.asarray(loose)).max_load, floor)
        if threshold_fill(env, lo, order, fixed, rotate) is not None:
            hi = lo
        for _ in range(30):
            if hi - lo <= 1e-4 * hi:
                break
            mid = (lo + hi) / 2
            if threshold_fill(env, mid, order, fixed, rotate) is None:
                lo = mid
            else:
                hi = mid
        for f in (1.0, 1.02, 1.05, 1.1, 1.2):
            dev = threshold_fill(env, hi * f, order, fixed, rotate)
            if dev is not None:
                candidates.append(dev)
    if not candidates:
        return [topo_fill(env)]      # raises the named InfeasibleError
    unique: dict[tuple[int, ...], list[int]] = {}
    for dev in candidates:
        unique.setdefault(tuple(dev), dev)
    return sorted(unique.values(), key=lambda dev: placement_value(env, dev))     # stable: first of equals first


def dp_start(problem, time_limit: float, cancel=None) -> list[int] | None:
    """The ``dp`` solver's placement (the optimal pipeline split, or its best one when ``time_limit``
    seconds or ``cancel`` cut it short) as another start, or ``None`` when the DP is not registered,
    fails (its error is not the rl solver's) or gives no valid placement. Runs through the registry,
    like the MILPs' warm starts: a cheap heuristic start, never a stored reference. The DP's own
    upper-bound heuristics are cut to one order and no local search (same optimum; they do not
    watch the clock, and the rl search does that job anyway)."""
    from ...errors import VizPlaceError
    from ..registry import is_available, run_solver
    if not is_available("dp"):
        return None
    try:
        p = run_solver("dp", problem.graph, problem.cluster, pins=problem.pins or None,
                       options={"time_limit": max(0.1, float(time_limit)), "local_search_rounds": 0,
                                "heuristic_orders": 1}, cancel=cancel)
    except VizPlaceError:
        return None
    prob = problem.compiled
    dev = prob.to_index_array(p)
    ev = evaluate_indices(prob, dev, pins=problem.pins or None)
    if ev.violations or not math.isfinite(ev.max_load):
        return None
    return dev.tolist()
