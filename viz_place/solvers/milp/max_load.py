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
* ``contiguous=True`` (solver ``ilp``): **pipeline splits**, the DP's set —
  the devices are put in an order (binary ``y[a, b]``: ``a`` before ``b``,
  transitive) and every ordering edge (between forward nodes, colour classes
  contracted, :func:`~viz_place.solvers.groups.pipeline_order`) stays on a
  device or goes forward: ``x[s, d] + x[t, e] <= 1 + before(d, e)``. So no two
  devices feed each other, and ``ilp`` and ``dp`` have the same optimum. The
  convexity rows below are added too (pipeline splits are convex): they make
  the relaxation much tighter;
* ``contiguous=True, device_cycles=True``: the authors' IP instead — each
  device's forward set is convex (CPUs included) over forward nodes and all
  edges between them (``z[v, d] >= x(v, d)``, ``z[v, d] <= z[u, d]``,
  ``z[v, d] <= x(v, d) - x(u, d) + 1``), which lets two devices feed each
  other in a cycle (a larger set: its optimum can be lower);
* symmetry breaking among identical, unpinned devices of one class: device
  ``k`` may take a group only if device ``k - 1`` already holds an earlier one;
* a proven **floor** on ``T``: :func:`~viz_place.cost.bounds.simple_lower_bound`
  (largest unit, total work, and the packing arguments of
  :mod:`viz_place.cost.packing`: pigeonhole, packing, an exact packing check of
  the largest units, volume after what the slow devices can absorb). Groups are
  indivisible, which the LP relaxation cannot see: on the published layer graphs
  this floor, not branching, is what closes most of the gap;
* ``ilp-noncontig`` on max-load (``polish``, a share of the time): the warm start
  and every new HiGHS incumbent are polished with moves, swaps and kicks over the
  incremental evaluator (:mod:`.polish`) and handed back to the search — a better
  incumbent closes the gap as surely as a better bound; and (``lns``, a share of
  the time) the groups of two devices at a time (more after a round without gain)
  are re-solved exactly with the others fixed (:mod:`.neighbourhoods`): when the
  integer program stops short of the gap, and on long runs (with the set bound)
  first on pairs (then three devices) from the polished warm start, before the integer program (past
  its share while it keeps finding better placements);
* on long runs (``set_bound``; by default for limits of 60 s or more) the set-partitioning bound by
  column generation with exact pricing (:mod:`.set_bound`), aimed at the best placement's value / (1 + gap):
  a refuted threshold becomes the run's bound — communication, which the LP relaxation hardly sees. It runs
  in a process of its own beside the other phases (:mod:`.set_bound_worker`, a second core), or without
  one last, in its share of the time (0.55 of limits of 300 s or more);
* optionally (``bound_phase``) a first MILP with only the largest groups
  integral — a relaxation, so its bound lifts the floor; off by default (it
  added nothing measurable on the published graphs).

The MILP is warm-started from the DP (solver ``dp``, when registered) and the
heuristic baselines; the value returned is always the evaluator's figure for
the placement returned.

The bound the MILP proves holds for the placements its model allows:
:func:`model_set` says which (``"pipeline"`` for ``ilp``, ``"convex"`` for
``ilp -o device_cycles=true``, ``"any"`` for ``ilp-noncontig``), and every
message starts with it (``optimal among pipeline splits``, ...).

