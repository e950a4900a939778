"""The ``pipedream`` baseline: linearise the graph, then split the chain optimally.

PipeDream's partitioner works on a chain of layers. We linearise the graph by
the topological order of its colocation groups (a colour class with its
backward twins is one unit), then choose consecutive blocks — one per device —
minimising the max-load, by a DP over prefixes::

    best[j][left] = min over i < j, class c of  max(best[i][left + e_c], load_c(block i..j))

where ``left`` counts the devices still free in each class (a pinned device is
a class of its own, count 1) and ``load_c`` is the evaluator's load of the block
on a device of class ``c`` (compute + the transfers in and out of the block,
times the link factor, for classes that pay communication). Blocks respect
memory, unsupported ops and pins. Time O(G^2 x states x classes) for G groups.

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> run_solver("pipedream", inst.graph, inst.cluster, pins=inst.pins).solver
'pipedream'
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ...cost import evaluate_indices
from ...errors import InfeasibleError, SolverError
from ..base import Hooks, SolverOptions
from ..contract import Problem, SolverResult
from .fills import topo_fill


@dataclass(frozen=True)
class PipeDreamOptions(SolverOptions):
    """No options: the split is optimal for the chain."""


def _classes(prob, pins):
    """(column device, instance list, pinned?) per DP class."""
    pinned_devs = sorted({prob.cluster.device_index(d) for d in pins.values()})
    out = []
    for ci, cls in enumerate(prob.cluster.classes):
        inst = [d for d in range(prob.num_devices) if prob.device_class[d] == ci and d not in pinned_devs]
        if inst:
            out.append((inst, False))
    for d in pinned_devs:
        out.append(([d], True))
    return out


@dataclass
class _Chain:
    """The linearised problem: groups in topological order and, per DP class, prefix sums over them."""

    groups: list
    classes: list            # (device instances, pinned?) per DP class
    counts: list[int]        # devices per class
    pre_lat: np.ndarray      # (G + 1, K): compute of groups[:j] on a device of class c (unsupported ones as 0)
    pre_bad: np.ndarray      # (G + 1, K): how many of groups[:j] class c cannot run
    pre_size: np.ndarray     # (G + 1,): memory of groups[:j]
    pay: list[float]         # link factor of class c, 0 where it pays no communication
    cap: list[float]         # memory capacity of class c
    pin_of_group: dict[int, int]
    states: list[tuple]      # devices used per class
    sidx: dict[tuple, int]

    @property
    def num_groups(self) -> int:
        return len(self.groups)


def _chain(prob, pins, graph) -> _Chain:
    groups = prob.groups
    G = len(groups)
    index = graph.index
    pin_of_group = {int(prob.group[index[v]]): prob.cluster.device_index(d) for v, d in pins.items()}
    classes = _classes(prob, pins)
    K = len(classes)
    counts = [len(inst) for inst, _ in classes]
    col = [inst[0] for inst, _ in classes]     # one device stands for its class
    glat = np.array([[prob.lat[list(g), c].sum() for c in col] for g in groups]).reshape(G, K)
    gsize = np.array([prob.size[list(g)].sum() for g in groups])
    bad = ~np.isfinite(glat)   # group unsupported on the class
    states = list(itertools.product(*[range(c + 1) for c in counts]))
    return _Chain(
        groups=list(groups), classes=classes, counts=counts,
        pre_lat=np.vstack([np.zeros(K), np.cumsum(np.where(bad, 0.0, glat), axis=0)]),
        pre_bad=np.vstack([np.zeros(K, dtype=np.int64), np.cumsum(bad, axis=0)]),
        pre_size=np.concatenate([[0.0], np.cumsum(gsize)]),
        pay=[float(prob.link[c]) if prob.pays[c] else 0.0 for c in col],
        cap=[float(prob.capacity[c]) for c in col],
        pin_of_group=pin_of_group, states=states, sidx={s: k for k, s in enumerate(states)})


class _BlockTransfers:
    """The transfers a block of consecutive groups pays (before the link factor), kept up to date as the
    block grows by one group: each node with an output leaving the block pays its ``transfer_cost`` once, and
    so does each outside node feeding the block."""

    def __init__(self, prob) -> None:
        n = prob.n
        self.tcost = prob.tcost.tolist()
        self.dsucc, self.dpred = prob.data_succs, prob.data_preds
        self.inside = [False] * n
        self.out_cnt = [0] * n      # inside node: data successors outside the block
        self.in_cnt = [0] * n       # outside node: data successors inside the block
        self.touched: list[int] = []
        self.comm = 0.0

    def add(self, members) -> float:
        """Grow the block by one group's nodes; the block's transfer cost."""
        inside, out_cnt, in_cnt, tcost = self.inside, self.out_cnt, self.in_cnt, self.tcost
        for v in members:
            if in_cnt[v] > 0:
                self.comm -= tcost[v]           # v fed the block from outside; now it is inside
            inside[v] = True
            self.touched.append(v)
            oc = sum(1 for w in self.dsucc[v] if not inside[w])
            out_cnt[v] = oc
            if oc:
                self.comm += tcost[v]
            for p in self.dpred[v]:
                if inside[p]:
                    out_cnt[p] -= 1
                    if out_cnt[p] == 0:
                        self.comm -= tcost[p]   # p's outputs now all stay inside
                else:
                    in_cnt[p] += 1
                    self.touched.append(p)
                    if in_cnt[p] == 1:
                        self.comm += tcost[p]
        return self.comm

    def clear(self) -> None:
        for v in self.touched:
            self.inside[v] = False
            self.out_cnt[v] = 0
            self.in_cnt[v] = 0
        self.touched = []
        self.comm = 0.0


def _block_loads(chain: _Chain, i: int, j: int, pinned_here: set[int], comm: float, ub: float):
    """``(class, load)`` for every class that may run groups ``i..j-1`` as one block (memory, supported ops,
    pins) with compute below ``ub``."""
    mem = chain.pre_size[j] - chain.pre_size[i]
    for c, (inst, is_pin) in enumerate(chain.classes):
        if mem > chain.cap[c] * (1 + 1e-12):
            continue
        if is_pin:
            if pinned_here - {inst[0]}:
                continue
        elif pinned_here:
            continue
        if chain.pre_bad[j, c] > chain.pre_bad[i, c]:
            continue
        compute = chain.pre_lat[j, c] - chain.pre_lat[i, c]
        if compute >= ub:
            continue
        yield c, compute + max(comm, 0.0) * chain.pay[c]


def _chain_dp(chain: _Chain, transfers: _BlockTransfers, hooks: Hooks, ub: float):
    """``best[j][state]``, ``back[j][state]`` over prefixes of the chain; blocks whose compute alone reaches
    ``ub`` are skipped."""
    G, INF = chain.num_groups, math.inf
    n_states = len(chain.states)
    best = [[INF] * n_states for _ in range(G + 1)]
    back: list[list[tuple[int, int, int] | None]] = [[None] * n_states for _ in range(G + 1)]
    best[0][chain.sidx[tuple([0] * len(chain.classes))]] = 0.0
    for i in range(G):
        if hooks.cancelled:
            raise SolverError("pipedream: cancelled before the split was complete")
        if i % 32 == 0:
            hooks.report(i / G, f"pipedream: prefix {i}/{G}")
        live = [(s, v) for s, v in zip(chain.states, best[i]) if v < INF]
        if not live:
            continue
        pinned_here: set[int] = set()
        for j in range(i + 1, G + 1):     # the block i..j-1 grows by one group per step
            g = j - 1
            if g in chain.pin_of_group:
                pinned_here.add(chain.pin_of_group[g])
            comm = transfers.add(chain.groups[g])
            any_ok = False
            for c, load in _block_loads(chain, i, j, pinned_here, comm, ub):
                any_ok = True
                for s, v in live:
                    if s[c] >= chain.counts[c]:
                        continue
                    t = list(s)
                    t[c] += 1
                    k = chain.sidx[tuple(t)]
                    val = max(v, load)
                    if val < best[j][k]:
                        best[j][k] = val
                        back[j][k] = (i, chain.sidx[s], c)
            if not any_ok:
                break   # every reason a block fails (memory, op, pins, compute >= ub) holds for longer ones too
        transfers.clear()
    return best, back


def _blocks(back, G: int, end: int) -> list[tuple[int, int, int]]:
    """The blocks ``(first group, end group, class)`` of the best split ending in state ``end``, in chain order."""
    blocks = []
    j, k = G, end
    while j > 0:
        i, k_prev, c = back[j][k]
        blocks.append((i, j, c))
        j, k = i, k_prev
    return blocks[::-1]


def solve_pipedream(problem: Problem, opts: PipeDreamOptions, hooks: Hooks) -> SolverResult:
    """Optimal split of the linearised graph into consecutive blocks, one per device."""
    prob, pins = problem.compiled, problem.pins
    chain = _chain(prob, pins, problem.graph)
    transfers = _BlockTransfers(prob)
    G = chain.num_groups
    # prune with the max-load of topo-fill (a quick bound); if the chain cannot reach it, solve without
    try:
        ub = evaluate_indices(prob, topo_fill(prob, pins), pins=pins).max_load * (1 + 1e-9)
    except InfeasibleError:
        ub = math.inf
    best, back = _chain_dp(chain, transfers, hooks, ub)
    if not min(best[G]) < math.inf and ub < math.inf:
        best, back = _chain_dp(chain, transfers, hooks, math.inf)
    end = min(range(len(chain.states)), key=lambda k: best[G][k])
    if not math.isfinite(best[G][end]):
        raise InfeasibleError("pipedream: no split of the linearised graph into consecutive blocks (one per "
                              "device) satisfies memory, supported ops and pins")
    dev = np.empty(prob.n, dtype=np.int64)
    used = [0] * len(chain.classes)
    blocks = _blocks(back, G, end)
    for i, j, c in blocks:
        d = chain.classes[c][0][used[c]]
        used[c] += 1
        for g in range(i, j):
            dev[list(chain.groups[g])] = d
    return SolverResult(dev, message=f"{len(blocks)} block(s) along a topological order of {G} groups")
