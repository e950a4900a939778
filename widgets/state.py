"""The explorer's model: graph, cluster, pins, placement, history, undo/redo.

No widgets here — plain Python with change listeners, so every edit can be
tested without Jupyter. Every number comes from :func:`viz_place.cost.evaluate`
(or :class:`~viz_place.cost.IncrementalEvaluator` for one-group moves).
Edits that would break the model are refused with a
:class:`~viz_place.errors.VizPlaceError` and leave the state unchanged.

>>> from viz_place.samples import make_graph
>>> s = ExplorerState(make_graph("chain", 6))
>>> first = s.graph.node_ids[0]
>>> s.placement[first]        # the starting placement (the topo-fill baseline) uses the accelerators
'fpga:0'
>>> s.move(first, "cpu:0"); s.placement[first]
'cpu:0'
>>> _ = s.undo(); s.placement[first]
'fpga:0'
>>> [r["solver"] for r in s.history], s.placement_label()
(['start'], 'start (topo-fill baseline)')
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from viz_place.cost import IncrementalEvaluator, compile_problem, evaluate, evaluate_indices
from viz_place.errors import PlacementError
from viz_place.model import STATUSES, Cluster, DeviceClass, OpGraph, Placement, validate_pins
from viz_place.results import annotate_rows, objective_key, placement_fields, simple_bound
from viz_place.start import starting_placement

from .bokeh_sync import UI_LOCK

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
    base: int | None = None


class ExplorerState:
    """Mutable state of one explorer; listeners are called after each change.

    ``on(event, fn)`` registers ``fn(state, **info)`` for an event in
    :data:`EVENTS`. A ``"placement"`` event carries ``changed`` (node
    positions whose device changed, or ``None`` = any).
    """

    def __init__(self, graph: OpGraph, cluster: Cluster | None = None, placement: Placement | None = None,
                 pins: Mapping[str, str] | None = None) -> None:
        self._listeners: dict[str, list[Callable[..., None]]] = {e: [] for e in EVENTS}
        self._lock = UI_LOCK    # one lock with the figures: listeners redraw them (see bokeh_sync)
        self.history: list[dict[str, Any]] = []
        self._undo: list[Snapshot] = []
        self._redo: list[Snapshot] = []
        self.selected: str | None = None
        self.base: int | None = None      # the history run the current placement started from
        self._bounds: dict[tuple, Any] = {}
        self._load(graph, cluster, placement, pins)
        self._record_start()

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
        self.base = None
        self._bounds = {}

    def set_graph(self, graph: OpGraph, cluster: Cluster | None = None, placement: Placement | None = None,
                  pins: Mapping[str, str] | None = None, history: list[dict[str, Any]] | None = None) -> None:
        """Load a new graph (clears undo/redo; history replaced by ``history``, else a
        ``start`` row for the starting placement)."""
        with self._lock:
            self._load(graph, cluster, placement, pins)
            self._undo.clear()
            self._redo.clear()
            if history:
                self.history = [dict(r) for r in history]
                self.base = self._matching_run()
                self._annotate()
            else:
                self.history = []
                self._record_start()
        self._emit("graph")
        self._emit("history")

    # --- snapshots ------------------------------------------------------------------
    def _snapshot(self) -> Snapshot:
        return Snapshot(self.cluster, self.placement, tuple(sorted(self.pins.items())), self.base)

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
            self.base = snap.base
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
        """Install a solver's placement (undoable), record it in the history and return its row.

        A *cancelled* run whose value is worse than the current placement's (for its
        objective, when the current one is feasible) is recorded but not installed: the
        row has ``applied = False`` and a ``kept`` message (restore the run to use it).
        Solver results clear the node selection.
        """
        with self._lock:
            objective = objective_key(placement.objective)
            evaluation = evaluate(self.graph, self.cluster, placement, pins=self.pins)
            new, now = evaluation.value(objective), self.evaluation.value(objective)
            if placement.status == "cancelled" and self.evaluation.feasible and new > now * (1 + 1e-12):
                row = self._append(placement, evaluation)
                row["applied"] = False
                row["kept"] = (f"cancelled run reached {new:.6g}, worse than the current {now:.6g}: kept the "
                               f"current placement (restore run #{row['run']} to use it)")
            else:
                if self.selected is not None:
                    self.selected = None
                    self._emit("selected")
                self._undo.append(self._snapshot())
                del self._undo[:-200]
                self._redo.clear()
                row = self._append(placement, evaluation)
                row["applied"] = True
                if new > now * (1 + 1e-12) and self.evaluation.feasible:
                    row["kept"] = f"worse than the previous placement ({now:.6g}); undo to go back"
                self.base = row["run"]
                self._inc = None   # the incremental evaluator follows the old placement
                self._commit(self.cluster, placement, self.pins, evaluation=evaluation, undoable=False)
        self._emit("history")
        return row

    def record(self, label: str | None = None, **extra: Any) -> dict[str, Any]:
        """Append the current placement and its figures to the history; returns the row.
        Later manual edits count as overrides of this run. ``extra`` adds fields to the row
        (a pipeline run's ``measured_time_per_sample``...)."""
        with self._lock:
            row = self._append(self.placement, self.evaluation, label)
            row.update(extra)
            self.base = row["run"]
        self._emit("history")
        self._emit("placement", changed=[])
        return row

    def _record_start(self) -> None:
        """The ``start`` row: the placement the explorer opened on (no event)."""
        with self._lock:
            row = self._append(self.placement, self.evaluation, "start" if self.placement.solver in
                               ("start", "manual") else None)
            self.base = row["run"]

    def _append(self, p: Placement, ev, label: str | None = None) -> dict[str, Any]:
        mem = [d.memory / d.memory_capacity for d in ev.devices if d.memory_capacity]
        row = {"run": max((r.get("run", 0) for r in self.history), default=0) + 1,
               "solver": label or p.solver, "status": p.status,
               "max_load": ev.max_load, "throughput": ev.throughput,
               "latency": ev.latency, "peak_memory_fraction": max(mem) if mem else None,
               "wall_time": p.wall_time, "claimed_value": p.claimed_value, "message": p.message,
               "devices": self.cluster.to_dict(), "pins": dict(self.pins), "assignment": dict(p.assignment),
               "recorded_at": time.strftime("%H:%M:%S")}
        row.update(placement_fields(p, ev))
        self.history.append(row)
        self._annotate()
        return row

    # --- against the optimum ---------------------------------------------------------------
    def simple_bound(self, objective: str = "max_load"):
        """The simple lower bound (always valid) for the current graph and devices."""
        key = (objective_key(objective), self.cluster)
        if key not in self._bounds:
            self._bounds[key] = simple_bound(self.graph, self.cluster, objective)
        return self._bounds[key]

    @staticmethod
    def _setting(row: Mapping[str, Any]) -> tuple:
        """(objective, devices, pins) of a row: bounds and best values compare only within one."""
        return (row.get("objective") or "max_load", json.dumps(row.get("devices"), sort_keys=True),
                json.dumps(row.get("pins") or {}, sort_keys=True))

    def _annotate(self) -> None:
        """Recompute bound / gap / best known of every row, per (objective, devices, pins):
        a better bound found later improves the gaps of earlier rows."""
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(self.history):
            r.setdefault("objective", "max_load")
            if r.get("value") is None and r["objective"] == "max_load":
                r["value"] = r.get("max_load")
            groups.setdefault(self._setting(r), []).append(i)
        for key, idx in groups.items():
            objective, devices = key[0], self.history[idx[0]].get("devices")
            try:
                cluster = Cluster.from_dict(devices) if devices else self.cluster
                simple = self.simple_bound(objective) if cluster == self.cluster else \
                    simple_bound(self.graph, cluster, objective)
            except Exception:   # an old row with devices this graph cannot use: no simple bound
                simple = None
            for i, r in zip(idx, annotate_rows([self.history[i] for i in idx], simple)):
                self.history[i].update({k: r[k] for k in ("bound", "bound_source", "gap", "best_known",
                                                          "best_known_source", "note")})

    def _matching_run(self) -> int | None:
        """The last history run whose assignment is the current placement's (else the last run)."""
        a = dict(self.placement.assignment)
        for r in reversed(self.history):
            if r.get("assignment") == a:
                return r.get("run")
        return self.history[-1].get("run") if self.history else None

    def base_row(self) -> dict[str, Any] | None:
        """The history row the current placement started from."""
        return next((r for r in self.history if r.get("run") == self.base), None)

    def placement_label(self) -> str:
        """Where the current placement comes from, e.g. ``dp run #2 (optimal)`` or
        ``manual: 2 overrides of dp run #2``."""
        base = self.base_row()
        if base is None:
            return f"{self.placement.solver} ({self.placement.status})"
        if base["solver"] == "start":
            how = str(base.get("message") or "")
            how = how[len("start: "):] if how.startswith("start: ") else how
            how = how[len("the "):] if how.startswith("the ") else how
            name = f"start ({how})" if how else "start"
        else:
            name = f"{base['solver']} run #{base['run']} ({base['status']})"
        n = len(self.overrides(effects=False))
        if n == 0 and dict(self.placement.assignment) == base.get("assignment"):
            return name
        what = f"{n} override{'s' if n != 1 else ''} of " if n else "edits of "
        return f"manual: {what}{name}"

    def standing(self) -> dict[str, Any]:
        """The current placement against the optimum: ``objective``, ``value``, ``bound``,
        ``bound_source``, ``gap``, ``best_known``, ``best_known_source``, ``note``, ``label``."""
        base = self.base_row()
        objective = (base or {}).get("objective") or "max_load"
        here = {"solver": "current", "status": self.placement.status, "objective": objective,
                "value": self.evaluation.value(objective), "feasible": self.evaluation.feasible}
        key = self._setting({"objective": objective, "devices": self.cluster.to_dict(), "pins": self.pins})
        same = [r for r in self.history if self._setting(r) == key]
        if base is not None and base in same and base.get("assignment") == dict(self.placement.assignment):
            here = dict(base)
        rows = annotate_rows(same + [here] if here not in same else same, self.simple_bound(objective))
        out = next(r for r in rows if r.get("run") == here.get("run") and r.get("solver") == here["solver"])
        out["label"] = self.placement_label()
        return out

    # --- overrides: manual edits against the run they started from -------------------------
    def overrides(self, *, effects: bool = True) -> list[dict[str, Any]]:
        """Each colour group moved or pinned since the base run, with its effect on max-load:
        the current max-load minus the max-load with that group put back where the base run
        had it (positive = the override costs time per sample).

        Rows: ``node`` (first node of the group), ``name``, ``nodes`` (group size), ``from``,
        ``to``, ``pinned`` (a pin added or changed), ``effect`` (``None`` if the base device
        no longer exists, or without ``effects``).
        """
        base = self.base_row()
        if base is None:
            return []
        was, base_pins = base.get("assignment") or {}, base.get("pins") or {}
        now = self.placement.assignment
        out, groups = [], []
        for group in self.graph.colocation_groups:
            n0 = group[0]
            moved = was.get(n0) is not None and was.get(n0) != now[n0]
            pinned = any(n in self.pins and self.pins[n] != base_pins.get(n) for n in group)
            if moved or pinned:
                out.append({"node": n0, "name": self.graph.node(n0).name, "nodes": len(group),
                            "from": was.get(n0, now[n0]), "to": now[n0], "pinned": pinned,
                            "effect": 0.0 if not moved else None})
                groups.append(group)
        if not effects:
            for o in out:
                o["effect"] = None
            return out
        moved = [(o, g) for o, g in zip(out, groups) if o["from"] != o["to"] and self.cluster.has_device(o["from"])]
        if moved and all(self.cluster.has_device(d) for d in now.values()):
            # One full evaluation per override on index arrays (fast: no per-call set-up).
            prob = compile_problem(self.graph, self.cluster)
            dev = prob.to_index_array(self.placement)
            current = evaluate_indices(prob, dev, overlap=self.evaluation.overlap).max_load
            for o, group in moved:
                back = dev.copy()
                back[[self.graph.index[n] for n in group]] = self.cluster.device_index(o["from"])
                o["effect"] = current - evaluate_indices(prob, back, overlap=self.evaluation.overlap).max_load
        return out

    def restore_run(self, run: int) -> None:
        """Make history run number ``run`` the current placement (and its devices)."""
        rows = [r for r in self.history if r["run"] == run]
        if not rows:
            raise PlacementError(f"history: no run #{run}")
        row = rows[0]
        cluster = Cluster.from_dict(row["devices"]) if row.get("devices") else self.cluster
        validate_pins(self.graph, cluster, self.pins)
        placement = Placement(row["assignment"], solver=row["solver"] if row["solver"] != "start" else "start",
                              status=row["status"] if row["status"] in STATUSES else "manual",
                              objective=row.get("objective"),
                              claimed_value=row.get("claimed_value"), wall_time=row.get("wall_time"))
        with self._lock:
            self._undo.append(self._snapshot())
            del self._undo[:-200]
            self._redo.clear()
            self.base = run
        self._commit(cluster, placement, self.pins, undoable=False)
