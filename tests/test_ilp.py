"""Throughput integer programs (``ilp``, ``ilp-noncontig``) and the MILP adapter.

Exactness against brute force and the DP on many small random instances; honest
status (optimal / feasible with gap / infeasible with reason / no solution in
time / cancelled with the incumbent); time limit; both back-ends.
"""
from __future__ import annotations

import math
import threading
import time

import pulp
import pytest

from _ilp_brute import MAX_COMBOS, brute_force, combos
from viz_place.cost import compile_problem, evaluate
from viz_place.errors import InfeasibleError, SolverError
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.samples import load_sample
from viz_place.solvers import list_solvers, run_solver
from viz_place.solvers.groups import device_cycle, nonconvex_devices
from viz_place.solvers.milp import MilpResult, available_backends, solve_milp
from viz_place.testing import assert_valid, random_instance

HIGHS = {"backend": "highs", "time_limit": 30}
need_highs = pytest.mark.skipif("highs" not in available_backends(), reason="highspy is not installed")


def _solve(name, inst, **opts):
    return run_solver(name, inst.graph, inst.cluster, pins=inst.pins, options={**HIGHS, **opts})


def _has(name: str) -> bool:
    return any(s.name == name for s in list_solvers())


@need_highs
@pytest.mark.parametrize("block", range(10))
def test_random_instances_exact_and_ordered(block):
    """200 instances: valid, claimed = evaluator, noncontig <= convex <= pipeline = DP, each = brute force where small."""
    if not _has("dp"):
        pytest.skip("solver 'dp' is not registered yet: the pipeline ILP = DP comparison needs it")
    for seed in range(block * 20, block * 20 + 20):
        inst = random_instance(seed, n_max=6)
        try:
            contig = _solve("ilp", inst)
        except InfeasibleError as err:
            assert "infeasible" in str(err)
            with pytest.raises(InfeasibleError):
                run_solver("dp", inst.graph, inst.cluster, pins=inst.pins)
            continue
        convex = _solve("ilp", inst, device_cycles=True)
        non = _solve("ilp-noncontig", inst)
        for p in (contig, convex, non):
            assert_valid(inst.graph, inst.cluster, p, inst.pins)
            assert p.status == "optimal", (seed, p.message)
        assert "optimal among pipeline splits" in contig.message
        assert "optimal among per-device convex sets" in convex.message
        assert "optimal over all placements" in non.message
        prob = compile_problem(inst.graph, inst.cluster)
        fwd = [not b for b in prob.backward.tolist()]
        assert device_cycle(prob, prob.to_index_array(contig)) is None, seed
        assert not nonconvex_devices(prob, prob.to_index_array(convex), fwd), seed
        assert non.claimed_value <= convex.claimed_value + 1e-9 <= contig.claimed_value + 2e-9, seed
        dp = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins)
        assert contig.claimed_value == pytest.approx(dp.claimed_value, rel=1e-9, abs=1e-9), seed
        if combos(inst) <= MAX_COMBOS:
            assert math.isclose(contig.claimed_value, brute_force(inst, "throughput", contiguous="pipeline"),
                                rel_tol=1e-9, abs_tol=1e-9), seed
            assert math.isclose(convex.claimed_value, brute_force(inst, "throughput", contiguous="forward"),
                                rel_tol=1e-9, abs_tol=1e-9), seed
            assert math.isclose(non.claimed_value, brute_force(inst, "throughput"), rel_tol=1e-9, abs_tol=1e-9), seed


@need_highs
def test_training_objective_max_forward_plus_max_backward():
    checked = 0
    for seed in range(40):
        inst = random_instance(seed, n_max=4, training=True, pins=False)
        if combos(inst) > MAX_COMBOS:
            continue
        p = _solve("ilp-noncontig", inst, objective="max_forward_plus_max_backward")
        assert p.objective == "max_forward_plus_max_backward"
        assert_valid(inst.graph, inst.cluster, p, inst.pins)
        ev = evaluate(inst.graph, inst.cluster, p)
        assert p.claimed_value == pytest.approx(ev.max_forward_plus_max_backward, rel=1e-9)
        assert p.claimed_value == pytest.approx(brute_force(inst, "max_forward_plus_max_backward"), abs=1e-9)
        checked += 1
    assert checked >= 10


