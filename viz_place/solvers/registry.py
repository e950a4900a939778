"""The solver registry: every solver the CLI and the explorer can offer.

Solver modules call :func:`register` at import time; :mod:`viz_place.solvers`
imports the built-in ones. ``available`` lets a solver depend on an optional
package (HiGHS, torch) and be listed only where it can run, as PuLP does.

>>> from viz_place.solvers import list_solvers
>>> isinstance(list_solvers(), list)
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import SolverError
from ..model import Cluster, OpGraph, Placement
from .base import make_options


@dataclass(frozen=True)
class SolverInfo:
    """A registered solver.

    ``objective`` is what it optimises (``"throughput"``, ``"latency"``, or
    ``"any"`` when it follows an option); ``exact`` says whether its
    ``"optimal"`` status is a proof.
    """

    name: str
    solve: Callable[..., Placement]
    options_cls: type
    objective: str
    description: str
    exact: bool = False
    available: Callable[[], bool] = field(default=lambda: True)


_REGISTRY: dict[str, SolverInfo] = {}


def register(info: SolverInfo) -> SolverInfo:
    """Add (or replace) a solver under ``info.name``."""
    _REGISTRY[info.name] = info
    return info


def get_solver(name: str) -> SolverInfo:
    try:
        info = _REGISTRY[name]
    except KeyError:
        raise SolverError(f"unknown solver {name!r}; available: {', '.join(sorted(_REGISTRY)) or 'none'}") from None
    if not info.available():
        raise SolverError(f"solver {name!r} is not available on this machine (a required package is missing)")
    return info


def list_solvers(only_available: bool = True) -> list[SolverInfo]:
    """Registered solvers, in registration order."""
    return [s for s in _REGISTRY.values() if not only_available or s.available()]


def run_solver(name: str, graph: OpGraph, cluster: Cluster, *, pins=None, options: Any = None,
               progress=None, cancel=None) -> Placement:
    """Look a solver up and run it (options validated first)."""
    info = get_solver(name)
    opts = make_options(info.options_cls, options)
    return info.solve(graph, cluster, pins=pins, options=opts, progress=progress, cancel=cancel)
