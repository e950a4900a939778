"""The integer programs of Tarnawski et al. (2020): solvers ``ilp``, ``ilp-noncontig`` and ``latency-ilp``.

Entry points (through :func:`viz_place.solvers.run_solver`): :func:`.max_load.solve`
(min max-load, contiguous or not) and :func:`.latency.solve` (min single-sample
latency). Pieces: :mod:`.backends` (PuLP models on CBC or HiGHS, cancel, time
limits), :mod:`.symmetry` (identical devices), :mod:`.warm_start` (starts from the
other solvers), :mod:`.result` (the honest status, message and bound).

>>> from viz_place.solvers import get_solver
>>> get_solver("ilp").exact, get_solver("latency-ilp").objective
(True, 'latency')
"""
from ..registry import SolverInfo, register
from . import latency, max_load
from .backends import OPTIMALITY_TOL, MilpOptions, MilpResult, available_backends, engine_gap, solve_milp
from .latency import LatencyIlpOptions
from .options import IlpNoncontigOptions, IlpOptions

#: Options of viz_place.testing.check_solver's quick checks: limits that do not bind on its small graphs.
CHECK_OPTIONS = {"time_limit": 30.0}

register(SolverInfo("ilp", max_load.solve, IlpOptions, "max_load",
                    "integer program, pipeline splits as dp (or per-device convex sets: -o device_cycles=true); "
                    "min max-load; CBC or HiGHS", exact=True, check_options=CHECK_OPTIONS))
register(SolverInfo("ilp-noncontig", max_load.solve, IlpNoncontigOptions, "max_load",
                    "integer program over all placements (non-contiguous; min max-load; CBC or HiGHS)", exact=True,
                    check_options=CHECK_OPTIONS))
register(SolverInfo("latency-ilp", latency.solve, LatencyIlpOptions, "latency",
                    "integer program for single-sample latency (contiguous, or up to q pieces per accelerator)",
                    exact=True, check_options=CHECK_OPTIONS))

__all__ = ["OPTIMALITY_TOL", "MilpOptions", "MilpResult", "available_backends", "engine_gap", "solve_milp",
           "IlpOptions", "IlpNoncontigOptions", "LatencyIlpOptions"]
