"""The placement the explorer starts from before any solver has run.

It runs a solver, so it sits above :mod:`viz_place.solvers` (rendering stays
pure: :mod:`viz_place.render` draws placements and never makes one).

So that the first view already shows a split across the devices, the start is
the ``topo-fill`` baseline (accelerators filled in topological order, each up
to an equal share of the compute, memory and pins respected) when that solver
is registered and finds a placement. Otherwise every colocation group (colour
class, or a single node) goes to the first device, in cluster order, that can
run all of its nodes and has unlimited memory (a host CPU in the paper's
setting); failing that, the first device that can run them all; failing that,
the first device (the evaluator then reports the violation). It is a starting
point to look at, marked ``solver="start"``, not a solver result.

>>> from viz_place.model import OpGraph, Cluster
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "fpga": 0.5}}], [])
>>> fallback_placement(g, Cluster.paper(2, 1, 10.0))["a"]
'cpu:0'
>>> starting_placement(g, Cluster.paper(2, 1, 10.0))["a"]
'fpga:0'
"""
from __future__ import annotations

from .errors import VizPlaceError
from .model import Cluster, OpGraph, Placement
from .solvers import is_available, run_solver
from .solvers.groups import host_assignment

START_SOLVER = "topo-fill"


def starting_placement(graph: OpGraph, cluster: Cluster, pins=None) -> Placement:
    """A quick, complete placement honouring ``pins`` (status ``"manual"``, solver ``"start"``)."""
    why = f"solver {START_SOLVER} is not available"
    if is_available(START_SOLVER):
        try:
            p = run_solver(START_SOLVER, graph, cluster, pins=pins)
        except VizPlaceError as err:
            p, why = None, f"{START_SOLVER} found no placement ({err})"
        if p is not None:
            return Placement(p.assignment, solver="start", status="manual",
                             message=f"start: the {START_SOLVER} baseline")
    fallback = fallback_placement(graph, cluster, pins)
    return Placement(fallback.assignment, solver="start", status="manual",
                     message=f"start: every group on the first device that can hold it ({why})")


def fallback_placement(graph: OpGraph, cluster: Cluster, pins=None) -> Placement:
    """Every group on the first device that can hold it (see the module docstring)."""
    return Placement(host_assignment(graph, cluster, pins), solver="start", status="manual")
