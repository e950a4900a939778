"""The placement the explorer starts from before any solver has run.

Every colocation group (colour class, or a single node) goes to the first
device, in cluster order, that can run all of its nodes and has unlimited
memory (a host CPU in the paper's setting); failing that, the first device
that can run them all; failing that, the first device (the evaluator then
reports the violation). It is a starting point to look at, not a solver.

>>> from viz_place.model import OpGraph, Cluster
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "fpga": 0.5}}], [])
>>> starting_placement(g, Cluster.paper(2, 1, 10.0))["a"]
'cpu:0'
"""
from __future__ import annotations

from ..model import Cluster, OpGraph, Placement


def starting_placement(graph: OpGraph, cluster: Cluster, pins=None) -> Placement:
    """A simple complete placement honouring ``pins`` (status ``"manual"``)."""
    pins = dict(pins or {})
    devices = cluster.devices
    assignment: dict[str, str] = {}
    for group in graph.colocation_groups:
        pinned = next((pins[n] for n in group if n in pins), None)
        if pinned is not None:
            target = pinned
        else:
            kinds_ok = [d for d in devices if all(graph.node(n).supported_on(d.cls.kind) for n in group)]
            unlimited = [d for d in kinds_ok if d.cls.memory is None]
            target = (unlimited or kinds_ok or list(devices))[0].name
        for n in group:
            assignment[n] = target
    return Placement(assignment, solver="start", status="manual")
