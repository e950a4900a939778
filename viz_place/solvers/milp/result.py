"""What a MILP run hands back: the best valid placement among the MILP's and the warm start's,
with an honest status, message and the back-end's proven bound (shared by ``ilp``,
``ilp-noncontig`` and ``latency-ilp``).

* :func:`milp_result` — the :class:`~viz_place.solvers.contract.SolverResult`;
* :func:`memory_diagnosis` — a reason why no placement fits the memory.

>>> from viz_place.cost import compile_problem
>>> from viz_place.model import Cluster, OpGraph
>>> g = OpGraph.from_records([{"id": "a", "latency": {"fpga": 1.0}, "size": 6.0},
...                           {"id": "b", "latency": {"fpga": 1.0}, "size": 6.0}], [])
>>> memory_diagnosis(compile_problem(g, Cluster.paper(1, 0, 10.0)), [[0], [0]])
'nodes that can only go to memory-limited devices need 12 in total but fpga:0 offer 10'
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...cost.bounds import gap as gap_of
from ...cost.compiled import CompiledProblem
from ...errors import InfeasibleError, SolverError
from ..contract import Problem, SolverResult
from .backends import OPTIMALITY_TOL, MilpResult


def memory_diagnosis(prob: CompiledProblem, allowed: list[list[int]]) -> str:
    """A sentence on memory pressure (for infeasibility messages)."""
    need = 0.0
    for g, ds in enumerate(allowed):
        if all(math.isfinite(prob.capacity[d]) for d in ds):
            need += float(prob.size[list(prob.groups[g])].sum())
    limited = sorted({d for ds in allowed for d in ds if math.isfinite(prob.capacity[d])})
    offer = float(sum(prob.capacity[d] for d in limited))
    if limited and need > offer * (1 + 1e-12):
        return (f"nodes that can only go to memory-limited devices need {need:.6g} in total but "
                f"{', '.join(prob.device_names[d] for d in limited)} offer {offer:.6g}")
    return (f"no assignment satisfies the memory capacities, pins, colour classes and supported ops together "
            f"(memory needed on limited devices {need:.6g}, offered {offer:.6g})")


#: How the source of a placement made from the integer program's incumbent begins (``milp_result``'s ``warm``):
#: the message then names it as it is, not as a warm start.
FROM_INCUMBENT = "the MILP's incumbent"
#: The source of a placement found by the set-partitioning bound's dives (:mod:`.set_dive`), beside the MILP.
FROM_DIVE = "a dive in the set-partitioning relaxation, beside the MILP"


def milp_result(problem: Problem, *, solver: str, res: MilpResult | None, ilp_dev: np.ndarray | None,
                warm: tuple[np.ndarray, str] | None, bound_set: str | None,
                extra_ok: Callable[[np.ndarray], str | None] | None = None,
                model_note: str = "", scope: str | None = None,
                status_override: str | None = None) -> tuple[SolverResult, float]:
    """Choose the placement to return, its honest status, and the bound; returns ``(result, value)``.

    ``ilp_dev``: the MILP's placement (or ``None``); ``warm``: (placement, source)
    of the warm start (or ``None``); ``extra_ok(dev)`` returns a reason when a
    placement breaks a model constraint the evaluator does not check (contiguity).
    ``bound_set``: the set of placements the model's bound holds for (``None``:
    the model's value is not the evaluator's, so its bound is not reported).
    ``scope``: the set the model optimises over, as messages say it (``"among pipeline splits"``,
    :func:`~viz_place.solvers.groups.set_text`); the message starts with what the status means for it.
    "optimal" needs the back-end's bound within :data:`OPTIMALITY_TOL` of the *evaluator's* value, and a
    bound above the value of a placement the model allows proves nothing (a back-end bug or tolerance
    trouble): the status is then ``"feasible"``.
    """
    cands: list[tuple[float, np.ndarray, str]] = []
    notes: list[str] = []
    for dev, src in ([(ilp_dev, "ilp")] if ilp_dev is not None else []) + ([warm] if warm else []):
        ev = problem.evaluate(dev)
        value, problems = problem.objective.value(ev), list(ev.violations)
        if extra_ok is not None and not problems:
            why = extra_ok(dev)
            if why:
                problems.append(why)
        if problems:
            notes.append(f"{src} placement rejected: {problems[0]}")
            continue
        cands.append((value, dev, src))
    if not cands:
        why = (res.message if res else "") or "no solution"
        if res is not None and res.status == "infeasible":
            raise InfeasibleError(f"infeasible: {why}")
        stop = res.stopped_by if res else None
        bound = f" (best bound {res.bound:.6g})" if res is not None and res.bound is not None else ""
        if stop == "cancel":
            raise SolverError(f"{solver}: cancelled before any solution was found{bound}")
        raise SolverError(f"{solver}: no solution in time: the {res.backend if res else 'MILP'} back-end stopped "
                          f"({stop or why}) without a solution{bound}; raise the time limit"
                          + ("; " + "; ".join(notes) if notes else ""))
    cands.sort(key=lambda t: (t[0], t[2] != "ilp"))
    value, dev, src = cands[0]
    bound = res.bound if res is not None else None
    msg: list[str] = []
    distrust = ""
    if bound is not None and math.isfinite(value) and bound > value + OPTIMALITY_TOL * abs(value) + 1e-9:
        # a valid bound is never above a placement of the model: this proof is broken (back-end bug, tolerances)
        distrust = (f"the {res.backend} back-end's bound {bound:.9g} is above the value {value:.9g} of a placement "
                    "its model allows, so its proof is not trusted")
        bound = None
    gap = gap_of(value, bound)
    if status_override is not None:
        status = status_override
    elif res is not None and res.stopped_by == "cancel":
        status = "cancelled"
    elif res is not None and gap is not None and gap <= OPTIMALITY_TOL:   # the bound proves it
        status = "optimal"
    else:
        status = "feasible"
    if scope:
        msg.append({"optimal": f"optimal {scope}", "cancelled": f"cancelled: best so far {scope}"}.get(
            status, f"not proven optimal {scope}"))
    if distrust:
        msg.append(distrust)
    if res is not None:
        msg.append(f"{res.backend} {res.stopped_by or 'finished'} after {res.seconds:.2f} s")
        if res.note:
            msg.append(res.note)
    if status != "optimal":
        if gap is not None:
            msg.append(f"gap {100 * gap:.3g}% (value {value:.6g}, bound {bound:.6g})")
        else:
            msg.append("no bound known")
    if src.startswith((FROM_INCUMBENT, FROM_DIVE)):
        msg.append(f"best placement: {src}")
    elif src != "ilp":
        msg.append(f"best placement is the warm start from {src} (the integer program found nothing better)")
    if res is not None and res.status == "infeasible":
        msg.append(f"the back-end reported the model infeasible ({res.message}) although this placement satisfies "
                   "it: numerical trouble, treat the status with care")
    if model_note:
        msg.append(model_note)
    msg.extend(notes)
    lower, lower_set = _proven_bound(res, value, bound_set, msg) if not distrust else (None, None)
    return SolverResult(dev, status=status, message="; ".join(msg), lower_bound=lower, bound_set=lower_set), value


def _proven_bound(res: MilpResult | None, value: float, bound_set: str | None,
                  msg: list[str]) -> tuple[float | None, str | None]:
    """The back-end's bound as a proven lower bound (clipped to ``value`` within the optimality tolerance)."""
    if bound_set is None or res is None or res.status == "infeasible" or res.bound is None \
            or not math.isfinite(res.bound):
        return None, None
    above = gap_of(res.bound, value)
    if res.bound > value and (above is None or above > OPTIMALITY_TOL):
        msg.append(f"the back-end's bound {res.bound:.6g} exceeds the value {value:.6g}: not reported")
        return None, None
    return min(float(res.bound), float(value)), bound_set


def devices_from_solution(prob: CompiledProblem, allowed, x, res: MilpResult) -> np.ndarray | None:
    """Node -> device index read off the assignment variables ``x[group, device]`` of a MILP
    solution (each group on its device of largest value), or None without a solution."""
    if not res.has_solution:
        return None
    dev = np.empty(prob.n, dtype=np.int64)
    for g, ds in enumerate(allowed):
        d = max(ds, key=lambda d: res.values.get(x[g, d].name, 0.0))
        dev[list(prob.groups[g])] = d
    return dev
