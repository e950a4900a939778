"""The one cost evaluator: every number a user sees comes from here.

Throughput semantics (the paper's model exactly, generalised to device classes; the README's
*Concepts and the cost model*):

* compute of a device = sum of its nodes' latencies on that device;
* communication of a device that pays communication: for every source node
  ``u`` with a data edge to a node on another device, ``u``'s device pays
  ``transfer_cost(u)`` once and every *other* device receiving ``u``'s output
  pays it once (per device, however many edges), times the device's link
  factor; host classes (CPUs) pay nothing;
* load = compute + communication (or ``max`` of the two with
  ``overlap=True``, the paper's Appendix G variant); max-load is the time per
  sample when pipelined, throughput its inverse; training load is forward plus
  backward work on the device.

>>> from viz_place.model import OpGraph, Cluster, Placement
>>> g = OpGraph.from_records([
...     {"id": "a", "latency": {"cpu": 4.0, "fpga": 1.0}, "transfer_cost": 0.5},
...     {"id": "b", "latency": {"cpu": 2.0, "fpga": 1.0}}], [("a", "b")])
>>> ev = evaluate(g, Cluster.paper(2, 1, None), Placement({"a": "fpga:0", "b": "fpga:1"}))
>>> ev.max_load, ev.bottleneck, ev.feasible
(1.5, 'fpga:0', True)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np

from ..errors import PlacementError
from ..model import Cluster, OpGraph, Placement
from ..model.units import format_bytes
from .compiled import CompiledProblem, compile_problem
from .latency import single_sample_latency

REL_TOL = 1e-9


@dataclass(frozen=True)
class DeviceFigures:
    """Per-device figures of one evaluation."""

    name: str
    device_class: str
    compute: float
    communication: float
    load: float
    memory: float
    memory_capacity: float | None
    forward_load: float
    backward_load: float
    num_nodes: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "class": self.device_class, "load": self.load, "compute": self.compute,
                "communication": self.communication, "memory": self.memory,
                "memory_capacity": self.memory_capacity, "forward_load": self.forward_load,
                "backward_load": self.backward_load, "nodes": self.num_nodes}


@dataclass(frozen=True, eq=False)
class Evaluation:
    """What a placement costs. ``latency`` is computed on first access."""

    devices: tuple[DeviceFigures, ...]
    max_load: float
    bottleneck: str | None
    violations: tuple[str, ...]
    overlap: bool
    _prob: CompiledProblem = field(repr=False)
    _dev: np.ndarray = field(repr=False)

    @property
    def feasible(self) -> bool:
        return not self.violations

    @property
    def throughput(self) -> float:
        """Samples per time unit when pipelined (``1 / max_load``)."""
        if self.max_load == 0:
            return math.inf
        return 1.0 / self.max_load

    @property
    def max_forward_plus_max_backward(self) -> float:
        """The training objective of the paper's IP: max forward load + max backward load."""
        return max((d.forward_load for d in self.devices), default=0.0) + \
            max((d.backward_load for d in self.devices), default=0.0)

    @cached_property
    def _latency(self) -> tuple[float, list[float], str | None]:
        return single_sample_latency(self._prob, self._dev)

    @property
    def latency(self) -> float:
        """Single-sample latency (see :mod:`viz_place.cost.latency`)."""
        return self._latency[0]

    @property
    def latency_issue(self) -> str | None:
        """Why latency is infinite (pieces that wait on each other), else ``None``."""
        return self._latency[2]

    @property
    def finish_times(self) -> dict[str, float]:
        return dict(zip(self._prob.node_ids, self._latency[1]))

    def device(self, name: str) -> DeviceFigures:
        for d in self.devices:
            if d.name == name:
                return d
        raise PlacementError(f"unknown device {name!r}")

    def value(self, objective: str) -> float:
        """The figure a solver optimises: ``"throughput"``/``"max_load"``, ``"latency"``,
        or ``"max_forward_plus_max_backward"``."""
        if objective in ("throughput", "max_load"):
            return self.max_load
        if objective == "latency":
            return self.latency
        if objective == "max_forward_plus_max_backward":
            return self.max_forward_plus_max_backward
        raise ValueError(f"unknown objective {objective!r}")

    def to_dict(self, *, with_latency: bool = True) -> dict[str, Any]:
        out = {"max_load": self.max_load, "throughput": self.throughput,
               "feasible": self.feasible, "violations": list(self.violations),
               "bottleneck": self.bottleneck,
               "max_forward_plus_max_backward": self.max_forward_plus_max_backward,
               "devices": [d.to_dict() for d in self.devices]}
        if with_latency:
            out["latency"] = self.latency
            out["latency_issue"] = self.latency_issue
        return out


