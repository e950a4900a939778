"""The baselines people use today to split a PyTorch model, placing along the
module order as the real tools do (graphs imported from PyTorch only: they
need the module path, ``layer``, of every node).

* ``balanced-memory`` — equal parameter bytes per device, as transformers'
  ``device_map="balanced"`` (accelerate's ``get_balanced_memory`` +
  ``infer_auto_device_map``) and, for fp32 weights, DeepSpeed's
  ``partition_method="parameters"``. The model's repeated blocks are never
  split (accelerate's ``no_split_module_classes``); the other ops are units of
  their own. ``method="equal"`` (default) cuts the unit sequence where the
  running parameter bytes are nearest to ``j/k`` of the total;
  ``method="accelerate"`` fills devices in order, each up to accelerate's
  budget ``total/k + 1.25 x max(largest block, mean layer)`` (the first device
  keeping room for the largest layer still to place, the last taking the
  rest), as ``infer_auto_device_map`` does with ``get_balanced_memory``'s budgets.
* ``uniform-layers`` — DeepSpeed's ``partition_method="uniform"``: equal
  numbers of the model's repeated blocks per stage (the first
  ``blocks mod k`` stages get one more, as ``partition_uniform`` does), the
  ops before the first block (embeddings) on the first stage, those after the
  last block (the head) on the last.

The repeated blocks are :func:`viz_place.model.modules.repeated_blocks`
(GPT-2 ``transformer.h.*``, BERT ``encoder.layer.*``, ResNet's stage blocks).
Both give pipeline splits: stages follow the topological (module) order. The
stages go on the ``stages`` first devices of one class (default: the class
with the most devices among those that run every op); an op that class
cannot run goes to a host device; pins are kept. The claimed value is the
evaluator's max-load.

>>> from viz_place.model import OpGraph, Cluster, DeviceClass
>>> from viz_place.solvers import run_solver
>>> recs = [{"id": "emb", "layer": "/wte", "size": 4.0, "latency": {"gpu": 1.0}}]
>>> recs += [{"id": f"b{i}", "layer": f"/h/{i}", "size": 2.0, "latency": {"gpu": 1.0}} for i in range(4)]
>>> g = OpGraph.from_records(recs, [("emb", "b0")] + [(f"b{i}", f"b{i + 1}") for i in range(3)])
>>> c = Cluster([DeviceClass("gpu", "gpu", count=2)])
>>> sorted(run_solver("uniform-layers", g, c).assignment.items())
[('b0', 'gpu:0'), ('b1', 'gpu:0'), ('b2', 'gpu:1'), ('b3', 'gpu:1'), ('emb', 'gpu:0')]
>>> sorted(run_solver("balanced-memory", g, c).assignment.items())
[('b0', 'gpu:0'), ('b1', 'gpu:1'), ('b2', 'gpu:1'), ('b3', 'gpu:1'), ('emb', 'gpu:0')]
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import InfeasibleError, SolverError
from ...model.modules import is_within, layer_to_path, repeated_blocks, require_module_paths
from ..base import Hooks, SolverOptions
from ..contract import Problem, SolverResult
from ..groups import pinned_groups


@dataclass(frozen=True)
class ModuleOrderOptions(SolverOptions):
    stages: int = field(default=0, metadata={"help": "pipeline stages (0 = every device of the class)", "min": 0})
    device_class: str = field(default="", metadata={
        "help": "device class of the stages (default: the class with the most devices that runs every op)"})


@dataclass(frozen=True)
class BalancedMemoryOptions(ModuleOrderOptions):
    method: str = field(default="equal", metadata={
        "help": "equal: cuts nearest to equal shares of the parameter bytes; accelerate: fill each device up "
                "to total/k + 1.25 x the largest block", "choices": ("equal", "accelerate")})


@dataclass(frozen=True)
class UniformLayersOptions(ModuleOrderOptions):
    """Stages and their device class only: the split itself follows the block count."""


def partition_uniform(num_items: int, num_parts: int) -> list[int]:
    """DeepSpeed's ``partition_uniform``: part boundaries, the first ``num_items mod num_parts``
    parts one item longer.

    >>> partition_uniform(12, 5), partition_uniform(2, 3)
    ([0, 3, 6, 8, 10, 12], [0, 1, 2, 2])
    """
    if num_items <= num_parts:
        return [min(p, num_items) for p in range(num_parts + 1)]
    chunk, residual = divmod(num_items, num_parts)
    return [p * chunk + min(p, residual) for p in range(num_parts + 1)]


def _stage_devices(prob, opts, name: str) -> list[int]:
    cluster = prob.cluster
    classes = list(cluster.classes)
    if opts.device_class:
        match = [i for i, c in enumerate(classes) if c.name == opts.device_class]
        if not match:
            raise SolverError(f"{name}: option 'device_class': no class {opts.device_class!r} "
                              f"(classes: {', '.join(c.name for c in classes)})")
        ci = match[0]
    else:
        runs_all = [i for i, c in enumerate(classes)
                    if all(np.isfinite(prob.lat[:, d]).all() for d in range(prob.num_devices)
                           if prob.device_class[d] == i)]
        pool = runs_all or list(range(len(classes)))
        ci = max(pool, key=lambda i: (classes[i].count, bool(classes[i].pays_communication), -i))
    devices = [d for d in range(prob.num_devices) if prob.device_class[d] == ci]
    k = opts.stages or len(devices)
    if k > len(devices):
        raise SolverError(f"{name}: option 'stages' = {k} but class {classes[ci].name!r} has {len(devices)} devices")
    return devices[:k]


def _group_paths(prob) -> list[str]:
    graph = prob.graph
    out = []
    for members in prob.groups:
        fwd = [graph.node(prob.node_ids[i]) for i in members]
        fwd = [n for n in fwd if not n.backward and not n.artificial] or fwd
        out.append(layer_to_path(fwd[0].layer))
    return out


def _block_of(paths: list[str], blocks: tuple[str, ...]) -> list[int | None]:
    out = []
    for p in paths:
        out.append(next((b for b, blk in enumerate(blocks) if is_within(p, blk)), None))
    return out


def _finish(prob, stage_of_group: list[int], devices: list[int], pins, name: str) -> SolverResult:
    pinned = pinned_groups(prob, pins)
    dev = np.empty(prob.n, dtype=np.int64)
    used = np.zeros(prob.num_devices)
    for g, members in enumerate(prob.groups):
        m = list(members)
        d = pinned.get(g, devices[stage_of_group[g]])
        if not np.isfinite(prob.lat[m, d]).all():  # the stage's device cannot run it: a host that can
            hosts = [h for h in range(prob.num_devices) if np.isfinite(prob.lat[m, h]).all()]
            if not hosts:
                raise InfeasibleError(f"{name}: node {prob.node_ids[m[0]]!r} runs on no device of this cluster")
            d = min(hosts, key=lambda h: (bool(prob.pays[h]), h))
        dev[m] = d
        used[d] += float(prob.size[m].sum())
    over = [d for d in range(prob.num_devices) if used[d] > prob.capacity[d] * (1 + 1e-12)]
    if over:
        d = over[0]
        raise InfeasibleError(f"{name}: device {prob.device_names[d]} would hold {used[d]:.4g} bytes, more than its "
                              f"memory {prob.capacity[d]:.4g}; use more stages or devices with more memory")
    used_stages = len({stage_of_group[g] for g in range(len(prob.groups))})
    return SolverResult(dev, status="heuristic", message=f"{used_stages} stage(s) along the module order",
                        stats={"stages": len(devices), "stages_used": used_stages})


def solve_uniform_layers(problem: Problem, opts: UniformLayersOptions, hooks: Hooks) -> SolverResult:
    """DeepSpeed's uniform partition of the repeated blocks (see the module docstring)."""
    graph, prob, pins = problem.graph, problem.compiled, problem.pins
    require_module_paths(graph, "solver 'uniform-layers' (places along the module order)")
    devices = _stage_devices(prob, opts, "uniform-layers")
    blocks = repeated_blocks(graph).blocks
    bounds = partition_uniform(len(blocks), len(devices))
    stage_of_block = [next(s for s in range(len(devices)) if bounds[s] <= b < bounds[s + 1])
                      for b in range(len(blocks))]
    stage, stages = 0, []
    for b in _block_of(_group_paths(prob), blocks):
        if b is not None:
            stage = max(stage, stage_of_block[b])  # monotone along the module order: a pipeline split
        stages.append(stage)
    return _finish(prob, stages, devices, pins, "uniform-layers")