>>> from viz_place.solvers import run_solver
>>> from viz_place.testing import random_instance
>>> inst = random_instance(3)
>>> p = run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins, options={"backend": "highs", "time_limit": 10})
>>> p.status, p.bound_set, 0 <= p.claimed_value - p.lower_bound <= 1e-6 * p.claimed_value
('optimal', 'pipeline', True)
>>> p.message.split(";")[0]
'optimal among pipeline splits'
"""
from __future__ import annotations

from time import perf_counter as _now

import numpy as np
import pulp

from ...cost.bounds import gap as gap_of, simple_lower_bound
from ...errors import InfeasibleError, SolverError
from ..base import Hooks, Stopwatch
from ..contract import Problem, SolverResult
from ..groups import allowed_devices, device_cycle, nonconvex_devices, pipeline_order, set_text
from .assignment import OutOfTime, build_model
from .backends import OPTIMALITY_TOL, solve_milp
from .neighbourhoods import LNS_SIZE, lns_applies, lns_share, run_lns
from .options import (OBJECTIVES, SET_ANY, SET_CONVEX, SET_PIPELINE, IlpNoncontigOptions,  # noqa: F401 (re-exported)
                      IlpOptions, model_set)
from .pipeline import pipeline_start_values
from .polish import Polisher, polishable
from .result import FROM_DIVE, FROM_INCUMBENT, devices_from_solution, memory_diagnosis, milp_result
from .set_bound import raise_bound_by_set_partition, set_bound_mode, set_bound_share, wants_set_bound
from .set_bound_worker import finish_beside, start_beside
from .symmetry import canonical, interchangeable_sets
from .warm_start import best_warm_start, better_elsewhere_note, warm_start_note

#: The examples above use the HiGHS back-end (tests/test_doctests.py skips them without it).
__doctest_requires__ = ("highspy",)

#: Share of the time limit the warm starts may use in all (the integer program gets the rest).
WARM_SHARE = 0.4
#: Building the model must end within this share of the time limit (else the warm start is returned):
#: writing it out for the back-end and solving get the rest.
BUILD_SHARE = 0.75


#: Solvers tried, in this order, for the warm start (missing ones are skipped).
WARM_SOLVERS = ("dp", "pipedream", "topo-fill", "single-device", "greedy-latency", "local-search")


#: Search budget of the exact packing checks behind the floor (:func:`~viz_place.cost.bounds.simple_lower_bound`;
#: 1000 per second of the time limit, at most this).
FLOOR_EXACT_NODES = 20000
#: The bound phase, and the first pass of the subset search when it goes on past its share, end before this share
#: of the time limit is left (for the main integer program and the last subset search).
MAIN_SHARE = 0.4
#: Share of the subset search's time (``lns``) its first pass may take, on pairs of devices from the polished
#: warm start (three after a round of pairs without gain), before the integer program (the rest after it). On
#: inception_100_s2_training pairs stop at 64.192 and three-device subsets reach 64.0058, 25 s later: with a
#: share of 0.5 and pairs only, the set bound aimed at 64.192 / 1.01 (beyond its relaxation's reach) until the
#: last subset search found 64.0058 at 265 s.
EARLY_LNS = 0.75
#: Devices per subset at most in that first pass.
EARLY_LNS_MAX_SIZE = LNS_SIZE + 1
#: Groups whose fastest compute is at least this share of the floor stay integral in the bound phase.
BIG_SHARE = 0.05
#: The bound phase runs only when at most this share of the groups (and this many) stay integral.
BIG_MAX_SHARE, BIG_MAX_COUNT = 0.6, 120


def big_groups(prob, allowed, floor: float) -> list[int]:
    """Groups whose fastest compute is at least ``BIG_SHARE`` of ``floor`` (the integral ones of the bound phase)."""
    out = []
    for g, ds in enumerate(allowed):
        fastest = min(float(prob.lat[list(prob.groups[g]), d].sum()) for d in ds)
        if fastest >= BIG_SHARE * floor:
            out.append(g)
    return out


def relaxation_bound(prob, allowed, opts: IlpOptions, sym_sets, order, floor: float, hooks: Hooks, *,
                     deadline: float, incumbent: float | None) -> float:
    """The proven bound of the model with only the big groups (:func:`big_groups`) integral — a
    relaxation of the full model, so its bound holds wherever the full model's does; ``floor``
    when the phase is skipped (too few small groups, no time) or proves nothing more."""
    big = big_groups(prob, allowed, floor)
    G = len(allowed)
    if not big or len(big) > BIG_MAX_SHARE * G or len(big) > BIG_MAX_COUNT:
        return floor
    left = deadline - _now()
    if left < 0.5 or hooks.cancelled:
        return floor
    hooks.report(0.0, f"bound phase: {len(big)} of {G} groups integral", force=True)
    try:
        lp, x, _ = build_model(prob, allowed, opts, sym_sets, order, floor=floor,
                               check=lambda: _now() > deadline or hooks.cancelled)
    except OutOfTime:
        return floor
    keep = set(big)
    for (g, d), var in x.items():
        if g not in keep:
            var.cat = pulp.LpContinuous
    res = solve_milp(lp, backend=opts.backend, time_limit=max(0.1, deadline - _now()), gap=opts.gap,
                     threads=opts.threads, hooks=_BoundOnly(hooks, incumbent))
    if res.bound is not None and np.isfinite(res.bound) and res.status != "infeasible":
        if incumbent is not None and res.bound > incumbent * (1 + 1e-6) + 1e-9:
            return floor     # above a valid placement: numerical trouble, prove nothing
        return max(floor, min(float(res.bound), incumbent if incumbent is not None else float(res.bound)))
    return floor


class _BoundOnly(Hooks):
    """Hooks for the bound phase: its bound is reported (with the run's incumbent), its own
    incumbents (fractional placements) are not."""

    def __init__(self, outer: Hooks, incumbent: float | None) -> None:
        super().__init__(outer.progress_fn, outer.cancel_fn)
        self.started = outer.started
        self._incumbent = incumbent

    def report(self, fraction=None, message: str = "", *, force: bool = False, **kw) -> None:
        kw["incumbent"] = self._incumbent
        data = dict(kw.get("data") or {})
        if data:
            data["best"] = np.nan if self._incumbent is None else self._incumbent
            b = data.get("bound")
            data["gap"] = gap_of(self._incumbent, None if b is None or not np.isfinite(b) else b) \
                if self._incumbent is not None else np.nan
            data["gap"] = np.nan if data["gap"] is None else data["gap"]
            kw["data"] = data
        text = "bound phase: " + (f"bound {kw['bound']:.6g}" if kw.get("bound") is not None else "running")
        super().report(fraction, text, force=force, **kw)


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
    kind = model_set(opts)
    order = pipeline_order(prob) if kind == SET_PIPELINE else None

    def outside_model(dev) -> str | None:
        """Why ``dev`` is outside the model's set (``None``: inside)."""
        if kind == SET_PIPELINE:
            cycle = device_cycle(prob, dev, order)
            if cycle:
                names = [prob.device_names[d] for d in cycle]
                return f"not a pipeline split: {' -> '.join(names + names[:1])} feed each other"
        elif kind == SET_CONVEX:
            bad = nonconvex_devices(prob, dev, fwd_mask)
            if bad:
                return f"forward set not contiguous on {', '.join(prob.device_names[d] for d in sorted(bad))}"
        return None

    warm = None
    rejected: list = []
    failures: list = []
    if opts.warm_start:
        hooks.report(0.0, "warm start: DP and heuristic baselines", force=True)
        # the time limit covers everything: warm starts get at most WARM_SHARE of it (the DP a quarter)
        tl = opts.time_limit
        warm = best_warm_start(problem, WARM_SOLVERS,
                               accept=(lambda dev: outside_model(dev) is None) if kind != SET_ANY else None,
                               cancel=lambda: hooks.cancelled,
                               budget={"dp": max(0.2, tl / 4), "*": max(0.1, tl / 20)},
                               options={"dp": {"time_limit": max(0.2, tl / 4)},
                                        "local-search": {"seed": 0, "restarts": 2, "time_limit": max(0.1, tl / 20)}},
                               rejected=rejected, failures=failures,
                               deadline=watch.start + WARM_SHARE * tl)
        if warm is not None:
            warm = (canonical(prob, warm[0], sym_sets), warm[1])
            value = problem.value(warm[0])
            hooks.report(0.0, f"warm start from {warm[1]}: {value:.6g}", incumbent=value, force=True)
    floor = simple_lower_bound(problem.graph, problem.cluster,
                               exact_nodes=int(min(FLOOR_EXACT_NODES, 1000 * opts.time_limit)))[0]
    if np.isfinite(floor) and floor > 0:
        hooks.report(0.0, f"proven floor {floor:.6g} (packing and volume bounds)", bound=floor,
                     incumbent=problem.value(warm[0]) if warm is not None else None, force=True)
    # polishing stops once the floor proves the placement within the requested gap
    target = floor * (1 + opts.gap) if np.isfinite(floor) and floor > 0 else 0.0
    polisher = Polisher(problem, allowed, sym_sets, opts, hooks, deadline=watch.start + opts.time_limit,
                        target=target) if polishable(opts) else None
    if polisher is not None and warm is not None:
        warm = polisher.warm(warm, deadline=watch.start + (WARM_SHARE + opts.polish / 2) * opts.time_limit)
    proven = warm is not None and _floor_proves(problem.value(warm[0]), floor, opts)
    if opts.bound_phase > 0 and np.isfinite(floor) and not proven:
        floor = max(floor, relaxation_bound(prob, allowed, opts, sym_sets, order, floor, hooks,
                                            deadline=min(watch.start + (1 - MAIN_SHARE) * opts.time_limit,
                                                         _now() + opts.bound_phase * opts.time_limit),
                                            incumbent=problem.value(warm[0]) if warm is not None else None))
    # the set-partitioning bound: beside the integer program (a process of its own), or last, aimed at the best
    # placement found (its time is kept for it)
    sb_mode = set_bound_mode(opts) if not proven and warm is not None and wants_set_bound(problem, opts, warm[0]) \
        else "off"
    sb_time = set_bound_share(opts) * opts.time_limit if sb_mode == "after" else 0.0
    worker, outer = None, hooks
    if sb_mode == "beside":
        worker, hooks = start_beside(problem, allowed, opts, hooks, floor=floor, warm=warm[0],
                                     deadline=watch.start + opts.time_limit)
    lns_spent = 0.0
    if sb_mode != "off" and lns_applies(opts):
        began = _now()
        until = watch.start + (1 - MAIN_SHARE) * opts.time_limit
        planned = min(began + EARLY_LNS * lns_share(opts, set_bound_runs=sb_time > 0) * opts.time_limit, until)
        warm = _first_pass(problem, allowed, sym_sets, opts, hooks, warm, floor, deadline=planned, extend_to=until)
        lns_spent = min(_now(), planned) - began       # time past its share came out of the integer program's
        if _floor_proves(problem.value(warm[0]), floor, opts):     # the set bound is not needed any more
            if worker is not None:
                worker.stop()
            worker, hooks, sb_time = None, outer, 0.0
    try:
        return _search(problem, opts, outer, hooks, worker, watch, allowed, sym_sets, order, kind, solver, warm,
                       floor, sb_time, polisher, outside_model, rejected, failures, lns_spent)
    finally:
        if worker is not None:
            worker.stop()


def _floor_proves(value: float, floor: float, opts) -> bool:
    """Whether the proven ``floor`` puts a placement of ``value`` within the requested gap."""
    return bool(np.isfinite(floor) and floor > 0 and (gap_of(value, floor) or 0.0) <= max(opts.gap, OPTIMALITY_TOL))


def _first_pass(problem, allowed, sym_sets, opts, hooks, warm, floor, *, deadline: float, extend_to: float):
    """With the set bound (long runs): pairs of devices (then three) re-solved from the polished warm start before
    the integer program until ``deadline``, and on while it keeps finding better placements (until
    :data:`~.neighbourhoods.EXTEND_IDLE` seconds pass without one, or ``extend_to``) — a better start for the
    integer program and a lower aim for the set bound. The new warm start."""
    got = run_lns(problem, allowed, sym_sets, opts, hooks, start=warm[0], deadline=deadline, extend_to=extend_to,
                  max_size=EARLY_LNS_MAX_SIZE,
                  bound=floor if np.isfinite(floor) and floor > 0 else None)
    return (got[0], f"{warm[1]}, improved by re-solving device subsets") if got is not None else warm


def _search(problem, opts, outer, hooks, worker, watch, allowed, sym_sets, order, kind, solver, warm, floor,
            sb_time, polisher, outside_model, rejected, failures, lns_spent) -> SolverResult:
    """The integer program, the subset search and the set bound after the warm start (``hooks``: the phases'
    hooks, ``outer`` the run's; ``worker``: the set bound beside them, or ``None``; ``lns_spent``: seconds of
    the subset search's share already spent on pairs before the integer program)."""
    prob = problem.compiled
    hooks.report(0.0, "building the integer program", force=True)
    try:          # a gap settled beside is no cancel: the integer program then ends at once, with the bound
        lp, x, y = build_model(prob, allowed, opts, sym_sets, order, floor=floor,
                               check=lambda: watch.elapsed > BUILD_SHARE * opts.time_limit or outer.cancelled)
    except OutOfTime:
        if warm is None:
            raise SolverError(f"{solver}: no solution in time: the time limit of {opts.time_limit:g} s ran out "
                              "while building the integer program; raise the time limit") from None
        stop = "cancelled" if outer.cancelled else "time limit reached"
        result, _ = milp_result(problem, solver=solver, res=None, ilp_dev=None, warm=warm, bound_set=None,
                                extra_ok=outside_model, scope=set_text(kind),
                                status_override="cancelled" if outer.cancelled else None,
                                model_note=f"{stop} while building the integer program")
        return result
    start_values = None
    if warm is not None:
        start_values = {x[g, d].name: float(int(warm[0][prob.groups[g][0]]) == d) for (g, d) in x}
        if y:
            start_values.update(pipeline_start_values(prob, warm[0], y, order))
    lns_time = max(0.0, lns_share(opts, set_bound_runs=sb_time > 0) * opts.time_limit - lns_spent)
    if polisher is not None:
        polisher.hooks = hooks
    remaining = max(0.1, opts.time_limit - watch.elapsed - lns_time - sb_time)
    improve = None
    if polisher is not None:
        polisher.x = x
        improve = polisher.improve
    offers = _DiveOffers(problem, worker, x, sym_sets, allowed, opts, hooks, deadline=_now() + remaining) \
        if worker is not None else None
    res = solve_milp(lp, backend=opts.backend, time_limit=remaining, gap=opts.gap, warm_start=start_values,
                     threads=opts.threads, hooks=hooks, improve=improve,
                     incoming=offers)
    ilp_dev = devices_from_solution(prob, allowed, x, res)
    if polisher is not None and polisher.best is not None and (warm is None or polisher.best[1] < problem.value(warm[0])):
        warm = (polisher.best[0], f"{FROM_INCUMBENT}, polished")
    if offers is not None and offers.best is not None and (warm is None or offers.best[1] < problem.value(warm[0])):
        warm = (offers.best[0], f"{FROM_DIVE}, improved by re-solving device subsets")
    warm = _with_dive(problem, worker, warm, sym_sets)
    lns_end = watch.start + opts.time_limit - sb_time
    while lns_time and not hooks.cancelled and res.status != "infeasible" and _now() < lns_end - 0.5:
        # the best placement so far, unless the integer program's bound already proves it within the gap
        start = _best_valid(problem, ilp_dev, warm)
        bound = res.bound
        if worker is not None and worker.bound > worker.floor:     # what the set bound beside has proven
            bound = worker.bound if bound is None else max(bound, worker.bound)
        gap = gap_of(problem.value(start), bound) if start is not None else None
        if start is None or (gap is not None and gap <= max(opts.gap, OPTIMALITY_TOL)):
            break
        start_value = problem.value(start)
        # started from the dive's placement (the MILP may have taken it as its own)
        origin = FROM_DIVE if worker is not None and (
            (worker.placement is not None and worker.placement[1] <= start_value * (1 + 1e-9)) or
            (offers.best is not None and offers.best[1] <= start_value * (1 + 1e-9))) else FROM_INCUMBENT
        newer = (lambda: worker.placement is not None and worker.placement[1] < start_value * (1 - 1e-9)) \
            if worker is not None else (lambda: False)
        got = run_lns(problem, allowed, sym_sets, opts, hooks, start=start, bound=bound, deadline=lns_end,
                      interrupt=newer)
        if got is not None:
            warm = (got[0], f"{origin}, improved by re-solving device subsets")
        if not newer():         # it ended by itself: done; else again from the dive's better placement
            break
        warm = _with_dive(problem, worker, warm, sym_sets)
    best = _best_valid(problem, ilp_dev, warm)
    set_note = finish_beside(worker, res, outer, problem.value(best) if best is not None else None,
                             gap=max(opts.gap, OPTIMALITY_TOL), deadline=watch.start + opts.time_limit)
    warm = _with_dive(problem, worker, warm, sym_sets)
    best = _best_valid(problem, ilp_dev, warm)
    hooks = outer
    if sb_time and not hooks.cancelled and res.status != "infeasible":
        set_note = raise_bound_by_set_partition(problem, allowed, opts, hooks, res, best,
                                                floor=floor, deadline=watch.start + opts.time_limit)
    if res.status == "infeasible" and warm is None:
        extra = f" {set_text(kind)}" if kind != SET_ANY else ""
        raise InfeasibleError(f"infeasible{extra}: {memory_diagnosis(prob, allowed)}")
    result, value = milp_result(problem, solver=solver, res=res, ilp_dev=ilp_dev, warm=warm, bound_set=kind,
                                extra_ok=outside_model, scope=set_text(kind),
                                status_override="cancelled" if hooks.cancelled else None,
                                model_note="loads with overlap: max(compute, communication)" if opts.overlap else "")
    notes = [warm_start_note(failures), set_note]
    if kind == SET_PIPELINE:
        notes.append(better_elsewhere_note(value, rejected, "-o device_cycles=true (per-device convex sets) or "
                                           "solver ilp-noncontig allow such placements",
                                           what="devices feeding each other"))
    elif kind == SET_CONVEX:
        notes.append(better_elsewhere_note(value, rejected, "solver ilp-noncontig allows such placements"))
    result.message = "; ".join(filter(None, [result.message, *notes]))
    return result


def _with_dive(problem: Problem, worker, warm, sym_sets):
    """``warm`` (the best placement so far, with its source), or the set bound's dive placement when that is
    better (it was checked by the evaluator when it arrived)."""
    if worker is None or worker.placement is None:
        return warm
    dev, value = worker.placement
    if warm is not None and problem.value(warm[0]) <= value:
        return warm
    return canonical(problem.compiled, dev, sym_sets), FROM_DIVE


class _DiveOffers:
    """For :func:`solve_milp`'s ``incoming``: the set bound's newest dive placement, once, as the model's
    ``x`` values (in canonical device order, which the symmetry-breaking rows require).

    When it beats the integer program's incumbent and ``opts.lns_dive`` > 0 (with device subsets to
    re-solve, :func:`~.neighbourhoods.lns_applies`), it is first improved by re-solving device subsets
    (:func:`~.neighbourhoods.run_lns`, at most ``lns_dive`` of the time limit, ending at ``deadline``, the
    integer program's end, or when a newer dive arrives): the integer program, whose heuristics were
    beaten, waits meanwhile, and the set bound beside aims at the better value at once. ``best``: the
    best placement those searches found, ``(placement, value)``, kept apart in case HiGHS does not take it.
    """

    def __init__(self, problem: Problem, worker, x, sym_sets, allowed, opts, hooks: Hooks, *,
                 deadline: float) -> None:
        self.problem, self.worker, self.x, self.sym_sets = problem, worker, x, sym_sets
        self.allowed, self.opts, self.hooks, self.deadline = allowed, opts, hooks, deadline
        self.handed = np.inf
        self.best: tuple[np.ndarray, float] | None = None
        self.searches = 0

    def __call__(self, incumbent: float | None = None, bound: float | None = None):
        w, prob = self.worker, self.problem.compiled
        if w.placement is None or not w.placement[1] < self.handed:
            return None
        dev, value = canonical(prob, w.placement[0], self.sym_sets), w.placement[1]
        self.handed = value
        seconds = min(self.deadline, _now() + self.opts.lns_dive * self.opts.time_limit) - _now()
        if lns_applies(self.opts) and self.opts.lns_dive > 0 and seconds >= 1.0 and \
                (incumbent is None or value < incumbent * (1 - 1e-9)):
            proven = max(b for b in (bound, w.bound, 0.0) if b is not None and np.isfinite(b))
            self.searches += 1
            got = run_lns(self.problem, self.allowed, self.sym_sets, self.opts, self.hooks, start=dev,
                          bound=proven if proven > 0 else None, deadline=_now() + seconds,
                          interrupt=lambda: w.placement is not None and w.placement[1] < value * (1 - 1e-9))
            if got is not None:          # better than the dive: a later dive must beat it
                (dev, value), self.best = got, got
                self.handed = value
        return value, {self.x[g, d].name: float(int(dev[prob.groups[g][0]]) == d) for (g, d) in self.x}


def _best_valid(problem: Problem, ilp_dev, warm):
    """The better of the integer program's placement and ``warm``'s (the best so far) among the valid ones;
    ``None`` when neither is valid."""
    return min((d for d in (ilp_dev, warm[0] if warm else None) if d is not None and problem.evaluate(d).feasible),
               key=problem.value, default=None)
