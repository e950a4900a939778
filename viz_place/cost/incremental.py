"""Incremental evaluation: the change in every throughput figure when one node moves.

Same semantics as :func:`viz_place.cost.evaluate` (tests assert equality after
random moves). A move costs O(degree of the node + number of devices), so local
search, RL and the live UI can afford thousands per second.

>>> from viz_place.model import OpGraph, Cluster
>>> from viz_place.cost.compiled import compile_problem
>>> g = OpGraph.from_records([
...     {"id": "a", "latency": {"cpu": 4.0, "fpga": 1.0}, "transfer_cost": 0.5},
...     {"id": "b", "latency": {"cpu": 2.0, "fpga": 1.0}}], [("a", "b")])
>>> inc = IncrementalEvaluator(compile_problem(g, Cluster.paper(2, 1, None)), [0, 0])
>>> inc.max_load
2.0
>>> delta = inc.move(1, 1)        # b -> fpga:1
>>> delta.max_load, sorted(delta.changed)
(1.5, ['fpga:0', 'fpga:1'])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .compiled import CompiledProblem
from .evaluate import Evaluation, evaluate_indices


@dataclass(frozen=True)
class DeviceChange:
    compute: float
    communication: float
    load: float
    memory: float


@dataclass(frozen=True)
class MoveDelta:
    """What one move changed: per changed device its new figures, and the new max-load."""

    node: str
    old_device: str
    new_device: str
    changed: Mapping[str, DeviceChange]
    max_load: float
    bottleneck: str


class IncrementalEvaluator:
    """Mutable evaluation state of one placement (device indices per node)."""

    def __init__(self, prob: CompiledProblem, dev: Sequence[int], *, overlap: bool = False) -> None:
        self.prob = prob
        self.overlap = overlap
        self.dev = [int(d) for d in dev]
        if len(self.dev) != prob.n:
            raise ValueError(f"expected {prob.n} device indices, got {len(self.dev)}")
        D = prob.num_devices
        # Unsupported (infinite) latencies are counted apart so moves never compute inf - inf.
        finite = np.isfinite(prob.lat)
        self._lat = np.where(finite, prob.lat, 0.0).tolist()
        self._unsupported = (~finite).tolist()
        self._bad = [0] * D
        self._size = prob.size.tolist()
        self._tc = prob.tcost.tolist()
        self._link_pay = (prob.link * prob.pays).tolist()
        self._bw = prob.backward.tolist()
        self.compute = [0.0] * D
        self.memory = [0.0] * D
        self.comm = [0.0] * D
        for i, d in enumerate(self.dev):
            self.compute[d] += self._lat[i][d]
            self._bad[d] += self._unsupported[i][d]
            self.memory[d] += self._size[i]
        self._cnt: list[dict[int, int]] = [dict() for _ in range(prob.n)]
        for u, v in zip(prob.esrc.tolist(), prob.edst.tolist()):
            c = self._cnt[u]
            dv = self.dev[v]
            c[dv] = c.get(dv, 0) + 1
        for u in range(prob.n):
            for d, x in self._contribution(u):
                self.comm[d] += x

    # --- internals ---------------------------------------------------------
    def _contribution(self, u: int) -> list[tuple[int, float]]:
        du = self.dev[u]
        c = self._tc[u]
        if c == 0.0:
            return []
        out = [(d, c * self._link_pay[d]) for d, k in self._cnt[u].items() if k and d != du]
        if out:
            out.append((du, c * self._link_pay[du]))
        return out

    def _load(self, d: int) -> float:
        if self._bad[d]:
            return float("inf")
        if self.overlap:
            return max(self.compute[d], self.comm[d])
        return self.compute[d] + self.comm[d]

    # --- public API ----------------------------------------------------------
    def compute_of(self, d: int) -> float:
        """Compute on device ``d`` (``inf`` while it holds an op it cannot run)."""
        return float("inf") if self._bad[d] else self.compute[d]

    @property
    def loads(self) -> list[float]:
        return [self._load(d) for d in range(self.prob.num_devices)]

    @property
    def max_load(self) -> float:
        return max(self.loads)

    def relocate(self, i: int, new: int) -> set[int]:
        """Move node ``i`` to device ``new`` without building a :class:`MoveDelta` (the fast path of
        searches that only read :attr:`loads`); returns the indices of the devices whose figures changed."""
        old = self.dev[i]
        if new == old:
            return set()
        affected = {i, *self.prob.data_preds[i]}
        touched = {old, new}
        for u in affected:
            for d, x in self._contribution(u):
                self.comm[d] -= x
                touched.add(d)
        for p in self.prob.data_preds[i]:
            c = self._cnt[p]
            c[old] -= 1
            c[new] = c.get(new, 0) + 1
        self.dev[i] = new
        for u in affected:
            for d, x in self._contribution(u):
                self.comm[d] += x
                touched.add(d)
        self.compute[old] -= self._lat[i][old]
        self.compute[new] += self._lat[i][new]
        self._bad[old] -= self._unsupported[i][old]
        self._bad[new] += self._unsupported[i][new]
        self.memory[old] -= self._size[i]
        self.memory[new] += self._size[i]
        return touched

    def move(self, i: int, new: int) -> MoveDelta:
        """Move node ``i`` to device ``new``; return what changed."""
        old = self.dev[i]
        names = self.prob.device_names
        touched = self.relocate(i, new)
        loads = self.loads
        best = max(range(len(loads)), key=loads.__getitem__)
        changed = {names[d]: DeviceChange(self.compute_of(d), self.comm[d], loads[d], self.memory[d])
                   for d in sorted(touched)}
        return MoveDelta(self.prob.node_ids[i], names[old], names[new], changed, loads[best], names[best])

    def move_value(self, i: int, new: int) -> float:
        """Max-load if node ``i`` moved to ``new`` (state unchanged afterwards)."""
        old = self.dev[i]
        if new == old:
            return self.max_load
        value = self.move(i, new).max_load
        self.move(i, old)
        return value

    def evaluation(self, *, pins: Mapping[str, str] | None = None) -> Evaluation:
        """A full :class:`Evaluation` of the current state."""
        return evaluate_indices(self.prob, np.array(self.dev), pins=pins, overlap=self.overlap)
