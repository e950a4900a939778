"""Polish a max-load placement with the incremental evaluator: group moves, swaps, kicks.

The MILPs' gap is ``value / proven bound - 1``, so a better incumbent closes it
as surely as a better bound. On the published training graphs the warm start
(and HiGHS's own incumbents) stay a few tenths of a percent above what simple
moves reach: the loads of the accelerators are within 0.5 % of each other and
the slow CPU has room left, but no *single* group move lowers the max-load.
:func:`polish` climbs on the key ``(max-load, sum of squared loads)`` with

* **moves** — one colocation group to another allowed device (memory, pins and
  supported ops kept);
* **swaps** — a group on a bottleneck device exchanged with a group on another
  device (what balances devices whose loads are already close);
* **kicks** — when neither improves: a few random moves off the bottleneck, a
  new climb, kept only if it ends better (iterated local search, seeded).

It returns the best placement seen and never a worse one than it was given
(values are the evaluator's: :class:`~viz_place.cost.IncrementalEvaluator`).
:class:`Polisher` is the glue for ``ilp-noncontig`` (:func:`polishable` says
when it applies): it polishes the warm start, then each new HiGHS incumbent,
which :func:`~viz_place.solvers.milp.backends.solve_milp` hands back to the
search (its ``improve`` hook).

>>> from viz_place.cost import compile_problem, evaluate_indices
>>> from viz_place.testing import random_instance
>>> from viz_place.solvers.groups import allowed_devices
>>> inst = random_instance(5)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> allowed = allowed_devices(prob, inst.pins)
>>> start = [allowed[int(prob.group[v])][0] for v in range(prob.n)]
>>> better = polish(prob, allowed, start, time_limit=1.0)
>>> evaluate_indices(prob, better).max_load <= evaluate_indices(prob, start).max_load
True
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from ...cost import IncrementalEvaluator
from ...cost.compiled import CompiledProblem
from ..base import Hooks
from ..contract import Problem
from .symmetry import canonical

#: Relative improvement below which a step does not count (float noise of the incremental sums).
EPS = 1e-12


class _State:
    """The incremental evaluator plus per-device memory and group lists, with whole-group moves."""

    def __init__(self, prob: CompiledProblem, allowed, dev, movable, target: float = 0.0) -> None:
        self.prob, self.allowed = prob, allowed
        self.inc = IncrementalEvaluator(prob, dev)
        self.size = [float(prob.size[list(m)].sum()) for m in prob.groups]
        self.cap = [float(c) for c in prob.capacity]
        self.used = list(self.inc.memory)
        self.movable = movable
        self.target, self.at_target = target, False   # stop once the max-load is at most target
        finite = np.where(np.isfinite(prob.lat), prob.lat, 0.0)
        self.glat = [finite[list(m)].sum(axis=0).tolist() for m in prob.groups]
        # how much moving group g can change any device's communication (each source it touches, once)
        pay = float((prob.link * prob.pays).max()) if prob.num_devices else 0.0
        self.reach = [pay * sum(float(prob.tcost[u]) for v in m for u in {v, *prob.data_preds[v]})
                      for m in prob.groups]

    def where(self, g: int) -> int:
        return self.inc.dev[self.prob.groups[g][0]]

    def fits(self, g: int, d: int, freed: float = 0.0) -> bool:
        return self.used[d] - freed + self.size[g] <= self.cap[d] * (1 + 1e-12)

    def shift(self, g: int, d: int) -> None:
        here = self.where(g)
        if d == here:
            return
        for v in self.prob.groups[g]:
            self.inc.relocate(v, d)
        self.used[here] -= self.size[g]
        self.used[d] += self.size[g]

    def key(self) -> tuple[float, float]:
        # every group is on an allowed device (it runs all members there): load = compute + communication
        loads = [a + b for a, b in zip(self.inc.compute, self.inc.comm)]
        return max(loads), sum(x * x for x in loads)


def _better(a, b) -> bool:
    """Key ``a`` strictly better than ``b`` (max-load first, then the sum of squares)."""
    tol = EPS * max(1.0, abs(b[0]))
    return a[0] < b[0] - tol or (a[0] <= b[0] + tol and a[1] < b[1] - EPS * max(1.0, abs(b[1])))


def _climb(st: _State, stop: Callable[[], bool]) -> tuple[float, float]:
    """Moves and swaps until neither improves (or ``stop()``); returns the key reached."""
    cur = st.key()
    while not stop():
        improved = False
        for g in st.movable:                                  # best move per group
            here = st.where(g)
            best = None
            for d in st.allowed[g]:
                if d == here or not st.fits(g, d):
                    continue
                st.shift(g, d)
                k = st.key()
                st.shift(g, here)
                if _better(k, cur) and (best is None or _better(k, best[0])):
                    best = (k, d)
            if best is not None:
                st.shift(g, best[1])
                cur = st.key()
                improved = True
                st.at_target = cur[0] <= st.target
            if stop():
                return cur
        if improved:
            continue
        loads = [a + b for a, b in zip(st.inc.compute, st.inc.comm)]
        top = max(range(len(loads)), key=loads.__getitem__)
        on_top = [g for g in st.movable if st.where(g) == top]
        others = [g for g in st.movable if st.where(g) != top]
        glat, reach, cap = st.glat, st.reach, cur[0] * (1 + 1e-9)
        for a in on_top:                                       # first improving swap off the bottleneck
            if st.where(a) != top:
                continue
            for b in others:
                e = st.where(b)
                if e == top or e not in st.allowed[a] or top not in st.allowed[b]:
                    continue
                r = reach[a] + reach[b]    # no swap moves a device's communication by more
                if loads[top] - glat[a][top] + glat[b][top] - r >= cap or \
                        loads[e] - glat[b][e] + glat[a][e] - r >= cap:
                    continue               # it cannot lower the max-load
                if not (st.fits(a, e, st.size[b]) and st.fits(b, top, st.size[a])):
                    continue
                st.shift(a, e)
                st.shift(b, top)
                k = st.key()
                if _better(k, cur):
                    cur = k
                    improved = True
                    st.at_target = cur[0] <= st.target
                    break
                st.shift(b, e)
                st.shift(a, top)
            if stop():
                return cur
            if improved:
                break
        if not improved:
            return cur
    return cur


def polish(prob: CompiledProblem, allowed: Sequence[Sequence[int]], dev, *, time_limit: float = 5.0,
           pinned: set[int] | frozenset = frozenset(), seed: int = 0, kick: int = 3, patience: int | None = None,
           target: float = 0.0, cancel: Callable[[], bool] | None = None) -> np.ndarray:
    """A placement (device index per node) at most as high in max-load as ``dev``, after at most
    ``time_limit`` seconds of moves, swaps and kicks (see the module docstring). ``allowed``: the
    devices each group may use (:func:`~viz_place.solvers.groups.allowed_devices`); ``pinned``:
    groups that stay put; ``kick``: random moves per kick; ``patience``: kicks in a row without
    improvement after which it stops early (default: ten per movable group, at least 30 and at most
    200: a handful of groups has few placements to kick between); ``target``: it stops once the max-load is at most this."""
    deadline = time.perf_counter() + time_limit
    movable = [g for g in range(len(prob.groups)) if g not in pinned and len(allowed[g]) > 1]
    st = _State(prob, allowed, dev, movable, target)
    if patience is None:
        patience = min(200, max(30, 10 * len(movable)))

    def stop() -> bool:
        return st.at_target or time.perf_counter() > deadline or (cancel is not None and cancel())
    if not movable:
        return np.asarray(st.inc.dev, dtype=np.int64)
    rng = np.random.default_rng(seed)
    best_key = _climb(st, stop)
    best = list(st.inc.dev)
    failed = 0
    while not stop() and failed < patience:
        loads = st.inc.loads
        top = max(range(len(loads)), key=loads.__getitem__)
        on_top = [g for g in movable if st.where(g) == top] or movable
        for g in rng.choice(on_top, size=min(kick, len(on_top)), replace=False):
            ds = [d for d in allowed[int(g)] if d != top and st.fits(int(g), d)]
            if ds:
                st.shift(int(g), int(rng.choice(ds)))
        k = _climb(st, stop)
        if _better(k, best_key):
            best_key, best, failed = k, list(st.inc.dev), 0
        else:                                               # back to the best placement
            failed += 1
            for g in movable:
                d = best[prob.groups[g][0]]
                if st.where(g) != d:
                    st.shift(g, d)
    return np.asarray(best, dtype=np.int64)


def polishable(opts) -> bool:
    """Whether :mod:`.polish` applies: any placement (no contiguity), plain max-load, a share of time for it."""
    return opts.polish > 0 and not opts.contiguous and opts.objective == "max_load" and not opts.overlap


class Polisher:
    """Polishes the warm start, then (through :func:`solve_milp`'s ``improve``) each new incumbent of the
    back-end, within ``opts.polish`` of the time limit in all (and until ``target``: a value the floor
    already proves within the requested gap); ``best`` keeps the best placement it made
    (device indices, value) so that nothing it found is lost if the back-end does not take it."""

    #: Share of the polishing time one incumbent may use.
    PER_CALL = 0.1

    def __init__(self, problem: Problem, allowed, sym_sets, opts, hooks: Hooks, *,
                 deadline: float, target: float = 0.0) -> None:
        self.problem, self.allowed, self.sym_sets, self.hooks = problem, allowed, sym_sets, hooks
        self.prob = problem.compiled
        index = problem.graph.index
        self.pinned = {int(self.prob.group[index[v]]) for v in problem.pins}
        self.budget = opts.polish * opts.time_limit
        self.stop_at, self.target = deadline, target
        self.x: dict = {}
        self.best: tuple[np.ndarray, float] | None = None
        self.calls = 0

    def _run(self, dev, seconds: float) -> tuple[np.ndarray, float] | None:
        """Polish ``dev`` for at most ``seconds`` (and the budget left); the result if it is better."""
        seconds = min(seconds, self.budget, self.stop_at - time.perf_counter())
        if seconds < 0.05:
            return None
        t = time.perf_counter()
        before = self.problem.value(dev)
        if before <= self.target:
            return None
        out = polish(self.prob, self.allowed, dev, time_limit=seconds, pinned=self.pinned, seed=self.calls,
                     target=self.target, cancel=lambda: self.hooks.cancelled)
        self.budget -= time.perf_counter() - t
        self.calls += 1
        out = canonical(self.prob, out, self.sym_sets)
        value = self.problem.value(out)
        if not value < before * (1 - 1e-9):
            return None
        if self.best is None or value < self.best[1]:
            self.best = (out, value)
        return out, value

    def warm(self, warm: tuple[np.ndarray, str], *, deadline: float) -> tuple[np.ndarray, str]:
        """The warm start polished until ``deadline`` (half the polishing time at most)."""
        got = self._run(warm[0], min(self.budget / 2, deadline - time.perf_counter()))
        if got is None:
            return warm
        self.hooks.report(0.0, f"warm start polished: {got[1]:.6g}", incumbent=got[1], force=True)
        return got[0], f"{warm[1]}, polished"

    def improve(self, values) -> tuple[float, dict] | None:
        """An incumbent of the back-end (values by name), polished: ``(value, x values)`` or ``None``."""
        dev = np.empty(self.prob.n, dtype=np.int64)
        for g, ds in enumerate(self.allowed):
            dev[list(self.prob.groups[g])] = max(ds, key=lambda d: values.get(self.x[g, d].name, 0.0))
        got = self._run(dev, self.PER_CALL * self.budget + 0.5)
        if got is None:
            return None
        out, value = got
        return value, {self.x[g, d].name: float(int(out[self.prob.groups[g][0]]) == d) for (g, d) in self.x}
