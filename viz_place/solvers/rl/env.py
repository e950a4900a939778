"""The placement environment: a complete placement improved one colocation group at a time.

An *episode* is one sweep over the free (unpinned) colocation groups in
topological order. At each step the policy sees, for every device the group may
go to, a row ``[group embedding, group state, device features]`` and picks one;
the group moves there. The reward is the decrease of the objective, divided by
the objective at the start of the sweep so graphs of any size are comparable.

Objectives (all figures from the shared evaluator):

* ``"max_load"`` (``"throughput"`` is read as it) — max-load, from :class:`~viz_place.cost.IncrementalEvaluator`
  (a move costs O(degree)). The reward adds a small tie-break, ``shaping`` times
  the root-mean-square device load, so moves that relieve a non-bottleneck device
  are not invisible; the objective reported is the plain max-load.
* ``"latency"`` — :func:`~viz_place.cost.single_sample_latency` after each
  candidate move (O(n) per candidate).

Masking, never penalties: a device is offered only if every node of the group
supports its kind, pins allow it (pinned groups are never visited), its memory
would not overflow and, for latency, the latency stays finite.

>>> from viz_place.samples import make_graph
>>> from viz_place.cost import compile_problem
>>> g = make_graph("chain", 8, seed=0)
>>> env = PlacementEnv(compile_problem(g, g.default_cluster))
>>> env.reset(topo_fill(env))
>>> env.objective() > 0
True
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ...cost import CompiledProblem, IncrementalEvaluator, single_sample_latency
from ...errors import InfeasibleError
from ...model.objective import OBJECTIVE_ALIASES
from .features import GROUP_DIM, group_embeddings

DEVICE_NAMES = ("current", "host", "speed", "lat", "load", "new_load", "new_objective", "new_shaped",
                "free_memory", "neighbours", "bottleneck", "inv_devices", "improves", "best_shaped",
                "best_objective")
STATE_NAMES = ("on_host", "own_load", "start_time")
DEV_DIM = len(DEVICE_NAMES)
STATE_DIM = len(STATE_NAMES)
#: width of one policy input row.
IN_DIM = GROUP_DIM + STATE_DIM + DEV_DIM
OBJECTIVES = ("max_load", "latency")
_TOL = 1e-9


class _Evaluator(IncrementalEvaluator):
    """The shared incremental evaluator with one more method for the search's inner loop:
    :meth:`shift` moves a node exactly as :meth:`~viz_place.cost.IncrementalEvaluator.move`
    does (same updates in the same order, so the same figures) but builds no report of
    what changed — about half the cost of a move."""

    def shift(self, i: int, new: int) -> None:
        old = self.dev[i]
        if new == old:
            return
        preds = self.prob.data_preds[i]
        affected = {i, *preds}
        comm, contribution = self.comm, self._contribution
        for u in affected:
            for d, x in contribution(u):
                comm[d] -= x
        for p in preds:
            c = self._cnt[p]
            c[old] -= 1
            c[new] = c.get(new, 0) + 1
        self.dev[i] = new
        for u in affected:
            for d, x in contribution(u):
                comm[d] += x
        lat, bad, size = self._lat[i], self._unsupported[i], self._size[i]
        self.compute[old] -= lat[old]
        self.compute[new] += lat[new]
        self._bad[old] -= bad[old]
        self._bad[new] += bad[new]
        self.memory[old] -= size
        self.memory[new] += size


class PlacementEnv:
    """Mutable state of one (graph, cluster, pins) problem under a placement.

    ``pins`` maps node index -> device index (already validated). ``evaluations``
    counts candidate placements evaluated (one per device tried per step).
    """

    def __init__(self, prob: CompiledProblem, pins: Mapping[int, int] | None = None, *,
                 objective: str = "max_load", shaping: float = 0.1) -> None:
        objective = OBJECTIVE_ALIASES.get(objective, objective)
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        self.prob = prob
        self.objective_name = objective
        self.shaping = float(shaping)
        D = prob.num_devices
        self.D = D
        self.members = [list(m) for m in prob.groups]
        G = len(self.members)
        self.glat = np.array([prob.lat[m].sum(axis=0) for m in self.members]).reshape(G, D)
        self.gsize = np.array([prob.size[m].sum() for m in self.members])
        allowed = np.isfinite(self.glat)
        self.pinned = np.full(G, -1, dtype=np.int64)
        for i, d in (pins or {}).items():
            g = int(prob.group[i])
            self.pinned[g] = d
            row = np.zeros(D, dtype=bool)
            row[d] = True
            allowed[g] &= row
        self.allowed = allowed
        for g in range(G):
            if not allowed[g].any():
                node = prob.node_ids[self.members[g][0]]
                raise InfeasibleError(f"node {node!r} (and its colocation group) cannot run on any device: "
                                      "no device class supports all of its ops" + (" at its pin" if self.pinned[g] >= 0 else ""))
        pinned_mem = np.zeros(D)
        for g in range(G):
            if self.pinned[g] >= 0:
                pinned_mem[self.pinned[g]] += self.gsize[g]
        for d in np.flatnonzero(pinned_mem > prob.capacity * (1 + _TOL)):
            raise InfeasibleError(f"device {prob.device_names[d]!r}: the nodes pinned to it need memory "
                                  f"{pinned_mem[d]:g}, more than its capacity {prob.capacity[d]:g}")
        self.free_groups = [g for g in range(G) if self.pinned[g] < 0 and allowed[g].sum() > 1]
        self.cap = prob.capacity.tolist()
        self.host = (~prob.pays).astype(float)
        self.emb = group_embeddings(prob)
        neigh = []
        for m in self.members:
            ms = set(m)
            ns = {u for i in m for u in (*prob.data_preds[i], *prob.data_succs[i])} - ms
            neigh.append(sorted(ns))
        self.neigh = neigh
        self.evaluations = 0
        self.inc: _Evaluator | None = None
        self._start = np.zeros(G)

    # --- state ---------------------------------------------------------------
    def reset(self, dev) -> None:
        """Start from device indices ``dev`` (one per node)."""
        self.inc = _Evaluator(self.prob, dev)
        self._obj = self._objective_now()
        self.refresh_schedule()

    @property
    def dev(self) -> list[int]:
        return self.inc.dev

    def _objective_now(self) -> float:
        if self.objective_name == "latency":
            return single_sample_latency(self.prob, self.inc.dev)[0]
        return self.inc.max_load

    def objective(self) -> float:
        """The objective of the current placement (max-load or latency)."""
        return self._obj

    def shaped(self, loads: list[float], obj: float) -> float:
        """The value the reward is the decrease of: objective + shaping x RMS load (throughput)."""
        if self.objective_name == "latency" or not loads:
            return obj
        return obj + self.shaping * math.sqrt(sum(x * x for x in loads) / len(loads))

    def refresh_schedule(self) -> None:
        """Recompute each group's start time under the current placement (once per sweep)."""
        lat, finish, _ = single_sample_latency(self.prob, self.inc.dev)
        G = len(self.members)
        if not math.isfinite(lat) or lat <= 0:
            self._start = np.zeros(G)
            return
        dev = self.inc.dev
        firsts = [m[0] for m in self.members]
        self._start = np.array([(finish[i] - self.prob.lat[i, dev[i]]) / lat for i in firsts])

    def resync(self) -> None:
        """Recompute the objective after groups were moved directly (:func:`~.polish.polish`)."""
        self._obj = self._objective_now()

    def move_group(self, g: int, d: int) -> None:
        shift = self.inc.shift
        for i in self.members[g]:
            shift(i, d)

    # --- one decision ----------------------------------------------------------
    def observe(self, g: int):
        """Candidates for group ``g``: ``(devices, rows, shaped value, objective)`` per allowed
        device, or ``None`` when the group has one choice only."""
        inc = self.inc
        cur = inc.dev[self.members[g][0]]
        loads = inc.loads
        memory = inc.memory
        size = self.gsize[g]
        cand = [d for d in range(self.D) if self.allowed[g, d] and
                (d == cur or memory[d] + size <= self.cap[d] * (1 + _TOL))]
        if len(cand) < 2:
            return None
        obj = self._obj
        M = max(loads) or 1.0
        J = self.shaped(loads, obj)
        k = len(cand)
        new_load = np.empty(k)
        new_obj = np.empty(k)
        new_J = np.empty(k)
        keep = np.ones(k, dtype=bool)
        for j, d in enumerate(cand):
            if d == cur:
                new_load[j], new_obj[j], new_J[j] = loads[d], obj, J
                continue
            self.move_group(g, d)
            nl = inc.loads
            o = single_sample_latency(self.prob, inc.dev)[0] if self.objective_name == "latency" else max(nl)
            self.move_group(g, cur)
            self.evaluations += 1
            new_load[j], new_obj[j], new_J[j] = nl[d], o, self.shaped(nl, o)
            if not math.isfinite(o):
                keep[j] = False
        if keep.sum() < 2:
            return None
        cand_arr = np.array(cand)[keep]
        new_load, new_obj, new_J = new_load[keep], new_obj[keep], new_J[keep]
        k = len(cand_arr)
        glat = self.glat[g, cand_arr]
        dev = inc.dev
        nb = self.neigh[g]
        on = np.zeros(self.D)
        for u in nb:
            on[dev[u]] += 1.0
        cap = np.array([self.cap[d] for d in cand_arr])
        mem_after = np.array([memory[d] + (size if d != cur else 0.0) for d in cand_arr])
        with np.errstate(divide="ignore", invalid="ignore"):
            free = np.where(np.isfinite(cap), np.clip((cap - mem_after) / np.where(cap > 0, cap, 1.0), 0.0, 1.0), 1.0)
        scale = obj if obj > 0 else 1.0
        dev_feats = np.stack([
            (cand_arr == cur).astype(float),
            self.host[cand_arr],
            np.clip(np.log(np.maximum(glat, 1e-12) / max(float(glat.min()), 1e-12)), 0.0, 5.0),
            glat / M,
            np.array([loads[d] for d in cand_arr]) / M,
            new_load / M,
            np.clip((new_obj - obj) / scale * 10.0, -5.0, 5.0),
            np.clip((new_J - J) / scale * 10.0, -5.0, 5.0),
            free,
            on[cand_arr] / max(len(nb), 1),
            np.array([loads[d] >= M * (1 - _TOL) for d in cand_arr], dtype=float),
            np.full(k, 1.0 / self.D),
            np.sign(np.round((J - new_J) / scale, 12)),
            (new_J <= new_J.min() + 1e-12 * scale).astype(float),
            (new_obj <= new_obj.min() + 1e-12 * scale).astype(float),
        ], axis=1)
        state = np.array([self.host[cur], loads[cur] / M, self._start[g]])
        rows = np.empty((k, IN_DIM))
        rows[:, :GROUP_DIM] = self.emb[g]
        rows[:, GROUP_DIM:GROUP_DIM + STATE_DIM] = state
        rows[:, GROUP_DIM + STATE_DIM:] = dev_feats
        return cand_arr, rows, new_J, new_obj

    def apply(self, g: int, d: int, obj: float) -> None:
        """Move group ``g`` to device ``d``; ``obj`` is the objective observed for that move."""
        self.move_group(g, d)
        self._obj = float(obj)


