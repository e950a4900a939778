"""The ``local-search`` baseline: hill climbing on max-load with group moves, from random starts.

Each restart begins from a placement (the first from ``topo-fill``, the others
random), then repeatedly moves one colocation group (a colour class with its
backward twins, or a single node) to the device that lowers the objective most —
max-load first, then the sum of squared loads to break ties — until a full pass
finds no improving move. Moves keep pins, colour classes, supported ops and
memory. The evaluation is incremental
(:class:`viz_place.cost.IncrementalEvaluator`, O(degree + devices) per node
moved). Seeded: the same seed gives the same placement.

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> a = run_solver("local-search", inst.graph, inst.cluster, pins=inst.pins, options={"seed": 1})
>>> b = run_solver("local-search", inst.graph, inst.cluster, pins=inst.pins, options={"seed": 1})
>>> dict(a.assignment) == dict(b.assignment)
True
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...cost import IncrementalEvaluator
from ...errors import InfeasibleError, SolverError
from ..base import Hooks, SolverOptions
from ..contract import Problem, SolverResult
from ..groups import allowed_devices, group_label
from .fills import topo_fill


@dataclass(frozen=True)
class LocalSearchOptions(SolverOptions):
    """Options of ``local-search``.

    >>> LocalSearchOptions(seed=3, restarts=2).restarts
    2
    """

    seed: int = field(default=0, metadata={"help": "random seed (same seed, same result)", "min": 0})
    restarts: int = field(default=4, metadata={"help": "number of starts (the first from topo-fill)", "min": 1,
                                               "max": 10_000})
    time_limit: float = field(default=10.0, metadata={"help": "seconds in total", "min": 0.0, "max": 86400.0})
    max_passes: int = field(default=100, metadata={"help": "passes over all groups per start", "min": 1,
                                                   "max": 1_000_000})


class _Search:
    def __init__(self, prob, allowed, pinned, rng):
        self.prob, self.allowed, self.pinned, self.rng = prob, allowed, pinned, rng
        self.sizes = [float(prob.size[list(g)].sum()) for g in prob.groups]
        self.cap = prob.capacity.tolist()

    def random_start(self) -> np.ndarray:
        prob = self.prob
        used = [0.0] * prob.num_devices
        dev = np.empty(prob.n, dtype=np.int64)
        order = list(range(len(prob.groups)))
        order.sort(key=lambda g: (g not in self.pinned, -self.sizes[g]))  # pinned first, then big ones
        for g in order:
            if g in self.pinned:
                d = self.pinned[g]
            else:
                ds = [d for d in self.allowed[g] if used[d] + self.sizes[g] <= self.cap[d] * (1 + 1e-12)]
                if not ds:
                    return None
                d = int(self.rng.choice(ds))
            used[d] += self.sizes[g]
            dev[list(prob.groups[g])] = d
        return dev

    def climb(self, dev, hooks: Hooks, deadline: float, max_passes: int):
        prob = self.prob
        inc = IncrementalEvaluator(prob, dev)
        used = list(inc.memory)
        groups = [g for g in range(len(prob.groups)) if g not in self.pinned and len(self.allowed[g]) > 1]

        def key():
            loads = inc.loads
            return (max(loads), sum(x * x for x in loads))

        cur = key()
        for _ in range(max_passes):
            improved = False
            self.rng.shuffle(groups)
            for g in groups:
                if hooks.cancelled or time.perf_counter() > deadline:
                    return np.array(inc.dev), cur, True
                members = prob.groups[g]
                here = inc.dev[members[0]]
                best = None
                for d in self.allowed[g]:
                    if d == here or used[d] + self.sizes[g] > self.cap[d] * (1 + 1e-12):
                        continue
                    for v in members:
                        inc.move(v, d)
                    k = key()
                    for v in members:
                        inc.move(v, here)
                    if k[0] < cur[0] - 1e-12 or (k[0] <= cur[0] + 1e-12 and k[1] < cur[1] - 1e-9):
                        if best is None or k < best[0]:
                            best = (k, d)
                if best is not None:
                    k, d = best
                    for v in members:
                        inc.move(v, d)
                    used[here] -= self.sizes[g]
                    used[d] += self.sizes[g]
                    cur = key()
                    improved = True
            if not improved:
                break
        return np.array(inc.dev), cur, False


def solve_local_search(problem: Problem, opts: LocalSearchOptions, hooks: Hooks) -> SolverResult:
    """Best of ``restarts`` hill climbs on max-load (see the module docstring)."""
    prob, pins, graph = problem.compiled, problem.pins, problem.graph
    allowed = allowed_devices(prob, pins)
    index = graph.index
    pinned = {int(prob.group[index[v]]): prob.cluster.device_index(d) for v, d in pins.items()}
    rng = np.random.default_rng(opts.seed)
    search = _Search(prob, allowed, pinned, rng)
    deadline = time.perf_counter() + opts.time_limit
    best = None
    stopped = False
    for r in range(opts.restarts):
        start = None
        if r == 0:
            try:
                start = topo_fill(prob, pins)
            except InfeasibleError:
                start = None
        if start is None:
            for _ in range(20):
                start = search.random_start()
                if start is not None:
                    break
        if start is None:
            continue
        dev, k, stopped = search.climb(start, hooks, deadline, opts.max_passes)
        if best is None or k < best[0]:
            best = (k, dev)
        hooks.report((r + 1) / opts.restarts, f"local-search: start {r + 1}/{opts.restarts}, best {best[0][0]:.6g}",
                     incumbent=best[0][0])
        if stopped or time.perf_counter() > deadline:
            break
    if best is None:
        if hooks.cancelled:
            raise SolverError("local-search: cancelled before any placement was found")
        raise InfeasibleError("local-search: found no placement that fits the memory of the devices "
                              f"(random first-fit failed; e.g. {group_label(prob, 0)} and the rest)")
    status = "cancelled" if hooks.cancelled else "heuristic"
    msg = f"{r + 1} start(s)" + ("; stopped by the time limit" if stopped and not hooks.cancelled else "")
    return SolverResult(best[1], status=status, message=msg)
