"""Throughput integer programs: minimise the max-load (solvers ``ilp`` and ``ilp-noncontig``).

The authors' IP (``throughput-ip/ip.py`` of *Efficient Algorithms for Device
Placement of DNN Graph Operators*), generalised to device classes and pins:

* ``x[g, d]`` — binary, colocation group ``g`` (a colour class, or a single
  node) on device ``d``; only devices that support every member, hold its
  memory, and (if pinned) are its pin get a variable;
* ``c[u, d]`` — per data-source node ``u`` and paying device ``d``:
  ``c >= |x(u, d) - x(v, d)|`` for every data successor ``v``. This is exactly
  the evaluator's rule (``d`` pays ``transfer_cost(u) * link(d)`` once when it
  holds ``u`` and some successor is elsewhere, or holds a successor and not
  ``u``); artificial edges carry no data and are left out;
* load of ``d`` = compute + communication (forward and backward parts kept
  apart for the training objective ``max_forward_plus_max_backward``);
  memory per device; ``T >= load(d)`` and minimise ``T``;
* ``contiguous=True``: the authors' convexity constraints on every device
  (CPUs included) over forward nodes and all edges between them
  (``z[v, d] >= x(v, d)``, ``z[v, d] <= z[u, d]``, ``z[v, d] <= x(v, d) - x(u, d) + 1``);
* symmetry breaking among identical, unpinned devices of one class: device
  ``k`` may take a group only if device ``k - 1`` already holds an earlier one.

The MILP is warm-started from the DP (solver ``dp``, when registered) and the
heuristic baselines; the value returned is always the evaluator's figure for
the placement returned.

The bound the MILP proves holds for the placements its model allows:
:data:`BOUND_SET` says which set, per ``contiguous`` (``"convex"`` for ``ilp``,
``"any"`` for ``ilp-noncontig``).

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> p = run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins, options={"backend": "highs", "time_limit": 10})
>>> p.status, p.bound_set, 0 <= p.claimed_value - p.lower_bound <= 1e-6 * p.claimed_value
('optimal', 'convex', True)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pulp

from ...errors import InfeasibleError
from ...model import OBJECTIVES as ALL_OBJECTIVES
from ...model.objective import OBJECTIVE_ALIASES
from ..base import Hooks, Stopwatch
from ..contract import Problem, SolverResult
from ..groups import allowed_devices, nonconvex_devices
from .backends import MilpOptions, solve_milp
from .result import memory_diagnosis, milp_result
from .symmetry import add_symmetry_breaking, canonical, interchangeable_sets
from .warm_start import best_warm_start, better_elsewhere_note, warm_start_note

OBJECTIVES = tuple(o for o in ALL_OBJECTIVES if o != "latency")

#: The set of placements the MILP's bound holds for, by ``contiguous`` (the model's feasible set).
BOUND_SET = {True: "convex", False: "any"}

#: Solvers tried, in this order, for the warm start (missing ones are skipped).
WARM_SOLVERS = ("dp", "pipedream", "topo-fill", "single-device", "greedy-latency", "local-search")


@dataclass(frozen=True)
class IlpOptions(MilpOptions):
    """Options of ``ilp`` (contiguous by default) and ``ilp-noncontig``.

    >>> IlpOptions(time_limit=5, gap=0.01).contiguous
    True
    """

    contiguous: bool = field(default=True, metadata={"help": "each device's forward node set must be convex"})
    objective: str = field(default="max_load", metadata={
        "help": "max_load, or max_forward_plus_max_backward (training: max forward load + max backward load)",
        "choices": OBJECTIVES, "aliases": OBJECTIVE_ALIASES})
    overlap: bool = field(default=False, metadata={
        "help": "communication overlaps compute: a device's load is max(compute, communication) (the paper's "
                "Appendix G; the value is then evaluate(..., overlap=True))"})


@dataclass(frozen=True)
class IlpNoncontigOptions(IlpOptions):
    """Options of ``ilp-noncontig``: as :class:`IlpOptions`, ``contiguous`` off."""

    contiguous: bool = field(default=False, metadata={"help": "each device's forward node set must be convex"})


def build_model(prob, allowed, opts: IlpOptions, sym_sets):
    """The PuLP model; returns ``(lp, x)`` with ``x[(g, d)]`` the assignment variables."""
    lp = pulp.LpProblem("max_load", pulp.LpMinimize)
    D = prob.num_devices
    group = prob.group
    x = {(g, d): lp.add_variable(f"x_{g}_{d}", cat="Binary") for g, ds in enumerate(allowed) for d in ds}
    for g, ds in enumerate(allowed):
        lp += pulp.lpSum(x[g, d] for d in ds) == 1, f"assign_{g}"

    def X(v, d):
        return x.get((int(group[v]), d))

    # per device: variable -> coefficient (duplicates summed) of compute / communication, forward / backward
    parts: dict[tuple[str, bool], list[dict]] = {(k, b): [{} for _ in range(D)]
                                                 for k in ("compute", "comm") for b in (False, True)}
    for v in range(prob.n):
        for d in allowed[int(group[v])]:
            t = prob.lat[v, d]
            if t:
                terms = parts["compute", bool(prob.backward[v])][d]
                var = x[int(group[v]), d]
                terms[var] = terms.get(var, 0.0) + float(t)
    # memory (normalised by capacity for good numerics)
    for d in range(D):
        cap = prob.capacity[d]
        if np.isfinite(cap):
            terms = [(x[g, d], float(prob.size[list(prob.groups[g])].sum()))
                     for g in range(len(allowed)) if (g, d) in x]
            terms = [(var, s) for var, s in terms if s > 0]
            if terms and sum(s for _, s in terms) > cap:
                scale = cap if cap > 0 else 1.0
                lp += pulp.LpAffineExpression([(var, s / scale) for var, s in terms]) <= cap / scale, f"mem_{d}"
    # communication indicators
    for u in range(prob.n):
        cost = float(prob.tcost[u])
        succ_groups = {int(group[v]) for v in prob.data_succs[u]} - {int(group[u])}
        if cost <= 0 or not succ_groups:
            continue
        for d in range(D):
            pay = cost * float(prob.link[d]) if prob.pays[d] else 0.0
            if pay <= 0:
                continue
            xu = X(u, d)
            others = [x[h, d] for h in sorted(succ_groups) if (h, d) in x]
            if xu is None and not others:
                continue
            c = lp.add_variable(f"c_{u}_{d}", lowBound=0, upBound=1)
            for xv in others:
                if xu is not None:
                    lp += c >= xu - xv
                    lp += c >= xv - xu
                else:
                    lp += c >= xv
            if xu is not None and len(others) < len(succ_groups):
                lp += c >= xu   # some successor cannot be on d at all
            parts["comm", bool(prob.backward[u])][d][c] = pay
    # contiguity (convex forward set per device, CPUs included)
    if opts.contiguous:
        fwd_nodes = [v for v in range(prob.n) if not prob.backward[v]]
        fwd_edges = [(u, v) for v in fwd_nodes for u in prob.preds[v] if not prob.backward[u]]
        for d in range(D):
            if not any((int(group[v]), d) in x for v in fwd_nodes):
                continue
            z = {v: lp.add_variable(f"z_{v}_{d}", lowBound=0, upBound=1) for v in fwd_nodes}
            for v in fwd_nodes:
                xv = X(v, d)
                if xv is not None:
                    lp += z[v] >= xv
            for u, v in fwd_edges:
                lp += z[v] <= z[u]
                xu, xv = X(u, d), X(v, d)
                if xu is not None:
                    lp += z[v] <= (xv if xv is not None else 0) - xu + 1
    add_symmetry_breaking(lp, x, len(allowed), sym_sets)
    # every group runs somewhere: the max-load is at least its fastest compute
    floor = max((min(float(prob.lat[list(prob.groups[g]), d].sum()) for d in ds) for g, ds in enumerate(allowed)),
                default=0.0)
    T = lp.add_variable("T", lowBound=floor * (1 - 1e-9) if opts.objective == "max_load" else 0)
    def load_rows(var, d, kinds, directions, name):
        # load = compute + communication, or with overlap max(compute, communication): one row per part
        groups = [[(k, b) for k in kinds for b in directions]] if not opts.overlap else \
            [[(k, b) for b in directions] for k in kinds]
        for i, keys in enumerate(groups):
            terms: dict = {}
            for key in keys:
                for v, a in parts[key][d].items():
                    terms[v] = terms.get(v, 0.0) + a
            if terms:
                lp.addConstraint(var >= pulp.LpAffineExpression(terms), f"{name}_{d}_{i}")

    if opts.objective == "max_load":
        for d in range(D):
            load_rows(T, d, ("compute", "comm"), (False, True), "load")
        lp += T
    else:
        F = lp.add_variable("F", lowBound=0)
        B = lp.add_variable("B", lowBound=0)
        for d in range(D):
            load_rows(F, d, ("compute", "comm"), (False,), "fload")
            load_rows(B, d, ("compute", "comm"), (True,), "bload")
        lp += T == F + B
        lp += T
    return lp, x


def solve(problem: Problem, opts: IlpOptions, hooks: Hooks) -> SolverResult:
    """Minimise max-load (or max forward + max backward load) with a MILP.

    Status ``"optimal"``, ``"feasible"`` (message with the gap) or
    ``"cancelled"`` (the best placement so far); raises
    :class:`~viz_place.errors.InfeasibleError` (with the reason) when no
    placement exists and :class:`~viz_place.errors.SolverError` when the time
    limit ran out before any placement was found (``"no solution in time"``).
    """
    watch = Stopwatch()
    prob, pins = problem.compiled, problem.pins
    solver = "ilp" if opts.contiguous else "ilp-noncontig"
    allowed = allowed_devices(prob, pins)
    sym_sets = interchangeable_sets(prob, pins) if opts.symmetry_breaking else []
    fwd_mask = [not b for b in prob.backward.tolist()]

    def convex_ok(dev) -> bool:
        return not nonconvex_devices(prob, dev, fwd_mask)

    def contiguity_problem(dev):
        bad = nonconvex_devices(prob, dev, fwd_mask) if opts.contiguous else set()
        return f"forward set not contiguous on {', '.join(prob.device_names[d] for d in sorted(bad))}" if bad else None

    warm = None
    rejected: list = []
    failures: list = []
    if opts.warm_start:
        hooks.report(0.0, "warm start: DP and heuristic baselines", force=True)
        warm = best_warm_start(problem, WARM_SOLVERS, accept=convex_ok if opts.contiguous else None,
                               cancel=lambda: hooks.cancelled,
                               budget={"dp": max(1.0, opts.time_limit / 2), "*": max(1.0, opts.time_limit / 10)},
                               options={"dp": {"time_limit": max(1.0, opts.time_limit / 2)},
                                        "local-search": {"seed": 0, "restarts": 2,
                                                         "time_limit": max(0.5, opts.time_limit / 10)}},
                               rejected=rejected, failures=failures)
        if warm is not None:
            warm = (canonical(prob, warm[0], sym_sets), warm[1])
            value = problem.value(warm[0])
            hooks.report(0.0, f"warm start from {warm[1]}: {value:.6g}", incumbent=value, force=True)
    hooks.report(0.0, "building the integer program", force=True)
    lp, x = build_model(prob, allowed, opts, sym_sets)
    start_values = None
    if warm is not None:
        start_values = {x[g, d].name: float(int(warm[0][prob.groups[g][0]]) == d) for (g, d) in x}
    remaining = max(0.1, opts.time_limit - watch.elapsed)
    res = solve_milp(lp, backend=opts.backend, time_limit=remaining, gap=opts.gap, warm_start=start_values,
                     hooks=hooks)
    ilp_dev = None
    if res.has_solution:
        ilp_dev = np.empty(prob.n, dtype=np.int64)
        for g, ds in enumerate(allowed):
            d = max(ds, key=lambda d: res.values.get(x[g, d].name, 0.0))
            ilp_dev[list(prob.groups[g])] = d
    if res.status == "infeasible" and warm is None:
        extra = " with contiguous device sets" if opts.contiguous else ""
        raise InfeasibleError(f"infeasible{extra}: {memory_diagnosis(prob, allowed)}")
    result, value = milp_result(problem, solver=solver, res=res, ilp_dev=ilp_dev, warm=warm,
                                bound_set=BOUND_SET[opts.contiguous], extra_ok=contiguity_problem,
                                model_note="loads with overlap: max(compute, communication)" if opts.overlap else "")
    notes = [warm_start_note(failures)]
    if opts.contiguous:
        notes.append(better_elsewhere_note(value, rejected, "solver ilp-noncontig allows such placements"))
    result.message = "; ".join(filter(None, [result.message, *notes]))
    return result
