"""The DP against a brute force over every contiguous placement of small random instances.

The brute force shares no code with the DP: it assigns the forward colour
groups of the graph to device instances in every way (instances of one class
that carry no pin are interchangeable, so only canonical labellings are
tried), keeps the placements whose device sets can be ordered as a chain of
ideals of the forward graph (device quotient graph acyclic), puts backward
nodes with their colour class, and takes the smallest max-load that
``evaluate`` reports among placements with no violation.
"""
from __future__ import annotations

import math

import networkx as nx
import pytest

from viz_place.cost import evaluate
from viz_place.errors import InfeasibleError, PlacementError
from viz_place.model import OpGraph
from viz_place.solvers import run_solver
from viz_place.testing import assert_valid, random_instance


def forward_order_graph(graph: OpGraph) -> nx.DiGraph:
    """Forward nodes, edges between them, and the paper's mirrored edges for orphaned backward classes."""
    g = graph.nx
    fwd = [n for n in graph.node_ids if not graph.node(n).backward]
    dg = nx.DiGraph()
    dg.add_nodes_from(fwd)
    dg.add_edges_from((u, v) for u, v in g.edges if u in dg and v in dg)
    twin = {}
    for n in fwd:
        cc = graph.node(n).color_class
        if cc is not None and graph.node(n).artificial:
            twin[cc] = n
    for u, v, a in g.edges(data=True):
        nu, nv = graph.node(u), graph.node(v)
        if nu.backward and nv.backward and (nu.color_class in twin or nv.color_class in twin):
            fu = _forward_of(graph, nu.color_class)
            fv = _forward_of(graph, nv.color_class)
            if fu != fv:
                dg.add_edge(fv, fu)
    return dg


def _forward_of(graph: OpGraph, cc: str) -> str:
    return next(n for n in graph.node_ids if not graph.node(n).backward and graph.node(n).color_class == cc)


def brute_force(graph: OpGraph, cluster, pins) -> float:
    dg = forward_order_graph(graph)
    groups: list[list[str]] = []
    by_cc: dict[str, list[str]] = {}
    for n in nx.lexicographical_topological_sort(dg):
        cc = graph.node(n).color_class
        if cc is None:
            groups.append([n])
        elif cc in by_cc:
            by_cc[cc].append(n)
        else:
            by_cc[cc] = [n]
            groups.append(by_cc[cc])
    pinned = set(pins.values())
    riders = {}  # every node of a forward group's colour classes (backward twins too), for early pruning
    for grp in groups:
        ccs = {graph.node(n).color_class for n in grp} - {None}
        riders[grp[0]] = list(grp) + [m for m in graph.node_ids
                                      if graph.node(m).backward and graph.node(m).color_class in ccs]
    mem: dict[str, float] = {}
    best = math.inf
    assign: dict[str, str] = {}

    def options(used: set[str]) -> list[str]:
        out = [d for d in used]
        for cls in cluster.classes:
            free = [d for d in cls.instance_names() if d not in used and d not in pinned]
            if free:
                out.append(free[0])
            out.extend(d for d in cls.instance_names() if d in pinned and d not in used)
        return out

    def leaf() -> None:
        nonlocal best
        q = nx.DiGraph()
        q.add_nodes_from(set(assign.values()))
        q.add_edges_from((assign[u], assign[v]) for u, v in dg.edges if assign[u] != assign[v])
        if not nx.is_directed_acyclic_graph(q):
            return
        full = {}
        for n in graph.node_ids:
            full[n] = assign[n] if n in assign else assign[_forward_of(graph, graph.node(n).color_class)]
        ev = evaluate(graph, cluster, full, pins=pins)
        if not ev.violations:
            best = min(best, ev.max_load)

    def rec(k: int, used: set[str]) -> None:
        if k == len(groups):
            leaf()
            return
        members = riders[groups[k][0]]
        need = sum(graph.node(n).size for n in members)
        for d in options(used):
            cls = cluster.device_class_of(d)
            if any(n in pins and pins[n] != d for n in members):
                continue
            if any(cls.kind not in graph.node(n).latency for n in members):
                continue
            if cls.memory is not None and mem.get(d, 0.0) + need > cls.memory * (1 + 1e-9):
                continue
            for n in groups[k]:
                assign[n] = d
            mem[d] = mem.get(d, 0.0) + need
            rec(k + 1, used | {d})
            mem[d] -= need
        for n in groups[k]:
            assign.pop(n, None)

    rec(0, set())
    return best


