"""The assignment model of the throughput integer programs (``ilp``, ``ilp-noncontig``): one binary per
group and allowed device, each device's compute and communication load, memory rows, contiguity, and the
max-load objective (:func:`build_model`). :mod:`.max_load` solves it; :mod:`.neighbourhoods` builds it for
device subsets.
"""
from __future__ import annotations

import numpy as np
import pulp

from ..groups import pipeline_order
from .options import SET_CONVEX, SET_PIPELINE, IlpOptions, model_set
from .pipeline import add_pipeline_constraints
from .symmetry import add_symmetry_breaking


class OutOfTime(Exception):
    """Raised by :func:`build_model` when its ``check`` says the time is up."""


def build_model(prob, allowed, opts: IlpOptions, sym_sets, order=None, check=None, floor: float = 0.0,
                load_devices=None, spread: float = 0.0):
    """The PuLP model; returns ``(lp, x, y)`` with ``x[(g, d)]`` the assignment variables and
    ``y`` the device-order variables of a pipeline model (``{}`` otherwise; ``order``:
    :func:`~viz_place.solvers.groups.pipeline_order`, needed for it). ``check()`` is polled
    while building; when it returns true, :class:`OutOfTime` is raised. ``floor``: a proven
    lower bound on the objective (the objective variable starts there). ``load_devices``: only
    these devices' loads enter the objective (a subproblem of :mod:`.neighbourhoods`; no floor
    then); default all. ``spread`` (with ``load_devices``): ``spread`` times their total load is added to the
    objective (:func:`add_objective`).

    Built in the order of :mod:`.max_load`'s docstring: assignment, compute terms,
    memory, communication, device order (pipeline splits), contiguity (also for
    pipeline splits: they are convex, and the rows tighten the relaxation),
    symmetry breaking, then the objective rows.
    """
    def poll() -> None:
        if check is not None and check():
            raise OutOfTime()
    kind = model_set(opts)
    lp = pulp.LpProblem("max_load", pulp.LpMinimize)
    x = add_assignment(lp, allowed)
    parts = compute_terms(prob, allowed, x)
    add_memory_rows(lp, prob, allowed, x)
    add_communication(lp, prob, x, parts, poll=poll)
    y: dict = {}
    if kind == SET_PIPELINE:
        y = add_pipeline_constraints(lp, prob, x, order if order is not None else pipeline_order(prob), poll=poll)
    if kind in (SET_CONVEX, SET_PIPELINE):
        add_contiguity(lp, prob, x, poll=poll)
    poll()
    add_symmetry_breaking(lp, x, len(allowed), sym_sets)
    poll()
    add_objective(lp, prob, allowed, opts, parts, floor, load_devices, spread)
    return lp, x, y


def add_assignment(lp, allowed) -> dict:
    """Binary ``x[g, d]`` for every allowed (group, device) pair; each group on exactly one device."""
    x = {(g, d): lp.add_variable(f"x_{g}_{d}", cat="Binary") for g, ds in enumerate(allowed) for d in ds}
    for g, ds in enumerate(allowed):
        lp += pulp.lpSum(x[g, d] for d in ds) == 1, f"assign_{g}"
    return x


def _x_of(prob, x, v, d):
    """The assignment variable of node ``v``'s group on device ``d`` (``None``: not allowed there)."""
    return x.get((int(prob.group[v]), d))


def compute_terms(prob, allowed, x) -> dict:
    """Load terms per (part, backward) per device: ``{variable: coefficient}`` (duplicates summed).

    ``part`` is ``"compute"`` or ``"comm"``; this fills the compute part, and
    :func:`add_communication` the other.
    """
    parts: dict[tuple[str, bool], list[dict]] = {(k, b): [{} for _ in range(prob.num_devices)]
                                                 for k in ("compute", "comm") for b in (False, True)}
    group = prob.group
    for v in range(prob.n):
        for d in allowed[int(group[v])]:
            t = prob.lat[v, d]
            if t:
                terms = parts["compute", bool(prob.backward[v])][d]
                var = x[int(group[v]), d]
                terms[var] = terms.get(var, 0.0) + float(t)
    return parts


def add_memory_rows(lp, prob, allowed, x) -> None:
    """Memory per capacity-limited device (rows normalised by the capacity, for good numerics)."""
    for d in range(prob.num_devices):
        cap = prob.capacity[d]
        if np.isfinite(cap):
            terms = [(x[g, d], float(prob.size[list(prob.groups[g])].sum()))
                     for g in range(len(allowed)) if (g, d) in x]
            terms = [(var, s) for var, s in terms if s > 0]
            if terms and sum(s for _, s in terms) > cap:
                scale = cap if cap > 0 else 1.0
                lp += pulp.LpAffineExpression([(var, s / scale) for var, s in terms]) <= cap / scale, f"mem_{d}"


