"""Design sweeps on Dask: every cell of a grid (graphs × device sets × accelerator counts ×
solvers × seeds) is one Dask task; rows are written as cells finish; ``resume`` skips
finished cells.

>>> from viz_place.samples import make_graph
>>> t = sweep([make_graph("chain", 8, seed=0)], ["dp", "topo-fill"], accelerators=[1, 2], workers=0)
>>> [(r["solver"], r["accelerators"], r["status"]) for r in t]
[('dp', 1, 'optimal'), ('topo-fill', 1, 'heuristic'), ('dp', 2, 'optimal'), ('topo-fill', 2, 'heuristic')]

``workers=0`` solves in this process, one cell after another (no Dask); otherwise an
embedded ``LocalCluster`` with ``workers`` processes (default: the cores) or, with
``scheduler="tcp://HOST:PORT"``, an existing Dask cluster.

The ``gap`` of a row is ``value / bound - 1`` where ``bound`` is the best *proven* lower
bound valid for every placement known for that graph and device set (the simple bound of
:mod:`viz_place.cost.bounds`, or a solver's own bound when it holds for any placement —
an ``ilp-noncontig`` optimum, say — also across the other rows of the same graph and
devices); a DP optimum bounds pipeline splits only, so it never enters the gap. A
placement with violations (memory over capacity...) gets no gap: the bounds hold over
valid placements.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..cost import gap
from ..errors import InputFormatError, VizPlaceError
from ..io import load_graph
from ..model import Cluster, OpGraph
from .sweep_cells import UNFINISHED, Cell, base_row, expand_graphs, plan_cells, run_cell
from .sweep_store import ResultStore, SweepTable, latest_by_key


@dataclass(frozen=True)
class SweepProgress:
    """What a progress callback gets after each cell: counts and the row just written."""

    done: int
    total: int
    skipped: int
    row: Mapping[str, Any] | None
    dashboard: str | None = None

    @property
    def fraction(self) -> float:
        return 1.0 if self.total == 0 else self.done / self.total


def load_graph_spec(spec: str) -> OpGraph:
    """A graph file, or the name of a shipped sample."""
    from ..samples import load_sample, sample_names
    if not os.path.exists(spec) and spec in sample_names():
        return load_sample(spec)
    return load_graph(spec)


def read_devices_grid(path: str | os.PathLike) -> list[Cluster]:
    """A JSON list of device sets (each ``{"classes": [...]}`` or the paper's three fields)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise InputFormatError(f"--devices-grid {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise InputFormatError(f"--devices-grid {path}: not valid JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(data, list) or not data:
        raise InputFormatError(f"--devices-grid {path}: expected a non-empty JSON list of device sets")
    out = []
    for i, item in enumerate(data):
        try:
            out.append(Cluster.from_dict(item))
        except VizPlaceError as err:
            raise type(err)(f"--devices-grid {path}: device set #{i}: {err}") from None
    return out


def _clusters(device_sets) -> list[Cluster] | None:
    if device_sets is None:
        return None
    if isinstance(device_sets, (str, os.PathLike)):
        return read_devices_grid(device_sets)
    return [d if isinstance(d, Cluster) else Cluster.from_dict(d) for d in device_sets]


def _cancel_fn(cancel) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if hasattr(cancel, "is_set"):
        return cancel.is_set
    return cancel


def refine_bounds(rows: Sequence[dict[str, Any]]) -> None:
    """Give every row the best any-placement bound among rows of the same graph, devices,
    objective and cost variant (``overlap``), and recompute its gap (in place)."""
    best: dict[tuple, tuple[float, str]] = {}

    def group(r):
        return (r.get("graph_hash"), json.dumps(r.get("devices_json"), sort_keys=True), r.get("objective"),
                bool((r.get("options") or {}).get("overlap", False)))

    for r in rows:
        b = r.get("bound")
        if isinstance(b, (int, float)) and math.isfinite(b) and r.get("objective"):
            k = group(r)
            if k not in best or b > best[k][0]:
                best[k] = (float(b), r.get("bound_source") or "")
    for r in rows:
        k = group(r)
        if k in best and r.get("value") is not None:
            r["bound"], r["bound_source"] = best[k]
            # the bounds hold over valid placements: no gap for one with violations
            r["gap"] = gap(r["value"], r["bound"]) if r.get("feasible") is not False else None


def sweep(graphs: Iterable[Any] | Mapping[str, Any], solvers: Sequence[str], *,
          accelerators: Sequence[int] | None = None, vary: str | None = None,
          device_sets: Sequence[Cluster | Mapping] | str | os.PathLike | None = None,
          seeds: Sequence[int] | None = None, time_limit: float | None = None,
          options: Mapping[str, Any] | None = None, pins: Mapping[str, str] | None = None,
          out: str | os.PathLike | None = None, resume: bool = False,
          scheduler: str | None = None, workers: int | None = None, engine=None, processes: bool = True,
          dashboard: bool = True, progress: Callable[[SweepProgress], None] | None = None, cancel=None
          ) -> SweepTable:
    """Run a design sweep; returns a :class:`~viz_place.runtime.sweep_store.SweepTable`.

    Parameters
    ----------
    graphs : graphs, graph files or sample names (or ``{label: graph}``).
    solvers : solver names (``viz-place solvers``).
    accelerators : counts of the accelerator class to try (``vary`` names the class when
        the devices have several).
    device_sets : device sets to try (``Cluster``s, dicts, or a JSON file holding a list);
        default: each graph's own devices.
    seeds : seeds for solvers that take one (others run once).
    time_limit, options : given to every solver that has the option.
    pins : node -> device, kept by every solver in every cell.
    out, resume : results CSV, appended as cells finish; ``resume`` skips its finished cells
        (an existing ``out`` without ``resume`` is an error, so nothing is overwritten).
    scheduler, workers, engine, processes, dashboard : where cells run: an existing
        :class:`~viz_place.runtime.dask_engine.DaskEngine`, a scheduler address, or an
        embedded ``LocalCluster`` of ``workers`` processes (``workers=0``: in this process).
    progress : called with a :class:`SweepProgress` after each cell.
    cancel : a ``threading.Event`` (or callable): stops the sweep; finished rows are kept,
        running solvers are told to stop (they return their best so far).
    """
    graph_map = expand_graphs(graphs, load_graph_spec)
    cells = plan_cells(graph_map, list(solvers), accelerators=accelerators, vary=vary,
                       device_sets=_clusters(device_sets), seeds=seeds, time_limit=time_limit, options=options,
                       pins=pins)
    store = ResultStore(out, resume=resume) if out is not None else None
    try:
        previous = latest_by_key(store.previous) if store else {}
        plan_keys = {c.key for c in cells}
        done = {k: r for k, r in previous.items() if k in plan_keys and r.get("status") not in UNFINISHED}
        todo = [c for c in cells if c.key not in done]
        results: dict[str, dict[str, Any]] = {}
        is_cancelled = _cancel_fn(cancel)
        state = {"done": len(done), "dashboard": None}

        def record(row: dict[str, Any]) -> None:
            results[row["key"]] = row
            if store is not None:
                store.append(row)
            state["done"] += 1
            if progress is not None:
                progress(SweepProgress(state["done"], len(cells), len(done), row, state["dashboard"]))

        def started() -> None:
            if progress is not None:
                progress(SweepProgress(len(done), len(cells), len(done), None, state["dashboard"]))

        if not todo:
            started()
        elif workers == 0 and engine is None and scheduler is None:
            started()
            for c in todo:
                if is_cancelled():
                    break
                record(run_cell(graph_map[c.graph_id], c, cancel=is_cancelled))
        elif todo:
            _run_on_dask(todo, graph_map, record, started, is_cancelled, state, engine=engine, scheduler=scheduler,
                         workers=workers, processes=processes, dashboard=dashboard)
        rows = [results.get(c.key) or done.get(c.key) for c in cells]
        rows = [r for r in rows if r is not None]
        refine_bounds(rows)
        if store is not None:
            merged = latest_by_key(store.previous)
            merged.update({r["key"]: r for r in rows})
            store.rewrite(merged.values())
        return SweepTable(rows, skipped=len(done), path=None if out is None else str(out),
                          cancelled=is_cancelled() and len(rows) < len(cells), dashboard=state["dashboard"])
    finally:
        if store is not None:
            store.close()


def expected_cost(graph: OpGraph, cell: Cell) -> int:
    """A guess at a cell's run time, to start long cells first (Dask runs higher priorities
    first): graph size × accelerators, ×10 for exact solvers and for time-limited ones."""
    from ..solvers import get_solver
    try:
        slow = get_solver(cell.solver).exact or "time_limit" in cell.options
    except VizPlaceError:
        slow = False
    return int(graph.num_nodes * max(cell.accelerators or 1, 1) * (10 if slow else 1))


def _run_on_dask(todo: list[Cell], graph_map, record, started, is_cancelled, state, *, engine, scheduler, workers,
                 processes, dashboard) -> None:
    from .dask_engine import DaskEngine
    own = engine is None
    if own:
        engine = DaskEngine(scheduler, workers, processes=processes, dashboard=dashboard)
    state["dashboard"] = engine.dashboard_link
    started()
    flag = engine.cancel_flag()
    futures: dict[Any, Cell] = {}
    try:
        scattered = {gid: engine.scatter(graph_map[gid]) for gid in dict.fromkeys(c.graph_id for c in todo)}
        for c in todo:
            futures[engine.submit(run_cell, scattered[c.graph_id], c, flag, name="viz-place-cell",
                                  priority=expected_cost(graph_map[c.graph_id], c))] = c
        for fut in engine.as_completed(list(futures), cancel=is_cancelled):
            c = futures[fut]
            if fut.status == "cancelled":
                continue
            if fut.status == "error":
                err = fut.exception()
                row = base_row(c)
                row.update(status="failed", message=f"{type(err).__name__}: {err}")
                record(row)
            else:
                record(fut.result())
        if is_cancelled():
            flag.set()
    finally:
        if is_cancelled():
            flag.set()
        try:
            engine.client.cancel(list(futures))
        except Exception:  # noqa: BLE001 - the cluster may be gone already
            pass
        futures.clear()
        if own:
            engine.close()