def _check(inst, options=None) -> None:
    """The DP's optimum is the brute force's, both ways it runs: one pass with no threshold (small problems) and
    an upper bound first, then the pruned threshold pass (larger ones; forced here)."""
    import viz_place.solvers.dp.solver as dp_solver
    expected = brute_force(inst.graph, inst.cluster, inst.pins)
    small = dp_solver.SMALL_IDEALS
    try:
        for dp_solver.SMALL_IDEALS in (small, 0):
            if math.isinf(expected):
                with pytest.raises((InfeasibleError, PlacementError)):
                    run_solver("dp", inst.graph, inst.cluster, pins=inst.pins, options=options)
                continue
            p = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins, options=options)
            assert p.status == "optimal"
            assert_valid(inst.graph, inst.cluster, p, inst.pins, objective="throughput")
            assert math.isclose(p.claimed_value, expected, rel_tol=1e-9, abs_tol=1e-12), \
                (inst, p.claimed_value, expected, dp_solver.SMALL_IDEALS)
    finally:
        dp_solver.SMALL_IDEALS = small


@pytest.mark.parametrize("seed", range(220))
def test_dp_equals_brute_force(seed):
    _check(random_instance(seed, n_max=7))


@pytest.mark.parametrize("seed", range(1000, 1060))
def test_dp_equals_brute_force_training(seed):
    _check(random_instance(seed, n_max=5, training=True))


@pytest.mark.parametrize("seed", range(2000, 2030))
def test_dp_equals_brute_force_three_classes(seed):
    _check(random_instance(seed, n_max=6, n_classes=3))


@pytest.mark.parametrize("seed", [152, 368])
def test_threshold_passes_without_upper_bound(seed, monkeypatch):
    """Instances where a one-order prefix split breaks memory: the DP grows its threshold pass by pass (on small
    instances too, which otherwise run one pass with no threshold)."""
    import viz_place.solvers.dp.solver as dp_solver
    monkeypatch.setattr(dp_solver, "SMALL_IDEALS", 0)
    options = {"heuristic_orders": 1, "local_search_rounds": 0}
    inst = random_instance(seed, n_max=7)
    p = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins, options=options)
    assert math.isinf(p.options["stats"]["upper_bound"]) and p.options["stats"]["passes"] > 1
    _check(inst, options)


def _with_changes(inst, change):
    nodes, edges = inst.graph.to_records()
    nodes = [dict(n) for n in nodes if not n.get("artificial")]
    change(nodes, edges)
    g = OpGraph.from_records(nodes, [(e["source"], e["target"]) for e in edges], name=inst.graph.name)
    inst.graph = g
    inst.pins = {n: d for n, d in inst.pins.items() if g.has_node(n)}
    return inst


@pytest.mark.parametrize("seed", range(3000, 3030))
def test_zero_cost_leaves(seed):
    """Zero-latency, zero-size nodes (merged by the preprocessing) keep the optimum."""
    inst = random_instance(seed, n_max=6, pins=False)

    def change(nodes, edges):
        for n in nodes[::2]:
            n["latency"] = {k: 0.0 for k in n["latency"]}
            n["size"] = 0.0
    _check(_with_changes(inst, change))


@pytest.mark.parametrize("seed", range(4000, 4030))
def test_orphaned_backward_classes(seed):
    """Backward nodes without a forward twin get an artificial twin and the mirrored order edges."""
    inst = random_instance(seed, n_max=4, training=True, pins=False)

    def change(nodes, edges):
        for n in nodes:
            if n.get("backward") and int(n["id"].rstrip("b")) in (0, 3):
                n["color_class"] = f"orphan_{n['id']}"
    _check(_with_changes(inst, change))
