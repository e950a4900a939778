"""The solver registry: every solver the CLI and the explorer can offer, and :func:`run_solver`.

Each solver folder (``dp/``, ``milp/``, ``baselines/``, ``rl/``) calls
:func:`register` in its ``__init__``; :mod:`viz_place.solvers` imports them.
``available`` lets a solver depend on an optional package (HiGHS, torch) and be
listed only where it can run, as PuLP does.

>>> from viz_place.solvers import list_solvers
>>> isinstance(list_solvers(), list)
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import SolverError
from ..model import Cluster, OpGraph, Placement, canonical_objective
from .base import Hooks, Stopwatch, collector_paused, collector_resumed, prepare_options_class
from .contract import NEEDS, Problem, SolverResult, build_placement, prepare


@dataclass(frozen=True)
class SolverInfo:
    """A registered solver.

    ``solve(problem, options, hooks) -> SolverResult`` (see
    :mod:`viz_place.solvers.contract`). ``objective`` is what it optimises
    (``"max_load"``, ``"latency"``, ``"max_forward_plus_max_backward"``, or
    ``"any"`` when it follows its ``objective`` option; ``"throughput"`` is read
    as ``"max_load"``); ``exact`` says whether its ``"optimal"`` status is a proof.

    ``needs``: what the input graph must carry, from :data:`~viz_place.solvers.contract.NEEDS`
    (``"module_paths"``: ``layer`` paths such as ``/encoder/block1``, as
    :func:`viz_place.io.torch_fx.read_torch` gives them); :func:`run_solver`
    refuses other graphs with a clear error and
    :func:`viz_place.testing.check_solver` runs the solver on graphs that have
    them. ``check_options``: the options ``check_solver``'s quick checks run it
    with (small budgets that do not bind on its small graphs, so runs repeat
    exactly). ``options_for``: a function ``(graph, cluster, pins) -> options``
    for a solver that cannot run without graph-dependent options (``expert``'s
    split); ``check_solver`` adds them to every run. ``pauses_collector``: the whole run (solve included) makes no
    reference cycles, so :func:`run_solver` pauses Python's cyclic garbage collector for all of it (else only while
    compiling the problem and evaluating the result).
    """

    name: str
    solve: Callable[[Problem, Any, Hooks], SolverResult]
    options_cls: type
    objective: str
    description: str
    exact: bool = False
    available: Callable[[], bool] = field(default=lambda: True)
    needs: tuple[str, ...] = ()
    check_options: Mapping[str, Any] = field(default_factory=dict)
    options_for: Callable[[OpGraph, Cluster, dict], Mapping[str, Any]] | None = None
    pauses_collector: bool = False

    def __post_init__(self) -> None:
        if self.objective != "any":
            object.__setattr__(self, "objective", canonical_objective(self.objective))
        unknown = sorted(set(self.needs) - set(NEEDS))
        if unknown:
            raise SolverError(f"solver {self.name!r}: unknown needs {unknown}; known: {sorted(NEEDS)}", field="needs")


_REGISTRY: dict[str, SolverInfo] = {}


def register(info: SolverInfo) -> SolverInfo:
    """Add (or replace) a solver under ``info.name`` (its options class's annotations resolved now, not in its
    first run)."""
    prepare_options_class(info.options_cls)
    _REGISTRY[info.name] = info
    return info


def get_solver(name: str) -> SolverInfo:
    """The registered, available solver ``name`` (else a :class:`SolverError` naming the choices)."""
    try:
        info = _REGISTRY[name]
    except KeyError:
        raise SolverError(f"unknown solver {name!r}; available: {', '.join(sorted(_REGISTRY)) or 'none'}",
                          field="solver") from None
    if not info.available():
        raise SolverError(f"solver {name!r} is not available on this machine (a required package is missing)",
                          field="solver")
    return info


def is_available(name: str) -> bool:
    """Whether ``name`` is registered and can run here."""
    info = _REGISTRY.get(name)
    return info is not None and bool(info.available())


def list_solvers(only_available: bool = True) -> list[SolverInfo]:
    """Registered solvers, in registration order."""
    return [s for s in _REGISTRY.values() if not only_available or s.available()]


def run_solver(name: str, graph: OpGraph, cluster: Cluster, *, pins=None, options: Any = None,
               progress=None, cancel=None) -> Placement:
    """Run solver ``name``: :func:`~.contract.prepare`, the solver, :func:`~.contract.build_placement`.

    The returned placement's ``claimed_value`` is the evaluator's figure for the
    run's objective, ``wall_time`` covers the whole run, and ``lower_bound`` /
    ``bound_set`` are set when the solver proved a bound.
    """
    info = get_solver(name)
    watch = Stopwatch()
    # compiling and the one evaluation make no reference cycles: the collector waits (a full collection of a large
    # heap would cost more than a small solve); the collection it defers runs after the call
    with collector_paused():
        problem = prepare(info, graph, cluster, pins, options)
        if not info.pauses_collector:
            with collector_resumed():
                result = info.solve(problem, problem.options, Hooks(progress, cancel))
        else:
            result = info.solve(problem, problem.options, Hooks(progress, cancel))
        return build_placement(info, problem, result, wall_time=watch.elapsed)


__all__ = ["SolverInfo", "register", "get_solver", "is_available", "list_solvers", "run_solver"]
