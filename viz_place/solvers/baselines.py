"""The paper's baselines, each a registered solver.

* ``greedy-latency`` — the paper's latency heuristic: walk the colocation groups in
  topological order, fill the current accelerator while its memory allows, then
  open the next; what fits nowhere (or runs on no accelerator) goes to a CPU.
* ``single-device`` — everything on the one device that is best for the
  objective, among those that can hold it all.
* ``topo-fill`` — fill the accelerators in topological order, each up to an
  equal share of the total compute (the last takes the rest); host CPUs take
  what no accelerator can run or hold.
* ``pipedream`` — PipeDream-style: linearise the graph (topological order of
  the colocation groups), then split that chain optimally into consecutive
  blocks, one per device (a DP over prefixes, see :mod:`.baselines_chain`).
* ``expert`` — load a given split (our placement JSON or the paper's split format).
* ``local-search`` — in :mod:`.baselines_search`.

Every result goes through the evaluator: the claimed value is its figure.

>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> solve_topo_fill(inst.graph, inst.cluster, pins=inst.pins).status
'heuristic'
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..cost import evaluate_indices
from ..errors import InfeasibleError, PlacementError, SolverError
from ..model import Cluster, OpGraph, Placement, check_complete
from ._ilp_common import allowed_devices, group_label
from .base import SolverOptions, Stopwatch, prepare
from .registry import SolverInfo, register

OBJECTIVES = ("max_load", "latency")


def objective_name(objective: str) -> str:
    """Placement objective for an option value (``max_load`` -> ``throughput``)."""
    return "throughput" if objective == "max_load" else objective


def result(prob, dev, *, solver: str, objective: str, options, wall: float, status: str = "heuristic",
           message: str = "", pins=None) -> Placement:
    """A placement whose claimed value is the evaluator's figure for ``objective``."""
    dev = np.asarray(dev, dtype=np.int64)
    ev = evaluate_indices(prob, dev, pins=pins)
    return Placement(prob.to_assignment(dev), solver=solver, status=status, objective=objective_name(objective),
                     claimed_value=float(ev.value(objective)), options=options, wall_time=wall, message=message)


def group_sizes(prob) -> list[float]:
    return [float(prob.size[list(g)].sum()) for g in prob.groups]


def group_lat(prob, g: int, d: int) -> float:
    return float(prob.lat[list(prob.groups[g]), d].sum())


def pinned_groups(prob, pins: dict[str, str]) -> dict[int, int]:
    """Group index -> pinned device index."""
    index = prob.graph.index
    return {int(prob.group[index[n]]): prob.cluster.device_index(d) for n, d in pins.items()}


@dataclass(frozen=True)
class GreedyLatencyOptions(SolverOptions):
    """No options: the paper's heuristic is deterministic."""


@dataclass(frozen=True)
class SingleDeviceOptions(SolverOptions):
    objective: str = field(default="max_load", metadata={"help": "which single device is best: max_load or latency",
                                                         "choices": OBJECTIVES})


@dataclass(frozen=True)
class TopoFillOptions(SolverOptions):
    """No options: the accelerators are filled in cluster order (hosts take what they cannot run or hold)."""


@dataclass(frozen=True)
class ExpertOptions(SolverOptions):
    path: str = field(default="", metadata={"help": "file with the split: our placement JSON or the paper's split"})
    objective: str = field(default="max_load", metadata={"help": "value to report: max_load or latency",
                                                         "choices": OBJECTIVES})


def solve_greedy_latency(graph: OpGraph, cluster: Cluster, *, pins=None, options=None, progress=None,
                         cancel=None) -> Placement:
    """The paper's greedy latency heuristic (see the module docstring)."""
    watch = Stopwatch()
    opts, pins, prob = prepare(graph, cluster, pins, options, GreedyLatencyOptions)
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
    return result(prob, dev, solver="greedy-latency", objective="latency", options=asdict(opts),
                  wall=watch.elapsed, pins=pins)