_INSTANCE_RE = re.compile(r"^(.*):(\d+)$")


def _widen_cluster(cluster: Cluster, placement: Placement) -> tuple[Cluster, list[str]]:
    """Grow classes whose instances a placement uses beyond their count; name each excess."""
    need: dict[str, int] = {}
    for node, name in placement.assignment.items():
        if cluster.has_device(name):
            continue
        m = _INSTANCE_RE.match(name)
        if not m or m.group(1) not in {c.name for c in cluster.classes}:
            raise PlacementError(f"placement: node {node!r} is on unknown device {name!r}; devices are "
                                 f"{', '.join(cluster.device_names)}")
        need[m.group(1)] = max(need.get(m.group(1), 0), int(m.group(2)) + 1)
    if not need:
        return cluster, []
    notes = []
    for cname, cnt in need.items():
        have = cluster.class_named(cname).count
        notes.append(f"more devices used than exist: class {cname!r} has {have} device(s) "
                     f"but the placement uses {cname}:{cnt - 1}")
        cluster = cluster.with_class_count(cname, cnt)
    return cluster, notes


def evaluate(graph: OpGraph, cluster: Cluster, placement: Placement | Mapping[str, str], *,
             pins: Mapping[str, str] | None = None, overlap: bool = False) -> Evaluation:
    """Evaluate ``placement`` of ``graph`` on ``cluster``.

    Raises :class:`~viz_place.errors.PlacementError` if a node is unplaced or on
    a device of an unknown class; every other problem (memory over capacity,
    split colour class, moved pin, unsupported op, devices beyond a class's
    count) is reported in ``violations`` with the numbers still computed.
    """
    if not isinstance(placement, Placement):
        placement = Placement(dict(placement))
    cluster, violations = _widen_cluster(cluster, placement)
    prob = compile_problem(graph, cluster)
    missing = [n for n in prob.node_ids if n not in placement.assignment]
    if missing:
        raise PlacementError(f"placement: node(s) {', '.join(map(repr, missing[:5]))}"
                             f"{' ...' if len(missing) > 5 else ''} are not placed")
    if len(placement.assignment) != prob.n:
        extra = [n for n in placement.assignment if not graph.has_node(n)]
        raise PlacementError(f"placement: unknown node(s) {', '.join(map(repr, extra[:5]))}")
    dev = prob.to_index_array(placement)
    return evaluate_indices(prob, dev, pins=pins, overlap=overlap, _violations=violations)


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (``np.unique`` without its first-call import of ``numpy.ma``)."""
    v = np.sort(values)
    return v[np.concatenate(([True], v[1:] != v[:-1]))] if v.size else v


def communication_by_device(prob: CompiledProblem, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) communication per device, split by the source's direction."""
    D = prob.num_devices
    fwd = np.zeros(D)
    bwd = np.zeros(D)
    if prob.esrc.size == 0:
        return fwd, bwd
    cross = dev[prob.esrc] != dev[prob.edst]
    if not cross.any():
        return fwd, bwd
    s = prob.esrc[cross]
    pairs = _distinct(s * D + dev[prob.edst[cross]])
    ru, rd = np.divmod(pairs, D)
    senders = _distinct(s)
    sd = dev[senders]
    cost_r = prob.tcost[ru] * prob.link[rd] * prob.pays[rd]
    cost_s = prob.tcost[senders] * prob.link[sd] * prob.pays[sd]
    br, bs = prob.backward[ru], prob.backward[senders]
    fwd += np.bincount(rd[~br], weights=cost_r[~br], minlength=D)
    fwd += np.bincount(sd[~bs], weights=cost_s[~bs], minlength=D)
    bwd += np.bincount(rd[br], weights=cost_r[br], minlength=D)
    bwd += np.bincount(sd[bs], weights=cost_s[bs], minlength=D)
    return fwd, bwd


