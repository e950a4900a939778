"""The pattern search over the pricing DP's Lagrangian multipliers (:meth:`.set_pricing.ExactPricer._multipliers`).

A pair ``(a, b)`` stands for the multipliers ``a * lam0`` on the load row and ``b * mu0`` on the memory row
(``lam0``, ``mu0``: the critical ratios of the prices); ``roots(pairs)`` gives the DP's Lagrangian bound on the
whole problem at each pair (one compiled call), or ``None`` when the DP keeps no tables for them. The search
goes from a start pair to the one whose bound is smallest: the best move at the current step is taken when it
lowers the bound, else the step halves, down to the smallest of :data:`MULTIPLIER_STEPS`.

>>> roots = lambda pairs: np.array([(a - 0.4) ** 2 + (b - 0.1) ** 2 for a, b in pairs])
>>> search(roots, 0.75, 0.25, with_memory=True) == search_stepwise(roots, 0.75, 0.25, with_memory=True)
True
>>> [round(v, 4) for v in search(roots, 0.75, 0.25, with_memory=True)]
[0.4, 0.1]
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

#: The pattern search over the Lagrangian multipliers (in units of the critical ratios): first step, and the
#: smallest (it halves the step after a round with no better pair). On residual_75_s2_training's accelerator
#: pricing at T = 46.2 it takes the root bound from 8.5-9.4 to within 1-2 % of the maximum (7.7-8.3) and
#: an accelerator's DP from 1.4-3.3 s to 0.34-0.9 s (see docs/proofs.md).
MULTIPLIER_STEPS = (0.2, 0.01)

#: The bounds at pairs ``(a, b)``, in one call; ``None``: no tables.
Roots = Callable[[Sequence[tuple[float, float]]], "np.ndarray | None"]


def search(roots: Roots, a: float, b: float, *, with_memory: bool) -> tuple[float, float] | None:
    """The pair the pattern search ends at from ``(a, b)`` (``None`` when ``roots`` has no tables at the start).

    Each compiled call builds the tables of all its pairs in one sweep over the states, which costs little more
    than one pair's, so a call asks for the moves at the current step *and* at every smaller one around the same
    pair (and the pair itself, first): the halvings that follow a move without gain are then already priced. The
    same pairs are compared in the same order as one step at a time (:func:`search_stepwise`, which this falls
    back to when the batch is too large for the tables), so the same pair comes out."""
    steps = multiplier_steps()
    per = 4 if with_memory else 2
    best, at = None, 0         # the bound at (a, b); the first step not yet tried around it
    while at < len(steps):
        batch = [] if best is not None else [(a, b)]
        for step in steps[at:]:
            batch += moves(a, b, step, with_memory)
        got = roots(batch)
        if got is None:
            return search_stepwise(roots, a, b, with_memory=with_memory, best=best, at=at)
        if best is None:
            best, got = float(got[0]), got[1:]
        moved = False
        for j in range(at, len(steps)):
            rows = got[(j - at) * per:(j - at + 1) * per]
            i = int(np.argmin(rows))
            if _improves(rows[i], best):
                best, (a, b), at, moved = float(rows[i]), moves(a, b, steps[j], with_memory)[i], j, True
                break
        if not moved:
            break
    return a, b


def search_stepwise(roots: Roots, a: float, b: float, *, with_memory: bool, best: float | None = None,
                    at: int = 0) -> tuple[float, float] | None:
    """The same pattern search one step at a time (one call per step), from ``(a, b)`` (its bound ``best`` when
    known) at the ``at``-th step."""
    if best is None:
        first = roots([(a, b)])
        if first is None:
            return None
        best = float(first[0])
    steps = multiplier_steps()
    while at < len(steps):
        tried = moves(a, b, steps[at], with_memory)
        got = roots(tried)
        if got is None:
            break
        i = int(np.argmin(got))
        if _improves(got[i], best):
            best, (a, b) = float(got[i]), tried[i]
        else:
            at += 1
    return a, b


def _improves(value: float, best: float) -> bool:
    """Whether a move's bound is lower than ``best`` by more than rounding."""
    return value < best - 1e-12 * (1.0 + abs(best))


def moves(a: float, b: float, step: float, with_memory: bool) -> list[tuple[float, float]]:
    """The pattern search's moves from ``(a, b)``: along the load multiplier, then the memory one.

    >>> moves(0.5, 0.25, 0.1, True)
    [(0.6, 0.25), (0.4, 0.25), (0.5, 0.35), (0.5, 0.15)]
    """
    out = [(a + step, b), (max(0.0, a - step), b)]
    if with_memory:
        out += [(a, b + step), (a, max(0.0, b - step))]
    return out


def multiplier_steps() -> list[float]:
    """The pattern search's steps: the first of :data:`MULTIPLIER_STEPS`, halved while not below the smallest.

    >>> multiplier_steps()
    [0.2, 0.1, 0.05, 0.025, 0.0125]
    """
    step, smallest = MULTIPLIER_STEPS
    out = []
    while step >= smallest:
        out.append(step)
        step /= 2
    return out
