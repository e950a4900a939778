"""Placements from the set-partitioning relaxation: fix the set the relaxation uses most, re-solve, repeat.

Column generation at a threshold ``T`` (:func:`.set_bound.refute`) that ends with the relaxation feasible
(``lp_value`` 0) leaves a fractional partition of the groups into device sets, each within ``T``. Its
columns rarely combine into an integer partition (on ``residual_75_s2_training`` none of 1,100–1,800
columns did, from 47.2 down to 46.9), so :func:`dive` builds one: it fixes the column with the largest
value (one device of its type now holds exactly that set), re-runs column generation on the groups left
with one device fewer of that type, and repeats until every group is placed (the last two devices by the
assignment MILP), or the relaxation of what is left no longer fits (then the threshold is raised towards a
ceiling, or the dive is tried again, or it failed: ``None``). Each set's load is its exact load (a device's
load depends on its own set alone), so a finished dive is a placement with max-load at most ``T``; the
caller still checks it with the evaluator. (Price-and-dive: Sadykov et al., "Primal heuristics for
branch and price", INFORMS J. Computing 2019.)

>>> from viz_place.testing import random_instance
>>> from viz_place.cost import compile_problem, evaluate_indices
>>> from viz_place.solvers.groups import allowed_devices
>>> from viz_place.solvers.milp.set_bound import column_generation_start
>>> inst = random_instance(13)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> types, sources, exact, pool = column_generation_start(prob, allowed_devices(prob, inst.pins))
>>> got = dive(prob, types, sources, 19.0, pool=pool, deadline=_now() + 20)
>>> got is not None and evaluate_indices(prob, got[0]).max_load <= 19.0 + 1e-9
True
"""
from __future__ import annotations

import dataclasses
from time import perf_counter as _now
from typing import Callable

import numpy as np

from ...cost.compiled import CompiledProblem
from .set_pricing import DeviceType, ExactPricer, Sources, set_load

#: A column counts as integral (taken whole) at this value or above.
WHOLE = 1 - 1e-6
#: How many times a dive may raise its threshold towards its ceiling when the groups left stop fitting.
RAISES = 3
#: With this many devices left, a stuck dive places the rest with the assignment MILP, for at most this long.
FINISH_DEVICES, FINISH_SECONDS = 2, 10.0


def _restricted(types: list[DeviceType], fixed: np.ndarray, left: list[int]) -> tuple[list[int], list[DeviceType]]:
    """The device types that still have devices (their indices) with the fixed groups taken out."""
    live = [ti for ti in range(len(types)) if left[ti] > 0]
    sub = []
    for ti in live:
        t = types[ti]
        work = t.work.copy()
        work[fixed] = np.inf
        sub.append(dataclasses.replace(t, devices=t.devices[:left[ti]], groups=t.groups[~fixed[t.groups]], work=work))
    return live, sub


def _group_devices(types: list[DeviceType], chosen) -> tuple[np.ndarray, list[int]]:
    """The device of each group under the ``chosen`` sets (each on the next device of its type; -1: none)
    and how many devices of each type they take."""
    gdev, taken = np.full(len(types[0].mem), -1, dtype=np.int64), [0] * len(types)
    for ti, s in chosen:
        gdev[s] = types[ti].devices[taken[ti]]
        taken[ti] += 1
    return gdev, taken


def dive(prob: CompiledProblem, types: list[DeviceType], sources: Sources, T: float, *, pool, deadline: float,
         first=None, ceiling: float | None = None, attempts: int = 4,
         cancelled: Callable[[], bool] = lambda: False) -> tuple[np.ndarray, float] | None:
    """A placement (device index per node) and its max-load, built by diving in the set-partitioning
    relaxation at ``T`` (see the module): at most ``T``, or, when the relaxation of the groups left stops
    fitting within ``T`` and a ``ceiling`` above it is given, at most a threshold raised halfway towards
    ``ceiling`` (up to ``RAISES`` times; the sets fixed so far stay within theirs). A dive that gets stuck is
    tried again from the start, up to ``attempts`` in all, each later one fixing a column drawn at random
    (weighted by its value squared, seeded) instead of the largest; ``None`` when all fail, time runs out or
    ``cancelled``. ``pool``: columns to start from (type index, bool per group); ``first``: a
    :class:`~.set_bound.Refutation` at ``T`` whose relaxation fits (its solution is the first step's)."""
    rng = np.random.default_rng(0)
    for attempt in range(max(1, attempts)):
        if _now() >= deadline or cancelled():
            return None
        got = _dive_once(prob, types, sources, T, pool=pool, deadline=deadline, first=first, ceiling=ceiling,
                         cancelled=cancelled, rng=rng if attempt else None)
        if got is not None:
            return got
    return None


