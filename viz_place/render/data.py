"""Plain column data for the explorer's plots, computed from (graph, placement, evaluation).

Everything here is a pure function returning dicts of lists / arrays — no
Bokeh objects — so it is cheap to test and to send. Node columns follow
``graph.node_ids`` order; edges are drawn as one NaN-separated polyline.

>>> from viz_place.model import OpGraph, Cluster, Placement
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}, {"id": "b", "latency": {"cpu": 1.0}}],
...                          [("a", "b")])
>>> device_column(g, Placement({"a": "cpu:0", "b": "cpu:1"}))
['cpu:0', 'cpu:1']
>>> xs, ys = edge_polyline(g, [[0.0, 0.0], [1.0, 0.0]], cross_only_for=device_column(g, Placement({"a": "cpu:0", "b": "cpu:1"})))
>>> xs.tolist()
[0.0, 0.25, 0.75, 1.0]
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..model import Cluster, OpGraph, Placement

#: Colours of accelerator-like devices (pay communication), then host-like ones.
ACCEL_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                 "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#393b79", "#637939")
HOST_COLOURS = ("#7f7f7f", "#a5a5a5", "#5a5a5a", "#c7c7c7", "#404040")
NAN_COLOUR = "#ffffff"


def device_colours(cluster: Cluster) -> dict[str, str]:
    """A stable colour per device: accelerators from a bright palette, hosts in greys.

    >>> device_colours(Cluster.paper(2, 1, None))
    {'fpga:0': '#1f77b4', 'fpga:1': '#ff7f0e', 'cpu:0': '#7f7f7f'}
    """
    out: dict[str, str] = {}
    a = h = 0
    for d in cluster.devices:
        if d.cls.pays_communication:
            out[d.name] = ACCEL_COLOURS[a % len(ACCEL_COLOURS)]
            a += 1
        else:
            out[d.name] = HOST_COLOURS[h % len(HOST_COLOURS)]
            h += 1
    return out


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.4g}"


def format_bytes(x: float | None) -> str:
    """Sizes for people (binary units).

    >>> format_bytes(3 * 2**20), format_bytes(512.0), format_bytes(None)
    ('3 MiB', '512 B', '-')
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {unit}"
    return f"{x:.4g} B"


def node_columns(graph: OpGraph, positions: Any) -> dict[str, list]:
    """Static per-node columns (position, labels for hover) in ``graph.node_ids`` order."""
    pos = np.asarray(positions, dtype=float)
    nodes = graph.nodes()
    return {
        "x": pos[:, 0].tolist(),
        "y": pos[:, 1].tolist(),
        "id": [n.id for n in nodes],
        "name": [n.name for n in nodes],
        "op": [n.op_type for n in nodes],
        "dir": ["backward" if n.backward else "forward" for n in nodes],
        "lat": [", ".join(f"{k} {_fmt(v)}" for k, v in sorted(n.latency.items())) or "-" for n in nodes],
        "mem": [format_bytes(n.size) for n in nodes],
    }


def device_column(graph: OpGraph, placement: Placement | Mapping[str, str]) -> list[str]:
    """The device of every node in ``graph.node_ids`` order (``""`` when unplaced)."""
    assignment = getattr(placement, "assignment", placement)
    get = assignment.get
    return [get(n, "") for n in graph.node_ids]


