"""The data model: operator graphs, device classes and clusters, placements and pins.

>>> from viz_place.model import OpGraph, Cluster, Placement
>>> g = OpGraph.from_records([{"id": "x", "latency": {"cpu": 1.0}}], [])
>>> Placement({"x": "cpu:0"})["x"]
'cpu:0'
"""
from .devices import Cluster, Device, DeviceClass
from .graph import Node, OpGraph, validate_graph
from .objective import BOUND_SETS, OBJECTIVES, canonical_objective, display_name
from .placement import STATUSES, Placement, check_complete, validate_pins

__all__ = ["Cluster", "Device", "DeviceClass", "Node", "OpGraph", "validate_graph",
           "Placement", "STATUSES", "check_complete", "validate_pins",
           "OBJECTIVES", "BOUND_SETS", "canonical_objective", "display_name"]