def _finish(prob, types, chosen, left, deadline: float, cancelled) -> tuple[np.ndarray, float] | None:
    """The groups not in ``chosen`` placed on the devices left by the ``ilp-noncontig`` model (the chosen
    sets fixed: :func:`.neighbourhoods.resolve_subset`, at most ``FINISH_SECONDS``), as :func:`dive` returns."""
    from ...cost import evaluate_indices
    from .backends import resolve_backend
    from .neighbourhoods import resolve_subset
    from .options import IlpNoncontigOptions
    allowed = [[d for t in types for d in t.devices if np.isfinite(t.work[g])] for g in range(len(types[0].mem))]
    gdev, taken = _group_devices(types, chosen)
    free = [d for ti, t in enumerate(types) for d in t.devices[taken[ti]:taken[ti] + left[ti]]]
    for g in np.flatnonzero(gdev < 0).tolist():
        here = [d for d in allowed[g] if d in free]
        if not here:
            return None
        gdev[g] = here[0]
    seconds = min(FINISH_SECONDS, deadline - _now())
    if seconds < 0.1:
        return None
    opts = IlpNoncontigOptions(backend=resolve_backend("auto"), threads=1)
    new, _, _ = resolve_subset(prob, allowed, gdev[np.asarray(prob.group, dtype=np.int64)], tuple(free),
                               time_limit=seconds, opts=opts, cancel=cancelled)
    if new is None:
        return None
    ev = evaluate_indices(prob, new)
    return (np.asarray(new, dtype=np.int64), float(ev.max_load)) if ev.feasible else None


def _dive_once(prob, types, sources, T: float, *, pool, deadline: float, first, ceiling, cancelled, rng):
    """One dive (:func:`dive`); ``rng``: draw the column to fix (``None``: the largest)."""
    from .set_bound import refute
    G = len(types[0].mem)
    fixed = np.zeros(G, dtype=bool)
    left = [t.count for t in types]
    chosen: list[tuple[int, np.ndarray]] = []
    r, live = first, list(range(len(types)))
    raises = 0
    while True:
        if r is None:
            live, sub = _restricted(types, fixed, left)
            if not live or _now() >= deadline or cancelled():
                return None
            cols = [(live.index(ti), s) for ti, s in pool if ti in live and not (s & fixed).any()]
            exact = [ExactPricer(t, sources) for t in sub]
            r = refute(sub, sources, T, pricers=exact, exact=exact, columns=cols, fixed=fixed, deadline=deadline,
                       cancelled=cancelled)
        if r.lp_value > 1e-9 or r.values is None:
            if ceiling is None or raises >= RAISES or not T < ceiling * (1 - 1e-6) or _now() >= deadline:
                return None
            T, raises, pool, r = (T + ceiling) / 2, raises + 1, [(live[tj], c) for tj, c in r.pool], None
            continue
        used = [(float(v), live[r.pool[c][0]], r.pool[c][1]) for c, v in enumerate(r.values) if v > 1e-9]
        if all(v >= WHOLE for v, _, _ in used):          # the relaxation's solution is a partition already
            chosen += [(ti, s) for _, ti, s in used]
            break
        if sum(left) <= FINISH_DEVICES:     # few devices left: the assignment MILP places the rest exactly
            return _finish(prob, types, chosen, left, deadline, cancelled)
        if rng is None:
            _, ti, s = max(used, key=lambda u: (u[0], types[u[1]].pay, int(u[2].sum())))
        else:
            w = np.array([u[0] ** 2 for u in used])
            _, ti, s = used[int(rng.choice(len(used), p=w / w.sum()))]
        chosen.append((ti, s))
        fixed |= s
        left[ti] -= 1
        pool = [(live[tj], c) for tj, c in r.pool]
        r = None
        if fixed.all():
            break
    gdev, _ = _group_devices(types, chosen)
    if (gdev < 0).any():
        return None
    value = max(set_load(types[ti], sources, s) for ti, s in chosen)
    return gdev[np.asarray(prob.group, dtype=np.int64)], value
