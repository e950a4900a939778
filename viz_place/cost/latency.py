"""Single-sample latency under the paper's latency model (generalised).

Rules (the authors' latency IP, generalised; the README's *Concepts and the cost model*):

* A device whose class does **not** pay communication (a host CPU) is treated as
  unlimited parallel cores: each of its nodes finishes at the latest finish of
  its predecessors plus its own latency.
* A device that pays communication (an accelerator) runs its node set as
  **pieces**, one after another. Each piece starts when all its inputs have
  arrived (every external predecessor has finished) and the previous piece on
  that device has finished; it finishes after ``inputs + compute + outputs``:
  one ``transfer_cost`` (times the link factor) per distinct external source it
  reads and per own node whose output leaves the piece. All its nodes finish
  when the piece finishes.
* **How a set is cut into pieces.** A contiguous (convex) set is one piece. A
  non-contiguous set ``S`` is cut by *re-entry level*: ``k(v)`` is the largest
  number of times a path ending at ``v`` re-enters ``S`` after leaving it; the
  nodes of one level form a convex set, and each level is further cut into its
  weakly connected components. Pieces run in order of (level, topological
  position of their first node).
* If pieces on different devices wait on each other (possible only for
  interleaved non-contiguous or hand-made placements), no schedule exists in
  this model: latency is ``inf`` and :func:`single_sample_latency` says why.

>>> from viz_place.model import OpGraph, Cluster
>>> from viz_place.cost.compiled import compile_problem
>>> g = OpGraph.from_records([
...     {"id": "a", "latency": {"cpu": 4.0, "fpga": 1.0}, "transfer_cost": 0.5},
...     {"id": "b", "latency": {"cpu": 2.0, "fpga": 1.0}}], [("a", "b")])
>>> p = compile_problem(g, Cluster.paper(1, 1, None))
>>> single_sample_latency(p, [0, 1])[0]   # a on fpga: 1 + 0.5 out; b on cpu: +2
3.5
"""
from __future__ import annotations

import math
from collections import deque
from typing import Sequence

from ..model.components import weak_components
from .compiled import CompiledProblem


def _nonconvex_devices(prob: CompiledProblem, dev: Sequence[int], accel: Sequence[bool]) -> set[int]:
    """Accelerator devices whose node set is not convex (bitmask reachability)."""
    n = prob.n
    preds, succs = prob.preds, prob.succs
    anc = [0] * n   # devices with a strict ancestor
    for v in range(n):
        m = 0
        for u in preds[v]:
            m |= anc[u] | (1 << dev[u])
        anc[v] = m
    desc = [0] * n
    bad = 0
    for v in range(n - 1, -1, -1):
        m = 0
        for w in succs[v]:
            m |= desc[w] | (1 << dev[w])
        desc[v] = m
        bad |= anc[v] & m & ~(1 << dev[v])
    return {d for d in range(prob.num_devices) if accel[d] and bad >> d & 1}


def pieces_of(prob: CompiledProblem, dev: Sequence[int]) -> dict[int, list[list[int]]]:
    """Accelerator device -> its pieces (lists of node indices), in run order."""
    n = prob.n
    accel = prob.pays.tolist()
    preds = prob.preds
    by_dev: dict[int, list[int]] = {}
    for v in range(n):
        if accel[dev[v]]:
            by_dev.setdefault(dev[v], []).append(v)
    nonconvex = _nonconvex_devices(prob, dev, accel) if by_dev else set()
    out: dict[int, list[list[int]]] = {}
    for d, members in by_dev.items():
        if d not in nonconvex:
            out[d] = [members]
            continue
        level = [-1] * n   # max level of d-nodes among ancestors-or-self
        k_of: dict[int, int] = {}
        for v in range(n):
            best = -1
            inside = dev[v] == d
            for u in preds[v]:
                m = level[u]
                if m < 0:
                    continue
                if inside and dev[u] != d:
                    m += 1
                if m > best:
                    best = m
            if inside:
                k = max(best, 0)
                k_of[v] = k
                level[v] = k
            else:
                level[v] = best
        pieces: list[tuple[int, int, list[int]]] = []
        by_level: dict[int, list[int]] = {}
        for v in members:
            by_level.setdefault(k_of[v], []).append(v)
        for k, nodes in by_level.items():
            for comp in _components(prob, set(nodes)):
                pieces.append((k, comp[0], comp))
        pieces.sort(key=lambda t: (t[0], t[1]))
        out[d] = [p for _, _, p in pieces]
    return out