def solve_single_device(graph: OpGraph, cluster: Cluster, *, pins=None, options=None, progress=None,
                        cancel=None) -> Placement:
    """Everything on one device (the best one for the objective that can hold it all)."""
    watch = Stopwatch()
    opts, pins, prob = prepare(graph, cluster, pins, options, SingleDeviceOptions)
    targets = sorted(set(pins.values()))
    if len(targets) > 1:
        raise InfeasibleError(f"single-device: nodes are pinned to several devices ({', '.join(targets)})")
    cands = [prob.cluster.device_index(targets[0])] if targets else \
        [d for d, dv in enumerate(prob.cluster.devices) if dv.index == 0]
    best, why = None, []
    total = float(prob.size.sum())
    for d in cands:
        name = prob.device_names[d]
        bad = np.flatnonzero(~np.isfinite(prob.lat[:, d]))
        if bad.size:
            why.append(f"{name} cannot run node {prob.node_ids[bad[0]]!r}")
            continue
        if total > prob.capacity[d] * (1 + 1e-12):
            why.append(f"{name} holds {prob.capacity[d]:.6g} of memory but the graph needs {total:.6g}")
            continue
        dev = np.full(prob.n, d, dtype=np.int64)
        value = evaluate_indices(prob, dev).value(opts.objective)
        if best is None or value < best[0]:
            best = (value, dev)
    if best is None:
        raise InfeasibleError("single-device: no single device can hold the whole graph: " + "; ".join(why))
    return result(prob, best[1], solver="single-device", objective=opts.objective, options=asdict(opts),
                  wall=watch.elapsed, pins=pins)


def solve_topo_fill(graph: OpGraph, cluster: Cluster, *, pins=None, options=None, progress=None,
                    cancel=None) -> Placement:
    """Fill the accelerators in topological order, each up to an equal share of the compute."""
    watch = Stopwatch()
    opts, pins, prob = prepare(graph, cluster, pins, options, TopoFillOptions)
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
    return result(prob, dev, solver="topo-fill", objective="max_load", options=asdict(opts), wall=watch.elapsed,
                  pins=pins)


def solve_expert(graph: OpGraph, cluster: Cluster, *, pins=None, options=None, progress=None,
                 cancel=None) -> Placement:
    """Load a given split (option ``path``); its value is the evaluator's; violations are listed in the message."""
    watch = Stopwatch()
    opts, pins, prob = prepare(graph, cluster, pins, options, ExpertOptions)
    if not opts.path:
        raise SolverError("expert: option 'path' is required: the file with the split "
                          "(our placement JSON or the paper's split format)")
    from ..io import load_placement
    placement, _file_pins = load_placement(opts.path, graph, cluster)
    check_complete(graph, cluster, placement)
    for node, dev in pins.items():
        if placement[node] != dev:
            raise PlacementError(f"expert: node {node!r} is pinned to {dev} but the split in {opts.path} puts it "
                                 f"on {placement[node]}")
    dev = prob.to_index_array(placement)
    ev = evaluate_indices(prob, dev, pins=pins)
    msg = f"split loaded from {opts.path}"
    if ev.violations:
        msg += "; violations: " + "; ".join(ev.violations)
    return result(prob, dev, solver="expert", objective=opts.objective, options=asdict(opts), wall=watch.elapsed,
                  status="manual", message=msg, pins=pins)


register(SolverInfo("greedy-latency", solve_greedy_latency, GreedyLatencyOptions, "latency",
                    "the paper's greedy: fill accelerators in topological order while memory allows, rest on CPU"))
register(SolverInfo("single-device", solve_single_device, SingleDeviceOptions, "any",
                    "everything on the best single device that can hold it"))
register(SolverInfo("topo-fill", solve_topo_fill, TopoFillOptions, "throughput",
                    "fill devices in topological order up to an equal share of compute"))
register(SolverInfo("expert", solve_expert, ExpertOptions, "any",
                    "load a given split (option path: placement JSON or the paper's split format)"))

from . import baselines_chain, baselines_search  # noqa: E402,F401  (register pipedream, local-search)
