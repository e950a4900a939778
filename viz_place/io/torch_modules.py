"""Coarsen an op graph imported from PyTorch to module granularity: one node
per module at depth ``N`` (its whole subtree), so a placement maps back to
modules one to one (:func:`viz_place.io.torch_export_placement.device_map`).

Ops are walked in traced order (a topological order: the order they ran in)
and grouped by their module path cut to ``depth`` components. A group is a
maximal run of consecutive ops with the same key, so the coarse graph is
acyclic by construction (edges only go from earlier runs to later ones). Most
modules run once and give one node, named by their dotted path
(``transformer.h.0``); a parent module running its own ops between its
children (``transformer``: embeddings add, final reshape) gives one node per
run, ``transformer``, ``transformer#2``...; runs of one module that each hold
parameters share a colour class (a module's tensors live on one device).

A coarse node sums its ops' latencies (per device kind: exact, as the op-level
cost model adds them), FLOPs and sizes; its output is every tensor that leaves
it (``output_bytes`` and ``transfer_cost`` are sums over those ops), and an edge
carries the bytes of the distinct tensors that cross it. Backward nodes of a
training graph are grouped with their forward twins' groups (``<id>__grad``).

>>> from viz_place.model import OpGraph
>>> ops = [{"id": f"o{i}", "layer": l, "latency": {"cpu": 1.0}, "flops": 2.0, "output_bytes": 4.0}
...        for i, l in enumerate(["/h/0/a", "/h/0/b", "/h/1/a", "/h/1/b", "/head"])]
>>> g = OpGraph.from_records(ops, [(f"o{i}", f"o{i + 1}", {"bytes": 4.0}) for i in range(4)])
>>> c = coarsen_modules(g, depth=2)
>>> [(n.id, n.latency["cpu"]) for n in c.nodes()], c.edges
([('h.0', 2.0), ('h.1', 2.0), ('head', 1.0)], [('h.0', 'h.1'), ('h.1', 'head')])
"""
from __future__ import annotations

from typing import Mapping

import networkx as nx

from ..errors import InputFormatError
from ..model import OpGraph
from ..model.modules import has_module_paths, layer_to_path, path_to_layer, truncate

ROOT = "(root)"


def module_runs(graph: OpGraph, depth: int) -> dict[str, str]:
    """Forward node id -> coarse node id (see the module docstring)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputFormatError(f"--depth must be a whole number >= 1, got {depth!r}")
    group: dict[str, str] = {}
    seen: dict[str, int] = {}
    prev_key = None
    current = None
    for n in graph.nodes():
        if n.backward or n.artificial:
            continue
        key = truncate(layer_to_path(n.layer), depth)
        if key != prev_key:
            seen[key] = seen.get(key, 0) + 1
            base = key or ROOT
            current = base if seen[key] == 1 else f"{base}#{seen[key]}"
            prev_key = key
        group[n.id] = current
    return group


def coarsen_modules(graph: OpGraph, depth: int, *, module_types: Mapping[str, str] | None = None,
                    notes: list[str] | None = None) -> OpGraph:
    """The module-granular graph of ``graph`` at ``depth`` (see the module docstring).

    ``module_types`` maps dotted paths to class names (the coarse nodes' ``op_type``;
    ``"module"`` when unknown).
    """
    if not has_module_paths(graph):
        raise InputFormatError(f"--granularity module: graph {graph.name!r} has no module paths (node field 'layer'), "
                               "so its ops cannot be grouped by module")
    fwd_group = module_runs(graph, depth)
    if not fwd_group:
        raise InputFormatError(f"graph {graph.name!r}: no forward ops to group by module")
    group = dict(fwd_group)
    fwd_of_cc = {n.color_class: n.id for n in graph.nodes() if not n.backward and n.color_class is not None}
    for n in graph.nodes():
        if n.backward and not n.artificial:
            twin = fwd_of_cc.get(n.color_class)
            if twin is None or twin not in fwd_group:
                raise InputFormatError(f"node {n.id!r}: backward node without a forward op to group it with")
            group[n.id] = fwd_group[twin] + "__grad"
    g_op = graph.nx
    members: dict[str, list[str]] = {}
    for nid in graph.node_ids:
        if nid in group:
            members.setdefault(group[nid], []).append(nid)
    key_of = {gid: layer_to_path(graph.node(ms[0]).layer) for gid, ms in members.items()}
    runs_by_key: dict[str, list[str]] = {}
    for gid in members:
        if not gid.endswith("__grad"):
            runs_by_key.setdefault(truncate(key_of[gid], depth), []).append(gid)
    colour: dict[str, str] = {}
    shared: set[str] = set()
    for key, gids in runs_by_key.items():
        holding = [gid for gid in gids if any(graph.node(m).size > 0 for m in members[gid])]
        for gid in gids:
            colour[gid] = (key or ROOT) if len(holding) > 1 and gid in holding else gid
            if len(holding) > 1 and gid in holding:
                shared.add(gid)
    training = graph.is_training
    types = dict(module_types or {})
    out = nx.DiGraph()
    for gid, ms in members.items():
        nodes = [graph.node(m) for m in ms]
        kinds = set.intersection(*(set(n.latency) for n in nodes))
        leaving = [m for m in ms if any(group.get(s) != gid for s in g_op.successors(m))]
        fwd_id = gid[:-len("__grad")] if gid.endswith("__grad") else gid
        key = truncate(key_of[gid], depth)
        cc = colour[fwd_id] if (training or fwd_id in shared) else None
        out.add_node(gid, name=gid, op_type=(types.get(key, "module") + ("Grad" if gid != fwd_id else "")),
                     latency={k: sum(n.latency[k] for n in nodes) for k in kinds},
                     size=sum(n.size for n in nodes), backward=gid != fwd_id, color_class=cc,
                     transfer_cost=sum(graph.node(m).transfer_cost for m in leaving),
                     output_bytes=sum(graph.node(m).output_bytes or 0.0 for m in leaving),
                     flops=sum(n.flops or 0.0 for n in nodes), layer=path_to_layer(key) if key else None)
    crossing: dict[tuple[str, str], dict[str, float]] = {}
    for u, v, a in g_op.edges(data=True):
        gu, gv = group.get(u), group.get(v)
        if gu is None or gv is None or gu == gv or a.get("artificial"):
            continue
        per_src = crossing.setdefault((gu, gv), {})
        per_src[u] = max(per_src.get(u, 0.0), float(a.get("bytes") or 0.0))
    for (gu, gv), per_src in crossing.items():
        out.add_edge(gu, gv, bytes=sum(per_src.values()))
    note = (f"module granularity: one node per module at depth {depth} ({len(members)} nodes from "
            f"{len(group)} ops); latencies, FLOPs and sizes are sums over each module's ops")
    return OpGraph(out, name=graph.name, default_cluster=graph.default_cluster,
                   notes=list(graph.notes) + list(notes or []) + [note], source=graph.source)