def solve_balanced_memory(problem: Problem, opts: BalancedMemoryOptions, hooks: Hooks) -> SolverResult:
    """Equal parameter bytes per stage along the module order (see the module docstring)."""
    graph, prob, pins = problem.graph, problem.compiled, problem.pins
    require_module_paths(graph, "solver 'balanced-memory' (places along the module order)")
    devices = _stage_devices(prob, opts, "balanced-memory")
    try:
        blocks = repeated_blocks(graph).blocks
    except SolverError:
        blocks = ()
    # units: consecutive groups of one block stay together (no-split), other groups alone
    units: list[list[int]] = []
    is_block: list[bool] = []
    last_block = None
    for g, b in enumerate(_block_of(_group_paths(prob), blocks)):
        if b is not None and b == last_block:
            units[-1].append(g)
        else:
            units.append([g])
            is_block.append(b is not None)
        last_block = b
    weight = [float(sum(prob.size[list(prob.groups[g])].sum() for g in u)) for u in units]
    k = len(devices)
    cuts = _accelerate_cuts(weight, k, is_block) if opts.method == "accelerate" \
        else _equal_cuts(weight, k)
    stages = [0] * len(prob.groups)
    for ui, u in enumerate(units):
        s = sum(1 for c in cuts if c <= ui)
        for g in u:
            stages[g] = s
    return _finish(prob, stages, devices, pins, "balanced-memory")


def _equal_cuts(weight: list[float], k: int) -> list[int]:
    """Unit indices where stages 1..k-1 start: each where the running total is nearest j/k of it."""
    total = sum(weight)
    prefix = np.concatenate([[0.0], np.cumsum(weight)])
    cuts, lo = [], 1
    for j in range(1, k):
        if lo > len(weight):
            break
        target = total * j / k
        cand = range(lo, len(weight) + 1)
        best = min(cand, key=lambda i: (abs(prefix[i] - target), i))
        cuts.append(best)
        lo = best
    return cuts


def _accelerate_cuts(weight: list[float], k: int, is_block: list[bool]) -> list[int]:
    """accelerate's greedy: device j < k-1 takes units while they fit in total/k + buffer,
    buffer = 1.25 x max(largest block, mean unit with parameters), as get_balanced_memory sets it."""
    total = sum(weight)
    leaves = [w for w in weight if w > 0]
    largest_block = max((w for w, b in zip(weight, is_block) if b), default=0.0)
    buffer = 1.25 * max(largest_block, sum(leaves) / max(1, len(leaves)))
    budget = total // k + buffer
    cuts, used = [], 0.0
    for ui, w in enumerate(weight):
        # the first device keeps room for the largest layer still to place, as accelerate's main device does
        limit = budget - (max(weight[ui + 1:], default=0.0) if not cuts else 0.0)
        if used + w > limit and used > 0 and len(cuts) < k - 1:
            cuts.append(ui)
            used = 0.0
        used += w
    return cuts
