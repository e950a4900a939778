"""Solvers: one folder per family of algorithms, all behind :func:`run_solver` and the registry.

* ``dp/`` — the exact throughput DP (``dp``);
* ``milp/`` — the integer programs (``ilp``, ``ilp-noncontig``, ``latency-ilp``);
* ``baselines/`` — ``greedy-latency``, ``single-device``, ``topo-fill``, ``expert``,
  ``pipedream``, ``local-search``;
* ``rl/`` — the learned placer (``rl``).

Every solver is one function ``(problem, options, hooks) -> SolverResult``
(:mod:`.contract`); :func:`run_solver` prepares the problem, runs it and builds
the :class:`~viz_place.model.Placement`. A folder that is missing (or whose
optional dependency is) is simply not listed.

>>> from viz_place.solvers import list_solvers, run_solver
>>> [s.name for s in list_solvers()][:2]
['dp', 'ilp']
"""
from __future__ import annotations

import importlib

from .base import Hooks, Progress, SolverOptions, Stopwatch, make_options, option_specs
from .contract import Objective, Problem, SolverResult, build_placement, prepare
from .registry import SolverInfo, get_solver, is_available, list_solvers, register, run_solver

#: Folders that register built-in solvers, imported in this order.
BUILTIN_MODULES = ("dp", "milp", "baselines", "rl")

for _mod in BUILTIN_MODULES:
    try:
        importlib.import_module(f"{__name__}.{_mod}")
    except ModuleNotFoundError as _err:  # folder not written yet / optional dependency missing
        if _err.name not in (f"{__name__}.{_mod}",):
            raise

__all__ = ["Hooks", "Progress", "SolverOptions", "Stopwatch", "make_options", "option_specs",
           "Objective", "Problem", "SolverResult", "build_placement", "prepare",
           "SolverInfo", "get_solver", "is_available", "list_solvers", "register", "run_solver", "BUILTIN_MODULES"]
