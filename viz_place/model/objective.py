"""The one vocabulary of objectives and of the sets a proven bound holds for.

Objectives (what a solver minimises, what :meth:`Evaluation.value` returns):

* ``"max_load"`` — the largest device load, the time per sample when pipelined
  (its inverse is shown as *throughput*: that is a display name only);
* ``"latency"`` — the time of one sample through the graph;
* ``"max_forward_plus_max_backward"`` — training: max forward load + max backward load.

Older files and options that say ``"throughput"`` mean ``"max_load"``;
:func:`canonical_objective` maps them (the only such map in the package).

Bound sets (``Placement.bound_set``): a proven lower bound holds for every valid
placement (pins, memory limits, supported ops respected) in

* ``"pipeline"`` — pipeline splits: each device holds ``I \\ J`` for a chain of ideals (the DP's set);
* ``"convex"`` — per-device convex sets (a superset of pipeline splits);
* ``"any"`` — every placement (non-contiguous included).

>>> canonical_objective("throughput"), canonical_objective("latency")
('max_load', 'latency')
>>> display_name("max_load")
'throughput'
>>> canonical_objective("speed")
Traceback (most recent call last):
...
viz_place.errors.SolverError: unknown objective 'speed'; expected one of max_load, latency, max_forward_plus_max_backward
"""
from __future__ import annotations

from ..errors import SolverError

#: Objective names, in one vocabulary.
OBJECTIVES = ("max_load", "latency", "max_forward_plus_max_backward")

#: Old names still accepted on input (options, placement files, registrations).
OBJECTIVE_ALIASES = {"throughput": "max_load"}

#: Sets of placements a proven lower bound may hold for, smallest first.
BOUND_SETS = ("pipeline", "convex", "any")

_DISPLAY = {"max_load": "throughput", "latency": "latency",
            "max_forward_plus_max_backward": "max forward + max backward"}


def canonical_objective(name: str, *, field: str = "objective") -> str:
    """The objective name in the one vocabulary (``"throughput"`` -> ``"max_load"``)."""
    name = OBJECTIVE_ALIASES.get(name, name)
    if name not in OBJECTIVES:
        raise SolverError(f"unknown objective {name!r}; expected one of {', '.join(OBJECTIVES)}", field=field)
    return name


def display_name(name: str | None) -> str:
    """What the UI calls an objective (``"max_load"`` is shown as throughput)."""
    if name is None:
        return "-"
    return _DISPLAY.get(OBJECTIVE_ALIASES.get(name, name), name)
