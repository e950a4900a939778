"""Save and restore a whole explorer session as one JSON file (written atomically).

The file holds the graph (our node-link format), the devices, the pins, the
current placement and the history of runs, so nothing is lost on a kernel
restart::

    {"format": "viz_place.session/1", "graph": {...node-link...}, "devices": {"classes": [...]},
     "pins": {...}, "placement": {...}, "history": [...], "saved_at": "..."}

>>> import tempfile, os
>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> s = ExplorerState(make_graph("chain", 5)); s.pin(s.graph.node_ids[0], "fpga:1")
>>> path = os.path.join(tempfile.mkdtemp(), "session.json"); save_session(s, path)
>>> restore_session(ExplorerState(make_graph("residual", 10)), path).pins
{'0': 'fpga:1'}
"""
from __future__ import annotations

import os
import time
from typing import Any, Mapping

from viz_place.errors import InputFormatError
from viz_place.io import atomic_write_json, graph_from_nodelink, graph_to_nodelink, read_json
from viz_place.io.placement_json import decode_non_finite, encode_non_finite
from viz_place.model import Cluster, Placement

FORMAT = "viz_place.session/1"


def session_to_dict(state) -> dict[str, Any]:
    """The JSON-able session of an :class:`~viz_place.widgets.state.ExplorerState`."""
    return {"format": FORMAT, "graph": graph_to_nodelink(state.graph), "devices": state.cluster.to_dict(),
            "pins": dict(state.pins), "placement": state.placement.to_dict(),
            "history": [_jsonable(r) for r in state.history], "saved_at": time.strftime("%Y-%m-%d %H:%M:%S")}


def save_session(state, path: str | os.PathLike) -> None:
    """Write the session to ``path`` atomically (temp file + rename); infinite figures (a DP's
    upper bound it never needed, a latency of devices that wait on each other) are written as
    ``null`` with their place kept, as in placement files."""
    atomic_write_json(path, encode_non_finite(session_to_dict(state)))


def session_from_dict(data: Mapping[str, Any], *, source: str = "session"):
    """(graph, cluster, placement, pins, history) from a session dict; clear errors on bad input."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise InputFormatError(f"{source}: not a viz_place session file (expected \"format\": \"{FORMAT}\")")
    for key in ("graph", "devices", "placement"):
        if key not in data:
            raise InputFormatError(f"{source}: missing field {key!r}")
    graph = graph_from_nodelink(data["graph"], name=str(data["graph"].get("name") or "graph"))
    cluster = Cluster.from_dict(data["devices"])
    p = data["placement"]
    if not isinstance(p, Mapping) or not isinstance(p.get("assignment"), Mapping):
        raise InputFormatError(f"{source}: field 'placement' must hold an 'assignment' object")
    bound = p.get("lower_bound")   # absent in sessions saved before bounds existed
    bound = bound if isinstance(bound, (int, float)) and not isinstance(bound, bool) else None
    placement = Placement(dict(p["assignment"]), solver=str(p.get("solver") or "manual"),
                          status=p.get("status") or "manual", objective=p.get("objective"),
                          claimed_value=p.get("claimed_value"), options=p.get("options") or {},
                          wall_time=p.get("wall_time"), message=str(p.get("message") or ""),
                          lower_bound=bound, bound_set=p.get("bound_set") if bound is not None else None)
    history = data.get("history") or []
    if not isinstance(history, list):
        raise InputFormatError(f"{source}: field 'history' must be a list")
    return graph, cluster, placement, dict(data.get("pins") or {}), [dict(r) for r in history]


def restore_session(state, path: str | os.PathLike):
    """Load the session at ``path`` into ``state`` (which is returned)."""
    graph, cluster, placement, pins, history = session_from_dict(decode_non_finite(read_json(path)),
                                                                 source=str(path))
    state.set_graph(graph, cluster, placement, pins, history)
    return state


def _jsonable(row: Mapping[str, Any]) -> dict[str, Any]:
    """History rows with non-finite floats as ``None`` (JSON has no inf/NaN)."""
    out = {}
    for k, v in row.items():
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            v = None
        out[k] = v
    return out
