"""Brute force over all placements of small instances (shared by the ILP and baseline tests)."""
from __future__ import annotations

import itertools
import math

import numpy as np

from viz_place.cost import compile_problem, evaluate_indices
from viz_place.solvers.groups import device_cycle, nonconvex_devices, pipeline_order

#: Instances with more than this many group-to-device combinations are not brute-forced.
MAX_COMBOS = 6000


def combos(inst) -> int:
    prob = compile_problem(inst.graph, inst.cluster)
    return prob.num_devices ** len(prob.groups)


def brute_force(inst, objective: str, *, contiguous: str | None = None, overlap: bool = False) -> float:
    """Best evaluator value over every valid placement (``inf`` if none); see :func:`brute_force_many`."""
    return brute_force_many(inst, (objective,), contiguous=contiguous, overlap=overlap)[objective]


def brute_force_many(inst, objectives, *, contiguous: str | None = None, overlap: bool = False) -> dict[str, float]:
    """Best evaluator value of each objective over every valid placement (``inf`` if none), in one pass.

    ``contiguous``: ``"pipeline"`` — pipeline splits (the DP's set, solver ``ilp``);
    ``"forward"`` — every device's forward set convex (``ilp -o device_cycles=true``);
    ``"accelerators"`` — every communication-paying device's whole set convex (latency IP, q = 1).
    """
    prob = compile_problem(inst.graph, inst.cluster)
    fwd = [not b for b in prob.backward.tolist()]
    order = pipeline_order(prob) if contiguous == "pipeline" else None
    best = dict.fromkeys(objectives, math.inf)
    for combo in itertools.product(range(prob.num_devices), repeat=len(prob.groups)):
        dev = np.empty(prob.n, dtype=np.int64)
        for g, d in enumerate(combo):
            dev[list(prob.groups[g])] = d
        ev = evaluate_indices(prob, dev, pins=inst.pins, overlap=overlap)
        if ev.violations:
            continue
        if contiguous == "forward" and nonconvex_devices(prob, dev, fwd):
            continue
        if contiguous == "pipeline" and device_cycle(prob, dev, order):
            continue
        if contiguous == "accelerators" and any(prob.pays[d] for d in nonconvex_devices(prob, dev)):
            continue
        for objective in objectives:
            best[objective] = min(best[objective], ev.value(objective))
    return best
