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

Infinite figures (the latency of placements whose devices feed each other in
a cycle, the throughput of an all-zero graph, an unknown bound...) are not
JSON numbers: each is written as ``null`` and listed in ``"non_finite"`` by
its JSON Pointer, with its value and the reason; reading restores them.

>>> import math
>>> d = {"value": math.inf, "evaluation": {"latency": math.inf, "latency_issue": "a cycle"}}
>>> safe = encode_non_finite(d)
>>> safe["value"], safe["non_finite"]["/evaluation/latency"]
(None, {'value': 'inf', 'why': 'a cycle'})
>>> decode_non_finite(safe)["evaluation"]["latency"]
inf

>>> from viz_place.model import OpGraph, Cluster, Placement
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}], [])
>>> data = placement_to_dict(g, Cluster.paper(0, 1, None), Placement({"a": "cpu:0"}, solver="manual"))
>>> placement, pins, cluster = placement_from_dict({"assignment": data["assignment"], "objective": "throughput"})
>>> dict(placement.assignment), placement.objective, pins, cluster
({'a': 'cpu:0'}, 'max_load', {}, None)
>>> print(placement_to_csv(g, placement), end="")
node,name,op_type,device,pinned
a,a,op,cpu:0,0
"""
from __future__ import annotations

import copy
import csv
import io as _io
import math
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
    return encode_non_finite(out)


def _why(pointer: str, root: Mapping[str, Any]) -> str:
    """A short reason for the infinite figure at ``pointer`` of a placement dict."""
    ev = root.get("evaluation") if isinstance(root.get("evaluation"), Mapping) else {}
    last = pointer.rsplit("/", 1)[-1]
    if last == "latency" or (pointer == "/value" and root.get("objective") == "latency"):
        return str(ev.get("latency_issue") or "the latency is infinite")
    if last == "throughput" or (pointer == "/value" and root.get("objective") == "throughput"
                                and ev.get("max_load") == 0):
        return "max-load is 0, so the throughput (1 / max-load) is infinite"
    if "upper_bound" in last or "bound" in last:
        return "no finite bound was known"
    return "infinite (unbounded: an op on a device with no latency for it, or no finite value known)"


def encode_non_finite(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with every non-finite float replaced by ``None`` and listed in ``"non_finite"``.

    ``"non_finite"`` maps the JSON Pointer of each figure to ``{"value": "inf" | "-inf" | "nan", "why": text}``.
    """
    found: dict[str, dict[str, str]] = {}

    def walk(x: Any, pointer: str) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            found[pointer] = {"value": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}
            return None
        if isinstance(x, Mapping):
            return {k: walk(v, f"{pointer}/{_escape(str(k))}") for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [walk(v, f"{pointer}/{i}") for i, v in enumerate(x)]
        return x

    out = walk(dict(obj), "")
    for pointer, rec in found.items():
        rec["why"] = _why(pointer, obj)
    out.pop("non_finite", None)
    if found:
        out["non_finite"] = found
    return out


def decode_non_finite(data: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`encode_non_finite` (a copy; unknown pointers are ignored)."""
    out = copy.deepcopy(dict(data))
    marks = out.pop("non_finite", None)
    if not isinstance(marks, Mapping):
        return out
    for pointer, rec in marks.items():
        text = rec.get("value") if isinstance(rec, Mapping) else rec
        if text not in ("inf", "-inf", "nan") or not isinstance(pointer, str) or not pointer.startswith("/"):
            continue
        parts = [_unescape(p) for p in pointer[1:].split("/")]
        node: Any = out
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else (
                node[int(part)] if isinstance(node, list) and part.isdigit() and int(part) < len(node) else None)
            if node is None:
                break
        last = parts[-1]
        if isinstance(node, dict) and node.get(last, 0) is None:
            node[last] = float(text)
        elif isinstance(node, list) and last.isdigit() and int(last) < len(node) and node[int(last)] is None:
            node[int(last)] = float(text)
    return out


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


#: Optional fields of our placement JSON: the JSON types each may have (``null`` always allowed).
OPTIONAL_FIELDS = {"solver": (str,), "status": (str,), "objective": (str,), "value": (int, float),
                   "options": (Mapping,), "wall_time": (int, float), "message": (str,), "pins": (Mapping,),
                   "devices": (Mapping,), "graph": (str,), "evaluation": (Mapping,), "lower_bound": (int, float),
                   "bound_set": (str,)}


def _check_optional_fields(data: Mapping[str, Any], source: str) -> None:
    """Refuse an optional field of the wrong type (``"options": 3``), rather than guess or crash."""
    names = {str: "a string", int: "a number", float: "a number", Mapping: "an object"}
    for key, types in OPTIONAL_FIELDS.items():
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise InputFormatError(f"{source}: field {key!r} must be {names[types[0]]} or null, got {value!r}"[:300])


def placement_from_dict(data: Mapping[str, Any], *, source: str = "placement") -> tuple[Placement, dict[str, str], Cluster | None]:
    """(placement, pins, cluster or None) from our placement JSON."""
    if not isinstance(data, Mapping) or not isinstance(data.get("assignment"), Mapping):
        raise InputFormatError(f"{source}: expected our placement JSON with an 'assignment' object")
    data = decode_non_finite(data)
    _check_optional_fields(data, source)
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
