"""The cells of a design sweep: what one cell is, its identity (a content hash), how a grid
of cells is planned, and how one cell is solved (on a Dask worker or in-process).

A cell is one (graph, devices, solver, options, seed). Its ``key`` is a SHA-256 over the
graph's *content* (nodes, attributes, edges — not its file name), the devices, the
solver, its options and the seed, so ``--resume`` recognises a finished cell whatever
the file was called and recomputes a cell whose graph or devices changed.

>>> from viz_place.samples import make_graph
>>> g = make_graph("chain", 6, seed=0)
>>> cells = plan_cells({"chain": g}, ["dp", "topo-fill"], accelerators=[1, 2])
>>> [(c.solver, c.accelerators) for c in cells]
[('dp', 1), ('topo-fill', 1), ('dp', 2), ('topo-fill', 2)]
>>> row = run_cell(g, cells[2])
>>> row["status"], row["value"] == solve_value(g, cells[2])
('optimal', True)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..cost import evaluate, gap
from ..errors import DeviceError, SolverError, VizPlaceError
from ..model import Cluster, OpGraph
from ..solvers import get_solver, run_solver

#: Statuses of a row that ``--resume`` recomputes (the cell did not finish on its own).
UNFINISHED = ("failed", "cancelled")

_OBJECTIVE_NAMES = {"throughput": "max_load"}


def graph_digest(graph: OpGraph) -> str:
    """SHA-256 (hex) of a graph's content: nodes with attributes and edges, sorted.

    >>> from viz_place.samples import make_graph
    >>> graph_digest(make_graph("chain", 5, seed=0)) == graph_digest(make_graph("chain", 5, seed=0))
    True
    >>> graph_digest(make_graph("chain", 5, seed=0)) == graph_digest(make_graph("chain", 5, seed=1))
    False
    """
    nodes, edges = graph.to_records()
    payload = {"nodes": sorted(nodes, key=lambda n: n["id"]),
               "edges": sorted(edges, key=lambda e: (e["source"], e["target"]))}
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str, allow_nan=True)


def devices_label(cluster: Cluster) -> str:
    """A short label for a device set: ``"fpga×4 + cpu×1"``."""
    return " + ".join(f"{c.name}\u00d7{c.count}" for c in cluster.classes)


@dataclass(frozen=True)
class Cell:
    """One solve of a sweep. ``graph_id`` is the graph's label in the sweep, ``graph_hash``
    its :func:`graph_digest`; ``accelerators`` is the count of the varied class (or of all
    communication-paying devices when no class is varied)."""

    graph_id: str
    graph_hash: str
    devices: Mapping[str, Any]
    solver: str
    options: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    accelerators: int | None = None
    pins: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The cell's identity: hash of graph content, devices, solver, options and seed
        (and pins, when there are any)."""
        ident = {"graph": self.graph_hash, "devices": self.devices, "solver": self.solver,
                 "options": dict(self.options), "seed": self.seed}
        if self.pins:
            ident["pins"] = dict(self.pins)
        return hashlib.sha256(_canonical(ident).encode()).hexdigest()[:24]

    @property
    def cluster(self) -> Cluster:
        return Cluster.from_dict(self.devices)


def vary_class(cluster: Cluster, vary: str | None, graph_id: str) -> str:
    """The device class whose count a sweep varies: ``vary``, or the one accelerator class."""
    if vary is not None:
        try:
            cluster.class_named(vary)
        except DeviceError:
            raise DeviceError(f"graph {graph_id!r}: --vary {vary!r} is not a device class; classes are "
                              f"{', '.join(c.name for c in cluster.classes)}") from None
        return vary
    accel = [c.name for c in cluster.classes if c.pays_communication]
    if len(accel) != 1:
        what = "no accelerator class (none pays communication)" if not accel else \
            f"several accelerator classes ({', '.join(accel)})"
        raise DeviceError(f"graph {graph_id!r}: its devices have {what}; choose the class to vary with --vary CLASS")
    return accel[0]