def evaluate_indices(prob: CompiledProblem, dev: np.ndarray, *, pins: Mapping[str, str] | None = None,
                     overlap: bool = False, _violations: list[str] | None = None) -> Evaluation:
    """:func:`evaluate` on a device-index array (``dev[i]`` for node ``i`` of ``prob``)."""
    dev = np.asarray(dev, dtype=np.int64)
    D = prob.num_devices
    names = prob.device_names
    node_lat = prob.lat[np.arange(prob.n), dev]
    bw = prob.backward
    comp_f = np.bincount(dev[~bw], weights=node_lat[~bw], minlength=D)
    comp_b = np.bincount(dev[bw], weights=node_lat[bw], minlength=D)
    compute = comp_f + comp_b
    comm_f, comm_b = communication_by_device(prob, dev)
    comm = comm_f + comm_b
    memory = np.bincount(dev, weights=prob.size, minlength=D)
    counts = np.bincount(dev, minlength=D)
    if overlap:
        load = np.maximum(compute, comm)
        fload, bload = np.maximum(comp_f, comm_f), np.maximum(comp_b, comm_b)
    else:
        load = compute + comm
        fload, bload = comp_f + comm_f, comp_b + comm_b
    violations = list(_violations or ())
    violations.extend(_violations_of(prob, dev, node_lat, memory, pins))
    # per device, as Python floats (one tolist() per figure: the same values as float() of each entry)
    rows = zip(names, prob.cluster.devices, compute.tolist(), comm.tolist(), load.tolist(), memory.tolist(),
               prob.capacity.tolist(), fload.tolist(), bload.tolist(), counts.tolist())
    devices = tuple(DeviceFigures(name, device.cls.name, c, m, ld, mem, None if math.isinf(cap) else cap, f, b, k)
                    for name, device, c, m, ld, mem, cap, f, b, k in rows)
    max_load = float(load.max()) if D else 0.0
    bottleneck = names[int(load.argmax())] if D and prob.n else None
    return Evaluation(devices=devices, max_load=max_load, bottleneck=bottleneck,
                      violations=tuple(violations), overlap=overlap, _prob=prob, _dev=dev)


def _violations_of(prob: CompiledProblem, dev: np.ndarray, node_lat: np.ndarray, memory: np.ndarray,
                   pins: Mapping[str, str] | None) -> list[str]:
    out: list[str] = []
    names, ids = prob.device_names, prob.node_ids
    over = memory > prob.capacity * (1 + REL_TOL)
    for d in np.flatnonzero(over):
        out.append(f"memory over capacity on device {names[d]}: {format_bytes(memory[d])} used of "
                   f"{format_bytes(prob.capacity[d])}")
    bad = np.flatnonzero(np.isinf(node_lat))
    for i in bad[:20]:
        kind = prob.cluster.devices[dev[i]].cls.kind
        out.append(f"unsupported op on device {names[dev[i]]}: node {ids[i]!r} has no latency for kind {kind!r}")
    if bad.size > 20:
        out.append(f"... and {bad.size - 20} more nodes on devices that cannot run them")
    first = np.array([g[0] for g in prob.groups], dtype=np.int64)
    split = np.flatnonzero(dev != dev[first[prob.group]])
    for gi in sorted(set(prob.group[split].tolist()))[:20]:
        members = prob.groups[gi]
        cc = prob.graph.node(ids[members[0]]).color_class
        used = sorted({names[dev[i]] for i in members})
        out.append(f"colour class {cc!r} split across devices {', '.join(used)}")
    for node, want in (pins or {}).items():
        i = prob.graph.index.get(str(node))
        if i is None:
            out.append(f"pinned node {node!r} does not exist in the graph")
        elif names[dev[i]] != want:
            out.append(f"pinned node {node!r} moved: it is on {names[dev[i]]} but pinned to {want}")
    return out
