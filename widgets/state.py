"""The explorer's model: graph, cluster, pins, placement, history, undo/redo.

No widgets here — plain Python with change listeners, so every edit can be
tested without Jupyter. Every number comes from :func:`viz_place.cost.evaluate`
(or :class:`~viz_place.cost.IncrementalEvaluator` for one-group moves).
Edits that would break the model are refused with a
:class:`~viz_place.errors.VizPlaceError` and leave the state unchanged.

>>> from viz_place.samples import make_graph
>>> s = ExplorerState(make_graph("chain", 6))
>>> s.move(s.graph.node_ids[0], "fpga:0"); s.placement[s.graph.node_ids[0]]
'fpga:0'
>>> _ = s.undo(); s.placement[s.graph.node_ids[0]]
'cpu:0'
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from viz_place.cost import IncrementalEvaluator, compile_problem, evaluate
from viz_place.errors import PlacementError
from viz_place.model import Cluster, DeviceClass, OpGraph, Placement, validate_pins
from viz_place.start import starting_placement

EVENTS = ("graph", "cluster", "pins", "placement", "history", "selected")


def default_cluster(graph: OpGraph) -> Cluster:
    """The graph's own devices, else one class per latency kind of the graph: a host
    ``cpu`` (1, pays no communication) and 4 of every other kind (unlimited memory).

    >>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "gpu": 0.1}}], [])
    >>> default_cluster(g).device_names
    ('gpu:0', 'gpu:1', 'gpu:2', 'gpu:3', 'cpu:0')
    """
    if graph.default_cluster is not None:
        return graph.default_cluster
    kinds = list(graph.kinds) or ["cpu"]
    accel = [DeviceClass(k, k, count=4) for k in kinds if k != "cpu"]
    host = [DeviceClass("cpu", "cpu", count=1, pays_communication=False)] if "cpu" in kinds else []
    return Cluster(tuple(accel + host))


@dataclass(frozen=True)
class Snapshot:
    """What undo restores."""

    cluster: Cluster
    placement: Placement
    pins: tuple[tuple[str, str], ...]


class ExplorerState:
    """Mutable state of one explorer; listeners are called after each change.

    ``on(event, fn)`` registers ``fn(state, **info)`` for an event in
    :data:`EVENTS`. A ``"placement"`` event carries ``changed`` (node
    positions whose device changed, or ``None`` = any).
    """

    def __init__(self, graph: OpGraph, cluster: Cluster | None = None, placement: Placement | None = None,
                 pins: Mapping[str, str] | None = None) -> None:
        self._listeners: dict[str, list[Callable[..., None]]] = {e: [] for e in EVENTS}
        self._lock = threading.RLock()
        self.history: list[dict[str, Any]] = []
        self._undo: list[Snapshot] = []
        self._redo: list[Snapshot] = []
        self.selected: str | None = None
        self._load(graph, cluster, placement, pins)

    # --- listeners -------------------------------------------------------------
    def on(self, event: str, fn: Callable[..., None]) -> None:
        if event not in self._listeners:
            raise ValueError(f"unknown event {event!r}; events are {EVENTS}")
        self._listeners[event].append(fn)

    def _emit(self, event: str, **info: Any) -> None:
        for fn in list(self._listeners[event]):
            fn(self, **info)

    # --- loading ---------------------------------------------------------------
    def _load(self, graph: OpGraph, cluster: Cluster | None, placement: Placement | None,
              pins: Mapping[str, str] | None) -> None:
        cluster = cluster or default_cluster(graph)
        pins = validate_pins(graph, cluster, pins)
        placement = placement or starting_placement(graph, cluster, pins)
        evaluation = evaluate(graph, cluster, placement, pins=pins)  # raises on unplaced nodes
        self.graph, self.cluster, self.pins, self.placement = graph, cluster, pins, placement
        self.evaluation = evaluation
        self._inc: IncrementalEvaluator | None = None
        self.selected = None

    def set_graph(self, graph: OpGraph, cluster: Cluster | None = None, placement: Placement | None = None,
                  pins: Mapping[str, str] | None = None, history: list[dict[str, Any]] | None = None) -> None:
        """Load a new graph (clears undo/redo; history replaced by ``history``)."""
        with self._lock:
            self._load(graph, cluster, placement, pins)
            self.history = list(history or [])
            self._undo.clear()
            self._redo.clear()
        self._emit("graph")
        self._emit("history")

    # --- snapshots ------------------------------------------------------------------
    def _snapshot(self) -> Snapshot:
        return Snapshot(self.cluster, self.placement, tuple(sorted(self.pins.items())))

    def _commit(self, cluster: Cluster, placement: Placement, pins: Mapping[str, str], *,
                evaluation=None, changed=None, undoable: bool = True) -> None:
        """Install a new (cluster, placement, pins), re-evaluate, notify."""
        with self._lock:
            if undoable:
                self._undo.append(self._snapshot())
                del self._undo[:-200]
                self._redo.clear()
            cluster_changed = cluster != self.cluster
            pins_changed = dict(pins) != self.pins
            if evaluation is None:
                evaluation = evaluate(self.graph, cluster, placement, pins=pins)
                self._inc = None
            self.cluster, self.placement, self.pins = cluster, placement, dict(pins)
            self.evaluation = evaluation
        if cluster_changed:
            self._emit("cluster")
        if pins_changed:
            self._emit("pins")
        self._emit("placement", changed=changed)

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo(self) -> bool:
        """Go back one edit; ``False`` when there is nothing to undo."""
        return self._step(self._undo, self._redo)

    def redo(self) -> bool:
        return self._step(self._redo, self._undo)

    def _step(self, src: list[Snapshot], dst: list[Snapshot]) -> bool:
        with self._lock:
            if not src:
                return False
            snap = src.pop()
            dst.append(self._snapshot())
        self._commit(snap.cluster, snap.placement, dict(snap.pins), undoable=False)
        return True

    # --- edits ------------------------------------------------------------------------
    def set_cluster(self, cluster: Cluster) -> None:
        """New devices. Refused if a pin refers to a device that would vanish."""
        if cluster == self.cluster:
            return
        with self._lock:
            validate_pins(self.graph, cluster, self.pins)
            self._commit(cluster, self.placement, self.pins)

    def group_of(self, node: str) -> tuple[str, ...]:
        """The nodes that must move with ``node`` (its colour class)."""
        cc = self.graph.node(node).color_class
        if cc is None:
            return (node,)
        return tuple(n for n in self.graph.node_ids if self.graph.node(n).color_class == cc)

    def move(self, node: str, device: str) -> None:
        """Move ``node`` (with its colour class) to ``device``; re-evaluated incrementally."""
        node = str(node)
        if not self.graph.has_node(node):
            raise PlacementError(f"move: unknown node {node!r}")
        if not self.cluster.has_device(device):
            raise PlacementError(f"move: unknown device {device!r}; devices are {', '.join(self.cluster.device_names)}")
        group = self.group_of(node)
        with self._lock:   # a solver thread may finish meanwhile
            for n in group:
                if n in self.pins and self.pins[n] != device:
                    raise PlacementError(f"move: node {n!r} is pinned to {self.pins[n]}; unpin it first")
            new = dict(self.placement.assignment)
            for n in group:
                new[n] = device
            placement = Placement(new, solver="manual", status="manual")
            self._commit(self.cluster, placement, self.pins, **self._incremental(group, device))

    def _incremental(self, group: tuple[str, ...], device: str) -> dict[str, Any]:
        """Evaluation after moving ``group`` to ``device`` via the incremental evaluator."""
        prob = compile_problem(self.graph, self.cluster)
        if self._inc is None or self._inc.prob is not prob:
            if not all(self.cluster.has_device(d) for d in self.placement.assignment.values()):
                return {}
            self._inc = IncrementalEvaluator(prob, prob.to_index_array(self.placement),
                                             overlap=self.evaluation.overlap)
        d = self.cluster.device_index(device)
        idx = [self.graph.index[n] for n in group]
        for i in idx:
            self._inc.move(i, d)
        return {"evaluation": self._inc.evaluation(pins=self.pins), "changed": idx}

    def pin(self, node: str, device: str | None = None) -> None:
        """Pin ``node`` (and its colour class) to ``device`` (default: where it is now); moves it there."""
        node = str(node)
        if not self.graph.has_node(node):
            raise PlacementError(f"pin: unknown node {node!r}")
        group = self.group_of(node)
        with self._lock:
            device = device or self.placement[node]
            pins = dict(self.pins)
            for n in group:
                pins[n] = device
            pins = validate_pins(self.graph, self.cluster, pins)
            new = dict(self.placement.assignment)
            changed = [self.graph.index[n] for n in group if new[n] != device]
            for n in group:
                new[n] = device
            placement = self.placement if not changed else Placement(new, solver="manual", status="manual")
            self._commit(self.cluster, placement, pins, changed=changed)

    def unpin(self, node: str) -> None:
        """Remove the pin of ``node`` and its colour class."""
        node = str(node)
        if node not in self.pins:
            raise PlacementError(f"unpin: node {node!r} is not pinned")
        group = set(self.group_of(node))
        with self._lock:
            self._commit(self.cluster, self.placement, {n: d for n, d in self.pins.items() if n not in group},
                         changed=[])

    def select(self, node: str | None) -> None:
        """Select a node (``None`` clears); idempotent."""
        if node is not None and not self.graph.has_node(node):
            raise PlacementError(f"select: unknown node {node!r}")
        if node == self.selected:
            return
        self.selected = node
        self._emit("selected")

    def find(self, text: str) -> list[str]:
        """Node ids whose id or name contains ``text`` (case-insensitive), exact matches first."""
        t = text.strip().lower()
        if not t:
            return []
        exact = [n for n in self.graph.node_ids if n.lower() == t or self.graph.node(n).name.lower() == t]
        part = [n for n in self.graph.node_ids if n not in exact
                and (t in n.lower() or t in self.graph.node(n).name.lower())]
        return exact + part

    # --- solver results and history ---------------------------------------------------------
    def apply_result(self, placement: Placement) -> dict[str, Any]:
        """Install a solver's placement (undoable) and record it in the history."""
        with self._lock:
            self._commit(self.cluster, placement, self.pins)
            return self.record()

    def record(self, label: str | None = None, **extra: Any) -> dict[str, Any]:
        """Append the current placement and its figures to the history; returns the row.
        ``extra`` adds fields to the row (a pipeline run's ``measured_time_per_sample``...)."""
        p, ev = self.placement, self.evaluation
        mem = [d.memory / d.memory_capacity for d in ev.devices if d.memory_capacity]
        row = {"run": len(self.history) + 1, "solver": label or p.solver, "status": p.status,
               "objective": p.objective, "max_load": ev.max_load, "throughput": ev.throughput,
               "latency": ev.latency, "peak_memory_fraction": max(mem) if mem else None,
               "feasible": ev.feasible, "wall_time": p.wall_time, "claimed_value": p.claimed_value,
               "lower_bound": p.lower_bound, "bound_set": p.bound_set,
               "devices": self.cluster.to_dict(), "assignment": dict(p.assignment),
               "recorded_at": time.strftime("%H:%M:%S"), **extra}
        with self._lock:
            self.history.append(row)
        self._emit("history")
        return row

    def restore_run(self, run: int) -> None:
        """Make history run number ``run`` the current placement (and its devices)."""
        rows = [r for r in self.history if r["run"] == run]
        if not rows:
            raise PlacementError(f"history: no run #{run}")
        row = rows[0]
        cluster = Cluster.from_dict(row["devices"]) if row.get("devices") else self.cluster
        validate_pins(self.graph, cluster, self.pins)
        placement = Placement(row["assignment"], solver=row["solver"] if row["solver"] != "start" else "manual",
                              status=row["status"], objective=row.get("objective"),
                              claimed_value=row.get("claimed_value"), wall_time=row.get("wall_time"))
        self._commit(cluster, placement, self.pins)
