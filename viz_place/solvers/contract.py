"""The solver contract: one ``prepare`` step in, one :class:`SolverResult` out, one ``Placement`` built.

A solver is one function::

    solve(problem: Problem, options, hooks: Hooks) -> SolverResult

:func:`prepare` builds ``problem`` (validated options and pins, the compiled
problem arrays, the :class:`Objective`); the solver returns the assignment it
found, a status, a message, statistics and, where it has one, a *proven* lower
bound with the set of placements it holds for; :func:`build_placement` then
evaluates the assignment once with :func:`viz_place.cost.evaluate_indices` and
builds the :class:`~viz_place.model.Placement` (claimed value from the
evaluator, wall time, options, bound). :func:`viz_place.solvers.run_solver`
strings the three together. A result that breaks the rules (violations, a
solver's own value or bound disagreeing with the evaluator) is a bug and raises
:class:`~viz_place.errors.InternalError`.

>>> from viz_place.model import OpGraph, Cluster
>>> from viz_place.solvers.registry import SolverInfo
>>> from viz_place.solvers.base import SolverOptions, Hooks
>>> def all_on_host(problem, options, hooks):
...     return SolverResult([0] * problem.compiled.n, status="heuristic", lower_bound=0.0, bound_set="any")
>>> info = SolverInfo("host", all_on_host, SolverOptions, "max_load", "everything on device 0")
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 2.0}}], [])
>>> problem = prepare(info, g, Cluster.paper(0, 1, None), None, None)
>>> p = build_placement(info, problem, all_on_host(problem, problem.options, Hooks()), wall_time=0.0)
>>> p.claimed_value, p.objective, p.lower_bound, p.bound_set
(2.0, 'max_load', 0.0, 'any')
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..cost import CompiledProblem, Evaluation, compile_problem, evaluate_indices
from ..errors import InternalError, PlacementError, SolverError
from ..model import BOUND_SETS, Cluster, OpGraph, Placement, canonical_objective, validate_pins
from ..model.modules import has_module_paths
from .base import make_options


#: What a solver may need from its input graph (``SolverInfo.needs``), as said in the error; the test is
#: :func:`viz_place.model.modules.has_module_paths` for ``"module_paths"``.
NEEDS: dict[str, str] = {
    "module_paths": "module paths (node field 'layer': the module an op ran in, such as '/transformer/h/0'; "
                    "import a PyTorch model with `viz-place import hf:...` or "
                    "viz_place.io.torch_import.import_torch(module, inputs))",
}


_HAS = {"module_paths": has_module_paths}


def check_needs(info, graph: OpGraph) -> None:
    """Refuse a graph that lacks what solver ``info`` needs (:data:`NEEDS`)."""
    for need in getattr(info, "needs", ()):
        if not _HAS[need](graph):
            raise SolverError(f"solver {info.name!r}: graph {graph.name!r} has no {need.replace('_', ' ')}; it "
                              f"needs {NEEDS[need]}", field="graph")


@dataclass(frozen=True)
class Objective:
    """What a run minimises: ``name`` in :data:`~viz_place.model.OBJECTIVES`; ``overlap``: loads are
    max(compute, communication) (the paper's Appendix G) rather than their sum.

    >>> Objective("throughput").name
    'max_load'
    """

    name: str = "max_load"
    overlap: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", canonical_objective(self.name))

    def value(self, evaluation: Evaluation) -> float:
        """The figure of ``evaluation`` this objective minimises."""
        return float(evaluation.value(self.name))


@dataclass(frozen=True)
class Problem:
    """Everything a solver reads: the inputs, validated once.

    ``compiled`` is the :class:`~viz_place.cost.CompiledProblem` (node and device
    arrays, colocation groups); ``pins`` maps node ids to device names.
    """

    graph: OpGraph
    cluster: Cluster
    pins: dict[str, str]
    compiled: CompiledProblem
    options: Any
    objective: Objective

    def evaluate(self, dev: Sequence[int]) -> Evaluation:
        """The evaluator's figures for a device-index array (with this run's pins and overlap)."""
        return evaluate_indices(self.compiled, np.asarray(dev, dtype=np.int64), pins=self.pins,
                                overlap=self.objective.overlap)

    def value(self, dev: Sequence[int]) -> float:
        """The objective value of a device-index array."""
        return self.objective.value(self.evaluate(dev))


@dataclass
class SolverResult:
    """What a solver hands back to :func:`build_placement`.

    ``assignment``: a device index per node (in ``problem.compiled`` order) or a
    mapping node id -> device name. ``lower_bound``/``bound_set``: a *proven*
    lower bound on the objective over the placements of ``bound_set``
    (``"pipeline"``, ``"convex"`` or ``"any"``), or ``None``. ``stats`` go to
    ``Placement.options["stats"]``. ``expected_value``: the solver's own value for
    the assignment, when it computes one exactly (the DP): a disagreement with
    the evaluator is an :class:`~viz_place.errors.InternalError`.
    """

    assignment: Any
    status: str = "heuristic"
    message: str = ""
    stats: Mapping[str, Any] = field(default_factory=dict)
    lower_bound: float | None = None
    bound_set: str | None = None
    expected_value: float | None = None


def objective_of(info, options: Any) -> Objective:
    """The run's objective: the ``objective`` option when the solver has one, else what it registered."""
    name = getattr(options, "objective", None) or info.objective
    return Objective("max_load" if name == "any" else name, overlap=bool(getattr(options, "overlap", False)))


