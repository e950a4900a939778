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


def solve_pipedream(problem: Problem, opts: PipeDreamOptions, hooks: Hooks) -> SolverResult:
    """Optimal split of the linearised graph into consecutive blocks, one per device."""
    prob, pins, graph = problem.compiled, problem.pins, problem.graph
    groups = prob.groups
    G, n = len(groups), prob.n
    index = graph.index
    pin_of_group = {int(prob.group[index[v]]): prob.cluster.device_index(d) for v, d in pins.items()}
    classes = _classes(prob, pins)
    K = len(classes)
    counts = [len(inst) for inst, _ in classes]
    # per class: prefix sums of compute and memory over groups
    col = [inst[0] for inst, _ in classes]
    glat = np.array([[prob.lat[list(g), c].sum() for c in col] for g in groups]).reshape(G, K)
    gsize = np.array([prob.size[list(g)].sum() for g in groups])
    bad = ~np.isfinite(glat)   # group unsupported on the class
    pre_lat = np.vstack([np.zeros(K), np.cumsum(np.where(bad, 0.0, glat), axis=0)])
    pre_bad = np.vstack([np.zeros(K, dtype=np.int64), np.cumsum(bad, axis=0)])
    pre_size = np.concatenate([[0.0], np.cumsum(gsize)])
    pay = [float(prob.link[c]) if prob.pays[c] else 0.0 for c in col]
    cap = [float(prob.capacity[c]) for c in col]
    tcost = prob.tcost.tolist()
    dsucc, dpred = prob.data_succs, prob.data_preds
    states = list(itertools.product(*[range(c + 1) for c in counts]))   # devices used per class
    sidx = {s: k for k, s in enumerate(states)}
    INF = math.inf
    inside = [False] * n
    out_cnt = [0] * n
    in_cnt = [0] * n

    def chain_dp(ub: float):
        """best[j][state], back[j][state]; blocks whose compute alone reaches ``ub`` are skipped."""
        best = [[INF] * len(states) for _ in range(G + 1)]
        back: list[list[tuple[int, int, int] | None]] = [[None] * len(states) for _ in range(G + 1)]
        best[0][sidx[tuple([0] * K)]] = 0.0
        for i in range(G):
            if hooks.cancelled:
                raise SolverError("pipedream: cancelled before the split was complete")
            if i % 32 == 0:
                hooks.report(i / G, f"pipedream: prefix {i}/{G}")
            live = [(s, v) for s, v in zip(states, best[i]) if v < INF]
            if not live:
                continue
            touched: list[int] = []
            comm = 0.0
            pinned_here: set[int] = set()
            for j in range(i + 1, G + 1):
                g = j - 1
                if g in pin_of_group:
                    pinned_here.add(pin_of_group[g])
                for v in groups[g]:
                    if in_cnt[v] > 0:
                        comm -= tcost[v]
                    inside[v] = True
                    touched.append(v)
                    oc = sum(1 for w in dsucc[v] if not inside[w])
                    out_cnt[v] = oc
                    if oc:
                        comm += tcost[v]
                    for p in dpred[v]:
                        if inside[p]:
                            out_cnt[p] -= 1
                            if out_cnt[p] == 0:
                                comm -= tcost[p]
                        else:
                            in_cnt[p] += 1
                            touched.append(p)
                            if in_cnt[p] == 1:
                                comm += tcost[p]
                mem = pre_size[j] - pre_size[i]
                any_ok = False
                for c, (inst, is_pin) in enumerate(classes):
                    if mem > cap[c] * (1 + 1e-12):
                        continue
                    if is_pin:
                        if pinned_here - {inst[0]}:
                            continue
                    elif pinned_here:
                        continue
                    if pre_bad[j, c] > pre_bad[i, c]:
                        continue
                    compute = pre_lat[j, c] - pre_lat[i, c]
                    if compute >= ub:
                        continue
                    any_ok = True
                    load = compute + max(comm, 0.0) * pay[c]
                    for s, v in live:
                        if s[c] >= counts[c]:
                            continue
                        t = list(s)
                        t[c] += 1
                        k = sidx[tuple(t)]
                        val = max(v, load)
                        if val < best[j][k]:
                            best[j][k] = val
                            back[j][k] = (i, sidx[s], c)
                if not any_ok:
                    break   # every reason a block fails (memory, op, pins, compute >= ub) holds for longer ones too
            for v in touched:
                inside[v] = False
                out_cnt[v] = 0
                in_cnt[v] = 0
        return best, back

    # prune with the max-load of topo-fill (a quick bound); if the chain cannot reach it, solve without
    try:
        ub = evaluate_indices(prob, topo_fill(prob, pins), pins=pins).max_load * (1 + 1e-9)
    except InfeasibleError:
        ub = INF
    best, back = chain_dp(ub)
    if not min(best[G]) < INF and ub < INF:
        best, back = chain_dp(INF)
    end = min(range(len(states)), key=lambda k: best[G][k])
    if not math.isfinite(best[G][end]):
        raise InfeasibleError("pipedream: no split of the linearised graph into consecutive blocks (one per "
                              "device) satisfies memory, supported ops and pins")
    dev = np.empty(n, dtype=np.int64)
    used = [0] * K
    j, k = G, end
    blocks = []
    while j > 0:
        i, k_prev, c = back[j][k]
        blocks.append((i, j, c))
        j, k = i, k_prev
    for i, j, c in reversed(blocks):
        d = classes[c][0][used[c]]
        used[c] += 1
        for g in range(i, j):
            dev[list(groups[g])] = d
    return SolverResult(dev, message=f"{len(blocks)} block(s) along a topological order of {G} groups")
