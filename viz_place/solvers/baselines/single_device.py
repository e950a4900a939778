"""The ``single-device`` baseline: everything on the one device best for the objective
(among those that can run and hold the whole graph; the pinned device if there are pins).

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> len(set(run_solver("single-device", inst.graph, inst.cluster, pins=inst.pins).assignment.values()))
1
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...cost import evaluate_indices
from ...errors import InfeasibleError
from ...model.objective import OBJECTIVE_ALIASES
from ..base import Hooks, SolverOptions
from ..contract import Problem, SolverResult

OBJECTIVES = ("max_load", "latency")


@dataclass(frozen=True)
class SingleDeviceOptions(SolverOptions):
    objective: str = field(default="max_load", metadata={"help": "which single device is best: max_load or latency",
                                                         "choices": OBJECTIVES, "aliases": OBJECTIVE_ALIASES})


def solve_single_device(problem: Problem, opts: SingleDeviceOptions, hooks: Hooks) -> SolverResult:
    """Everything on one device (the best one for the objective that can hold it all)."""
    prob, pins = problem.compiled, problem.pins
    targets = sorted(set(pins.values()))
    if len(targets) > 1:
        raise InfeasibleError(f"single-device: nodes are pinned to several devices ({', '.join(targets)})")
    cands = [prob.cluster.device_index(targets[0])] if targets else \
        [d for d, dv in enumerate(prob.cluster.devices) if dv.index == 0]
    best, why = None, []
    total = float(prob.size.sum())
    for d in cands:
        name = prob.device_names[d]
        bad = np.flatnonzero(~np.isfinite(prob.lat[:, d]))
        if bad.size:
            why.append(f"{name} cannot run node {prob.node_ids[bad[0]]!r}")
            continue
        if total > prob.capacity[d] * (1 + 1e-12):
            why.append(f"{name} holds {prob.capacity[d]:.6g} of memory but the graph needs {total:.6g}")
            continue
        dev = np.full(prob.n, d, dtype=np.int64)
        value = evaluate_indices(prob, dev).value(problem.objective.name)
        if best is None or value < best[0]:
            best = (value, dev)
    if best is None:
        raise InfeasibleError("single-device: no single device can hold the whole graph: " + "; ".join(why))
    return SolverResult(best[1])