def edge_polyline(graph: OpGraph, positions: Any, *, cross_only_for: Sequence[str] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """All edges as one NaN-separated polyline ``(xs, ys)``: 4 points and a NaN per edge.

    An edge that skips columns (a residual connection, say) is drawn as a
    bracket ``0.3 * sqrt(columns skipped)`` above or below (alternating by
    source) the chain it jumps over, so it is not hidden behind it. With
    ``cross_only_for`` (a device column), only edges whose ends sit on
    different devices — the communication — are included.
    """
    pos = np.asarray(positions, dtype=float)
    index = graph.index
    pairs = [(index[u], index[v]) for u, v in graph.edges]
    if cross_only_for is not None:
        pairs = [(i, j) for i, j in pairs if cross_only_for[i] != cross_only_for[j]]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    ij = np.asarray(pairs, dtype=np.int64)
    k = len(ij)
    x0, x1 = pos[ij[:, 0], 0], pos[ij[:, 1], 0]
    y0, y1 = pos[ij[:, 0], 1], pos[ij[:, 1], 1]
    span = np.abs(x1 - x0)
    sign = np.where(ij[:, 0] % 2 == 0, 1.0, -1.0)
    bend = np.where(span > 1.5, 0.3 * np.sqrt(span), 0.0) * sign
    step = np.minimum(0.5, span / 4) * np.sign(x1 - x0)
    xs = np.full(5 * k - 1, np.nan)
    ys = np.full(5 * k - 1, np.nan)
    xs[0::5], xs[1::5], xs[2::5], xs[3::5] = x0, x0 + step, x1 - step, x1
    t = np.divide(step, x1 - x0, out=np.zeros(k), where=(x1 - x0) != 0)
    ys[0::5], ys[3::5] = y0, y1
    ys[1::5] = y0 + (y1 - y0) * t + bend
    ys[2::5] = y1 - (y1 - y0) * t + bend
    return xs, ys


def pin_columns(graph: OpGraph, positions: Any, pins: Mapping[str, str]) -> dict[str, list]:
    """Positions and labels of pinned nodes (drawn as rings)."""
    pos = np.asarray(positions, dtype=float)
    idx = [graph.index[n] for n in pins if graph.has_node(n)]
    return {"x": pos[idx, 0].tolist() if idx else [], "y": pos[idx, 1].tolist() if idx else [],
            "name": [graph.node(graph.node_ids[i]).name for i in idx],
            "device": [pins[graph.node_ids[i]] for i in idx]}


def legend_columns(cluster: Cluster, evaluation=None) -> dict[str, list]:
    """One row per device: name, colour and a label with its load."""
    colours = device_colours(cluster)
    loads = {d.name: d.load for d in evaluation.devices} if evaluation is not None else {}
    names = list(cluster.device_names)
    labels = [f"{n}  load {_fmt(loads[n])}" if n in loads else n for n in names]
    return {"device": names, "colour": [colours[n] for n in names], "label": labels,
            "x": [math.nan] * len(names), "y": [math.nan] * len(names)}


def device_bar_columns(evaluation, cluster: Cluster) -> dict[str, list]:
    """Per device (of the evaluation): compute, communication, load, memory, capacity, colour.

    Capacity is NaN when unlimited; ``over`` marks memory above capacity.
    """
    colours = device_colours(cluster)
    devs = evaluation.devices
    cap = [math.nan if d.memory_capacity is None else d.memory_capacity for d in devs]
    return {
        "device": [d.name for d in devs],
        "compute": [d.compute for d in devs],
        "communication": [d.communication for d in devs],
        "load": [d.load for d in devs],
        "memory": [d.memory for d in devs],
        "capacity": cap,
        "over": [bool(not math.isnan(c) and m > c * (1 + 1e-12)) for m, c in zip((d.memory for d in devs), cap)],
        "colour": [colours.get(d.name, NAN_COLOUR) for d in devs],
        "nodes": [d.num_nodes for d in devs],
    }


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points (throughput, latency) no other point beats on both,
    sorted by throughput — more throughput and less latency are better.

    >>> pareto_front([(1.0, 5.0), (2.0, 6.0), (1.5, 7.0), (0.5, 4.0)])
    [3, 0, 1]
    """
    order = sorted(range(len(points)), key=lambda i: (-points[i][0], points[i][1]))
    front: list[int] = []
    best_lat = math.inf
    for i in order:
        thr, lat = points[i]
        if math.isnan(thr) or math.isnan(lat):
            continue
        if lat < best_lat:
            front.append(i)
            best_lat = lat
    return sorted(front, key=lambda i: points[i][0])