def _components(prob: CompiledProblem, nodes: set[int]) -> list[list[int]]:
    return [sorted(c) for c in weak_components(sorted(nodes), prob.preds, prob.succs)]


def single_sample_latency(prob: CompiledProblem, dev: Sequence[int], *, record: list | None = None
                          ) -> tuple[float, list[float], str | None]:
    """(latency, finish time per node, problem or None) for device indices ``dev``.

    With ``record`` (a list), one dict per scheduled unit is appended to it:
    ``{"device", "nodes", "start", "finish", "compute", "comm_in", "comm_out", "piece"}``
    (a piece of an accelerator, or one node of a host device; ``comm_*`` include
    the link factor). :func:`viz_place.cost.schedule.latency_schedule` draws on it.
    """
    dev = [int(d) for d in dev]
    n = prob.n
    if n == 0:
        return 0.0, [], None
    lat = prob.lat
    tcost = prob.tcost.tolist()
    link = prob.link.tolist()
    dpreds, dsuccs = prob.data_preds, prob.data_succs
    pieces = pieces_of(prob, dev)
    # Units: one per host node, one per piece.
    unit_of = list(range(n))
    unit_nodes: list[list[int]] = [[v] for v in range(n)]
    unit_dev: list[int] = list(dev)
    is_piece = [False] * n
    prev_piece: dict[int, int] = {}
    for d, plist in pieces.items():
        last = -1
        for nodes in plist:
            uid = len(unit_nodes)
            unit_nodes.append(nodes)
            unit_dev.append(d)
            is_piece.append(True)
            for v in nodes:
                unit_of[v] = uid
            if last >= 0:
                prev_piece[uid] = last
            last = uid
    U = len(unit_nodes)
    live = [bool(is_piece[u]) or unit_of[unit_nodes[u][0]] == u for u in range(U)]
    indeg = [0] * U
    out_edges: list[list[int]] = [[] for _ in range(U)]
    for u in range(U):
        if not live[u]:
            continue
        srcs = set()
        for v in unit_nodes[u]:
            for p in prob.preds[v]:
                pu = unit_of[p]
                if pu != u:
                    srcs.add(pu)
        if u in prev_piece:
            srcs.add(prev_piece[u])
        indeg[u] = len(srcs)
        for s in srcs:
            out_edges[s].append(u)
    ready = deque(u for u in range(U) if live[u] and indeg[u] == 0)
    finish_unit = [0.0] * U
    start_unit = [0.0] * U
    done = 0
    total_live = sum(live)
    while ready:
        u = ready.popleft()
        done += 1
        nodes = unit_nodes[u]
        d = unit_dev[u]
        if not is_piece[u]:
            v = nodes[0]
            t = 0.0
            for p in prob.preds[v]:
                f = finish_unit[unit_of[p]]
                if f > t:
                    t = f
            finish_unit[u] = t + float(lat[v, d])
            if record is not None:
                record.append({"device": d, "nodes": nodes, "start": t, "finish": finish_unit[u],
                               "compute": float(lat[v, d]), "comm_in": 0.0, "comm_out": 0.0, "piece": False})
        else:
            members = set(nodes)
            t = finish_unit[prev_piece[u]] if u in prev_piece else 0.0
            compute = 0.0
            sources_in: set[int] = set()
            comm_out = 0.0
            for v in nodes:
                compute += float(lat[v, d])
                for p in prob.preds[v]:
                    if p not in members:
                        f = finish_unit[unit_of[p]]
                        if f > t:
                            t = f
                for p in dpreds[v]:
                    if p not in members:
                        sources_in.add(p)
                for w in dsuccs[v]:
                    if w not in members:
                        comm_out += tcost[v]
                        break
            comm_in = sum(tcost[p] for p in sources_in)
            start_unit[u] = t
            finish_unit[u] = t + compute + (comm_in + comm_out) * link[d]
            if record is not None:
                record.append({"device": d, "nodes": nodes, "start": t, "finish": finish_unit[u], "compute": compute,
                               "comm_in": comm_in * link[d], "comm_out": comm_out * link[d], "piece": True})
        for w in out_edges[u]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if done < total_live:
        stuck = sorted({prob.device_names[unit_dev[u]] for u in range(U) if live[u] and indeg[u] > 0 and is_piece[u]})
        why = ("pieces on " + ", ".join(stuck) + " wait on each other's outputs; under the latency model "
               "(a piece starts only when all its inputs have arrived) no schedule exists")
        return math.inf, [math.inf] * n, why
    finish = [finish_unit[unit_of[v]] for v in range(n)]
    return max(finish), finish, None
