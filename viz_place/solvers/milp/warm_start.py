"""Warm starts for the MILPs: the best placement other registered solvers find quickly.

:func:`best_warm_start` looks each solver up through the registry
(:func:`~viz_place.solvers.registry.is_available`,
:func:`~viz_place.solvers.registry.run_solver`), runs it within a time budget,
and keeps the best valid placement the model can represent. A solver that fails
is not silently dropped: ``failures`` collects ``"name: reason"`` for the
message. :func:`better_elsewhere_note` tells when a placement outside the
model's restriction was better.

>>> warm_start_note(["dp: the graph has too many ideals"])
'warm starts that failed: dp: the graph has too many ideals'
>>> better_elsewhere_note(10.0, [(8.0, "local-search")], "solver ilp-noncontig allows such placements")
'local-search found a placement outside this model (more pieces per device) with value 8; solver ilp-noncontig allows such placements'
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Sequence

import numpy as np

from ...errors import VizPlaceError
from ..contract import Problem
from ..registry import get_solver, is_available, run_solver


def best_warm_start(problem: Problem, names: Sequence[str], *,
                    accept: Callable[[np.ndarray], bool] | None = None,
                    options: dict[str, dict] | None = None,
                    cancel: Callable[[], bool] | None = None,
                    budget: float | dict[str, float] | None = None,
                    rejected: list | None = None,
                    failures: list | None = None,
                    deadline: float | None = None) -> tuple[np.ndarray, str] | None:
    """Run the registered solvers ``names`` and return the best valid placement (device indices,
    solver name) under ``problem.objective`` that ``accept`` allows, or ``None``.

    ``budget``: seconds each solver may run (or a dict: solver -> seconds, ``"*"`` for the others)
    before its cancel hook fires (it then returns its best placement so far, or fails).
    ``rejected`` collects ``(value, solver)`` of valid placements that ``accept`` refused;
    ``failures`` collects ``"solver: reason"`` for every solver that raised or is not available.
    ``deadline`` (a ``time.perf_counter()`` value): no solver runs past it, and none starts after it
    once a placement is known."""
    prob = problem.compiled
    best: tuple[float, np.ndarray, str] | None = None
    for name in names:
        if cancel is not None and cancel() and best is not None:
            break
        if not is_available(name):
            if failures is not None:
                failures.append(f"{name}: not available")
            continue
        info = get_solver(name)
        known = {f.name for f in dataclasses.fields(info.options_cls)}
        opts = {k: v for k, v in ((options or {}).get(name) or {}).items() if k in known}
        secs = budget.get(name, budget.get("*")) if isinstance(budget, dict) else budget
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0 and best is not None:
                break
            secs = max(0.1, left if secs is None else min(secs, left))
        stop_at = None if secs is None else time.perf_counter() + secs

        def stop(stop_at=stop_at) -> bool:
            return bool((cancel is not None and cancel()) or (stop_at is not None and time.perf_counter() > stop_at))

        try:
            p = run_solver(name, problem.graph, problem.cluster, pins=problem.pins or None, options=opts,
                           cancel=stop)
        except VizPlaceError as err:
            if failures is not None:
                failures.append(f"{name}: {err}")
            continue
        dev = prob.to_index_array(p)
        ev = problem.evaluate(dev)
        value = problem.objective.value(ev)
        if ev.violations or not math.isfinite(value):
            continue
        if accept is not None and not accept(dev):
            if rejected is not None:
                rejected.append((value, name))
            continue
        if best is None or value < best[0]:
            best = (value, dev, name)
    return None if best is None else (best[1], best[2])


def warm_start_note(failures: Sequence[str]) -> str:
    """One clause for the message naming the warm starts that failed (empty when none did)."""
    return ("warm starts that failed: " + "; ".join(failures)) if failures else ""


def better_elsewhere_note(value: float, rejected: list, hint: str, what: str = "more pieces per device") -> str:
    """A clause for the message when a baseline outside the model's restriction found a better placement."""
    if not rejected or value is None:
        return ""
    other, name = min(rejected)
    if other >= value * (1 - 1e-9):
        return ""
    return f"{name} found a placement outside this model ({what}) with value {other:.6g}; {hint}"
