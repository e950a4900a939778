"""Placements (node -> device instance) and pins.

A :class:`Placement` is immutable and carries where it came from: the solver,
its status (``"optimal"``, ``"feasible"``, ``"manual"``...), the options it ran
with, its wall time, the objective value the solver *claims* (tests check
that claim against :func:`viz_place.cost.evaluate`) and, where known, a proven
lower bound with the set of placements it holds for (see :mod:`.objective`).

>>> p = Placement({"a": "fpga:0", "b": "cpu:0"}, solver="manual")
>>> p["a"], p.moved("a", "cpu:0")["a"], p["a"]
('fpga:0', 'cpu:0', 'fpga:0')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterator, Mapping

from ..errors import PlacementError
from .objective import BOUND_SETS, OBJECTIVE_ALIASES

STATUSES = ("optimal", "feasible", "infeasible", "no solution in time", "cancelled", "heuristic", "manual")


@dataclass(frozen=True)
class Placement:
    """node id -> device instance name, plus provenance.

    Parameters
    ----------
    assignment : mapping of every node id to a device name (``"fpga:0"``).
    solver : name of the solver (or ``"manual"``, ``"expert"``...).
    status : one of :data:`STATUSES`.
    objective : ``"max_load"``, ``"latency"``, ``"max_forward_plus_max_backward"`` or ``None``
        (``"throughput"`` is read as ``"max_load"``).
    claimed_value : the objective value the solver reports (``None`` if none).
    options : the solver options used (plain JSON-able dict).
    wall_time : seconds the solver took.
    message : free text (gap, reason for infeasibility...).
    lower_bound : a proven lower bound on the objective over ``bound_set`` (``None`` if none).
    bound_set : ``"pipeline"``, ``"convex"`` or ``"any"``: the placements ``lower_bound`` holds for.

    >>> Placement({"a": "cpu:0"}, objective="throughput", lower_bound=1.0, bound_set="any").objective
    'max_load'
    """

    assignment: Mapping[str, str]
    solver: str = "manual"
    status: str = "manual"
    objective: str | None = None
    claimed_value: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    wall_time: float | None = None
    message: str = ""
    lower_bound: float | None = None
    bound_set: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.assignment, Mapping):
            raise PlacementError("placement: assignment must be a mapping node -> device")
        clean = {}
        for k, v in self.assignment.items():
            if not isinstance(v, str):
                raise PlacementError(f"placement: node {k!r} is assigned to {v!r}, expected a device name like 'fpga:0'",
                                     node=str(k))
            clean[str(k)] = v
        object.__setattr__(self, "assignment", MappingProxyType(clean))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        if self.status not in STATUSES:
            raise PlacementError(f"placement: unknown status {self.status!r}; expected one of {STATUSES}",
                                 field="status")
        if self.objective in OBJECTIVE_ALIASES:
            object.__setattr__(self, "objective", OBJECTIVE_ALIASES[self.objective])
        if (self.lower_bound is None) != (self.bound_set is None):
            raise PlacementError("placement: lower_bound and bound_set go together (both or neither)",
                                 field="bound_set")
        if self.bound_set is not None and self.bound_set not in BOUND_SETS:
            raise PlacementError(f"placement: unknown bound_set {self.bound_set!r}; expected one of {BOUND_SETS}",
                                 field="bound_set")

    def __getitem__(self, node_id: str) -> str:
        try:
            return self.assignment[node_id]
        except KeyError:
            raise PlacementError(f"placement: node {node_id!r} is not placed", node=node_id) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.assignment)

    def __len__(self) -> int:
        return len(self.assignment)

    def moved(self, node_id: str, device: str, **provenance: Any) -> "Placement":
        """A new placement with ``node_id`` on ``device`` (marked manual by default)."""
        if node_id not in self.assignment:
            raise PlacementError(f"placement: node {node_id!r} is not placed", node=node_id)
        new = dict(self.assignment)
        new[node_id] = device
        meta = {"solver": "manual", "status": "manual", "objective": None, "claimed_value": None,
                "lower_bound": None, "bound_set": None}
        meta.update(provenance)
        return Placement(new, **meta)

    def nodes_on(self, device: str) -> list[str]:
        return [n for n, d in self.assignment.items() if d == device]

    def to_dict(self) -> dict[str, Any]:
        return {
            "assignment": dict(self.assignment), "solver": self.solver, "status": self.status,
            "objective": self.objective, "claimed_value": self.claimed_value,
            "options": dict(self.options), "wall_time": self.wall_time, "message": self.message,
            "lower_bound": self.lower_bound, "bound_set": self.bound_set,
        }


def check_complete(graph, cluster, placement: Placement) -> None:
    """Raise :class:`PlacementError` unless every node is placed once on a known device.

    (Soft constraints such as memory are *violations*, reported by the evaluator.)
    """
    missing = [n for n in graph.node_ids if n not in placement.assignment]
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise PlacementError(f"placement: node(s) {', '.join(map(repr, missing[:5]))}{more} are not placed",
                             node=missing[0])
    extra = [n for n in placement.assignment if not graph.has_node(n)]
    if extra:
        raise PlacementError(f"placement: unknown node(s) {', '.join(map(repr, extra[:5]))}", node=extra[0])
    for n, d in placement.assignment.items():
        if not cluster.has_device(d):
            raise PlacementError(f"placement: node {n!r} is on unknown device {d!r}; devices are "
                                 f"{', '.join(cluster.device_names)}", node=n, device=d)


def validate_pins(graph, cluster, pins: Mapping[str, str] | None) -> dict[str, str]:
    """Check pins (node -> device) and return them as a plain dict.

    Rejects unknown nodes/devices, a node pinned where its op is unsupported, and
    two nodes of one colour class pinned to different devices.

    >>> from viz_place.model import OpGraph, Cluster
    >>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}], [])
    >>> validate_pins(g, Cluster.paper(1, 1, None), {"a": "fpga:0"})
    Traceback (most recent call last):
    ...
    viz_place.errors.PlacementError: pin: node 'a' cannot run on device 'fpga:0' (op 'op' has no latency for kind 'fpga')
    """
    if not pins:
        return {}
    if not isinstance(pins, Mapping):
        raise PlacementError("pins must map node ids to device names")
    out: dict[str, str] = {}
    cc_dev: dict[str, tuple[str, str]] = {}
    for raw, dev in pins.items():
        n = str(raw)
        if not graph.has_node(n):
            raise PlacementError(f"pin: unknown node {n!r}", node=n)
        if not isinstance(dev, str) or not cluster.has_device(dev):
            raise PlacementError(f"pin: node {n!r} is pinned to unknown device {dev!r}; devices are "
                                 f"{', '.join(cluster.device_names)}", node=n,
                                 device=dev if isinstance(dev, str) else None)
        node = graph.node(n)
        kind = cluster.device_class_of(dev).kind
        if not node.supported_on(kind):
            raise PlacementError(f"pin: node {n!r} cannot run on device {dev!r} "
                                 f"(op {node.op_type!r} has no latency for kind {kind!r})", node=n, device=dev)
        cc = node.color_class
        if cc is not None:
            if cc in cc_dev and cc_dev[cc][1] != dev:
                other, odev = cc_dev[cc]
                raise PlacementError(f"pin: nodes {other!r} and {n!r} share colour class {cc!r} "
                                     f"but are pinned to different devices ({odev} and {dev})", node=n, device=dev)
            cc_dev[cc] = (n, dev)
        out[n] = dev
    return out
