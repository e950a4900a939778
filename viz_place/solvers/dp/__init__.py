"""The exact throughput DP of Tarnawski et al. (2020): solver ``dp`` (entry point :func:`.solver.solve`).

Pieces, in the order a run uses them: :mod:`.contraction` (the graph becomes a
DAG of supernodes), :mod:`.ideals` (its down-closed sets, as bitsets),
:mod:`.upper_bound` (a quick placement whose value prunes the exact pass),
:mod:`.recursion` (the DP over pairs of ideals), :mod:`.solver` (options, pins,
device classes, the threshold passes, the result).

>>> from viz_place.solvers import get_solver
>>> get_solver("dp").exact
True
"""
from ..registry import SolverInfo, register
from .solver import DPOptions, DPStats, solve

register(SolverInfo(
    name="dp", solve=solve, options_cls=DPOptions, objective="max_load", exact=True, pauses_collector=True,
    description="exact dynamic program over ideals: optimal pipeline split (contiguous: a chain of ideals) for max-load (Tarnawski et al. 2020)"))

__all__ = ["DPOptions", "DPStats", "solve"]
