"""The paper's formats (Tarnawski et al. 2020, ``msr-fiddle/dnn-partitioning``).

Graph JSON: ``maxFPGAs``, ``maxCPUs``, ``maxSizePerFPGA`` and ``nodes`` (``id``,
``cpuLatency``, ``fpgaLatency``, ``supportedOnFpga``, ``isBackwardNode``,
optional ``colorClass``, ``size``, ``name``, ``layerId``) and ``edges``
(``sourceId``, ``destId``, ``cost``, optional ``size`` in bytes). ``cost`` is the
time to move the source's output, equal on all out-edges of one source
(checked). Node ids become strings. The device counts become the graph's
``default_cluster`` (classes ``fpga`` and ``cpu``).

Split JSON: ``{"maxLoad": x, "cpus": [{"nodes": [...]}], "fpgas": [{"nodes": [...]}]}``.
A split that lists only forward nodes (an inference split applied to a
training graph) places each other node with its colour class, as the authors'
evaluator does.

>>> g = graph_from_paper_dict({"maxFPGAs": 1, "maxCPUs": 1, "maxSizePerFPGA": 10.0,
...     "nodes": [{"id": 0, "cpuLatency": 4.0, "fpgaLatency": 1.0, "supportedOnFpga": True, "isBackwardNode": False},
...               {"id": 1, "cpuLatency": 2.0, "fpgaLatency": 1.0, "supportedOnFpga": False, "isBackwardNode": False}],
...     "edges": [{"sourceId": 0, "destId": 1, "cost": 0.5}]})
>>> g.node_ids, [c.name for c in g.default_cluster.classes]
(('0', '1'), ['fpga', 'cpu'])
>>> p = placement_from_split(g, g.default_cluster, {"cpus": [{"nodes": [1]}], "fpgas": [{"nodes": [0]}]})
>>> dict(p.assignment)
{'0': 'fpga:0', '1': 'cpu:0'}
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping

import networkx as nx

from ..errors import GraphValidationError, InputFormatError, PlacementError
from ..model import Cluster, OpGraph, Placement
from .atomic import atomic_write_json
from .jsonfile import read_json

GRAPH_KEYS = ("maxFPGAs", "maxCPUs", "maxSizePerFPGA", "nodes", "edges")


def is_paper_graph(data: Any) -> bool:
    """True for JSON that looks like the paper's graph format (device fields or paper-style nodes)."""
    if not isinstance(data, Mapping) or "nodes" not in data or "edges" not in data:
        return False
    if any(k in data for k in ("maxFPGAs", "maxCPUs", "maxSizePerFPGA")):
        return True
    nodes = data["nodes"]
    return isinstance(nodes, list) and bool(nodes) and isinstance(nodes[0], Mapping) and "cpuLatency" in nodes[0]


def graph_from_paper_dict(data: Mapping[str, Any], *, name: str = "graph") -> OpGraph:
    """Build an :class:`OpGraph` from the paper's graph JSON (already parsed)."""
    if not isinstance(data, Mapping):
        raise InputFormatError(f"{name}: expected a JSON object")
    for key in GRAPH_KEYS:
        if key not in data:
            raise InputFormatError(f"{name}: missing field {key!r} of the paper's graph format")
    if not isinstance(data["nodes"], list) or not isinstance(data["edges"], list):
        raise InputFormatError(f"{name}: fields 'nodes' and 'edges' must be lists")
    g = nx.DiGraph()
    for i, n in enumerate(data["nodes"]):
        if not isinstance(n, Mapping):
            raise InputFormatError(f"{name}: node #{i} must be an object")
        for key in ("id", "cpuLatency", "fpgaLatency", "isBackwardNode"):
            if key not in n:
                raise InputFormatError(f"{name}: node #{i} (id {n.get('id', '?')!r}): missing field {key!r}")
        nid = str(n["id"])
        if nid in g:
            raise GraphValidationError(f"{name}: duplicate node id {nid!r}")
        where = f"{name}: node {nid!r}"
        on_fpga = _flag(n.get("supportedOnFpga", 1), f"{where}: field 'supportedOnFpga'", node=nid,
                        field="supportedOnFpga")
        latency = {"cpu": _number(n["cpuLatency"], f"{where}: field 'cpuLatency'", node=nid, field="cpuLatency")}
        if on_fpga:
            latency["fpga"] = _number(n["fpgaLatency"], f"{where}: field 'fpgaLatency'", node=nid, field="fpgaLatency")
        size = _number(n["size"], f"{where}: field 'size'", node=nid, field="size") if "size" in n else 0.0
        g.add_node(nid, name=str(n.get("name", nid)), op_type=str(n.get("opType", "op")), latency=latency,
                   size=size, backward=_flag(n["isBackwardNode"], f"{where}: field 'isBackwardNode'", node=nid,
                                  field="isBackwardNode"),
                   color_class=None if n.get("colorClass") is None else str(n["colorClass"]),
                   layer=None if n.get("layerId") is None else str(n["layerId"]))
    cost_of: dict[str, float] = {}
    for i, e in enumerate(data["edges"]):
        if not isinstance(e, Mapping):
            raise InputFormatError(f"{name}: edge #{i} must be an object")
        for key in ("sourceId", "destId", "cost"):
            if key not in e:
                raise InputFormatError(f"{name}: edge #{i}: missing field {key!r}")
        u, v = str(e["sourceId"]), str(e["destId"])
        for end, label in ((u, "source"), (v, "destination")):
            if end not in g:
                raise GraphValidationError(f"{name}: edge {u} -> {v}: unknown {label} node {end!r}")
        if g.has_edge(u, v):
            raise GraphValidationError(f"{name}: edge {u} -> {v}: duplicate edge")
        cost = e["cost"]
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or math.isnan(cost) or cost < 0:
            raise GraphValidationError(f"{name}: edge {u} -> {v}: field 'cost' must be a number >= 0, got {cost!r}")
        if u in cost_of and abs(cost_of[u] - cost) > 1e-6 * max(1.0, abs(cost)):
            raise GraphValidationError(f"{name}: node {u!r} has two different outgoing edge costs "
                                       f"({cost_of[u]} and {cost}); the model prices a node's output once")
        cost_of.setdefault(u, float(cost))
        g.add_edge(u, v, bytes=e.get("size"))
    for u, c in cost_of.items():
        g.nodes[u]["transfer_cost"] = c
    cluster = Cluster.paper(_count(data["maxFPGAs"], f"{name}: field 'maxFPGAs'", field="maxFPGAs"),
                            _count(data["maxCPUs"], f"{name}: field 'maxCPUs'", field="maxCPUs"),
                            _capacity(data["maxSizePerFPGA"], f"{name}: field 'maxSizePerFPGA'",
                                      field="maxSizePerFPGA"))
    return OpGraph(g, name=name, default_cluster=cluster)


