"""Every result against the optimum: best known value, best proven lower bound, gap.

One small module used by the explorer (history rows, headline) and by
``viz-place compare``, so both say the same thing. For one objective and one
setting (graph, devices, pins):

* the **best known** value is the smallest value of any feasible result;
* the **best lower bound over all placements** (every valid placement: pins,
  memory limits and supported ops respected) is the largest of the simple
  bounds that always hold (:func:`viz_place.cost.bounds.simple_lower_bound`:
  total work / total speed, the largest single op...) and of every result's
  proven ``lower_bound`` whose ``bound_set`` is ``"any"`` (a non-contiguous
  MILP's bound). A bound proven for a *restricted* set — ``"pipeline"`` (the
  DP's optimum: contiguous pipeline splits) or ``"convex"`` (per-device convex
  sets) — is never used for placements outside that set;
* ``gap = value / bound - 1``, never negative (``None`` when no positive bound);
* a result optimal only within a restricted set says so
  (``"optimal among contiguous pipeline splits"``).

>>> rows = [{"solver": "dp", "status": "optimal", "objective": "max_load", "value": 8.783,
...          "lower_bound": 8.783, "bound_set": "pipeline", "feasible": True},
...         {"solver": "rl", "status": "heuristic", "objective": "max_load", "value": 8.688, "feasible": True}]
>>> out = annotate_rows(rows, simple=Bound(8.0, "total work / total speed"))
>>> out[0]["bound"], out[0]["bound_source"], round(out[0]["gap"], 4), out[0]["best_known"]
(8.0, 'total work / total speed', 0.0979, 8.688)
>>> out[0]["note"]
'optimal among contiguous pipeline splits (not over all placements: rl found 8.688)'
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .cost.bounds import gap, simple_lower_bound
from .model.objective import canonical_objective

OBJECTIVE_LABELS = {"max_load": "max-load", "latency": "latency",
                    "max_forward_plus_max_backward": "max fwd + max bwd"}
#: What each ``bound_set`` means, as the tool says it.
SET_TEXT = {"pipeline": "contiguous pipeline splits", "convex": "per-device convex placements",
            "any": "all placements"}
REL_TOL = 1e-9


def objective_key(objective: str | None) -> str:
    """The canonical objective name.

    >>> objective_key("throughput"), objective_key(None), objective_key("latency")
    ('max_load', 'max_load', 'latency')
    """
    if objective in (None, "", "any"):   # "any": a solver registered for every objective, run for max-load
        return "max_load"
    return canonical_objective(objective)


@dataclass(frozen=True)
class Bound:
    """A proven lower bound on the objective over all placements, and where it comes from."""

    value: float
    source: str


def simple_bound(graph, cluster, objective: str = "max_load") -> Bound:
    """The simple bounds that hold for every placement (from :mod:`viz_place.cost.bounds`)."""
    value, source = simple_lower_bound(graph, cluster, objective_key(objective))
    return Bound(float(value), source)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def best_bound(rows: Iterable[Mapping[str, Any]], simple: Bound | None) -> Bound | None:
    """The largest lower bound valid for every placement: ``simple`` and the ``lower_bound``
    of rows with ``bound_set == "any"`` (rows of one objective and setting)."""
    best = simple if simple is not None and _finite(simple.value) else None
    for r in rows:
        lb = r.get("lower_bound")
        if r.get("bound_set") == "any" and _finite(lb) and (best is None or lb > best.value):
            label = f"{r.get('solver', '?')} bound" + (f" (run #{r['run']})" if r.get("run") is not None else "")
            best = Bound(float(lb), label)
    return best


def best_known(rows: Iterable[Mapping[str, Any]]) -> tuple[float, str] | None:
    """(smallest value, who found it) over the feasible rows, or ``None``."""
    best = None
    for r in rows:
        v = r.get("value")
        if r.get("feasible", True) and _finite(v) and (best is None or v < best[0]):
            best = (float(v), _who(r))
    return best


def _who(r: Mapping[str, Any]) -> str:
    return f"{r.get('solver', '?')}" + (f" run #{r['run']}" if r.get("run") is not None else "")


def optimality_note(row: Mapping[str, Any], bound: Bound | None, known: tuple[float, str] | None) -> str:
    """What a result's status means, said for the set it holds for.

    >>> optimality_note({"status": "optimal", "bound_set": "convex", "value": 5.0}, None, (5.0, "ilp"))
    'optimal among per-device convex placements'
    >>> optimality_note({"status": "feasible", "value": 5.0}, Bound(5.0, "x"), (5.0, "ilp"))
    'optimal over all placements (meets the lower bound: x)'
    """
    v = row.get("value")
    if not row.get("feasible", True):
        return "violates constraints"
    if bound is not None and _finite(v) and bound.value > 0 and v <= bound.value * (1 + REL_TOL):
        return f"optimal over all placements (meets the lower bound: {bound.source})"
    if row.get("status") != "optimal":
        return ""
    where = row.get("bound_set")
    if where == "any":
        return "optimal over all placements"
    text = f"optimal among {SET_TEXT.get(where, 'the placements this solver considers')}"
    if known is not None and _finite(v) and known[0] < v * (1 - REL_TOL):
        text += f" (not over all placements: {known[1]} found {known[0]:.6g})"
    return text


def annotate_rows(rows: Sequence[Mapping[str, Any]], simple: Bound | None = None) -> list[dict[str, Any]]:
    """Rows of *one* objective and setting, each with ``bound``, ``bound_source``, ``gap``,
    ``best_known``, ``best_known_source`` and ``note`` added (new dicts; input unchanged).
    Each row needs ``value`` and may have ``status``, ``lower_bound``, ``bound_set``,
    ``feasible``, ``solver``, ``run``."""
    bound = best_bound(rows, simple)
    known = best_known(rows)
    out = []
    for r in rows:
        r2 = dict(r)
        r2["bound"] = bound.value if bound is not None else None
        r2["bound_source"] = bound.source if bound is not None else None
        r2["gap"] = gap(r.get("value"), r2["bound"])
        r2["best_known"] = known[0] if known is not None else None
        r2["best_known_source"] = known[1] if known is not None else None
        r2["note"] = optimality_note(r, bound, known)
        out.append(r2)
    return out


def format_gap(g: float | None) -> str:
    """``12.3%``, ``0%``, or ``-`` when unknown.

    >>> format_gap(0.1234), format_gap(0.0), format_gap(None)
    ('12.3%', '0%', '-')
    """
    if g is None:
        return "-"
    if g == 0:
        return "0%"
    return f"{100 * g:.3g}%"


def placement_fields(placement, evaluation) -> dict[str, Any]:
    """What :func:`annotate_rows` needs from one solver result: ``objective`` (canonical),
    ``value`` (the evaluator's), ``status``, ``lower_bound``, ``bound_set``, ``feasible``."""
    objective = objective_key(getattr(placement, "objective", None))
    lb = getattr(placement, "lower_bound", None)
    return {"objective": objective, "value": evaluation.value(objective), "status": placement.status,
            "lower_bound": float(lb) if _finite(lb) else None,
            "bound_set": getattr(placement, "bound_set", None) if _finite(lb) else None,
            "feasible": evaluation.feasible}
