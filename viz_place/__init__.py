"""viz_place: device placement of DNN operator graphs, exact and learned, with a JupyterLab explorer.

>>> from viz_place import OpGraph, Cluster, Placement, evaluate
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}], [])
>>> evaluate(g, Cluster.paper(0, 1, None), Placement({"a": "cpu:0"})).max_load
1.0
"""
from .cost import Evaluation, IncrementalEvaluator, compile_problem, evaluate
from .errors import (DeviceError, GraphValidationError, InfeasibleError, InputFormatError, InternalError,
                     PlacementError, SolverError, VizPlaceError)
from .io import load_graph, load_placement
from .model import Cluster, DeviceClass, OpGraph, Placement, validate_pins

__version__ = "0.1.0"

__all__ = ["OpGraph", "Cluster", "DeviceClass", "Placement", "validate_pins", "evaluate", "Evaluation",
           "IncrementalEvaluator", "compile_problem", "load_graph", "load_placement", "VizPlaceError",
           "GraphValidationError", "DeviceError", "PlacementError", "InputFormatError", "SolverError",
           "InfeasibleError", "InternalError", "__version__"]
