"""Re-solve the groups of a few devices exactly, the others fixed (large-neighbourhood search).

A device's load depends on its own set of nodes alone (its compute plus the
communication across that set's boundary), so moving groups among a subset
``S`` of the devices changes no other device's load. Re-optimising such a
move is a small integer program: the ``ilp-noncontig`` model
(:func:`~viz_place.solvers.milp.assignment.build_model`) in which every group
not on ``S`` has one allowed device (its own) and only the devices of ``S``
carry load rows, so its objective is the max-load over ``S`` (plus :data:`SPREAD` times ``S``'s total
load, a tie-break towards less communication).
:func:`improve_by_subsets` walks the subsets that hold the bottleneck device
(``size`` devices each, the fewest groups to move first; then one more device
when a whole round of them found nothing while time is left, and back to ``size``
after each improvement), keeps a
re-solved placement when it is better on ``(max-load, sum of squared loads)``
(values are the evaluator's), and returns the best placement seen — never a
worse one than it was given.

This is what moves a placement that no single move, swap or kick improves
(:mod:`.polish`): on ``residual_75_s2_training`` pairs of devices take the
MILP's incumbent from 46.85 to 46.66 in 17 s (see docs/proofs.md).

>>> from viz_place.cost import compile_problem, evaluate_indices
>>> from viz_place.testing import random_instance
>>> from viz_place.solvers.groups import allowed_devices
>>> inst = random_instance(5)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> allowed = allowed_devices(prob, inst.pins)
>>> start = np.array([allowed[int(prob.group[v])][0] for v in range(prob.n)])
>>> out = improve_by_subsets(prob, allowed, start, size=2, time_limit=5.0)
>>> evaluate_indices(prob, out.dev).max_load <= evaluate_indices(prob, start).max_load
True
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ...cost import evaluate_indices
from ...cost.compiled import CompiledProblem
from ..base import Hooks
from .assignment import build_model
from .backends import resolve_backend, solve_milp
from .options import LNS_AUTO_SHARE, LNS_AUTO_SHARE_WITH_SET_BOUND, IlpNoncontigOptions
from .result import devices_from_solution

#: Relative improvement below which a re-solved placement does not count (float noise).
EPS = 1e-9
#: Devices per subproblem at first, and the seconds one subproblem may take at most.
LNS_SIZE, LNS_SUB_TIME = 2, 10.0
#: The subproblem minimises its max-load plus this much of its devices' total load (see :func:`resolve_subset`).
SPREAD = 1e-3
#: :func:`run_lns` with ``extend_to`` goes on past its deadline until this many seconds pass without a better
#: placement.
EXTEND_IDLE = 20.0


@dataclass
class SubsetSearch:
    """What :func:`improve_by_subsets` returns: the best placement (device index per node), its
    ``(max-load, sum of squared loads)`` key, and a log of the subproblems
    ``(seconds, subset, free groups, sub-MILP status, new max-load or None, kept)``."""

    dev: np.ndarray
    key: tuple[float, float]
    log: list[tuple] = field(default_factory=list)

    @property
    def improvements(self) -> int:
        return sum(1 for row in self.log if row[5])


def _key(prob: CompiledProblem, dev) -> tuple[tuple[float, float], list[float]] | None:
    """``((max-load, sum of squared loads), loads)``, or ``None`` for a placement the evaluator rejects."""
    ev = evaluate_indices(prob, dev)
    if not ev.feasible:
        return None
    loads = [d.load for d in ev.devices]
    return (ev.max_load, float(sum(v * v for v in loads))), loads


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    if a[0] < b[0] * (1 - EPS):
        return True
    return a[0] <= b[0] * (1 + EPS) and a[1] < b[1] * (1 - EPS)


def subset_allowed(prob: CompiledProblem, allowed: Sequence[Sequence[int]], dev, subset) -> list[list[int]]:
    """Allowed devices of the subproblem: a group on ``subset`` may go to its allowed devices in
    ``subset``; every other group stays where it is.

    >>> from viz_place.cost import compile_problem
    >>> from viz_place.testing import random_instance
    >>> inst = random_instance(1)
    >>> prob = compile_problem(inst.graph, inst.cluster)
    >>> al = subset_allowed(prob, [list(range(prob.num_devices))] * len(prob.groups), [0] * prob.n, (1, 2))
    >>> al[0]
    [0]
    """
    out = []
    for g, members in enumerate(prob.groups):
        here = int(dev[members[0]])
        out.append([d for d in allowed[g] if d in subset] if here in subset else [here])
    return out


def resolve_subset(prob: CompiledProblem, allowed, dev, subset, *, time_limit: float, opts,
                   cancel: Callable[[], bool] | None = None, spread: float | None = None):
    """Re-solve the groups on ``subset`` (the others fixed) with the ``ilp-noncontig`` model for at
    most ``time_limit`` seconds, starting from ``dev``; returns ``(placement or None, MilpResult,
    free groups)``. The sub-MILP's objective is the max-load over ``subset`` only, so its bound is
    no bound on the whole problem and is never reported as one. Plus ``spread`` (default :data:`SPREAD`) times
    the subset's total load: among re-placements of (nearly) the same max-load it takes the one with the least
    load in all, mostly less communication, which leaves slack for the next subproblem. (On
    inception_120_s3_training, 70 s of pairs and triples from polished starts ended lower with it in 7 runs of
    8; see "Ties broken towards less load" in docs/proofs.md.)"""
    al = subset_allowed(prob, allowed, dev, subset)
    free = sum(1 for a in al if len(a) > 1)
    lp, x, _ = build_model(prob, al, opts, [], None, load_devices=subset,
                           spread=SPREAD if spread is None else spread)
    start = {x[g, d].name: float(int(dev[prob.groups[g][0]]) == d) for (g, d) in x}
    res = solve_milp(lp, backend=opts.backend, time_limit=max(0.05, time_limit), gap=0.0, warm_start=start,
                     threads=opts.threads, hooks=Hooks(None, cancel))
    return devices_from_solution(prob, al, x, res), res, free


def improve_by_subsets(prob: CompiledProblem, allowed: Sequence[Sequence[int]], dev, *, size: int = LNS_SIZE,
                       max_size: int | None = None, time_limit: float = 30.0, sub_time: float = 10.0, opts=None,
                       cancel: Callable[[], bool] | None = None, target: float = 0.0,
                       on_better: Callable[[np.ndarray, float], None] | None = None,
                       spread: float | None = None) -> SubsetSearch:
    """The best placement found by re-solving subsets of ``size`` devices that hold the bottleneck
    (each for at most ``sub_time`` seconds, all within ``time_limit``), growing the subsets by one
    device (up to ``max_size``, default all but one) after a round without improvement. ``opts``: the
    :class:`~viz_place.solvers.milp.max_load.IlpOptions` of the sub-MILPs (back-end, threads;
    default ``ilp-noncontig``'s); ``on_better(dev, max_load)`` is called on each improvement; it
    stops once the max-load is at most ``target``. ``spread``: the sub-MILPs' tie-break
    (:func:`resolve_subset`; default :data:`SPREAD`). A ``dev`` the evaluator rejects (memory, pins)
    is returned unchanged."""
    opts = opts if opts is not None else IlpNoncontigOptions(backend=resolve_backend("auto"), threads=1)
    deadline = time.perf_counter() + time_limit
    t0 = time.perf_counter()
    best = np.asarray(dev, dtype=np.int64).copy()
    first = _key(prob, best)
    out = SubsetSearch(best, first[0] if first else (float("inf"), float("inf")))
    if first is None:
        return out
    loads = first[1]
    D = prob.num_devices
    movable = [d for d in range(D) if any(len(a) > 1 and d in a for a in allowed)]
    size = first_size = max(2, min(size, len(movable)))

    def stop() -> bool:
        return time.perf_counter() > deadline - 0.05 or (cancel is not None and cancel()) or out.key[0] <= target
    while not stop() and size <= len(movable):
        improved = False
        top = max(range(D), key=loads.__getitem__)
        if top not in movable:               # nothing can leave the bottleneck
            break
        others = [d for d in movable if d != top]
        # subsets with the bottleneck, the smallest subproblems (fewest groups to move) first, then the
        # most loaded companions: small ones are solved to optimality in a fraction of sub_time
        on = [sum(1 for g, a in enumerate(allowed) if len(a) > 1 and int(out.dev[prob.groups[g][0]]) == d)
              for d in range(D)]
        subsets = sorted(((top, *c) for c in itertools.combinations(others, size - 1)),
                         key=lambda s: (sum(on[d] for d in s), -sum(loads[d] for d in s)))
        for subset in subsets:
            if stop():
                break
            new, res, free = resolve_subset(prob, allowed, out.dev, subset, opts=opts, cancel=cancel,
                                            time_limit=min(sub_time, deadline - time.perf_counter()), spread=spread)
            got = _key(prob, new) if new is not None else None
            kept = got is not None and _better(got[0], out.key)
            out.log.append((round(time.perf_counter() - t0, 3), tuple(sorted(subset)), free, res.status,
                            got[0][0] if got else None, kept))
            if kept:
                out.dev, out.key, loads = new, got[0], got[1]
                improved = True
                if on_better is not None:
                    on_better(new, got[0][0])
                break
        if improved:
            size = first_size        # the small subsets again: the new placement may move where they reach
        else:
            if size >= min(len(movable), D - 1, max_size or D):    # all devices at once: the caller's own MILP
                break
            size += 1
    return out


def lns_applies(opts) -> bool:
    """Whether ``ilp-noncontig`` re-solves device subsets after its integer program: a share of time
    for it, any placement (no contiguity), plain max-load without overlap."""
    return (opts.lns is None or opts.lns > 0) and not opts.contiguous and opts.objective == "max_load" \
        and not opts.overlap


def lns_share(opts, *, set_bound_runs: bool) -> float:
    """The share of the time limit kept for :func:`run_lns`: ``opts.lns``, or when left at none
    ``LNS_AUTO_SHARE`` (``LNS_AUTO_SHARE_WITH_SET_BOUND`` when the set-partitioning bound runs after it).

    >>> lns_share(IlpNoncontigOptions(), set_bound_runs=False), lns_share(IlpNoncontigOptions(), set_bound_runs=True)
    (0.3, 0.15)
    >>> lns_share(IlpNoncontigOptions(lns=0.2), set_bound_runs=True)
    0.2
    """
    if not lns_applies(opts):
        return 0.0
    if opts.lns is not None:
        return opts.lns
    return LNS_AUTO_SHARE_WITH_SET_BOUND if set_bound_runs else LNS_AUTO_SHARE


def run_lns(problem, allowed, sym_sets, opts, hooks, *, start: np.ndarray, bound: float | None,
            deadline: float, interrupt: Callable[[], bool] = lambda: False,
            max_size: int | None = None, extend_to: float | None = None,
            idle: float = EXTEND_IDLE) -> tuple[np.ndarray, float] | None:
    """``ilp-noncontig``'s subset search: :func:`improve_by_subsets` from ``start`` (the best placement
    so far) until ``deadline``, ``interrupt()``, a round of ``max_size`` devices without gain, or until
    ``bound`` (which holds for every placement) proves it within ``opts.gap``, each improvement reported as
    the incumbent. With ``extend_to`` (later than ``deadline``) it goes on past ``deadline`` while it keeps
    finding better placements, until ``idle`` seconds pass without one or ``extend_to``. Returns
    ``(placement, value)`` when it found a better one (in canonical device order), else ``None``."""
    from .backends import progress_data, progress_text
    from .symmetry import canonical
    seconds = deadline - time.perf_counter()
    if seconds < 0.5:
        return None
    before = problem.value(start)

    last = time.perf_counter()      # when the last better placement was found

    def report(dev, value: float) -> None:
        nonlocal last
        last = time.perf_counter()
        hooks.report(None, progress_text(value, bound, "re-solving device subsets"), incumbent=value, bound=bound,
                     force=True, data=progress_data(hooks.elapsed, value, bound))

    def overtime() -> bool:
        """Past ``deadline`` with no better placement for ``idle`` seconds (only with ``extend_to``)."""
        now = time.perf_counter()
        return extend_to is not None and now > deadline and now - last > idle
    hooks.report(None, f"re-solving device subsets ({LNS_SIZE} devices at a time) from {before:.6g}", force=True)
    until = max(deadline, extend_to) if extend_to is not None else deadline
    out = improve_by_subsets(problem.compiled, allowed, start, size=LNS_SIZE, max_size=max_size,
                             time_limit=until - time.perf_counter(),
                             sub_time=max(1.0, min(LNS_SUB_TIME, seconds / 4)), opts=opts,
                             cancel=lambda: hooks.cancelled or interrupt() or overtime(), on_better=report,
                             target=bound * (1 + opts.gap) if bound is not None and 0 < bound else 0.0)
    dev = canonical(problem.compiled, out.dev, sym_sets)
    value = problem.value(dev)
    return (dev, value) if value < before * (1 - EPS) else None

