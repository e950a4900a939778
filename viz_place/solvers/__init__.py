"""Solvers: one module per algorithm, all behind :func:`run_solver` and the registry.

Built-in modules register themselves on import; a module that is not present
(or whose optional dependency is missing) is simply not listed.

>>> from viz_place.solvers import list_solvers, run_solver
"""
from __future__ import annotations

import importlib

from .base import Hooks, Progress, SolverOptions, Stopwatch, make_options, option_specs
from .registry import SolverInfo, get_solver, list_solvers, register, run_solver

#: Modules that register built-in solvers, imported in this order.
BUILTIN_MODULES = ("dp", "ilp_throughput", "ilp_latency", "baselines", "baselines_modules", "rl")

for _mod in BUILTIN_MODULES:
    try:
        importlib.import_module(f"{__name__}.{_mod}")
    except ModuleNotFoundError as _err:  # module not written yet / optional dependency missing
        if _err.name not in (f"{__name__}.{_mod}",):
            raise

__all__ = ["Hooks", "Progress", "SolverOptions", "Stopwatch", "make_options", "option_specs",
           "SolverInfo", "get_solver", "list_solvers", "register", "run_solver", "BUILTIN_MODULES"]