def solver_options(solver: str, *, time_limit: float | None = None, seed: int | None = None,
                   extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options one solver gets in a sweep: ``time_limit``/``seed`` where it has them, and
    those of ``extra`` it knows (validated here, before anything runs)."""
    info = get_solver(solver)
    names = {f.name for f in dataclasses.fields(info.options_cls)}
    opts: dict[str, Any] = {}
    if time_limit is not None and "time_limit" in names:
        opts["time_limit"] = float(time_limit)
    if seed is not None and "seed" in names:
        opts["seed"] = int(seed)
    for k, v in (extra or {}).items():
        if k in names:
            opts[k] = v
    from ..solvers import make_options
    make_options(info.options_cls, opts)   # raise now, naming the option, not on a worker
    return opts


def plan_cells(graphs: Mapping[str, OpGraph], solvers: Sequence[str], *, accelerators: Sequence[int] | None = None,
               vary: str | None = None, device_sets: Sequence[Cluster] | None = None,
               seeds: Sequence[int] | None = None, time_limit: float | None = None,
               options: Mapping[str, Any] | None = None, pins: Mapping[str, str] | None = None) -> list[Cell]:
    """Every cell of the grid graphs × device sets × accelerator counts × solvers × seeds.

    Device sets are ``device_sets`` (default: each graph's own devices); ``accelerators``
    sets the count of the varied class (``vary``, or the one accelerator class) in each.
    Solvers without a ``seed`` option run once whatever ``seeds`` says. ``options`` go to
    every solver that has them; an option no solver has is an error. ``pins`` (node ->
    device) hold in every cell (every solver keeps them).
    """
    if not graphs:
        raise SolverError("sweep: at least one graph is required")
    if not solvers:
        raise SolverError("sweep: at least one solver is required")
    for s in solvers:
        get_solver(s)
    counts = list(accelerators) if accelerators else [None]
    for n in counts:
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise SolverError(f"sweep: accelerator counts must be whole numbers >= 0, got {n!r}")
    known = set()
    for s in solvers:
        known |= {f.name for f in dataclasses.fields(get_solver(s).options_cls)}
    unknown = sorted(set(options or {}) - known)
    if unknown:
        raise SolverError(f"sweep: option(s) {unknown} belong to none of the solvers {', '.join(solvers)}")
    seed_list = list(seeds) if seeds else [None]
    cells: list[Cell] = []
    for gid, g in graphs.items():
        ghash = graph_digest(g)
        bases = list(device_sets) if device_sets else [g.default_cluster]
        if bases[0] is None:
            raise DeviceError(f"graph {gid!r} carries no device set; pass --devices-grid FILE")
        for base in bases:
            cname = vary_class(base, vary, gid) if accelerators else None
            for n in counts:
                cluster = base if n is None else base.with_class_count(cname, n)
                acc = n if n is not None else _accelerator_count(cluster, vary)
                for s in solvers:
                    has_seed = "seed" in {f.name for f in dataclasses.fields(get_solver(s).options_cls)}
                    for seed in (seed_list if has_seed else [None]):
                        opts = solver_options(s, time_limit=time_limit, seed=seed, extra=options)
                        cells.append(Cell(gid, ghash, cluster.to_dict(), s, opts, seed if has_seed else None, acc,
                                          dict(pins or {})))
    seen: dict[str, Cell] = {}
    for c in cells:
        seen.setdefault(c.key, c)   # the same cell twice (e.g. seeds collapsed) runs once
    return list(seen.values())


def _accelerator_count(cluster: Cluster, vary: str | None) -> int:
    if vary is not None:
        return cluster.class_named(vary).count
    return sum(c.count for c in cluster.classes if c.pays_communication)


# --- running one cell -------------------------------------------------------------------

def any_placement_bound(graph: OpGraph, cluster: Cluster, objective: str, placement) -> tuple[float | None, str]:
    """The best proven lower bound valid for *every* placement: the solver's own bound when
    its ``bound_set`` is ``"any"``, and the simple bound of :mod:`viz_place.cost.bounds`.
    Returns ``(bound or None, where it comes from)``."""
    best, source = None, ""
    try:
        from ..cost.bounds import simple_lower_bound
    except ImportError:      # the bounds module is not on this branch yet
        simple_lower_bound = None
    if simple_lower_bound is not None:
        try:
            value, text = simple_lower_bound(graph, cluster, objective)
            if value is not None and math.isfinite(value):
                best, source = float(value), str(text)
        except (VizPlaceError, ValueError):
            pass
    lb, bset = getattr(placement, "lower_bound", None), getattr(placement, "bound_set", None)
    if lb is not None and bset == "any" and math.isfinite(lb) and (best is None or lb > best):
        best, source = float(lb), f"{placement.solver} (proven for any placement)"
    return best, source


def _worker_name() -> str:
    try:
        from distributed import get_worker
        w = get_worker()
        return str(w.name if w.name is not None else w.address)
    except (ImportError, ValueError):
        return "local"


def one_thread_per_worker() -> None:
    """Keep a worker to one compute thread: torch's intra-op pool (BLAS/OpenMP threads are set
    by the environment the worker process starts with: ``OMP_NUM_THREADS=1`` etc.)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def run_cell(graph: OpGraph, cell: Cell, cancel: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Solve one cell and score it with :func:`viz_place.cost.evaluate`; returns the row.

    Bad input for this cell (an infeasible memory limit, a DP that would need too many
    ideals...) is a row with status ``"error"`` and the message, not an exception: one bad
    cell never stops a sweep.
    """
    one_thread_per_worker()
    t0, c0 = time.perf_counter(), time.thread_time()
    row = base_row(cell)
    try:
        cluster = cell.cluster
        pins = dict(cell.pins) or None
        p = run_solver(cell.solver, graph, cluster, pins=pins, options=dict(cell.options), cancel=cancel)
        objective = p.objective or get_solver(cell.solver).objective
        objective = _OBJECTIVE_NAMES.get(objective, objective)
        if objective not in ("max_load", "latency", "max_forward_plus_max_backward"):
            objective = "max_load"
        ev = evaluate(graph, cluster, p, pins=pins, overlap=bool(cell.options.get("overlap", False)))
        value = float(ev.value(objective))
        bound, source = any_placement_bound(graph, cluster, objective, p)
        row.update(objective=objective, value=value, status=p.status, feasible=bool(ev.feasible),
                   bound=bound, bound_source=source, gap=gap(value, bound) if ev.feasible else None,
                   message=p.message,
                   solver_bound=getattr(p, "lower_bound", None), solver_bound_set=getattr(p, "bound_set", None))
    except VizPlaceError as err:
        row.update(status="error", message=str(err))
    row["seconds"] = time.perf_counter() - t0
    row["cpu_seconds"] = time.thread_time() - c0
    row["worker"] = _worker_name()
    return row


def base_row(cell: Cell) -> dict[str, Any]:
    """A row with the cell's identity filled in and no result yet."""
    return {"key": cell.key, "graph": cell.graph_id, "devices": devices_label(cell.cluster),
            "accelerators": cell.accelerators, "solver": cell.solver, "seed": cell.seed,
            "options": dict(cell.options), "objective": None, "value": None, "status": None, "feasible": None,
            "bound": None, "bound_source": "", "gap": None, "seconds": None, "cpu_seconds": None, "worker": None,
            "message": "",
            "solver_bound": None, "solver_bound_set": None, "devices_json": dict(cell.devices),
            "graph_hash": cell.graph_hash}


def solve_value(graph: OpGraph, cell: Cell) -> float:
    """The value of one cell solved directly (what a sweep row must equal)."""
    return run_cell(graph, cell)["value"]


def expand_graphs(items: Iterable[Any] | Mapping[str, Any], loader: Callable[[str], OpGraph]) -> dict[str, OpGraph]:
    """``{label: OpGraph}`` from a mapping, or a list of graphs / paths / sample names."""
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for it in items:
            pairs.append((it.name if isinstance(it, OpGraph) else str(it), it))
    out: dict[str, OpGraph] = {}
    for label, g in pairs:
        if label in out:
            raise SolverError(f"sweep: graph {label!r} is given twice")
        out[label] = g if isinstance(g, OpGraph) else loader(str(g))
    return out
