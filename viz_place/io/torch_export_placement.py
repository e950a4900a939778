"""A placement of a traced PyTorch model, exported for the frameworks that run it.

Pure transformations of (graph, placement); none needs torch except
:func:`torch_split_spec`:

* :func:`pipeline_split` — the stages of a contiguous placement as
  ``torch.distributed.pipelining`` split points: ``{"h.6": "BEGINNING"}``
  (module path -> :class:`~torch.distributed.pipelining.SplitPoint` name), so
  ``pipeline(module, mb_args, split_spec=torch_split_spec(split))`` builds
  exactly the stages the placement says. Refused, with the reason and the
  nodes, for a placement that is no pipeline: a device whose set is not
  contiguous (a path leaves it and comes back), devices feeding each other in
  a cycle, stages that interleave in the traced program order (torch splits the
  program in that order), or a device boundary inside a module (a split point
  can only sit at the start or end of a module call; coarsen the graph to
  module granularity, or move the boundary to the nearest module the message
  names).
* :func:`device_map` — module path -> device (the tool's one ``device_map`` writer)
  for a *module-granular* placement (every module that owns weights wholly on one
  device, whether the graph has a node per module or per op), in the form of
  transformers' ``from_pretrained(device_map=...)`` / accelerate's
  ``dispatch_model`` once :func:`accelerate_device_map` turns our device names
  into torch devices; :func:`placement_from_device_map` reads one back.
* :func:`pipeline_script` — a short standalone Python script that rebuilds the
  model from the graph's recorded source and runs the split as a pipeline.

Module paths: a node's ``layer`` is ``/h/0/attn``; torch's is ``h.0.attn``
(:func:`viz_place.model.modules.layer_to_path`).

>>> from viz_place.model import OpGraph, Placement
>>> g = OpGraph.from_records([{"id": n, "layer": f"/{i}", "latency": {"cpu": 1.0}}
...                           for i, n in enumerate("abcd")], [("a", "b"), ("b", "c"), ("c", "d")])
>>> s = pipeline_split(g, Placement({"a": "cpu:0", "b": "cpu:0", "c": "cpu:1", "d": "cpu:1"}))
>>> s.devices, s.split_spec
(('cpu:0', 'cpu:1'), {'2': 'BEGINNING'})
>>> device_map(g, Placement({"a": "cpu:0", "b": "cpu:0", "c": "cpu:1", "d": "cpu:1"}))
{'0': 'cpu:0', '1': 'cpu:0', '2': 'cpu:1', '3': 'cpu:1'}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import networkx as nx

from ..errors import PlacementError
from ..model import OpGraph, Placement
from ..model.modules import is_within, layer_to_path

SPLIT_FORMAT = "viz_place.pipelining/1"
DEVICE_MAP_FORMAT = "viz_place.device_map/1"


def _error(message: str, *, node: str | None = None, device: str | None = None, edge=None) -> PlacementError:
    err = PlacementError(message)
    err.node, err.device, err.edge = node, device, edge
    return err


def _ancestors(path: str) -> list[str]:
    """Outermost first, the path itself last: ``h.0.attn`` -> ``['h', 'h.0', 'h.0.attn']``."""
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _shown(nodes: Sequence[str], k: int = 5) -> str:
    return ", ".join(repr(n) for n in list(nodes)[:k]) + (f" and {len(nodes) - k} more" if len(nodes) > k else "")


@dataclass(frozen=True)
class PipelineSplit:
    """The stages of a pipeline placement, in order, and the split points that make them."""

    graph: str
    devices: tuple[str, ...]                 # stage i runs on devices[i]
    stage_nodes: tuple[tuple[str, ...], ...]  # forward nodes of each stage, in program order
    split_spec: dict[str, str]               # module path -> "BEGINNING" | "END"
    boundaries: tuple[dict[str, str], ...] = field(default=())  # per split: module, point, after, before

    @property
    def num_stages(self) -> int:
        return len(self.devices)

    def stage_of(self) -> dict[str, int]:
        return {n: i for i, nodes in enumerate(self.stage_nodes) for n in nodes}

    def to_dict(self, source: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {"format": SPLIT_FORMAT, "graph": self.graph, "split_spec": dict(self.split_spec),
                "stages": [{"stage": i, "device": d, "nodes": len(ns), "first": ns[0], "last": ns[-1]}
                           for i, (d, ns) in enumerate(zip(self.devices, self.stage_nodes))],
                "boundaries": [dict(b) for b in self.boundaries], "source": dict(source) if source else None}


def program_order(graph: OpGraph) -> list:
    """Forward nodes in the order the tracer recorded them (the order the program runs them)."""
    return [graph.node(n) for n in graph.nx.nodes if not graph.node(n).backward and not graph.node(n).artificial]


def _forward_data_edges(graph: OpGraph):
    nxg = graph.nx
    for u, v in graph.edges:
        if nxg.edges[u, v].get("artificial") or graph.node(u).backward or graph.node(v).backward:
            continue
        yield u, v


def _check_contiguous(graph: OpGraph, dev: Mapping[str, str]) -> None:
    """Refuse a device whose set a path leaves and re-enters (naming the path's nodes)."""
    succ: dict[str, list[str]] = {}
    for u, v in _forward_data_edges(graph):
        succ.setdefault(u, []).append(v)
    for d in sorted(set(dev.values())):
        parent: dict[str, str] = {}
        frontier = []
        for u in (n for n, x in dev.items() if x == d):
            for v in succ.get(u, ()):
                if dev[v] != d and v not in parent:
                    parent[v] = u
                    frontier.append(v)
        while frontier:
            x = frontier.pop()
            for v in succ.get(x, ()):
                if dev[v] == d:
                    path = [v, x]
                    while path[-1] in parent and dev[path[-1]] != d:
                        path.append(parent[path[-1]])
                    path.reverse()
                    raise _error(f"placement is not contiguous, so it is no pipeline: device {d!r} holds "
                                 f"{path[0]!r} and {path[-1]!r} but the path {' -> '.join(map(repr, path))} leaves it "
                                 f"through {', '.join(repr(p) + ' on ' + repr(dev[p]) for p in path[1:-1][:3])}",
                                 node=path[-1], device=d)
                if v not in parent:
                    parent[v] = x
                    frontier.append(v)


def stage_order(graph: OpGraph, placement: Placement | Mapping[str, str]) -> tuple[str, ...]:
    """The devices of a pipeline placement in stage order (data flows from each to later ones).

    Raises :class:`~viz_place.errors.PlacementError` naming nodes for a
    non-contiguous placement or devices feeding each other in a cycle.
    """
    assignment = dict(placement.assignment if isinstance(placement, Placement) else placement)
    fwd = [n.id for n in program_order(graph)]
    missing = [n for n in fwd if n not in assignment]
    if missing:
        raise _error(f"placement: {len(missing)} node(s) not placed: {_shown(missing)}", node=missing[0])
    dev = {n: assignment[n] for n in fwd}
    _check_contiguous(graph, dev)
    q = nx.DiGraph()
    q.add_nodes_from(dict.fromkeys(dev[n] for n in fwd))
    witness: dict[tuple[str, str], tuple[str, str]] = {}
    for u, v in _forward_data_edges(graph):
        if u in dev and v in dev and dev[u] != dev[v]:
            q.add_edge(dev[u], dev[v])
            witness.setdefault((dev[u], dev[v]), (u, v))
    try:
        cycle = nx.find_cycle(q)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        hops = "; ".join(f"{a} -> {b} (edge {witness[a, b][0]!r} -> {witness[a, b][1]!r})" for a, b in cycle)
        first = witness[cycle[0][0], cycle[0][1]]
        raise _error(f"placement is no pipeline: devices feed each other in a cycle: {hops}",
                     node=first[1], device=cycle[0][1], edge=first)
    first_seen = {}
    for i, n in enumerate(fwd):
        first_seen.setdefault(dev[n], i)
    return tuple(nx.lexicographical_topological_sort(q, key=lambda d: first_seen[d]))


def pipeline_split(graph: OpGraph, placement: Placement | Mapping[str, str]) -> PipelineSplit:
    """The ``torch.distributed.pipelining`` split of a pipeline placement (module docstring)."""
    order = stage_order(graph, placement)
    assignment = placement.assignment if isinstance(placement, Placement) else placement
    stage = {d: i for i, d in enumerate(order)}
    prog = program_order(graph)
    st = [stage[assignment[n.id]] for n in prog]
    paths = [layer_to_path(n.layer) for n in prog]
    high = 0
    for i, s in enumerate(st):
        if s < st[high]:
            later = prog[high].id
            raise _error(f"stages interleave in the traced program order, which torch.distributed.pipelining "
                         f"splits in that order: node {prog[i].id!r} (stage {s}, {order[s]}) runs after node "
                         f"{later!r} (stage {st[high]}, {order[st[high]]}); move one of them", node=prog[i].id,
                         device=order[s])
        if s > st[high]:
            high = i
    spec: dict[str, str] = {}
    bounds = []
    for i in range(1, len(prog)):
        if st[i] == st[i - 1]:
            continue
        module, point = _split_point(paths, i)
        if module is None:
            raise _error(_not_at_module_boundary(prog, paths, i), node=prog[i].id, device=order[st[i]])
        spec[module] = point
        bounds.append({"module": module, "point": point, "after": prog[i - 1].id, "before": prog[i].id})
    stage_nodes = tuple(tuple(n.id for n, s in zip(prog, st) if s == k) for k in range(len(order)))
    return PipelineSplit(graph.name, order, stage_nodes, spec, tuple(bounds))


def _contiguous_run(paths: Sequence[str], module: str) -> tuple[int, int] | None:
    idx = [j for j, p in enumerate(paths) if is_within(p, module)]
    if not idx or idx[-1] - idx[0] + 1 != len(idx):
        return None
    return idx[0], idx[-1]


def _split_point(paths: Sequence[str], i: int) -> tuple[str | None, str]:
    """A module whose call starts at program position ``i`` (BEGINNING) or ends at ``i - 1`` (END)."""
    for module in _ancestors(paths[i]):
        run = _contiguous_run(paths, module)
        if run and run[0] == i:
            return module, "BEGINNING"
    for module in _ancestors(paths[i - 1]):
        run = _contiguous_run(paths, module)
        if run and run[1] == i - 1:
            return module, "END"
    return None, ""


def _not_at_module_boundary(prog, paths, i) -> str:
    inside = next((m for m in reversed(_ancestors(paths[i])) if is_within(paths[i - 1], m)), "")
    where = f"inside module {inside!r}" if inside else "between operations of the root module's own forward"
    near = []
    for j in list(range(i - 1, 0, -1))[:200] + list(range(i + 1, len(prog)))[:200]:
        module, point = _split_point(paths, j)
        if module is not None:
            near.append((abs(j - i), f"{point} of {module!r} (before node {prog[j].id!r})"))
    hint = f"; the nearest module boundary is at {min(near)[1]}" if near else ""
    return (f"device boundary between node {prog[i - 1].id!r} and node {prog[i].id!r} is {where}: a "
            f"torch.distributed.pipelining split point can only sit at the start or end of a module call "
            f"(import with --granularity module, or move the boundary){hint}")


def torch_split_spec(split: PipelineSplit) -> dict:
    """``{module path: torch.distributed.pipelining.SplitPoint}`` for ``pipeline(split_spec=...)``."""
    from torch.distributed.pipelining import SplitPoint
    return {m: getattr(SplitPoint, p) for m, p in split.split_spec.items()}


# --- device_map ---------------------------------------------------------------------------------

def device_map(graph: OpGraph, placement: Placement | Mapping[str, str], *,
               module: Any | None = None) -> dict[str, str]:
    """Module path -> device name for a module-granular placement, as coarse as it can be
    (a module whose nodes all share a device appears once; ``{"": dev}`` for one device). A
    split module whose own ops (outside its children) hold weights keeps a key on their device,
    under its children's keys (GPT-2's ``transformer`` when the position embedding's lookup is
    traced as its own op), so every weight stays where the placement, and its memory, has it.

    With ``module`` (the ``torch.nn.Module``), modules that own parameters or buffers but no
    graph node (unused or folded weights) go with the nearest mapped module before them in
    ``named_modules()`` order, so the map covers every weight as accelerate requires.
    """
    assignment = placement.assignment if isinstance(placement, Placement) else placement
    nodes = program_order(graph)
    missing = [n.id for n in nodes if n.id not in assignment]
    if missing:
        raise _error(f"placement: {len(missing)} node(s) not placed: {_shown(missing)}", node=missing[0])
    if nodes and all(n.layer is None for n in nodes):
        raise _error(f"device_map needs module paths: graph {graph.name!r} has no node with a 'layer' "
                     "(import the model from PyTorch)", node=nodes[0].id)
    own: dict[str, dict[str, list[str]]] = {}   # module path -> device -> nodes whose layer is exactly it
    weighted: dict[str, dict[str, list[str]]] = {}  # the same, nodes holding weights only
    for n in nodes:
        own.setdefault(layer_to_path(n.layer), {}).setdefault(assignment[n.id], []).append(n.id)
        if n.size > 0:
            weighted.setdefault(layer_to_path(n.layer), {}).setdefault(assignment[n.id], []).append(n.id)
    for path in sorted(weighted):
        devs = weighted[path]
        if len(devs) > 1:
            parts = "; ".join(f"{d}: {_shown(ns, 3)}" for d, ns in devs.items())
            first = next(iter(devs.values()))[0]
            raise _error(f"placement is not module-granular: module {path!r} owns weights but is split "
                         f"across devices ({parts}); device_map places whole modules "
                         "(import with --granularity module)", node=first)
    under: dict[str, set[str]] = {}
    for path, devs in own.items():
        for anc in [""] + _ancestors(path):
            under.setdefault(anc, set()).update(devs)
    children: dict[str, list[str]] = {}
    for path in under:
        if path:
            children.setdefault(path.rpartition(".")[0], []).append(path)
    out: dict[str, str] = {}

    def visit(path: str) -> None:
        if len(under[path]) == 1:
            out[path] = next(iter(under[path]))
            return
        if path and path in weighted:
            # its own ops (outside its children) hold weights: the module gets a key on their device, which
            # its children's keys override (longest prefix wins), so those weights stay where the placement has them
            out[path] = next(iter(weighted[path]))
        for child in children.get(path, []):
            visit(child)
        # ops of this module's own forward without weights run wherever their inputs are
    visit("")
    if module is not None:
        _cover_weights(out, module, weighted)
    return out


def _cover_weights(out: dict[str, str], module: Any, own: Mapping[str, Mapping[str, list[str]]]) -> None:
    last = next(iter(out.values()))
    for name, sub in module.named_modules():
        hit = [k for k in out if is_within(name, k)]
        if hit:
            last = out[max(hit, key=len)]
            continue
        direct = [p for p, _ in sub.named_parameters(recurse=False)] + [b for b, _ in sub.named_buffers(recurse=False)]
        if not direct:
            continue
        dev = next(iter(own[name]), last) if name in own else last
        if any(is_within(k, name) for k in out):  # children are mapped apart: name its own weights one by one
            for p in direct:
                out[f"{name}.{p}" if name else p] = dev
        else:
            out[name] = dev
        last = dev


def accelerate_device_map(dmap: Mapping[str, str], torch_devices: Mapping[str, Any]) -> dict[str, Any]:
    """Our device names -> torch devices (``0``, ``"cuda:1"``, ``"cpu"``, ``"disk"``), the form
    ``from_pretrained(device_map=...)`` and ``accelerate.dispatch_model`` take.

    >>> accelerate_device_map({"h.0": "gpu:0", "h.1": "cpu:0"}, {"gpu:0": 0, "cpu:0": "cpu"})
    {'h.0': 0, 'h.1': 'cpu'}
    """
    missing = sorted(set(dmap.values()) - set(torch_devices))
    if missing:
        raise _error(f"device_map: no torch device given for device(s) {missing}", device=missing[0])
    return {k: torch_devices[d] for k, d in dmap.items()}


def default_torch_devices(devices: Sequence[str], kinds: Mapping[str, str]) -> dict[str, Any]:
    """``cpu`` kinds -> ``"cpu"``; every other device -> the next GPU index (0, 1, ...).

    >>> default_torch_devices(["gpu:0", "cpu:0", "gpu:1"], {"gpu:0": "gpu", "cpu:0": "cpu", "gpu:1": "gpu"})
    {'gpu:0': 0, 'cpu:0': 'cpu', 'gpu:1': 1}
    """
    out: dict[str, Any] = {}
    gpu = 0
    for d in devices:
        if kinds.get(d) == "cpu":
            out[d] = "cpu"
        else:
            out[d] = gpu
            gpu += 1
    return out


def placement_from_device_map(graph: OpGraph, dmap: Mapping[str, str]) -> Placement:
    """Each node on the device of the longest module path of ``dmap`` containing its layer; a node
    of a split module's own forward (no key covers it) goes with a placed neighbour (its input,
    else its output), as :func:`viz_place.model.modules.assignment_from_device_map` reads it."""
    from ..model.modules import assignment_from_device_map
    return Placement(assignment_from_device_map(graph, dmap), solver="device_map", status="manual")


# --- standalone script ---------------------------------------------------------------------------

SCRIPT_TEMPLATE = '''\
"""Run {graph!r} as a {stages}-stage pipeline with torch.distributed.pipelining.

Written by viz-place export --format script. Rebuilds the model from its recorded
source with viz_place's build_from_source (random weights from seed {seed}), splits it at the placement's split
points, runs ScheduleGPipe over gloo with one CPU process per stage (one torch
thread each) and checks the output against the unsplit model.

    python {{this file}} [--microbatches M]
"""
import argparse, os, socket, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.pipelining import ScheduleGPipe, SplitPoint, pipeline
from viz_place.io.torch_models import build_from_source

SOURCE = {source}
SPLIT_SPEC = {split_spec}       # module path -> where the next stage begins
STAGE_DEVICES = {devices}      # the placement's device of each stage


def build():
    b = build_from_source(SOURCE)
    return b.module.eval(), tuple(b.example_inputs)


def first_output(out):
    while isinstance(out, (tuple, list)) or hasattr(out, "to_tuple"):
        out = out.to_tuple() if hasattr(out, "to_tuple") else out
        out = out[0]
    return out


def stage_main(rank, world, port, microbatches, result):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model, inputs = build()
        split = {{k: getattr(SplitPoint, v) for k, v in SPLIT_SPEC.items()}}
        pipe = pipeline(model, mb_args=inputs, split_spec=split)
        assert pipe.num_stages == world, (pipe.num_stages, world)
        stage = pipe.build_stage(rank, torch.device("cpu"))
        schedule = ScheduleGPipe(stage, n_microbatches=microbatches)
        batch = tuple(torch.cat([x] * microbatches) for x in inputs)
        with torch.no_grad():
            for _ in range(2):  # warm-up, then timed
                dist.barrier()
                start = time.perf_counter()
                out = schedule.step(*batch) if rank == 0 else schedule.step()
                dist.barrier()
                seconds = time.perf_counter() - start
        if rank == world - 1:
            with torch.no_grad():
                ref = first_output(model(*inputs))
            got = first_output(out)[: ref.shape[0]]
            result.put((float((got - ref).abs().max()), seconds / (microbatches * inputs[0].shape[0])))
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--microbatches", type=int, default={microbatches})
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    result = ctx.SimpleQueue()
    world = len(STAGE_DEVICES)
    mp.start_processes(stage_main, args=(world, free_port(), args.microbatches, result), nprocs=world,
                       start_method="spawn")
    diff, per_sample = result.get()
    print(f"stages: {{world}}  outputs_match: {{diff <= 1e-4}}  max_abs_diff: {{diff:.3g}}  "
          f"time_per_sample: {{per_sample * 1e3:.3f}} ms")
'''


def pipeline_script(graph: OpGraph, split: PipelineSplit, source: Mapping[str, Any] | None, *,
                    microbatches: int = 4) -> str:
    """A standalone script that rebuilds the model from ``source`` (the graph's recorded
    ``build_model`` arguments) and runs ``split`` with ``ScheduleGPipe`` (gloo, one process per stage)."""
    from .torch_models import is_model_spec
    if not source or not is_model_spec(source.get("spec")):
        raise _error(f"graph {graph.name!r} records no model source (SPEC, overrides, batch, seed): a script "
                     "can only rebuild a model imported from a SPEC such as hf:gpt2; export --format "
                     "pipelining and call pipeline() on your own module instead")
    keep = {k: source[k] for k in ("spec", "overrides", "batch", "seq_len", "image_size", "seed") if k in source}
    return SCRIPT_TEMPLATE.format(graph=graph.name, stages=split.num_stages, seed=keep.get("seed", 0),
                                  source=repr(dict(sorted(keep.items()))),
                                  split_spec=repr(dict(split.split_spec)), devices=repr(list(split.devices)),
                                  microbatches=int(microbatches))