def test_cbc_agrees_with_brute_force():
    """The default back-end (CBC) on a few instances, including a warm start and symmetry breaking."""
    checked = 0
    for seed in range(0, 60, 3):
        inst = random_instance(seed, n_max=5)
        if combos(inst) > MAX_COMBOS:
            continue
        try:
            p = run_solver("ilp-noncontig", inst.graph, inst.cluster, pins=inst.pins, options={"time_limit": 30})
        except InfeasibleError:
            assert brute_force(inst, "throughput") == math.inf
            continue
        assert p.options["backend"] == "cbc"
        assert_valid(inst.graph, inst.cluster, p, inst.pins)
        assert p.status == "optimal"
        assert p.claimed_value == pytest.approx(brute_force(inst, "throughput"), abs=1e-9)
        checked += 1
    assert checked >= 5


def test_without_warm_start_or_symmetry_breaking_same_optimum():
    inst = random_instance(8, n_max=6)
    a = _solve("ilp", inst, warm_start=False, symmetry_breaking=False, backend="cbc")
    b = _solve("ilp", inst)
    assert a.status == b.status == "optimal"
    assert a.claimed_value == pytest.approx(b.claimed_value)


def _big():
    g = load_sample("transformer")
    return g, g.default_cluster


@pytest.mark.parametrize("backend", ["cbc", pytest.param("highs", marks=need_highs)])
def test_time_limit_honoured_with_honest_status(backend):
    g, c = _big()
    t0 = time.perf_counter()
    p = run_solver("ilp-noncontig", g, c, options={"backend": backend, "time_limit": 2})
    wall = time.perf_counter() - t0
    assert wall < 2 + 4, wall
    assert p.status in ("feasible", "optimal")
    if p.status == "feasible":
        assert "gap" in p.message
    assert_valid(g, c, p)


@pytest.mark.parametrize("backend", ["cbc", pytest.param("highs", marks=need_highs)])
def test_cancel_returns_the_incumbent(backend):
    g, c = _big()
    stop = threading.Event()
    seen = []

    def progress(ev):
        seen.append(ev)
        if ev.incumbent is not None:
            stop.set()

    threading.Timer(8.0, stop.set).start()   # in case no incumbent is reported first
    t0 = time.perf_counter()
    p = run_solver("ilp", g, c, options={"backend": backend, "time_limit": 60}, progress=progress, cancel=stop)
    assert time.perf_counter() - t0 < 15
    assert p.status in ("cancelled", "optimal")
    assert_valid(g, c, p)
    assert any(e.incumbent is not None for e in seen)


def test_infeasible_instances_say_why():
    g = OpGraph.from_records([{"id": "a", "latency": {"fpga": 1.0}, "size": 5.0},
                              {"id": "b", "latency": {"fpga": 1.0}, "size": 5.0}], [("a", "b")])
    one = Cluster((DeviceClass("fpga", "fpga", 2, memory=4.0),))
    with pytest.raises(InfeasibleError, match=r"node 'a'.*memory 5 exceeds the capacity"):
        run_solver("ilp", g, one)
    two = Cluster((DeviceClass("fpga", "fpga", 1, memory=8.0),))
    with pytest.raises(InfeasibleError, match=r"memory"):
        run_solver("ilp-noncontig", g, two, options={"warm_start": False})
    with pytest.raises(InfeasibleError, match=r"pinned to fpga:0: unsupported"):
        h = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}, "color_class": "k"},
                                  {"id": "b", "latency": {"fpga": 1.0, "cpu": 1.0}, "color_class": "k"}], [])
        run_solver("ilp", h, Cluster.paper(1, 1, None), pins={"b": "fpga:0"})