def prepare(info, graph: OpGraph, cluster: Cluster, pins: Mapping[str, str] | None, options: Any) -> Problem:
    """The one entry step: options validated into ``info.options_cls``, pins checked, the graph has what the
    solver needs (``info.needs``), problem compiled."""
    opts = make_options(info.options_cls, options)
    check_needs(info, graph)
    pins = validate_pins(graph, cluster, pins)
    return Problem(graph, cluster, pins, compile_problem(graph, cluster), opts, objective_of(info, opts))


def _device_array(problem: Problem, assignment: Any, solver: str) -> np.ndarray:
    prob = problem.compiled
    if isinstance(assignment, Mapping):
        try:
            return prob.to_index_array(assignment)
        except (KeyError, PlacementError, ValueError) as err:
            raise InternalError(f"{solver}: the assignment returned is incomplete or names an unknown device "
                                f"({err})") from None
    dev = np.asarray(assignment, dtype=np.int64)
    if dev.shape != (prob.n,) or (dev.size and (dev.min() < 0 or dev.max() >= prob.num_devices)):
        raise InternalError(f"{solver}: the assignment returned has shape {dev.shape} or device indices out of "
                            f"range (expected {prob.n} indices below {prob.num_devices})")
    return dev


def build_placement(info, problem: Problem, result: SolverResult, *, wall_time: float) -> Placement:
    """Evaluate ``result`` once and build the one :class:`Placement` of the run (see the module docstring)."""
    name = info.name
    dev = _device_array(problem, result.assignment, name)
    ev = problem.evaluate(dev)
    if ev.violations and result.status != "manual":
        raise InternalError(f"{name}: the placement found violates: {'; '.join(ev.violations)}")
    value = problem.objective.value(ev)
    if result.expected_value is not None and not math.isclose(result.expected_value, value, rel_tol=1e-6,
                                                              abs_tol=1e-9):
        raise InternalError(f"{name}: the solver's value {result.expected_value!r} but the evaluator says {value!r}")
    bound, bound_set = result.lower_bound, result.bound_set
    if (bound is None) != (bound_set is None) or (bound_set is not None and bound_set not in BOUND_SETS):
        raise InternalError(f"{name}: lower_bound {bound!r} with bound_set {bound_set!r}; expected both or "
                            f"neither, the set one of {BOUND_SETS}")
    if bound is not None:
        bound = float(bound)
        if math.isfinite(value) and bound > value + 1e-6 * max(1.0, abs(value)):
            raise InternalError(f"{name}: claimed lower bound {bound!r} exceeds the value {value!r} of its own "
                                "placement")
    options = problem.options.to_dict() if hasattr(problem.options, "to_dict") else dict(problem.options or {})
    if result.stats:
        options["stats"] = dict(result.stats)
    return Placement(problem.compiled.to_assignment(dev), solver=name, status=result.status,
                     objective=problem.objective.name, claimed_value=value, options=options, wall_time=wall_time,
                     message=result.message, lower_bound=bound, bound_set=bound_set)
