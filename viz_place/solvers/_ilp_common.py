"""Helpers shared by the integer-program solvers (private).

* :func:`allowed_devices` — the devices each colocation group may use (support,
  pins, memory), raising :class:`~viz_place.errors.InfeasibleError` naming the
  group when none is left;
* :func:`interchangeable_sets` — identical, unpinned device instances of one
  class (symmetry breaking) and :func:`canonical` to relabel a placement so that
  it satisfies the symmetry-breaking constraints;
* :func:`nonconvex_devices` — devices whose node set is not convex;
* :func:`pipeline_order`, :func:`device_cycle`, :func:`add_pipeline_constraints` —
  pipeline splits (the DP's set): devices in an order where every ordering edge
  stays on a device or goes forward;
* :func:`memory_diagnosis` — a reason why no placement fits the memory;
* :func:`finish` — the honest :class:`~viz_place.model.Placement` from a MILP
  result, a warm start and the evaluator.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..cost import evaluate_indices
from ..cost.compiled import CompiledProblem
from ..errors import InfeasibleError, SolverError
from ..model import Placement
from .milp import OPTIMALITY_TOL, MilpResult, relative_gap


def group_label(prob: CompiledProblem, g: int) -> str:
    members = prob.groups[g]
    first = prob.node_ids[members[0]]
    cc = prob.graph.node(first).color_class
    if len(members) == 1 or cc is None:
        return f"node {first!r}"
    return f"colour class {cc!r} (nodes {', '.join(repr(prob.node_ids[i]) for i in members[:4])}" + \
        (" ..." if len(members) > 4 else "") + ")"


def allowed_devices(prob: CompiledProblem, pins: dict[str, str], *,
                    restrict: Callable[[int], bool] | None = None) -> list[list[int]]:
    """Device indices each colocation group may go to (ordered)."""
    D = prob.num_devices
    index = prob.graph.index
    pinned_group: dict[int, int] = {}
    for node, dev in pins.items():
        g = int(prob.group[index[node]])
        pinned_group[g] = prob.cluster.device_index(dev)
    out: list[list[int]] = []
    for g, members in enumerate(prob.groups):
        m = list(members)
        lat_ok = np.isfinite(prob.lat[m, :]).all(axis=0)
        size = float(prob.size[m].sum())
        if g in pinned_group:
            cands = [pinned_group[g]]
        else:
            cands = [d for d in range(D) if restrict is None or restrict(d)]
        ok = [d for d in cands if lat_ok[d] and size <= prob.capacity[d] * (1 + 1e-12)]
        if not ok:
            where = f"pinned to {prob.device_names[cands[0]]}" if g in pinned_group else "on any device"
            unsupported = [prob.device_names[d] for d in cands if not lat_ok[d]]
            too_big = [prob.device_names[d] for d in cands if lat_ok[d]]
            why = []
            if unsupported:
                why.append(f"unsupported on {', '.join(unsupported)}")
            if too_big:
                why.append(f"its memory {size:.6g} exceeds the capacity of {', '.join(too_big)}")
            raise InfeasibleError(f"infeasible: {group_label(prob, g)} cannot be placed {where}: "
                                  + "; ".join(why or ["no device"]))
        out.append(ok)
    return out


def interchangeable_sets(prob: CompiledProblem, pins: dict[str, str],
                         devices: Sequence[int] | None = None) -> list[list[int]]:
    """Lists (length >= 2) of identical device instances of one class that no pin targets."""
    pinned = {prob.cluster.device_index(d) for d in pins.values()}
    keep = set(range(prob.num_devices) if devices is None else devices)
    by_class: dict[int, list[int]] = {}
    for d in range(prob.num_devices):
        if d in keep and d not in pinned:
            by_class.setdefault(int(prob.device_class[d]), []).append(d)
    return [v for v in by_class.values() if len(v) >= 2]


def canonical(prob: CompiledProblem, dev: Sequence[int], sets: list[list[int]]) -> np.ndarray:
    """Relabel ``dev`` within each interchangeable set: devices ordered by their first group."""
    dev = np.asarray(dev, dtype=np.int64).copy()
    first = [g[0] for g in prob.groups]
    for s in sets:
        members = set(s)
        order: list[int] = []
        for f in first:
            d = int(dev[f])
            if d in members and d not in order:
                order.append(d)
        mapping = {old: s[k] for k, old in enumerate(order)}
        if mapping:
            dev = np.array([mapping.get(int(d), int(d)) for d in dev], dtype=np.int64)
    return dev


def nonconvex_devices(prob: CompiledProblem, dev: Sequence[int], nodes: Sequence[bool] | None = None) -> set[int]:
    """Devices whose set (restricted to ``nodes`` if given, over all edges between them) is not convex."""
    n = prob.n
    use = [True] * n if nodes is None else list(nodes)
    anc = [0] * n
    for v in range(n):
        if not use[v]:
            continue
        m = 0
        for u in prob.preds[v]:
            if use[u]:
                m |= anc[u] | (1 << int(dev[u]))
        anc[v] = m
    desc = [0] * n
    bad = 0
    for v in range(n - 1, -1, -1):
        if not use[v]:
            continue
        m = 0
        for w in prob.succs[v]:
            if use[w]:
                m |= desc[w] | (1 << int(dev[w]))
        desc[v] = m
        bad |= anc[v] & m & ~(1 << int(dev[v]))
    return {d for d in range(prob.num_devices) if bad >> d & 1}


#: What "optimal" is proven for, per model (every status message names it).
SET_PIPELINE = "pipeline splits"
SET_CONVEX = "per-device convex sets"
SET_ANY = "all placements"


def scope_text(set_name: str) -> str:
    """``"among pipeline splits"``, ``"among per-device convex sets"``, ``"over all placements"``."""
    return ("over " if set_name == SET_ANY else "among ") + set_name


def pipeline_order(prob: CompiledProblem):
    """The DP's order on the graph: ``(supernode of each node, supernode DAG edges)``.

    Supernodes are colocation groups (a colour class with its backward twins)
    with the cycles that contracting them creates fused; the edges run between
    forward nodes, plus the paper's mirrored ordering edges for backward classes
    without a forward node (:func:`viz_place.solvers.preprocess.contract`, no
    coarsening). A placement is a *pipeline split* when its devices can be put in
    an order in which every one of these edges stays on a device or goes forward
    (equivalently: the device sets are ``I1``, ``I2 - I1``, ... for a chain of ideals).
    """
    from .preprocess import contract
    ct = contract(prob.graph, prob.cluster, zero_cost_leaves="off")
    return ct.node_super, ct.edges


def _device_digraph(prob: CompiledProblem, dev: Sequence[int], order):
    import networkx as nx
    node_super, edges = order if order is not None else pipeline_order(prob)
    on: dict[int, set[int]] = {}
    for v, s in enumerate(node_super.tolist()):
        on.setdefault(int(s), set()).add(int(dev[v]))
    dg = nx.DiGraph()
    dg.add_nodes_from(range(prob.num_devices))
    for ds in on.values():          # one supernode on several devices: they must feed each other
        for a in ds:
            dg.add_edges_from((a, b) for b in ds if b != a)
    for s, t in edges:
        dg.add_edges_from((a, b) for a in on[s] for b in on[t] if a != b)
    return dg


def device_cycle(prob: CompiledProblem, dev: Sequence[int], order=None) -> list[int] | None:
    """Devices that feed each other in a cycle (so ``dev`` is no pipeline split), or ``None``.

    >>> from viz_place.model import OpGraph, Cluster
    >>> from viz_place.cost import compile_problem
    >>> g = OpGraph.from_records([{"id": i, "latency": {"cpu": 1.0}} for i in "abc"], [("a", "b"), ("b", "c")])
    >>> prob = compile_problem(g, Cluster.paper(0, 2, None))
    >>> device_cycle(prob, [0, 1, 1]) is None, device_cycle(prob, [0, 1, 0])
    (True, [0, 1])
    """
    import networkx as nx
    dg = _device_digraph(prob, dev, order)
    try:
        cycle = nx.find_cycle(dg)
    except nx.NetworkXNoCycle:
        return None
    return [int(u) for u, _ in cycle]


def device_sequence(prob: CompiledProblem, dev: Sequence[int], order=None) -> list[int]:
    """The devices of a pipeline split in pipeline order (unused ones last).

    Raises ``ValueError`` when ``dev`` is no pipeline split."""
    import networkx as nx
    dg = _device_digraph(prob, dev, order)
    if not nx.is_directed_acyclic_graph(dg):
        raise ValueError("not a pipeline split")
    used = set(int(d) for d in dev)
    seq = list(nx.lexicographical_topological_sort(dg))
    return [d for d in seq if d in used] + [d for d in seq if d not in used]


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


def memory_diagnosis(prob: CompiledProblem, allowed: list[list[int]]) -> str:
    """A sentence on memory pressure (for infeasibility messages)."""
    need = 0.0
    for g, ds in enumerate(allowed):
        if all(math.isfinite(prob.capacity[d]) for d in ds):
            need += float(prob.size[list(prob.groups[g])].sum())
    limited = sorted({d for ds in allowed for d in ds if math.isfinite(prob.capacity[d])})
    offer = float(sum(prob.capacity[d] for d in limited))
    if limited and need > offer * (1 + 1e-12):
        return (f"nodes that can only go to memory-limited devices need {need:.6g} in total but "
                f"{', '.join(prob.device_names[d] for d in limited)} offer {offer:.6g}")
    return (f"no assignment satisfies the memory capacities, pins, colour classes and supported ops together "
            f"(memory needed on limited devices {need:.6g}, offered {offer:.6g})")


def value_of(prob: CompiledProblem, dev: np.ndarray, objective: str, pins: dict[str, str], *,
             overlap: bool = False) -> tuple[float, list[str]]:
    ev = evaluate_indices(prob, dev, pins=pins, overlap=overlap)
    return ev.value(objective), list(ev.violations)


def finish(prob: CompiledProblem, *, solver: str, objective: str, options: dict, pins: dict[str, str],
           res: MilpResult | None, ilp_dev: np.ndarray | None, warm: tuple[np.ndarray, str] | None,
           wall: float, extra_ok: Callable[[np.ndarray], str | None] | None = None,
           model_note: str = "", overlap: bool = False, scope: str | None = None,
           status_override: str | None = None) -> Placement:
    """Choose the placement to return and its honest status.

    ``ilp_dev``: the MILP's placement (or ``None``); ``warm``: (placement, source)
    of the warm start (or ``None``); ``extra_ok(dev)`` returns a reason when a
    placement breaks a model constraint the evaluator does not check (contiguity).
    ``scope``: the set the model optimises over (e.g. ``"among pipeline splits"``);
    the message starts with what the status means for it.
    """
    cands: list[tuple[float, np.ndarray, str]] = []
    notes: list[str] = []
    for dev, src in ([(ilp_dev, "ilp")] if ilp_dev is not None else []) + ([warm] if warm else []):
        value, problems = value_of(prob, dev, objective, pins, overlap=overlap)
        if extra_ok is not None and not problems:
            why = extra_ok(dev)
            if why:
                problems.append(why)
        if problems:
            notes.append(f"{src} placement rejected: {problems[0]}")
            continue
        cands.append((value, dev, src))
    if not cands:
        why = (res.message if res else "") or "no solution"
        if res is not None and res.status == "infeasible":
            raise InfeasibleError(f"infeasible: {why}")
        stop = res.stopped_by if res else None
        bound = f" (best bound {res.bound:.6g})" if res is not None and res.bound is not None else ""
        if stop == "cancel":
            raise SolverError(f"{solver}: cancelled before any solution was found{bound}")
        raise SolverError(f"{solver}: no solution in time: the {res.backend if res else 'MILP'} back-end stopped "
                          f"({stop or why}) without a solution{bound}; raise the time limit"
                          + ("; " + "; ".join(notes) if notes else ""))
    cands.sort(key=lambda t: (t[0], t[2] != "ilp"))
    value, dev, src = cands[0]
    bound = res.bound if res is not None else None
    msg: list[str] = []
    distrust = ""
    if bound is not None and math.isfinite(value) and bound > value + OPTIMALITY_TOL * abs(value) + 1e-9:
        # a valid bound is never above a placement of the model: this proof is broken (back-end bug, tolerances)
        distrust = (f"the {res.backend} back-end's bound {bound:.9g} is above the value {value:.9g} of a placement "
                    "its model allows, so its proof is not trusted")
        bound = None
    gap = relative_gap(value, bound)
    if status_override is not None:
        status = status_override
    elif res is not None and res.stopped_by == "cancel":
        status = "cancelled"
    elif res is not None and gap is not None and gap <= OPTIMALITY_TOL:   # the bound proves it
        status = "optimal"
    else:
        status = "feasible"
    if scope:
        msg.append({"optimal": f"optimal {scope}", "cancelled": f"cancelled: best so far {scope}"}.get(
            status, f"not proven optimal {scope}"))
    if distrust:
        msg.append(distrust)
    if res is not None:
        msg.append(f"{res.backend} {res.stopped_by or 'finished'} after {res.seconds:.2f} s")
        if res.note:
            msg.append(res.note)
    if status != "optimal":
        if gap is not None:
            msg.append(f"gap {100 * gap:.3g}% (value {value:.6g}, bound {bound:.6g})")
        else:
            msg.append("no bound known")
    if src != "ilp":
        msg.append(f"best placement is the warm start from {src} (the integer program found nothing better)")
    if res is not None and res.status == "infeasible":
        msg.append(f"the back-end reported the model infeasible ({res.message}) although this placement satisfies "
                   "it: numerical trouble, treat the status with care")
    if model_note:
        msg.append(model_note)
    msg.extend(notes)
    return Placement(prob.to_assignment(dev), solver=solver, status=status, objective=objective,
                     claimed_value=float(value), options=options, wall_time=wall, message="; ".join(msg))


def best_warm_start(prob: CompiledProblem, pins: dict[str, str], objective: str, names: Sequence[str], *,
                    accept: Callable[[np.ndarray], bool] | None = None,
                    options: dict[str, dict] | None = None,
                    cancel: Callable[[], bool] | None = None,
                    budget: float | dict[str, float] | None = None,
                    rejected: list | None = None, overlap: bool = False,
                    deadline: float | None = None) -> tuple[np.ndarray, str] | None:
    """Run the registered solvers ``names`` (skipping missing ones and failures) and return the
    best valid placement (device indices, solver name) under ``objective`` that ``accept`` allows.

    ``budget``: seconds each solver may run (or a dict: solver -> seconds, ``"*"`` for the others)
    before its cancel hook fires (it then returns its best placement so far, or fails and is skipped).
    ``rejected`` collects ``(value, solver)`` of valid placements that ``accept`` refused.
    ``deadline`` (a ``time.perf_counter()`` value): no solver runs past it, and none starts after it
    once a placement is known."""
    import time
    from ..errors import VizPlaceError
    from .registry import list_solvers, run_solver
    registered = {s.name: s for s in list_solvers()}
    best: tuple[float, np.ndarray, str] | None = None
    for name in names:
        if cancel is not None and cancel() and best is not None:
            break
        info = registered.get(name)
        if info is None:
            continue
        import dataclasses
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
            p = run_solver(name, prob.graph, prob.cluster, pins=pins or None, options=opts, cancel=stop)
        except VizPlaceError:
            continue
        dev = prob.to_index_array(p)
        value, problems = value_of(prob, dev, objective, pins, overlap=overlap)
        if problems or not math.isfinite(value):
            continue
        if accept is not None and not accept(dev):
            if rejected is not None:
                rejected.append((value, name))
            continue
        if best is None or value < best[0]:
            best = (value, dev, name)
    return None if best is None else (best[1], best[2])


def better_elsewhere_note(placement: Placement, rejected: list, hint: str,
                          what: str = "more pieces per device") -> Placement:
    """Add to the message when a baseline outside the model's restriction found a better placement."""
    if not rejected or placement.claimed_value is None:
        return placement
    value, name = min(rejected)
    if value >= placement.claimed_value * (1 - 1e-9):
        return placement
    from dataclasses import replace
    note = f"{name} found a placement outside this model ({what}) with value {value:.6g}; {hint}"
    return replace(placement, message="; ".join(filter(None, [placement.message, note])))


def add_symmetry_breaking(lp, x: dict, num_groups: int, sym_sets) -> None:
    """Order identical devices: device ``k`` may take group ``t`` only if device ``k-1``
    holds one of the groups before ``t`` (groups in topological order).

    ``x[(g, d)]`` are the assignment variables; ``sym_sets`` lists runs of
    interchangeable device indices (same class, unpinned).
    """
    for s_i, devs in enumerate(sym_sets):
        gl = [g for g in range(num_groups) if (g, devs[0]) in x]
        if not gl:
            continue
        for k in range(1, len(devs)):
            prev, cur = devs[k - 1], devs[k]
            lp += x[gl[0], cur] == 0
            run = None   # run_t = number of groups among gl[:t+1] on prev
            for t in range(1, len(gl)):
                y = lp.add_variable(f"sym_{s_i}_{k}_{t}", lowBound=0)
                lp += y == (x[gl[t - 1], prev] if run is None else run + x[gl[t - 1], prev])
                lp += x[gl[t], cur] <= y
                run = y
