"""Symmetry breaking among identical device instances (shared by the MILPs).

* :func:`interchangeable_sets` — identical, unpinned device instances of one class;
* :func:`canonical` — relabel a placement so that it satisfies the ordering constraints;
* :func:`add_symmetry_breaking` — the constraints: device ``k`` of a set may take a
  group only if device ``k - 1`` holds an earlier one.

>>> from viz_place.testing import random_instance
>>> from viz_place.cost import compile_problem
>>> inst = random_instance(3)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> all(len(s) >= 2 for s in interchangeable_sets(prob, inst.pins))
True
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...cost.compiled import CompiledProblem


def interchangeable_sets(prob: CompiledProblem, pins: dict[str, str],
                         devices: Sequence[int] | None = None) -> list[list[int]]:
    """Lists (length >= 2) of identical device instances of one class that no pin targets."""
    pinned = {prob.cluster.device_index(d) for d in pins.values()}
    keep = set(range(prob.num_devices) if devices is None else devices)
    by_class: dict[int, list[int]] = {}
    for d in range(prob.num_devices):
        if d in keep and d not in pinned:
            by_class.setdefault(int(prob.device_class[d]), []).append(d)
    return [v for v in by_class.values() if len(v) >= 2]


def canonical(prob: CompiledProblem, dev: Sequence[int], sets: list[list[int]]) -> np.ndarray:
    """Relabel ``dev`` within each interchangeable set: devices ordered by their first group."""
    dev = np.asarray(dev, dtype=np.int64).copy()
    first = [g[0] for g in prob.groups]
    for s in sets:
        members = set(s)
        order: list[int] = []
        for f in first:
            d = int(dev[f])
            if d in members and d not in order:
                order.append(d)
        mapping = {old: s[k] for k, old in enumerate(order)}
        if mapping:
            dev = np.array([mapping.get(int(d), int(d)) for d in dev], dtype=np.int64)
    return dev


def add_symmetry_breaking(lp, x: dict, num_groups: int, sym_sets) -> None:
    """Order identical devices: device ``k`` may take group ``t`` only if device ``k-1``
    holds one of the groups before ``t`` (groups in topological order).

    ``x[(g, d)]`` are the assignment variables; ``sym_sets`` lists runs of
    interchangeable device indices (same class, unpinned).
    """
    for s_i, devs in enumerate(sym_sets):
        gl = [g for g in range(num_groups) if (g, devs[0]) in x]
        if not gl:
            continue
        for k in range(1, len(devs)):
            prev, cur = devs[k - 1], devs[k]
            lp += x[gl[0], cur] == 0
            run = None   # run_t = number of groups among gl[:t+1] on prev
            for t in range(1, len(gl)):
                y = lp.add_variable(f"sym_{s_i}_{k}_{t}", lowBound=0)
                lp += y == (x[gl[t - 1], prev] if run is None else run + x[gl[t - 1], prev])
                lp += x[gl[t], cur] <= y
                run = y