def _number(value: Any, where: str, **names: Any) -> float:
    """A number as the paper's files hold it (``null``, text and booleans are refused, never read as 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GraphValidationError(f"{where} must be a number, got {value!r}", **names)
    return value


def _flag(value: Any, where: str, **names: Any) -> bool:
    """The paper's 0/1 (or true/false) flags; anything else is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise GraphValidationError(f"{where} must be 0 or 1 (or true/false), got {value!r}", **names)


def _count(value: Any, where: str, **names: Any) -> int:
    """A device count: a whole number >= 0 (``2.0`` is 2; ``2.7``, ``Infinity`` are refused, never truncated)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputFormatError(f"{where} must be a whole number >= 0, got {value!r}", **names)
    return value


def _capacity(value: Any, where: str, **names: Any) -> float | None:
    """Memory per accelerator: a number >= 0; ``null`` or an infinite number = unlimited."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise InputFormatError(f"{where} must be a number >= 0 or null (unlimited), got {value!r}", **names)
    return None if math.isinf(value) else float(value)


def read_paper_graph(path: str | os.PathLike) -> OpGraph:
    """Read a graph in the paper's JSON format."""
    name = os.path.splitext(os.path.basename(str(path)))[0]
    return graph_from_paper_dict(read_json(path), name=name)


def _paper_classes(cluster: Cluster) -> tuple[str, str]:
    acc = [c for c in cluster.classes if c.pays_communication]
    host = [c for c in cluster.classes if not c.pays_communication]
    if len(acc) != 1 or len(host) != 1:
        raise PlacementError("the paper's split format holds exactly two device classes (one accelerator class "
                             "that pays communication, one host class); this cluster has "
                             + ", ".join(f"{c.name} ({'pays' if c.pays_communication else 'host'})" for c in cluster.classes))
    return acc[0].name, host[0].name