def test_pinned_random_infeasible_instance():
    inst = random_instance(27, n_max=6)   # a node pinned where it does not fit
    with pytest.raises(InfeasibleError, match="cannot be placed pinned to"):
        _solve("ilp", inst)


def test_no_solution_in_time_is_an_error_naming_it(monkeypatch):
    import viz_place.solvers.milp.max_load as mod
    monkeypatch.setattr(mod, "solve_milp", lambda *a, **k: MilpResult("no solution", "cbc", stopped_by="time limit",
                                                                      bound=3.0))
    inst = random_instance(3)
    with pytest.raises(SolverError, match="no solution in time.*best bound 3"):
        run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins, options={"warm_start": False})
    # with a warm start the heuristic placement comes back, honestly labelled
    p = run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins)
    assert p.status == "feasible" and "warm start" in p.message and "gap" in p.message
    assert_valid(inst.graph, inst.cluster, p, inst.pins)


def test_options_are_validated():
    inst = random_instance(3)
    with pytest.raises(SolverError, match="gap"):
        run_solver("ilp", inst.graph, inst.cluster, options={"gap": 2.0})
    with pytest.raises(SolverError, match="backend"):
        run_solver("ilp", inst.graph, inst.cluster, options={"backend": "gurobi"})
    with pytest.raises(SolverError, match="objective"):
        run_solver("ilp", inst.graph, inst.cluster, options={"objective": "latency"})


def test_placement_carries_no_pulp_objects():
    inst = random_instance(5)
    p = _solve("ilp", inst) if "highs" in available_backends() else run_solver("ilp", inst.graph, inst.cluster,
                                                                                pins=inst.pins)
    for v in list(p.options.values()) + [p.claimed_value, p.message, *p.assignment.values()]:
        assert not type(v).__module__.startswith("pulp")


# ---------------------------------------------------------------- the adapter
def _knapsack(n=60, seed=1):
    import random
    rnd = random.Random(seed)
    lp = pulp.LpProblem("hard", pulp.LpMinimize)
    xs = [[lp.add_variable(f"x_{i}_{j}", cat="Binary") for j in range(6)] for i in range(n)]
    t = lp.add_variable("T")
    lp += t
    w = [rnd.randint(100, 10000) for _ in range(n)]
    for i in range(n):
        lp += pulp.lpSum(xs[i]) == 1
    for j in range(6):
        lp += pulp.lpSum(w[i] * xs[i][j] for i in range(n)) <= t
    return lp, sum(w) / 6


@pytest.mark.parametrize("backend", ["cbc", pytest.param("highs", marks=need_highs)])
def test_adapter_statuses(backend):
    lp = pulp.LpProblem("small", pulp.LpMinimize)
    x, y = lp.add_variable("x", cat="Binary"), lp.add_variable("y", cat="Binary")
    lp += 3 * x + 2 * y
    lp += x + y >= 1
    r = solve_milp(lp, backend=backend, time_limit=10)
    assert (r.status, r.objective, r.values["y"]) == ("optimal", 2.0, 1.0)
    lp += x + y <= 0
    assert solve_milp(lp, backend=backend, time_limit=10).status == "infeasible"


@pytest.mark.parametrize("backend", ["cbc", pytest.param("highs", marks=need_highs)])
def test_adapter_time_limit_cancel_and_warm_start(backend):
    lp, lower = _knapsack()
    t0 = time.perf_counter()
    r = solve_milp(lp, backend=backend, time_limit=1.0)
    assert time.perf_counter() - t0 < 4
    assert r.has_solution and r.stopped_by in ("time limit", None)
    assert r.bound is None or r.bound <= r.objective + 1e-6
    assert r.objective >= lower - 1e-6
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    from viz_place.solvers.base import Hooks
    r2 = solve_milp(_knapsack()[0], backend=backend, time_limit=60, hooks=Hooks(None, stop))
    assert r2.stopped_by == "cancel" and r2.has_solution
    warm = {name: val for name, val in r.values.items() if name.startswith("x_")}
    r3 = solve_milp(_knapsack()[0], backend=backend, time_limit=0.5, warm_start=warm)
    assert r3.has_solution and r3.objective <= r.objective + 1e-6


