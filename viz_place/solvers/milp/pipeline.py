"""Pipeline splits in a MILP (solver ``ilp``): the DP's set, with a device order.

:func:`add_pipeline_constraints` adds binary order variables ``y[a, b]`` (device
``a`` before ``b``, transitive) and, for every ordering edge of
:func:`~viz_place.solvers.groups.pipeline_order` and devices ``d != e``,
``x[s, d] + x[t, e] <= 1 + before(d, e)``; :func:`pipeline_start_values` sets
``y`` for a warm start.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ...cost.compiled import CompiledProblem
from ..groups import device_sequence


def add_pipeline_constraints(lp, prob: CompiledProblem, x: dict, order, poll: Callable[[], None] | None = None) -> dict:
    """Make the model's placements pipeline splits; returns the order variables ``y[(a, b)]`` (a < b).

    ``y[a, b] = 1`` means device ``a`` comes before ``b`` (a linear order:
    ``0 <= y_ab + y_bc - y_ac <= 1`` for every triple); the groups of one
    supernode share a device; for every ordering edge ``s -> t`` and devices
    ``d != e``: ``x[s, d] + x[t, e] <= 1 + before(d, e)``. Identical devices keep
    the first-group symmetry breaking of :func:`add_symmetry_breaking`:
    relabelling identical devices maps pipeline splits to pipeline splits, so
    no optimum is lost. ``poll()`` is called now and then (it may raise to stop the build).
    """
    node_super, edges = order
    group = prob.group
    rep: dict[int, int] = {}
    tied: set[tuple[int, int]] = set()
    devices = sorted({d for (_, d) in x})
    for v in range(prob.n):
        s, g = int(node_super[v]), int(group[v])
        r = rep.setdefault(s, g)
        if r != g and (r, g) not in tied:
            tied.add((r, g))
            for d in devices:
                a, b = x.get((r, d)), x.get((g, d))
                if a is not None or b is not None:
                    lp += (a if a is not None else 0) - (b if b is not None else 0) == 0, f"tie_{r}_{g}_{d}"
    y = {(a, b): lp.add_variable(f"ord_{a}_{b}", cat="Binary") for i, a in enumerate(devices) for b in devices[i + 1:]}

    def before(a, b):
        return y[a, b] if a < b else 1 - y[b, a]
    for i, a in enumerate(devices):
        for j in range(i + 1, len(devices)):
            b = devices[j]
            for c in devices[j + 1:]:
                lp += y[a, b] + y[b, c] - y[a, c] <= 1, f"ordT_{a}_{b}_{c}"
                lp += y[a, b] + y[b, c] - y[a, c] >= 0, f"ordt_{a}_{b}_{c}"
    for k, (s, t) in enumerate(edges):
        if poll is not None and k % 32 == 0:
            poll()
        gs, gt = rep[int(s)], rep[int(t)]
        for d in devices:
            xs = x.get((gs, d))
            if xs is None:
                continue
            for e in devices:
                xt = x.get((gt, e))
                if e != d and xt is not None:
                    lp += xs + xt - before(d, e) <= 1, f"ord_{gs}_{gt}_{d}_{e}"
    return y


def pipeline_start_values(prob: CompiledProblem, dev: Sequence[int], y: dict, order) -> dict[str, float]:
    """Values of the order variables for a pipeline split ``dev`` (for a warm start)."""
    pos = {d: k for k, d in enumerate(device_sequence(prob, dev, order))}
    return {var.name: float(pos[a] < pos[b]) for (a, b), var in y.items()}