def placement_from_split(graph: OpGraph, cluster: Cluster, split: Mapping[str, Any], *,
                         source: str = "split", solver: str = "expert") -> Placement:
    """Placement from a split dict; unlisted nodes follow their colour class."""
    if not isinstance(split, Mapping) or "fpgas" not in split or "cpus" not in split:
        raise InputFormatError(f"{source}: expected the paper's split format with fields 'cpus' and 'fpgas'")
    acc, host = _paper_classes(cluster)
    assignment: dict[str, str] = {}
    for key, cname in (("fpgas", acc), ("cpus", host)):
        if not isinstance(split[key], list):
            raise InputFormatError(f"{source}: field {key!r} must be a list")
        for i, machine in enumerate(split[key]):
            nodes = machine.get("nodes") if isinstance(machine, Mapping) else None
            if not isinstance(nodes, list):
                raise InputFormatError(f"{source}: {key}[{i}] must be an object with a 'nodes' list")
            for raw in nodes:
                nid = str(raw)
                if not graph.has_node(nid):
                    raise PlacementError(f"{source}: {key}[{i}] lists unknown node {nid!r}")
                if nid in assignment:
                    raise PlacementError(f"{source}: node {nid!r} is listed twice ({assignment[nid]} and {cname}:{i})")
                assignment[nid] = f"{cname}:{i}"
    by_cc: dict[str, set[str]] = {}
    for nid, dev in assignment.items():
        cc = graph.node(nid).color_class
        if cc is not None:
            by_cc.setdefault(cc, set()).add(dev)
    for nid in graph.node_ids:
        if nid in assignment:
            continue
        cc = graph.node(nid).color_class
        devs = by_cc.get(cc, set()) if cc is not None else set()
        if len(devs) == 1:
            assignment[nid] = next(iter(devs))
        elif not devs:
            raise PlacementError(f"{source}: node {nid!r} is not listed and no node of its colour class "
                                 f"{cc!r} is, so its device cannot be inferred")
        else:
            raise PlacementError(f"{source}: node {nid!r} is not listed and its colour class {cc!r} "
                                 f"is on several devices ({', '.join(sorted(devs))})")
    claimed = split.get("maxLoad")
    claimed = float(claimed) if isinstance(claimed, (int, float)) and claimed >= 0 else None
    return Placement(assignment, solver=solver, status="manual", objective="throughput", claimed_value=claimed)


def read_paper_split(path: str | os.PathLike, graph: OpGraph, cluster: Cluster) -> Placement:
    return placement_from_split(graph, cluster, read_json(path), source=str(path))


def split_from_placement(graph: OpGraph, cluster: Cluster, placement: Placement,
                         max_load: float | None = None, *, evaluation=None) -> dict[str, Any]:
    """The paper's split dict for ``placement`` (artificial nodes left out).

    Each device's ``load`` and the ``maxLoad`` come from ``evaluation`` (an
    :class:`~viz_place.cost.Evaluation` of this placement) when given; without it they
    are ``-1`` (unknown), as in the authors' files.
    """
    loads = {d.name: d.load for d in evaluation.devices} if evaluation is not None else {}
    if max_load is None and evaluation is not None:
        max_load = evaluation.max_load
    acc, host = _paper_classes(cluster)

    def raw_id(nid: str) -> Any:
        return int(nid) if nid.lstrip("-").isdigit() else nid

    # -1 = not given (the authors' convention); an infinite max-load is not a JSON number: null
    ml = -1 if max_load is None else (max_load if math.isfinite(max_load) else None)
    out: dict[str, Any] = {"maxLoad": ml, "cpus": [], "fpgas": []}
    for key, cname in (("fpgas", acc), ("cpus", host)):
        for dev in cluster.class_named(cname).instance_names():
            nodes = [raw_id(n) for n in graph.node_ids
                     if placement.assignment.get(n) == dev and not graph.node(n).artificial]
            out[key].append({"load": loads.get(dev, -1), "nodes": nodes})
    return out


def write_paper_split(path: str | os.PathLike, graph: OpGraph, cluster: Cluster, placement: Placement,
                      max_load: float | None = None, *, evaluation=None) -> None:
    atomic_write_json(path, split_from_placement(graph, cluster, placement, max_load, evaluation=evaluation))


def graph_to_paper_dict(graph: OpGraph, cluster: Cluster | None = None) -> dict[str, Any]:
    """The paper's graph JSON for ``graph`` (kinds ``cpu``/``fpga`` only)."""
    cluster = cluster or graph.default_cluster or Cluster.paper(1, 1, None)
    acc, host = _paper_classes(cluster)
    fp, cp = cluster.class_named(acc), cluster.class_named(host)
    nodes = []
    for n in graph.nodes():
        if n.artificial:
            continue
        if cp.kind not in n.latency:
            raise PlacementError(f"node {n.id!r}: the paper's format needs a {cp.kind!r} latency for every node")
        rec = {"id": int(n.id) if n.id.isdigit() else n.id, "name": n.name,
               "cpuLatency": n.latency[cp.kind], "fpgaLatency": n.latency.get(fp.kind, 0.0),
               "supportedOnFpga": int(fp.kind in n.latency), "isBackwardNode": int(n.backward),
               "size": n.size}
        if n.color_class is not None:
            rec["colorClass"] = int(n.color_class) if n.color_class.isdigit() else n.color_class
        if n.layer is not None:
            rec["layerId"] = int(n.layer) if n.layer.isdigit() else n.layer
        nodes.append(rec)
    edges = []
    for u, v in graph.edges:
        if graph.nx.edges[u, v].get("artificial"):
            continue
        edges.append({"sourceId": int(u) if u.isdigit() else u, "destId": int(v) if v.isdigit() else v,
                      "cost": graph.node(u).transfer_cost, "size": graph.nx.edges[u, v].get("bytes") or 0.0})
    return {"maxSizePerFPGA": fp.memory if fp.memory is not None else 1e30, "maxFPGAs": fp.count,
            "maxCPUs": cp.count, "nodes": nodes, "edges": edges}
