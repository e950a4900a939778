"""viz_place: device placement of DNN operator graphs, exact and learned, with a JupyterLab explorer.

The names a session needs are at the top level (``import viz_place as vp``):
reading graphs (:func:`load_graph`, :func:`load_sample`, :func:`load_placement`),
the model (:class:`OpGraph`, :class:`DeviceClass`, :class:`Cluster`,
:class:`Placement`), the one evaluator (:func:`evaluate`,
:func:`simple_lower_bound`), the solvers (:func:`run_solver`,
:func:`list_solvers`) and the errors. ``vp.run_solver`` is
:func:`viz_place.solvers.run_solver` with options that name files read first
(:mod:`viz_place.solver_files`: ``expert``'s ``path``, ``rl``'s ``policy``). Everything else lives in the subpackages
(``viz_place.cost``, ``viz_place.solvers``, ``viz_place.io``...). The solvers
are imported on first use, so ``import viz_place`` stays light.

>>> import viz_place as vp
>>> g = vp.OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "fpga": 0.5}}], [])
>>> cluster = vp.Cluster((vp.DeviceClass("cpu", "cpu", 1), vp.DeviceClass("fpga", "fpga", 1)))
>>> vp.evaluate(g, cluster, vp.Placement({"a": "cpu:0"})).max_load
1.0
>>> p = vp.run_solver("dp", g, cluster)
>>> dict(p.assignment), p.claimed_value, p.bound_set
({'a': 'fpga:0'}, 0.5, 'pipeline')
>>> vp.load_sample("residual").name
'residual'
"""
from __future__ import annotations

from typing import Any

from .cost import Evaluation, IncrementalEvaluator, evaluate, simple_lower_bound
from .errors import (DeviceError, GraphValidationError, InfeasibleError, InputFormatError, InternalError,
                     PlacementError, SolverError, VizPlaceError)
from .io import load_graph, load_placement
from .model import Cluster, DeviceClass, OpGraph, Placement, validate_pins
from .samples import load_sample, sample_names
from .solver_files import run_solver

__version__ = "0.1.0"

#: Names resolved on first use (importing the solvers loads PuLP, the DP, the RL policy code...).
_LAZY = {"list_solvers": "viz_place.solvers", "get_solver": "viz_place.solvers"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'viz_place' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["OpGraph", "Cluster", "DeviceClass", "Placement", "validate_pins",
           "load_graph", "load_placement", "load_sample", "sample_names",
           "evaluate", "Evaluation", "IncrementalEvaluator", "simple_lower_bound",
           "run_solver", "list_solvers", "get_solver",
           "VizPlaceError", "GraphValidationError", "DeviceError", "PlacementError", "InputFormatError",
           "SolverError", "InfeasibleError", "InternalError", "__version__"]
