"""The cost problem of a pipeline run on this machine: N CPU processes paying a calibrated link.

:func:`runtime_problem` keeps the graph's ``cpu`` latencies (measured with ``import
--profile``, or the roofline's otherwise) and prices every transfer with the link
calibration: ``transfer_cost(u) = latency + output_bytes(u) / bandwidth``, paid once by
``u``'s process and once by each other process that reads it (the evaluator's rule). The
devices are one class ``proc`` of kind ``cpu``, count N, that pays communication.

>>> from viz_place.model import OpGraph
>>> from viz_place.runtime.calibrate import LinkCalibration
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}, "output_bytes": 1e6},
...                           {"id": "b", "latency": {"cpu": 2.0}}], [("a", "b")])
>>> cg, cl = runtime_problem(g, LinkCalibration("shm", 0.01, 1e6), 2)
>>> cg.node("a").transfer_cost, cl.device_names
(1.01, ('proc:0', 'proc:1'))
"""
from __future__ import annotations

from typing import Mapping

import networkx as nx

from ..errors import InputFormatError
from ..model import Cluster, DeviceClass, OpGraph, Placement
from .calibrate import LinkCalibration

RUN_CLASS = "proc"


def runtime_cluster(stages: int) -> Cluster:
    return Cluster((DeviceClass(RUN_CLASS, "cpu", count=int(stages), pays_communication=True, link_factor=1.0),))


def runtime_problem(graph: OpGraph, link: LinkCalibration, stages: int) -> tuple[OpGraph, Cluster]:
    """(graph priced for ``link``, the cluster of ``stages`` processes); see the module docstring."""
    missing = [n.id for n in graph.nodes() if not n.artificial and "cpu" not in n.latency]
    if missing:
        raise InputFormatError(f"graph {graph.name!r}: node(s) {missing[:5]} have no 'cpu' latency; "
                               "a pipeline of CPU processes needs one for every node")
    g = nx.DiGraph()
    src = graph.nx
    for n in src.nodes:  # the tracer's order is kept
        node = graph.node(n)
        attrs = node.to_attrs()
        attrs["transfer_cost"] = 0.0 if node.artificial else link.cost_ms(node.output_bytes or 0.0)
        g.add_node(n, **attrs)
    for u, v in src.edges:
        g.add_edge(u, v, **src.edges[u, v])
    cluster = runtime_cluster(stages)
    out = OpGraph(g, name=graph.name, notes=list(graph.notes), default_cluster=cluster,
                  source=getattr(graph, "source", None))
    return out, cluster


def to_runtime_placement(placement: Placement | Mapping[str, str], devices: tuple[str, ...]) -> Placement:
    """The placement with stage ``i``'s device renamed ``proc:i``."""
    assignment = placement.assignment if isinstance(placement, Placement) else placement
    rename = {d: f"{RUN_CLASS}:{i}" for i, d in enumerate(devices)}
    return Placement({n: rename.get(d, d) for n, d in assignment.items()}, solver="runtime", status="manual")
