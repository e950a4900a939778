"""Upper bounds for the throughput DP: a cheap chain, then a local search around it.

The exact pass prunes with an upper bound ``UB``; the closer ``UB`` is to the
optimum, the fewer (ideal, devices) states stay alive. :func:`upper_bound`
runs the DP over the prefixes of a few topological orders, then repeatedly
over every ideal within ``radius`` add/remove moves of the best chain's ideals
(a large-neighbourhood search), keeping the best chain found.

>>> import numpy as np
>>> from viz_place.solvers.dp.recursion import Tables
>>> common = dict(succs=[[1], []], lat=np.array([[1.0], [2.0]]), size=np.zeros(2), forbid=np.zeros((2, 1), bool),
...               hyperedges=[], counts=[2], pays=[False], link=[1.0], cap=[np.inf])
>>> ub = upper_bound(2, [0, 1], [[1], []], common)
>>> ub.value, len(ub.chain)
(2.0, 2)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ...errors import Cancelled
from . import recursion
from .ideals import ideals_from_ints, prefix_family, topological_orders


@dataclass
class UpperBound:
    value: float
    tables: recursion.Tables | None
    chain: list[tuple[int, int, int]]
    rounds: int = 0
    cancelled: bool = False


def neighbourhood(ideals: list[int], pred_masks: list[int], succ_masks: list[int], num_nodes: int, *,
                  radius: int, limit: int) -> set[int]:
    """Every ideal reachable from ``ideals`` by at most ``radius`` single-node additions/removals."""
    out = set(ideals)
    frontier = set(ideals)
    for _ in range(radius):
        new: set[int] = set()
        for ideal in frontier:
            for v in range(num_nodes):
                b = 1 << v
                if ideal & b:
                    if succ_masks[v] & ideal == 0:
                        new.add(ideal ^ b)
                elif pred_masks[v] & ~ideal == 0:
                    new.add(ideal | b)
        new -= out
        out |= new
        frontier = new
        if len(out) >= limit:
            break
    return out


def upper_bound(num_nodes: int, pred_masks: list[int], succs: list[list[int]], common: dict, *,
                orders: int = 6, radius: int = 1, rounds: int = 12, limit: int = 20_000,
                check: Callable[[], None] | None = None, kernel: str = "auto") -> UpperBound:
    """Best chain over prefix ideals of ``orders`` topological orders, improved by local search."""
    n_orders = orders if num_nodes * orders <= limit else 1
    fam = prefix_family(num_nodes, topological_orders(num_nodes, succs, n_orders, seed=0))
    tables = recursion.Tables.build(fam, **common)
    res = recursion.run(tables, math.inf, kernel=kernel)
    best = UpperBound(res.value, tables if res.chain else None, res.chain)
    if not math.isfinite(best.value) or rounds == 0:
        return best
    succ_masks = [0] * num_nodes
    for v in range(num_nodes):
        for w in succs[v]:
            succ_masks[v] |= 1 << w
    rad = radius
    for r in range(rounds):
        if check is not None:
            try:
                check()
            except Cancelled:
                best.cancelled = True
                return best
        ints = best.tables.ideals.as_ints()
        chain_ideals = [0] + [ints[i] for _, _, i in best.chain]
        fam_ints = neighbourhood(chain_ideals, pred_masks, succ_masks, num_nodes, radius=rad, limit=limit)
        tables = recursion.Tables.build(ideals_from_ints(fam_ints, num_nodes), **common)
        res = recursion.run(tables, best.value, kernel=kernel)
        if res.value < best.value * (1 - 1e-12):
            best = UpperBound(res.value, tables, res.chain, r + 1)
        elif len(fam_ints) < limit and rad < radius + 2:
            rad += 1          # stuck: look further
        else:
            break
    return best
