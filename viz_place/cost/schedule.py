"""What the pipeline and device-level views draw, from an :class:`~viz_place.cost.Evaluation`.

* :func:`pipeline_schedule` — the pipelined steady state: samples enter every
  ``max_load`` (the time per sample); each device, in pipeline order (by its
  first op in topological order), works on sample ``s`` during period
  ``stage + s``: its compute, then its communication (side by side with
  ``overlap``), then idles for ``max_load - load``. The bottleneck device never idles.
* :func:`latency_schedule` — one sample under the latency model
  (:mod:`viz_place.cost.latency`): each accelerator piece's wait for its
  inputs, incoming transfers, compute and outgoing transfers; host ops as they run.
* :func:`device_flows` — the device-level graph: for each ordered pair of
  devices, the transfer cost of the outputs one sends the other (each source
  op's ``transfer_cost`` once per receiving device), the bytes when known, and
  whether the pair lies on a cycle between devices.

Every number is the evaluator's (loads, compute, communication, the latency
model's start and finish times); nothing here re-derives a cost.

>>> from viz_place.model import OpGraph, Cluster, Placement
>>> from viz_place.cost import evaluate
>>> g = OpGraph.from_records([
...     {"id": "a", "latency": {"cpu": 4.0, "fpga": 1.0}, "transfer_cost": 0.5},
...     {"id": "b", "latency": {"cpu": 2.0, "fpga": 2.0}}], [("a", "b")])
>>> ev = evaluate(g, Cluster.paper(2, 0, None), Placement({"a": "fpga:0", "b": "fpga:1"}))
>>> [(b.device, b.sample, b.kind, b.start, b.end) for b in pipeline_schedule(ev, samples=1)]
[('fpga:0', 0, 'compute', 0.0, 1.0), ('fpga:0', 0, 'communication', 1.0, 1.5), ('fpga:1', 0, 'compute', 2.5, 4.5), ('fpga:1', 0, 'communication', 4.5, 5.0)]
>>> [(f.source, f.target, f.cost) for f in device_flows(ev)]
[('fpga:0', 'fpga:1', 0.5)]
>>> [(p.device, p.start, p.comm_in, p.compute, p.finish) for p in latency_schedule(ev).units]
[('fpga:0', 0.0, 0.0, 1.0, 1.5), ('fpga:1', 1.5, 0.5, 2.0, 4.0)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .latency import single_sample_latency


@dataclass(frozen=True)
class Block:
    """One bar of the pipeline Gantt chart."""

    device: str
    sample: int
    kind: str          # "compute" or "communication"
    start: float
    end: float
    stage: int


def pipeline_order(evaluation) -> list[str]:
    """Devices holding ops, in pipeline order (by the topological position of their first op)."""
    dev = evaluation._dev
    names = evaluation._prob.device_names
    first: dict[int, int] = {}
    for v, d in enumerate(dev.tolist()):
        first.setdefault(d, v)
    return [names[d] for d in sorted(first, key=first.get)]


def pipeline_schedule(evaluation, samples: int = 4) -> list[Block]:
    """Gantt blocks of ``samples`` consecutive samples in the pipelined steady state."""
    T = evaluation.max_load
    figures = {d.name: d for d in evaluation.devices}
    out: list[Block] = []
    if not math.isfinite(T):
        return out
    for stage, name in enumerate(pipeline_order(evaluation)):
        d = figures[name]
        for s in range(samples):
            t0 = (stage + s) * T
            out.append(Block(name, s, "compute", t0, t0 + d.compute, stage))
            if d.communication > 0:
                c0 = t0 if evaluation.overlap else t0 + d.compute
                out.append(Block(name, s, "communication", c0, c0 + d.communication, stage))
    return out


@dataclass(frozen=True)
class Unit:
    """One scheduled unit of the latency model: an accelerator piece or a host op."""

    device: str
    nodes: tuple[str, ...]
    start: float       # when its inputs have all arrived (and the previous piece finished)
    comm_in: float
    compute: float
    comm_out: float
    finish: float
    piece: bool


@dataclass(frozen=True)
class LatencySchedule:
    latency: float
    issue: str | None
    units: tuple[Unit, ...]


def latency_schedule(evaluation) -> LatencySchedule:
    """The single-sample schedule the latency figure comes from (pieces, waits, transfers)."""
    prob, dev = evaluation._prob, evaluation._dev
    record: list = []
    latency, _finish, issue = single_sample_latency(prob, dev, record=record)
    names, ids = prob.device_names, prob.node_ids
    units = tuple(Unit(names[r["device"]], tuple(ids[v] for v in r["nodes"]), r["start"], r["comm_in"],
                       r["compute"], r["comm_out"], r["finish"], r["piece"])
                  for r in sorted(record, key=lambda r: (r["start"], r["device"])))
    return LatencySchedule(latency, issue, units)


@dataclass(frozen=True)
class Flow:
    """Data sent from one device to another per sample."""

    source: str
    target: str
    cost: float        # sum of the sources' transfer_cost (before link factors)
    bytes: float | None
    ops: int           # how many source ops send
    on_cycle: bool


def device_flows(evaluation) -> list[Flow]:
    """One :class:`Flow` per ordered device pair that exchanges data (see the module docstring)."""
    prob, dev = evaluation._prob, evaluation._dev
    if prob.esrc.size == 0:
        return []
    s, t = prob.esrc, prob.edst
    cross = dev[s] != dev[t]
    if not cross.any():
        return []
    D = prob.num_devices
    pairs = np.unique(s[cross] * D + dev[t[cross]])     # (source op, receiving device), once each
    u, r = np.divmod(pairs, D)
    nodes = prob.graph.nodes()
    acc: dict[tuple[int, int], list] = {}
    for ui, ri in zip(u.tolist(), r.tolist()):
        key = (int(dev[ui]), ri)
        a = acc.setdefault(key, [0.0, 0.0, 0, True])
        a[0] += float(prob.tcost[ui])
        ob = nodes[ui].output_bytes
        if ob is None:
            a[3] = False
        else:
            a[1] += float(ob)
        a[2] += 1
    g = nx.DiGraph(list(acc))
    cyc = {frozenset(c) for c in nx.strongly_connected_components(g) if len(c) > 1}
    on_cycle = {n for c in cyc for n in c}
    names = prob.device_names
    out = []
    for (a, b), (cost, nbytes, ops, known) in sorted(acc.items()):
        same = any(a in c and b in c for c in cyc)
        out.append(Flow(names[a], names[b], cost, nbytes if known else None, ops, bool(same and a in on_cycle)))
    return out