def add_communication(lp, prob, x, parts, poll=None) -> None:
    """``c[u, d] >= |x(u, d) - x(v, d)|`` per data source ``u``, successor group and paying device ``d``."""
    group = prob.group
    for u in range(prob.n):
        if poll is not None and u % 64 == 0:
            poll()
        cost = float(prob.tcost[u])
        succ_groups = {int(group[v]) for v in prob.data_succs[u]} - {int(group[u])}
        if cost <= 0 or not succ_groups:
            continue
        for d in range(prob.num_devices):
            pay = cost * float(prob.link[d]) if prob.pays[d] else 0.0
            if pay <= 0:
                continue
            xu = _x_of(prob, x, u, d)
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


def add_contiguity(lp, prob, x, poll=None) -> None:
    """The authors' convexity rows: each device's forward node set is convex (CPUs included)."""
    group = prob.group
    fwd_nodes = [v for v in range(prob.n) if not prob.backward[v]]
    fwd_edges = [(u, v) for v in fwd_nodes for u in prob.preds[v] if not prob.backward[u]]
    for d in range(prob.num_devices):
        if poll is not None:
            poll()
        if not any((int(group[v]), d) in x for v in fwd_nodes):
            continue
        z = {v: lp.add_variable(f"z_{v}_{d}", lowBound=0, upBound=1) for v in fwd_nodes}
        for v in fwd_nodes:
            xv = _x_of(prob, x, v, d)
            if xv is not None:
                lp += z[v] >= xv
        for u, v in fwd_edges:
            lp += z[v] <= z[u]
            xu, xv = _x_of(prob, x, u, d), _x_of(prob, x, v, d)
            if xu is not None:
                lp += z[v] <= (xv if xv is not None else 0) - xu + 1


def _device_terms(parts, d, keys, scale: float = 1.0, into: dict | None = None) -> dict:
    """``{variable: coefficient}`` of device ``d``'s load over the ``keys`` of ``parts``, times ``scale``
    (added to ``into`` when given)."""
    terms: dict = {} if into is None else into
    for key in keys:
        for v, a in parts[key][d].items():
            terms[v] = terms.get(v, 0.0) + scale * a
    return terms


def _add_load_rows(lp, var, d, parts, kinds, directions, name, overlap: bool) -> None:
    """``var >= load of d`` over the given parts: one row (compute + communication) or, with
    ``overlap``, one row per part (their max)."""
    groups = [[(k, b) for k in kinds for b in directions]] if not overlap else \
        [[(k, b) for b in directions] for k in kinds]
    for i, keys in enumerate(groups):
        terms = _device_terms(parts, d, keys)
        if terms:
            lp.addConstraint(var >= pulp.LpAffineExpression(terms), f"{name}_{d}_{i}")


def add_objective(lp, prob, allowed, opts: IlpOptions, parts, floor: float = 0.0, load_devices=None,
                  spread: float = 0.0) -> None:
    """``T >= load(d)`` for every device and minimise ``T`` (or ``T = F + B`` for the training objective).

    ``floor``: a proven lower bound on the max-load over all valid placements (the packing and
    volume bounds of :func:`~viz_place.cost.bounds.simple_lower_bound`); ``T`` starts there (the
    training objective ``F + B`` is at least the max-load, so it gets the same floor).
    ``load_devices``: only these devices get load rows (max-load objective only; no floor), and with
    ``spread`` > 0 the objective is ``T + spread * (their total load)``: among re-placements of equal
    max-load, the one with the least load in all (compute on the faster devices, less communication), which
    leaves slack for the next subproblem.
    """
    if load_devices is None:
        # every group runs somewhere: the max-load is at least its fastest compute
        unit = max((min(float(prob.lat[list(prob.groups[g]), d].sum()) for d in ds) for g, ds in enumerate(allowed)),
                   default=0.0)
        floor = max(unit, float(floor)) if np.isfinite(floor) else unit
    elif opts.objective != "max_load":
        raise ValueError("load_devices needs the max_load objective")
    else:
        floor = 0.0
    T = lp.add_variable("T", lowBound=floor * (1 - 1e-9))
    loads = ("compute", "comm")
    if opts.objective == "max_load":
        for d in (range(prob.num_devices) if load_devices is None else load_devices):
            _add_load_rows(lp, T, d, parts, loads, (False, True), "load", opts.overlap)
        total: dict = {T: 1.0}
        if spread > 0 and load_devices is not None:
            for d in load_devices:
                _device_terms(parts, d, parts, spread, into=total)
        lp += pulp.LpAffineExpression(total)
    else:
        F = lp.add_variable("F", lowBound=0)
        B = lp.add_variable("B", lowBound=0)
        for d in range(prob.num_devices):
            _add_load_rows(lp, F, d, parts, loads, (False,), "fload", opts.overlap)
            _add_load_rows(lp, B, d, parts, loads, (True,), "bload", opts.overlap)
        lp += T == F + B
        lp += T
