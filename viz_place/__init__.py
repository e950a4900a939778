"""viz_place: device placement of DNN operator graphs, exact and learned, with a JupyterLab explorer.

>>> from viz_place import OpGraph, Cluster, Placement, evaluate
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}], [])
>>> evaluate(g, Cluster.paper(0, 1, None), Placement({"a": "cpu:0"})).max_load
1.0

The names below are loaded on first use (PEP 562), so ``import viz_place``
(and the ``viz-place`` command's start-up, where Ctrl-C must give one line,
not a traceback) does not import numpy and networkx until they are needed.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> submodule that defines it.
_EXPORTS = {
    "OpGraph": "model", "Cluster": "model", "DeviceClass": "model", "Placement": "model", "validate_pins": "model",
    "evaluate": "cost", "Evaluation": "cost", "IncrementalEvaluator": "cost", "compile_problem": "cost",
    "load_graph": "io", "load_placement": "io",
    "VizPlaceError": "errors", "GraphValidationError": "errors", "DeviceError": "errors",
    "PlacementError": "errors", "InputFormatError": "errors", "SolverError": "errors", "InfeasibleError": "errors",
    "InternalError": "errors",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
