"""Descent with compound moves on the incremental evaluator: what a sweep of single-group moves cannot reach.

A policy sweep moves one colocation group at a time, so it stops where every
single move makes things worse — typically when the bottleneck device could
shed a group only if it took a smaller one back, or when the accelerators'
memory is full and a heavy group can reach one only if a lighter one leaves
it. :func:`polish` descends from the environment's current placement with

* *moves*: a free group to another device that can take it;
* *swaps*: a group on the bottleneck device exchanged with a group on another
  device (memory checked for both after the exchange, supports and pins kept);
  candidates are pre-filtered by compute alone (the bottleneck must shed
  work, the other device must stay below the bottleneck's load), then
  evaluated exactly;
* *plateau swaps*, only when neither of those improves: the first swap between
  any two devices that improves (up to ``plateau`` candidate pairs per pass,
  neither device may reach the bottleneck's load by compute alone): where all
  devices sit near the same load, a better packing of the host's share needs such trades;

accepting the best improving move of each kind, first by max-load then by the
sum of squared loads (so ties between several bottleneck devices still make
progress), until neither improves or ``stop()`` says so. Every figure comes from
the shared :class:`~viz_place.cost.IncrementalEvaluator`; only the max-load
objective is polished (a latency candidate costs a full schedule).

>>> from viz_place.samples import make_graph
>>> from viz_place.cost import compile_problem
>>> from viz_place.solvers.rl.env import PlacementEnv, topo_fill
>>> g = make_graph("residual", 40, seed=2)
>>> env = PlacementEnv(compile_problem(g, g.default_cluster))
>>> env.reset(topo_fill(env))
>>> before = env.objective()
>>> stats = polish(env)
>>> env.objective() <= before
True
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .env import PlacementEnv

_TOL = 1e-9


def _key(loads: list[float]) -> tuple[float, float]:
    return max(loads), sum(x * x for x in loads)


def _better(k: tuple[float, float], cur: tuple[float, float]) -> bool:
    scale = max(abs(cur[0]), 1e-12)
    if k[0] < cur[0] - 1e-12 * scale:
        return True
    return k[0] <= cur[0] + 1e-12 * scale and k[1] < cur[1] * (1 - 1e-12) - 1e-300


def _plateau_swap(order, where, shift, fits, allowed, glat, comp, M, gsize, inc, cur, budget, rng, stop) -> int:
    """Apply the first swap of two groups on different devices that improves ``cur`` (pairs pre-filtered by
    compute: neither device may reach the bottleneck's load ``M``); returns the pairs evaluated."""
    tried = 0
    firsts = order if rng is None else rng.permutation(order).tolist()
    for ia, a in enumerate(firsts):
        x = where(a)
        for c in firsts[ia + 1:]:
            y = where(c)
            if x == y or not (allowed[a, y] and allowed[c, x]):
                continue
            if comp[x] - glat[a, x] + glat[c, x] >= M or comp[y] - glat[c, y] + glat[a, y] >= M:
                continue
            if not (fits(a, y, gsize[c]) and fits(c, x, gsize[a])):
                continue
            shift(a, y)
            shift(c, x)
            tried += 1
            if _better(_key(inc.loads), cur):
                return tried
            shift(c, y)
            shift(a, x)
            if tried >= budget or (stop is not None and tried % 128 == 0 and stop()):
                return tried
    return tried


def polish(env: PlacementEnv, stop: Callable[[], bool] | None = None, rng: np.random.Generator | None = None,
           *, max_passes: int = 10_000, swaps: bool = True, plateau: int = 20_000) -> dict[str, int]:
    """Descend from the current placement with moves and swaps (see the module docstring); the
    environment is left at the result. Returns counts: passes, moves and swaps applied, evaluations.
    Deterministic for a given ``rng`` state (``None``: groups in topological order)."""
    out = {"passes": 0, "moves": 0, "swaps": 0, "evaluations": 0}
    if env.objective_name != "max_load" or not env.free_groups:
        return out
    inc = env.inc
    members, allowed, gsize, cap = env.members, env.allowed, env.gsize.tolist(), env.cap
    glat = env.glat
    free = list(env.free_groups)
    D = env.D

    def where(g: int) -> int:
        return inc.dev[members[g][0]]

    move = inc.shift

    def shift(g: int, d: int) -> None:
        for i in members[g]:
            move(i, d)

    def fits(g: int, d: int, freed: float = 0.0) -> bool:
        return inc.memory[d] - freed + gsize[g] <= cap[d] * (1 + _TOL)

    cur = _key(inc.loads)
    n_eval = 0
    for _ in range(max_passes):
        if stop is not None and stop():
            break
        out["passes"] += 1
        improved = False
        order = free if rng is None else rng.permutation(free).tolist()
        # --- single-group moves: each group to its best improving device --------------------------
        for n_step, g in enumerate(order):
            if stop is not None and n_step % 32 == 0 and stop():
                break
            here = where(g)
            best = None
            for d in range(D):
                if d == here or not allowed[g, d] or not fits(g, d):
                    continue
                shift(g, d)
                k = _key(inc.loads)
                shift(g, here)
                n_eval += 1
                if _better(k, cur) and (best is None or k < best[0]):
                    best = (k, d)
            if best is not None:
                shift(g, best[1])
                cur = _key(inc.loads)
                out["moves"] += 1
                improved = True
        if not swaps:
            if not improved:
                break
            continue
        # --- swaps between the bottleneck device and any other ------------------------------------
        loads = inc.loads
        b = max(range(D), key=loads.__getitem__)
        M = loads[b]
        on_b = [g for g in order if where(g) == b]
        others = [g for g in order if where(g) != b]
        comp = [inc.compute_of(d) for d in range(D)]
        best = None
        for a in on_b:
            if stop is not None and stop():
                break
            la_b = glat[a, b]
            for c in others:
                e = where(c)
                if not (allowed[a, e] and allowed[c, b]):
                    continue
                # pre-filter by compute: b must shed work, e must stay below the bottleneck
                if glat[c, b] >= la_b or comp[e] - glat[c, e] + glat[a, e] >= M:
                    continue
                if not (fits(a, e, gsize[c]) and fits(c, b, gsize[a])):
                    continue
                shift(a, e)
                shift(c, b)
                k = _key(inc.loads)
                shift(c, e)
                shift(a, b)
                n_eval += 1
                if _better(k, cur) and (best is None or k < best[0]):
                    best = (k, a, c, e)
        if best is not None:
            _, a, c, e = best
            shift(a, e)
            shift(c, b)
            cur = _key(inc.loads)
            out["swaps"] += 1
            improved = True
        if not improved and plateau > 0:
            # --- last resort: the first swap between any two devices that improves the key (up to
            # ``plateau`` candidate pairs, in random order when an rng is given)
            n_eval += _plateau_swap(order, where, shift, fits, allowed, glat, comp, M, gsize, inc, cur, plateau, rng,
                                   stop)
            k = _key(inc.loads)
            if _better(k, cur):
                cur = k
                out["plateau_swaps"] = out.get("plateau_swaps", 0) + 1
                improved = True
        if not improved:
            break
    env.evaluations += n_eval
    out["evaluations"] = n_eval
    env.resync()
    return out