def test_adapter_rejects_unknown_backend():
    lp, _ = _knapsack(3)
    with pytest.raises(SolverError, match="unknown MILP back-end"):
        solve_milp(lp, backend="gurobi")


def _with_artificial_edges(seed):
    """A random instance where every other edge is artificial (no data, no cost; still ordering)."""
    import networkx as nx
    inst = random_instance(seed, n_max=5, training=False)
    g = nx.DiGraph(inst.graph.nx)
    for k, (u, v) in enumerate(list(g.edges)):
        g.edges[u, v]["artificial"] = k % 2 == 0
    inst.graph = OpGraph(g, name=f"artificial_{seed}")
    return inst


def test_artificial_edges_carry_no_cost_but_order():
    checked = 0
    for seed in range(300, 340):
        inst = _with_artificial_edges(seed)
        if combos(inst) > MAX_COMBOS or not any(a for *_, a in inst.graph.nx.edges(data="artificial")):
            continue
        try:
            contig = _solve("ilp", inst) if "highs" in available_backends() else None
        except InfeasibleError:
            continue
        if contig is None:
            pytest.skip("highspy is not installed")
        non = _solve("ilp-noncontig", inst)
        lat = _solve("latency-ilp", inst)
        for p in (contig, non, lat):
            assert_valid(inst.graph, inst.cluster, p, inst.pins)
        assert contig.claimed_value == pytest.approx(brute_force(inst, "throughput", contiguous="forward"), abs=1e-9)
        assert non.claimed_value == pytest.approx(brute_force(inst, "throughput"), abs=1e-9)
        assert lat.claimed_value == pytest.approx(brute_force(inst, "latency", contiguous="accelerators"), abs=1e-9)
        checked += 1
    assert checked >= 8


@need_highs
def test_overlap_option_matches_the_evaluator_with_overlap():
    """Appendix G: load = max(compute, communication); the claimed value is evaluate(..., overlap=True)'s."""
    checked = 0
    for seed in range(400, 440):
        inst = random_instance(seed, n_max=5)
        if combos(inst) > MAX_COMBOS:
            continue
        for objective, training_only in (("max_load", False), ("max_forward_plus_max_backward", True)):
            if training_only and not inst.graph.is_training:
                continue
            try:
                p = _solve("ilp-noncontig", inst, overlap=True, objective=objective)
            except InfeasibleError:
                break
            ev = evaluate(inst.graph, inst.cluster, p, pins=inst.pins, overlap=True)
            assert not ev.violations
            name = "throughput" if objective == "max_load" else objective
            assert p.claimed_value == pytest.approx(ev.value(name), rel=1e-9)
            assert p.claimed_value == pytest.approx(brute_force(inst, name, overlap=True), abs=1e-9), seed
            assert p.claimed_value <= evaluate(inst.graph, inst.cluster, p).value(name) + 1e-9
            checked += 1
    assert checked >= 10


@need_highs
def test_highs_runs_with_different_thread_counts_in_one_process():
    """HiGHS keeps one scheduler per process and refused ("Not Set") a run asking for another thread
    count than the first; the adapter restarts the scheduler when the count changes."""
    for threads in (0, 1, 2, 1, 0):
        lp, lower = _knapsack()
        r = solve_milp(lp, backend="highs", time_limit=5, threads=threads)
        assert r.has_solution and r.objective >= lower - 1e-6, (threads, r.status, r.message)
