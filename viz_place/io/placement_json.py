"""Our placement JSON, CSV export, and device / pin files.

Placement JSON::

    {"format": "viz_place.placement/1", "graph": "bert", "devices": {"classes": [...]},
     "assignment": {"node": "fpga:0", ...}, "pins": {"node": "fpga:0"},
     "solver": "dp", "status": "optimal", "objective": "max_load", "value": 1.23,
     "lower_bound": 1.23, "bound_set": "pipeline",
     "options": {...}, "wall_time": 0.5, "evaluation": {...}}

``devices``, ``pins`` and ``evaluation`` are written for the reader's benefit;
only ``assignment`` is required to read one back (older files without
``lower_bound``/``bound_set``, or saying ``"objective": "throughput"``, read fine).
"""
from __future__ import annotations

import csv
import io as _io
import os
from typing import Any, Mapping

from ..errors import InputFormatError, PlacementError
from ..model import Cluster, OpGraph, Placement, validate_pins
from .atomic import atomic_write_json, atomic_write_text
from .jsonfile import read_json

FORMAT = "viz_place.placement/1"


def placement_to_dict(graph: OpGraph, cluster: Cluster, placement: Placement, *,
                      pins: Mapping[str, str] | None = None, evaluation=None) -> dict[str, Any]:
    out = {"format": FORMAT, "graph": graph.name, "devices": cluster.to_dict(),
           "assignment": dict(placement.assignment), "pins": dict(pins or {}),
           "solver": placement.solver, "status": placement.status, "objective": placement.objective,
           "value": placement.claimed_value, "options": dict(placement.options),
           "wall_time": placement.wall_time, "message": placement.message,
           "lower_bound": placement.lower_bound, "bound_set": placement.bound_set}
    if evaluation is not None:
        out["evaluation"] = evaluation.to_dict()
    return out


def placement_from_dict(data: Mapping[str, Any], *, source: str = "placement") -> tuple[Placement, dict[str, str], Cluster | None]:
    """(placement, pins, cluster or None) from our placement JSON."""
    if not isinstance(data, Mapping) or not isinstance(data.get("assignment"), Mapping):
        raise InputFormatError(f"{source}: expected our placement JSON with an 'assignment' object")
    status = data.get("status") or "manual"
    value = data.get("value")
    bound = data.get("lower_bound")
    bound = bound if isinstance(bound, (int, float)) and not isinstance(bound, bool) else None
    try:
        placement = Placement(dict(data["assignment"]), solver=str(data.get("solver") or "manual"),
                              status=status, objective=data.get("objective"),
                              claimed_value=value if isinstance(value, (int, float)) else None,
                              options=data.get("options") or {}, wall_time=data.get("wall_time"),
                              message=str(data.get("message") or ""), lower_bound=bound,
                              bound_set=data.get("bound_set") if bound is not None else None)
    except PlacementError as err:
        raise err.prefixed(source) from None
    pins = data.get("pins") or {}
    if not isinstance(pins, Mapping):
        raise InputFormatError(f"{source}: field 'pins' must be an object")
    cluster = Cluster.from_dict(data["devices"]) if data.get("devices") else None
    return placement, {str(k): v for k, v in pins.items()}, cluster


def write_placement(path: str | os.PathLike, graph: OpGraph, cluster: Cluster, placement: Placement, **kw: Any) -> None:
    atomic_write_json(path, placement_to_dict(graph, cluster, placement, **kw))


def placement_to_csv(graph: OpGraph, placement: Placement, pins: Mapping[str, str] | None = None) -> str:
    """``node,name,op_type,device,pinned`` rows in topological order."""
    buf = _io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["node", "name", "op_type", "device", "pinned"])
    pins = pins or {}
    for n in graph.nodes():
        if n.artificial:
            continue
        w.writerow([n.id, n.name, n.op_type, placement.assignment.get(n.id, ""), int(n.id in pins)])
    return buf.getvalue()


def write_placement_csv(path: str | os.PathLike, graph: OpGraph, placement: Placement, pins=None) -> None:
    atomic_write_text(path, placement_to_csv(graph, placement, pins))


def read_cluster(path: str | os.PathLike) -> Cluster:
    """Devices file: ``{"classes": [...]}`` or the paper's maxFPGAs/maxCPUs/maxSizePerFPGA."""
    return Cluster.from_dict(read_json(path))


def read_pins(path: str | os.PathLike, graph: OpGraph, cluster: Cluster) -> dict[str, str]:
    """Pins file: ``{"pins": {node: device}}`` or a plain ``{node: device}`` object."""
    data = read_json(path)
    if isinstance(data, Mapping) and "pins" in data:
        data = data["pins"]
    if not isinstance(data, Mapping):
        raise InputFormatError(f"{path}: expected an object mapping node ids to devices")
    return validate_pins(graph, cluster, {str(k): v for k, v in data.items()})
