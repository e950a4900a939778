"""Constructive baselines that fill devices in topological order: ``greedy-latency`` and ``topo-fill``.

* ``greedy-latency`` — the paper's latency heuristic: walk the colocation groups in
  topological order, fill the current accelerator while its memory allows, then
  open the next; what fits nowhere (or runs on no accelerator) goes to a CPU.
* ``topo-fill`` — fill the accelerators in topological order, each up to an
  equal share of the total compute (the last takes the rest); host CPUs take
  what no accelerator can run or hold. :func:`topo_fill` is the same on a
  compiled problem (``pipedream`` and ``local-search`` start from it).

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> run_solver("topo-fill", inst.graph, inst.cluster, pins=inst.pins).status
'heuristic'
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...cost.compiled import CompiledProblem
from ...errors import InfeasibleError
from ..base import Hooks, SolverOptions
from ..contract import Problem, SolverResult
from ..groups import allowed_devices, group_label, group_lat, group_sizes, pinned_groups


@dataclass(frozen=True)
class GreedyLatencyOptions(SolverOptions):
    """No options: the paper's heuristic is deterministic."""


@dataclass(frozen=True)
class TopoFillOptions(SolverOptions):
    """No options: the accelerators are filled in cluster order (hosts take what they cannot run or hold)."""


def solve_greedy_latency(problem: Problem, opts: GreedyLatencyOptions, hooks: Hooks) -> SolverResult:
    """The paper's greedy latency heuristic (see the module docstring)."""
    prob, pins = problem.compiled, problem.pins
    allowed = allowed_devices(prob, pins)
    sizes = group_sizes(prob)
    pinned = pinned_groups(prob, pins)
    used = np.zeros(prob.num_devices)
    for g, d in pinned.items():
        used[d] += sizes[g]
    accel = [d for d in range(prob.num_devices) if prob.pays[d]]
    hosts = [d for d in range(prob.num_devices) if not prob.pays[d]]
    dev = np.empty(prob.n, dtype=np.int64)
    k = 0
    for g, ds in enumerate(allowed):
        if g in pinned:
            dev[list(prob.groups[g])] = pinned[g]
            continue
        choice = None
        if any(d in ds for d in accel):
            while k < len(accel):
                d = accel[k]
                if d not in ds:
                    break      # this accelerator cannot run the group: place it elsewhere, keep filling
                if used[d] + sizes[g] <= prob.capacity[d] * (1 + 1e-12):
                    choice = d
                    break
                k += 1         # the current accelerator is full: open the next
        if choice is None:
            fits = [d for d in hosts if d in ds and used[d] + sizes[g] <= prob.capacity[d] * (1 + 1e-12)]
            fits = fits or [d for d in ds if used[d] + sizes[g] <= prob.capacity[d] * (1 + 1e-12)]
            if not fits:
                raise InfeasibleError(f"greedy-latency: {group_label(prob, g)} fits on no device that can run it "
                                      "(memory is full)")
            choice = min(fits, key=lambda d: (group_lat(prob, g, d), d))
        used[choice] += sizes[g]
        dev[list(prob.groups[g])] = choice
    return SolverResult(dev)


def solve_topo_fill(problem: Problem, opts: TopoFillOptions, hooks: Hooks) -> SolverResult:
    """Fill the accelerators in topological order, each up to an equal share of the compute."""
    return SolverResult(topo_fill(problem.compiled, problem.pins))


def topo_fill(prob: CompiledProblem, pins: dict[str, str]) -> np.ndarray:
    """The ``topo-fill`` placement as device indices (raises :class:`InfeasibleError` when a group fits nowhere)."""
    allowed = allowed_devices(prob, pins)
    sizes = group_sizes(prob)
    pinned = pinned_groups(prob, pins)
    # fill the accelerators (host CPUs only take what no accelerator runs or holds); without any, the hosts
    order = [d for d in range(prob.num_devices) if prob.pays[d]] or list(range(prob.num_devices))
    G = len(prob.groups)
    share = sum(min(group_lat(prob, g, d) for d in allowed[g]) for g in range(G)) / max(1, len(order))
    used = np.zeros(prob.num_devices)
    load = np.zeros(prob.num_devices)
    for g, d in pinned.items():
        used[d] += sizes[g]
        load[d] += group_lat(prob, g, d)
    dev = np.empty(prob.n, dtype=np.int64)
    k = 0

    def fits(d, g):
        return d in allowed[g] and used[d] + sizes[g] <= prob.capacity[d] * (1 + 1e-12)

    for g in range(G):
        if g in pinned:
            choice = pinned[g]
        else:
            choice = None
            while k < len(order):
                d = order[k]
                if d not in allowed[g]:
                    break   # this device cannot run the group: place it elsewhere, keep filling this one
                t = group_lat(prob, g, d)
                if fits(d, g) and (load[d] == 0 or load[d] + t <= share * (1 + 1e-9) or k == len(order) - 1):
                    choice = d
                    break
                k += 1
            if choice is None:
                opts_ = [d for d in allowed[g] if fits(d, g)]
                if not opts_:
                    raise InfeasibleError(f"topo-fill: {group_label(prob, g)} fits on no device that can run it "
                                          "(memory is full)")
                choice = min(opts_, key=lambda d: (load[d] + group_lat(prob, g, d), d))
            used[choice] += sizes[g]
            load[choice] += group_lat(prob, g, choice)
        dev[list(prob.groups[g])] = choice
    return dev
