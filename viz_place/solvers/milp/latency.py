"""The latency integer program (solver ``latency-ilp``): minimise single-sample latency.

The authors' latency IP (``latency-ip/lip.py``), generalised to device classes
and pins, with exactly the evaluator's latency rule
(:mod:`viz_place.cost.latency`):

* classes that pay no communication (host CPUs) are unlimited: a node there
  finishes at its latest predecessor plus its own latency (``L[v] >= L[u] +
  lat(v)``); every instance of such a class is equivalent, so an unpinned node
  uses instance 0 unless the class has a memory limit;
* each accelerator runs its nodes as one contiguous (convex) piece — or, with
  ``max_pieces_per_accelerator = q``, up to ``q`` convex pieces run one after
  another. A piece starts when all its inputs have arrived (``start >= L[u] -
  M (1 - a[u])`` for every outside predecessor ``u``) and finishes after
  inputs + compute + outputs (``c[u] >= |x(u) - x(v)|`` per data edge, priced
  ``transfer_cost(u) * link``); its nodes finish with it;
* memory per accelerator (all its pieces), colour classes, pins, unsupported ops;
  symmetry breaking among identical unpinned accelerators.

``M`` is the latency of the best contiguous warm start (``greedy-latency``,
``dp``, the other baselines), which keeps the relaxation tight and never cuts off
an optimum. For ``q = 1`` the model's value equals ``evaluate(...).latency``;
for ``q > 1`` the evaluator re-derives the pieces of each device (by re-entry
level, then connected components) and its value is the one reported — the
message says when it differs from the model's.

The MILP's bound is reported for ``q = 1`` (where the model's value is the
evaluator's latency) and holds for the placements whose accelerators each run
one convex piece, so for every per-device convex placement
(``bound_set="convex"``); for ``q > 1`` no bound is reported.

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> p = run_solver("latency-ilp", inst.graph, inst.cluster, pins=inst.pins,
...                options={"backend": "highs", "time_limit": 10})
>>> p.objective, p.status, p.bound_set
('latency', 'optimal', 'convex')
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pulp

from ...cost import evaluate_indices, pieces_of
from ...errors import InfeasibleError, SolverError
from ..base import Hooks, Stopwatch
from ..contract import Problem, SolverResult
from ..groups import allowed_devices, nonconvex_devices
from .backends import MilpOptions, solve_milp
from .result import devices_from_solution, memory_diagnosis, milp_result
from .assignment import add_assignment
from .symmetry import add_symmetry_breaking, canonical, interchangeable_sets
from .warm_start import best_warm_start, better_elsewhere_note, warm_start_note

#: The examples above use the HiGHS back-end (tests/test_doctests.py skips them without it).
__doctest_requires__ = ("highspy",)

#: The set the bound of the one-piece model (q = 1) holds for; larger q: no bound is reported.
BOUND_SET_ONE_PIECE = "convex"

WARM_SOLVERS = ("greedy-latency", "single-device", "topo-fill", "pipedream", "dp")


@dataclass(frozen=True)
class LatencyIlpOptions(MilpOptions):
    """Options of ``latency-ilp``.

    >>> LatencyIlpOptions(max_pieces_per_accelerator=2).max_pieces_per_accelerator
    2
    """

    max_pieces_per_accelerator: int = field(default=1, metadata={
        "help": "q: an accelerator may run up to q contiguous pieces one after another (1 = contiguous)",
        "min": 1, "max": 16})


def _loose_bound(prob, allowed) -> float:
    """An upper bound on the latency of any placement the model allows."""
    comp = 0.0
    for g, ds in enumerate(allowed):
        for v in prob.groups[g]:
            comp += max(float(prob.lat[v, d]) for d in ds)
    acc = [d for d in range(prob.num_devices) if prob.pays[d]]
    link = max((float(prob.link[d]) for d in acc), default=0.0)
    return comp + 2 * float(prob.tcost.sum()) * link * max(1, prob.n) + 1.0


def build_model(prob, allowed, q: int, sym_sets, big_m: float):
    """The PuLP model; returns ``(lp, x, X)``: ``x[(g, d)]`` the group-device variables, ``X[(v, (d, j))]``
    node ``v`` in piece ``j`` of accelerator ``d``.

    Built in the order of the module docstring: assignment, pieces, memory,
    finish times, host chains, each accelerator piece, symmetry breaking; minimise ``T``.
    """
    lp = pulp.LpProblem("latency", pulp.LpMinimize)
    x = add_assignment(lp, allowed)
    accel = [d for d in range(prob.num_devices) if prob.pays[d] and any((g, d) in x for g in range(len(allowed)))]
    hosts = [d for d in range(prob.num_devices) if not prob.pays[d]]
    X = add_piece_membership(lp, prob, x, accel, q)
    add_memory_rows(lp, prob, allowed, x, accel, hosts)
    L, T = add_finish_times(lp, prob, allowed)
    add_host_chains(lp, prob, x, hosts, L, T)
    for d in accel:
        previous = None
        for j in range(q):
            previous = add_piece(lp, prob, X, (d, j), q, L, big_m, after=previous)
    add_symmetry_breaking(lp, x, len(allowed), sym_sets)
    lp += T
    return lp, x, X


def add_piece_membership(lp, prob, x, accel, q: int) -> dict:
    """``X[v, (d, j)]``: node ``v`` in piece ``j`` of accelerator ``d`` (``x`` itself when ``q = 1``)."""
    X: dict[tuple[int, tuple[int, int]], pulp.LpVariable] = {}
    for d in accel:
        for v in range(prob.n):
            g = int(prob.group[v])
            if (g, d) not in x:
                continue
            if q == 1:
                X[v, (d, 0)] = x[g, d]
            else:
                for j in range(q):
                    X[v, (d, j)] = lp.add_variable(f"p_{v}_{d}_{j}", cat="Binary")
                lp += pulp.lpSum(X[v, (d, j)] for j in range(q)) == x[g, d]
    return X


def add_memory_rows(lp, prob, allowed, x, accel, hosts) -> None:
    """Memory per capacity-limited device (accelerator rows normalised by the capacity)."""
    def group_terms(d):
        return [(x[g, d], float(prob.size[list(prob.groups[g])].sum())) for g in range(len(allowed)) if (g, d) in x]

    for d in accel:
        cap = prob.capacity[d]
        if math.isfinite(cap):
            terms = [(v, s) for v, s in group_terms(d) if s > 0]
            if terms and sum(s for _, s in terms) > cap:
                scale = cap if cap > 0 else 1.0
                lp += pulp.LpAffineExpression([(v, s / scale) for v, s in terms]) <= cap / scale, f"mem_{d}"
    for d in hosts:
        cap = prob.capacity[d]
        if math.isfinite(cap):
            terms = group_terms(d)
            if terms:
                lp += pulp.lpSum(s * v for v, s in terms) <= cap, f"mem_{d}"


def add_finish_times(lp, prob, allowed):
    """``L[v]`` (finish time of node ``v``) and ``T`` (the latency), each bounded below by the longest chain of
    fastest latencies ending there (a valid bound that tightens the relaxation)."""
    est = [0.0] * prob.n
    for v in range(prob.n):
        fastest = min(float(prob.lat[v, d]) for d in allowed[int(prob.group[v])])
        est[v] = max((est[u] for u in prob.preds[v]), default=0.0) + fastest
    L = [lp.add_variable(f"L_{v}", lowBound=est[v] * (1 - 1e-9)) for v in range(prob.n)]
    T = lp.add_variable("T", lowBound=max(est, default=0.0) * (1 - 1e-9))
    return L, T


def add_host_chains(lp, prob, x, hosts, L, T) -> None:
    """Hosts are unlimited: a node there finishes at its latest predecessor plus its own latency; ``T >= L``."""
    for v in range(prob.n):
        g = int(prob.group[v])
        host = {}
        for d in hosts:
            if (g, d) in x and prob.lat[v, d]:
                host[x[g, d]] = host.get(x[g, d], 0.0) + float(prob.lat[v, d])
        host_lat = pulp.LpAffineExpression(host)
        if host:
            lp += L[v] >= host_lat
        for u in prob.preds[v]:
            lp += L[v] >= L[u] + host_lat
        lp += T >= L[v]


def add_piece(lp, prob, X, slot, q: int, L, big_m: float, *, after=None):
    """Piece ``slot = (d, j)``: convex, starts after its inputs (and after ``after``, the finish of piece
    ``j - 1``), finishes after inputs + compute + outputs; its nodes finish with it. Returns its finish variable."""
    d, j = slot
    sid = f"{d}_{j}"
    members = [v for v in range(prob.n) if (v, slot) in X]
    start = lp.add_variable(f"start_{sid}", lowBound=0)
    finish = lp.add_variable(f"finish_{sid}", lowBound=0)
    load: dict = {}
    for v in members:
        t = float(prob.lat[v, d])
        if t:
            load[X[v, slot]] = load.get(X[v, slot], 0.0) + t
    _add_piece_contiguity(lp, prob, X, slot, members, sid)
    for u in range(prob.n):
        _add_piece_input(lp, prob, X, slot, u, q, start, L[u], big_m, sid)
        _add_piece_communication(lp, prob, X, slot, u, q, load, sid)
    lp += finish == start + pulp.LpAffineExpression(load), f"finish_{sid}"
    for v in members:
        lp += L[v] >= finish - big_m * (1 - X[v, slot])
    if after is not None:
        lp += start >= after
    return finish


def _add_piece_contiguity(lp, prob, X, slot, members, sid) -> None:
    """Convexity of the piece over all nodes and edges (``z`` is the piece's down-closure indicator)."""
    z = [lp.add_variable(f"z_{v}_{sid}", lowBound=0, upBound=1) for v in range(prob.n)]
    for v in members:
        lp += z[v] >= X[v, slot]
    for v in range(prob.n):
        for u in prob.preds[v]:
            lp += z[v] <= z[u]
            if (u, slot) in X:
                lp += z[v] <= (X[v, slot] if (v, slot) in X else 0) - X[u, slot] + 1


def _add_piece_input(lp, prob, X, slot, u, q: int, start, finish_u, big_m: float, sid) -> None:
    """``a[u]`` = ``u`` outside the piece with a successor inside (any edge); then the piece starts after ``u``."""
    group = prob.group
    succ_in = [X[w, slot] for w in dict.fromkeys(prob.succs[u]) if (w, slot) in X and
               (q > 1 or int(group[w]) != int(group[u]))]
    if succ_in:
        a = lp.add_variable(f"a_{u}_{sid}", lowBound=0, upBound=1)
        xu = X.get((u, slot))
        for xw in succ_in:
            lp += a >= (xw - xu if xu is not None else xw)
        lp += start >= finish_u - big_m * (1 - a)


def _add_piece_communication(lp, prob, X, slot, u, q: int, load: dict, sid) -> None:
    """``c[u] >= |x(u) - x(w)|`` over ``u``'s data successors, priced ``transfer_cost(u) * link(d)`` in ``load``."""
    d = slot[0]
    group = prob.group
    pay = float(prob.tcost[u]) * float(prob.link[d])
    data = [w for w in dict.fromkeys(prob.data_succs[u]) if q > 1 or int(group[w]) != int(group[u])]
    if pay <= 0 or not data:
        return
    xu = X.get((u, slot))
    xs = [X[w, slot] for w in data if (w, slot) in X]
    if xu is None and not xs:
        return
    c = lp.add_variable(f"c_{u}_{sid}", lowBound=0, upBound=1)
    for xw in xs:
        lp += c >= (xw - xu if xu is not None else xw)
        if xu is not None:
            lp += c >= xu - xw
    if xu is not None and len(xs) < len(data):
        lp += c >= xu
    load[c] = load.get(c, 0.0) + pay


def solve(problem: Problem, opts: LatencyIlpOptions, hooks: Hooks) -> SolverResult:
    """Minimise single-sample latency with the paper's latency MILP.

    Statuses as for :func:`viz_place.solvers.milp.max_load.solve`; the claimed
    value is always ``evaluate(...).latency`` of the placement returned.
    """
    watch = Stopwatch()
    prob, pins = problem.compiled, problem.pins
    q = opts.max_pieces_per_accelerator
    devices = prob.cluster.devices

    def usable(d: int) -> bool:   # hosts: instance 0 of an unlimited class is as good as any
        return bool(prob.pays[d]) or devices[d].index == 0 or devices[d].cls.memory is not None

    allowed = allowed_devices(prob, pins, restrict=usable)
    accel_mask = prob.pays.tolist()
    sym_sets = interchangeable_sets(prob, pins, [d for d in range(prob.num_devices) if usable(d)]) \
        if opts.symmetry_breaking else []

    def convex_ok(dev) -> bool:
        """At most q pieces per accelerator under the evaluator's rule (q = 1: convex sets)."""
        if q == 1:
            return not any(accel_mask[d] for d in nonconvex_devices(prob, dev))
        return all(len(pl) <= q for pl in pieces_of(prob, dev).values())

    warm = None
    rejected: list = []
    failures: list = []
    if opts.warm_start:
        hooks.report(0.0, "warm start: greedy-latency and other baselines", force=True)
        warm = best_warm_start(problem, WARM_SOLVERS, accept=convex_ok,
                               cancel=lambda: hooks.cancelled, budget=max(0.1, opts.time_limit / 8),
                               options={"single-device": {"objective": "latency"},
                                        "dp": {"time_limit": max(0.2, opts.time_limit / 8)}}, rejected=rejected,
                               failures=failures, deadline=watch.start + 0.4 * opts.time_limit)
    if q > 1:   # the contiguous optimum first: a warm start and a fallback the evaluator always schedules
        hooks.report(0.0, "solving the contiguous model (q = 1) first", force=True)
        one = replace(opts, max_pieces_per_accelerator=1, time_limit=max(0.1, opts.time_limit / 3))
        try:
            r1 = solve(replace(problem, options=one), one, hooks)
        except SolverError as err:
            r1 = None
            failures.append(f"latency-ilp with one piece per accelerator: {err}")
        if r1 is not None:
            dev1 = np.asarray(r1.assignment, dtype=np.int64)
            if warm is None or problem.value(dev1) <= evaluate_indices(prob, warm[0]).latency:
                warm = (dev1, f"latency-ilp with one piece per accelerator ({r1.status})")
    if warm is not None:
        warm = (_normalise_hosts(prob, warm[0], usable, pins), warm[1])
        warm = (canonical(prob, warm[0], sym_sets), warm[1])
        big_m = evaluate_indices(prob, warm[0]).latency
        hooks.report(0.0, f"warm start from {warm[1]}: {big_m:.6g}", incumbent=big_m, force=True)
        big_m = big_m * (1 + 1e-6) + 1e-6
    else:
        big_m = _loose_bound(prob, allowed)
    hooks.report(0.0, "building the integer program", force=True)
    lp, x, X = build_model(prob, allowed, q, sym_sets, big_m)
    start_values = None
    if warm is not None:
        start_values = {var.name: float(int(warm[0][prob.groups[g][0]]) == d) for (g, d), var in x.items()}
        if q > 1:   # the evaluator's pieces (convex, in run order) fill the slots: the model's value is the same
            slot_of = {v: (d, j) for d, pl in pieces_of(prob, warm[0]).items() for j, piece in enumerate(pl)
                       for v in piece}
            for (v, s_), var in X.items():
                start_values[var.name] = float(slot_of.get(v) == s_)
    res = solve_milp(lp, backend=opts.backend, time_limit=max(0.1, opts.time_limit - watch.elapsed), gap=opts.gap,
                     threads=opts.threads,
                     warm_start=start_values, hooks=hooks)
    if res.status == "infeasible" and warm is None:
        raise InfeasibleError(f"infeasible: {memory_diagnosis(prob, allowed)}"
                              + (" with one contiguous piece per accelerator" if q == 1 else
                                 f" with at most {q} contiguous pieces per accelerator"))
    ilp_dev = devices_from_solution(prob, allowed, x, res)

    def check(dev):
        if q == 1:
            bad = [d for d in nonconvex_devices(prob, dev) if accel_mask[d]]
            if bad:
                return f"not one contiguous piece on {', '.join(prob.device_names[d] for d in bad)}"
        if not math.isfinite(evaluate_indices(prob, dev).latency):
            return "its pieces wait on each other (no schedule under the latency model)"
        return None

    result, value = milp_result(
        problem, solver="latency-ilp", res=res, ilp_dev=ilp_dev, warm=warm,
        bound_set=BOUND_SET_ONE_PIECE if q == 1 else None, extra_ok=check,
        scope="among placements where each accelerator runs one contiguous piece" if q == 1 else
        f"among placements where each accelerator runs at most {q} contiguous pieces in sequence")
    notes = [better_elsewhere_note(value, rejected, "try a larger max_pieces_per_accelerator"),
             warm_start_note(failures)]
    if q > 1 and res.has_solution and res.objective is not None and \
            not math.isclose(res.objective, value, rel_tol=1e-6, abs_tol=1e-6):
        notes.append(f"the integer program's own value {res.objective:.6g} (up to {q} sequential pieces per "
                     f"accelerator) differs from the evaluator's latency {value:.6g} of this placement "
                     "(the evaluator cuts a device's set into pieces by re-entry level and connected components)")
        result.status = "cancelled" if result.status == "cancelled" else "feasible"
    result.message = "; ".join(filter(None, [result.message, *notes]))
    return result


def _normalise_hosts(prob, dev, usable, pins) -> np.ndarray:
    """Move unpinned nodes from an unlimited host instance to instance 0 of its class (same latency)."""
    dev = np.asarray(dev, dtype=np.int64).copy()
    pinned = {prob.graph.index[n] for n in pins}
    first_of_class = {}
    for d, device in enumerate(prob.cluster.devices):
        first_of_class.setdefault(device.cls.name, d)
    for g in prob.groups:
        d = int(dev[g[0]])
        if not usable(d) and not any(v in pinned for v in g):
            dev[list(g)] = first_of_class[prob.cluster.devices[d].cls.name]
    return dev