def topo_fill(env: PlacementEnv, *, balance: bool | None = None) -> list[int]:
    """A sensible start: walk the groups in topological order, filling devices one after
    another up to an equal share of work (``balance``, the default for throughput) or up
    to their memory (the default for latency: fewer cuts), respecting support, pins and memory.

    Raises :class:`~viz_place.errors.InfeasibleError` (naming a node) if some group fits nowhere.
    """
    prob = env.prob
    D = env.D
    dev = [0] * prob.n
    memory = [0.0] * D
    # Fill accelerators first (in cluster order), then host devices.
    order = [d for d in range(D) if prob.pays[d]] + [d for d in range(D) if not prob.pays[d]]
    fill = [d for d in order if prob.pays[d]] or order
    work = np.where(env.allowed, env.glat, np.inf).min(axis=1) if len(env.members) else np.zeros(0)
    if balance is None:
        balance = env.objective_name == "max_load"
    target = work.sum() / max(len(fill), 1) if balance else math.inf
    G = len(env.members)
    for g in range(G):   # pinned groups first: they take their memory
        if env.pinned[g] >= 0:
            for i in env.members[g]:
                dev[i] = int(env.pinned[g])
            memory[env.pinned[g]] += env.gsize[g]
    pos, acc = 0, 0.0
    for g in range(G):
        if env.pinned[g] >= 0:
            continue
        size = env.gsize[g]

        def fits(d: int) -> bool:
            return bool(env.allowed[g, d]) and memory[d] + size <= env.cap[d] * (1 + _TOL)

        if pos < len(fill) - 1 and acc + work[g] / 2 > target * (1 + _TOL) and acc > 0:
            pos, acc = pos + 1, 0.0
        chosen = None
        for p in range(pos, len(fill)):
            if fits(fill[p]):
                if p != pos:
                    pos, acc = p, 0.0
                chosen = fill[p]
                break
        if chosen is None:
            ok = [d for d in order if fits(d)]
            if not ok:
                node = prob.node_ids[env.members[g][0]]
                raise InfeasibleError(f"node {node!r}: no device has room for it (size {size:g}) after "
                                      "filling in topological order; the devices' memory is too small")
            chosen = min(ok, key=lambda d: (not prob.pays[d], memory[d]))
        else:
            acc += work[g]
        for i in env.members[g]:
            dev[i] = chosen
        memory[chosen] += size
    return dev
