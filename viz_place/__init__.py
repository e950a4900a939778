"""viz_place: device placement of DNN operator graphs, exact and learned, with a JupyterLab explorer.

The names a session needs are at the top level (``import viz_place as vp``):
reading graphs (:func:`load_graph`, :func:`load_sample`, :func:`load_placement`),
the model (:class:`OpGraph`, :class:`DeviceClass`, :class:`Cluster`,
:class:`Placement`), the one evaluator (:func:`evaluate`,
:func:`simple_lower_bound`), the solvers (:func:`run_solver`,
:func:`list_solvers`) and the errors (also ``vp.errors``). ``vp.run_solver``
is :func:`viz_place.solvers.run_solver` with options that name files read
first (:mod:`viz_place.solver_files`: ``expert``'s ``path``, ``rl``'s
``policy``). Everything else lives in the subpackages (``viz_place.cost``,
``viz_place.solvers``, ``viz_place.io``...).

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

The names are loaded on first use (PEP 562), so ``import viz_place`` (and the
``viz-place`` command's start-up, where Ctrl-C must give one line, not a
traceback) imports neither numpy and networkx nor the solvers and PuLP until
they are needed.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> submodule that defines it.
_EXPORTS = {
    "OpGraph": "model", "Cluster": "model", "DeviceClass": "model", "Placement": "model", "validate_pins": "model",
    "load_graph": "io", "load_placement": "io", "load_sample": "samples", "sample_names": "samples",
    "evaluate": "cost", "Evaluation": "cost", "IncrementalEvaluator": "cost", "simple_lower_bound": "cost",
    "run_solver": "solver_files", "list_solvers": "solvers", "get_solver": "solvers",
    "VizPlaceError": "errors", "GraphValidationError": "errors", "DeviceError": "errors",
    "PlacementError": "errors", "InputFormatError": "errors", "SolverError": "errors", "InfeasibleError": "errors",
    "InternalError": "errors",
}

#: Subpackages reachable as attributes before anything imported them (``vp.errors``).
_SUBMODULES = ("errors",)

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name == "sweep":   # ``viz_place.sweep(...)``: imported on first use (it pulls in the solvers and Dask)
        from .runtime.design_sweep import sweep
        return sweep
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
