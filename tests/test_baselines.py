"""The paper's baselines: every placement valid, claimed value = evaluator, never below the optimum."""
from __future__ import annotations

import json
import math
import threading

import pytest

from _ilp_brute import MAX_COMBOS, brute_force, combos
from viz_place.cost import evaluate
from viz_place.errors import InfeasibleError, PlacementError, SolverError
from viz_place.io import write_placement
from viz_place.model import Cluster, DeviceClass, OpGraph, Placement
from viz_place.samples import chain, load_sample
from viz_place.solvers import run_solver
from viz_place.solvers.milp import available_backends
from viz_place.testing import assert_valid, random_instance

THROUGHPUT = ("single-device", "topo-fill", "pipedream", "local-search")
BACKEND = "highs" if "highs" in available_backends() else "cbc"


@pytest.mark.parametrize("block", range(4))
def test_every_baseline_valid_and_never_below_the_optimum(block):
    """200 random instances; the optimum is brute force over all placements where small enough."""
    for seed in range(block * 50, block * 50 + 50):
        inst = random_instance(seed, n_max=5)
        small = combos(inst) <= MAX_COMBOS
        opt_tp = brute_force(inst, "throughput") if small else None
        opt_lat = brute_force(inst, "latency") if small else None
        for name in THROUGHPUT + ("greedy-latency",):
            try:
                p = run_solver(name, inst.graph, inst.cluster, pins=inst.pins)
            except InfeasibleError as err:
                assert str(err).startswith(name) or "infeasible" in str(err), err
                continue
            assert_valid(inst.graph, inst.cluster, p, inst.pins)
            assert p.solver == name and p.status == "heuristic"
            if small:
                assert opt_tp < math.inf
                ev = evaluate(inst.graph, inst.cluster, p)
                assert ev.max_load >= opt_tp - 1e-9, (seed, name)
                assert ev.latency >= opt_lat - 1e-9, (seed, name)


def test_baselines_raise_infeasible_only_when_needed():
    """On instances with a placement, the memory-aware fillers find one (no false infeasibility)."""
    for seed in range(60):
        inst = random_instance(seed, n_max=6)
        if combos(inst) > MAX_COMBOS or brute_force(inst, "throughput") == math.inf:
            continue
        # local search starts from random first-fit: it must find some placement on these instances
        assert_valid(inst.graph, inst.cluster, run_solver("local-search", inst.graph, inst.cluster, pins=inst.pins),
                     inst.pins)


def test_pipedream_is_optimal_on_a_chain():
    """On a chain, contiguous = intervals, so the chain DP equals the contiguous ILP's optimum."""
    g = chain(12, seed=3)
    c = Cluster.paper(3, 1, None)
    pd = run_solver("pipedream", g, c)
    ilp = run_solver("ilp", g, c, options={"backend": BACKEND, "time_limit": 60})
    assert ilp.status == "optimal"
    assert pd.claimed_value == pytest.approx(ilp.claimed_value, rel=1e-9)


def test_pipedream_respects_pins_and_memory():
    g = chain(8, seed=1)
    ids = g.node_ids
    c = Cluster((DeviceClass("fpga", "fpga", 2, memory=float(sum(g.node(n).size for n in ids)) * 0.6),
                 DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    pins = {ids[0]: "cpu:0", ids[-1]: "fpga:1"}
    p = run_solver("pipedream", g, c, pins=pins)
    assert_valid(g, c, p, pins)


def test_local_search_is_seeded_and_improves_on_its_start():
    g = load_sample("inception")
    c = g.default_cluster
    opts = {"seed": 7, "restarts": 2, "time_limit": 30, "max_passes": 5}
    a = run_solver("local-search", g, c, options=opts)
    b = run_solver("local-search", g, c, options=opts)
    assert dict(a.assignment) == dict(b.assignment)
    start = run_solver("topo-fill", g, c)
    assert a.claimed_value <= start.claimed_value + 1e-9
    assert_valid(g, c, a)


def test_local_search_keeps_colour_classes_pins_and_unsupported_ops():
    g = load_sample("residual_training")
    c = g.default_cluster
    first = g.node_ids[0]
    pins = {first: "fpga:2"}
    p = run_solver("local-search", g, c, pins=pins, options={"seed": 1, "restarts": 2, "time_limit": 20})
    assert_valid(g, c, p, pins)
    cc = g.node(first).color_class
    if cc is not None:
        assert {p[n] for n in g.node_ids if g.node(n).color_class == cc} == {"fpga:2"}


def test_local_search_cancel_returns_best_so_far():
    g = load_sample("transformer")
    stop = threading.Event()
    stop.set()   # cancelled at once: the start placement (topo-fill) is the incumbent
    p = run_solver("local-search", g, g.default_cluster, cancel=stop, options={"restarts": 1})
    assert p.status == "cancelled"
    assert p.claimed_value <= run_solver("topo-fill", g, g.default_cluster).claimed_value + 1e-9
    events = []
    stop2 = threading.Event()

    def progress(e):
        events.append(e)
        stop2.set()

    p = run_solver("local-search", g, g.default_cluster, progress=progress, cancel=stop2,
                   options={"restarts": 3, "time_limit": 30})
    assert p.status == "cancelled"
    assert_valid(g, g.default_cluster, p)


def test_greedy_latency_fills_accelerators_in_order():
    g = OpGraph.from_records([{"id": str(i), "latency": {"cpu": 5.0, "fpga": 1.0}, "size": 1.0, "transfer_cost": 0.5}
                              for i in range(5)], [(str(i), str(i + 1)) for i in range(4)])
    c = Cluster((DeviceClass("fpga", "fpga", 2, memory=2.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    p = run_solver("greedy-latency", g, c)
    assert [p[str(i)] for i in range(5)] == ["fpga:0", "fpga:0", "fpga:1", "fpga:1", "cpu:0"]
    assert p.objective == "latency"
    assert p.claimed_value == pytest.approx(evaluate(g, c, p).latency)


def test_single_device_and_its_reasons():
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 5.0, "fpga": 1.0}, "size": 3.0},
                              {"id": "b", "latency": {"cpu": 2.0}, "size": 1.0}], [("a", "b")])
    c = Cluster((DeviceClass("fpga", "fpga", 1, memory=10.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    p = run_solver("single-device", g, c)
    assert set(p.assignment.values()) == {"cpu:0"} and p.claimed_value == pytest.approx(7.0)
    with pytest.raises(InfeasibleError, match="fpga:0 cannot run node 'b'"):
        run_solver("single-device", g, c.without_class("cpu"))
    with pytest.raises(InfeasibleError, match="several devices"):
        run_solver("single-device", g, c, pins={"a": "fpga:0", "b": "cpu:0"})
    lat = run_solver("single-device", g, c, options={"objective": "latency"})
    assert lat.objective == "latency" and lat.claimed_value == pytest.approx(7.0)


def test_topo_fill_uses_all_devices_when_it_pays():
    g = chain(16, seed=2)
    c = Cluster.paper(4, 1, None)
    p = run_solver("topo-fill", g, c)
    assert len(set(p.assignment.values())) >= 3
    assert_valid(g, c, p)


def _expert(g, c, pins=None, **options):
    """``expert`` the way the CLI and the explorer run it: the caller reads the file, the solver does not."""
    from viz_place.solver_files import read_option_files
    return run_solver("expert", g, c, pins=pins, options=read_option_files("expert", g, c, options))


def test_expert_loads_a_split(tmp_path):
    g = load_sample("residual")
    c = g.default_cluster
    src = run_solver("topo-fill", g, c)
    path = tmp_path / "split.json"
    write_placement(path, g, c, src)
    p = _expert(g, c, path=str(path))
    assert dict(p.assignment) == dict(src.assignment)
    assert p.status == "manual" and p.claimed_value == pytest.approx(src.claimed_value)
    assert p.lower_bound is None and p.bound_set is None
    assert_valid(g, c, p)
    lat = _expert(g, c, path=str(path), objective="latency")
    assert lat.claimed_value == pytest.approx(evaluate(g, c, src).latency)
    with pytest.raises(SolverError, match="option 'assignment' is required") as err:
        run_solver("expert", g, c)
    assert err.value.field == "assignment"
    with pytest.raises(SolverError, match="solvers read no files") as err:   # the solver itself never opens it
        run_solver("expert", g, c, options={"path": str(path)})
    assert err.value.field == "path"
    same = run_solver("expert", g, c, options={"assignment": dict(src.assignment)})
    assert dict(same.assignment) == dict(src.assignment)
    other = next(d for d in c.device_names if d != src[g.node_ids[0]])
    with pytest.raises(PlacementError, match="is pinned to") as err:
        _expert(g, c, pins={g.node_ids[0]: other}, path=str(path))
    assert err.value.node == g.node_ids[0] and err.value.device == other


def test_expert_reports_violations_instead_of_fixing_them(tmp_path):
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "fpga": 1.0}, "size": 5.0}], [])
    c = Cluster((DeviceClass("fpga", "fpga", 1, memory=1.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"assignment": {"a": "fpga:0"}}))
    p = _expert(g, c, path=str(path))
    assert p["a"] == "fpga:0" and "memory over capacity" in p.message


def test_expert_splits_of_the_paper(workloads):
    from viz_place.io import load_graph
    for name in ("bert24_inference", "resnet50_inference"):
        g = load_graph(workloads / "throughput-inputs" / "LayerGraphs" / f"{name}.json")
        c = g.default_cluster
        p = _expert(g, c, path=str(workloads / "human-experts" / f"{name}_expert.json"))
        assert p.claimed_value == pytest.approx(evaluate(g, c, p).max_load)
        dp = run_solver("pipedream", g, c)
        assert_valid(g, c, dp)


def _best_chain_split(inst) -> float:
    """Brute force: every device holds one interval of the group order (or nothing)."""
    import itertools

    import numpy as np

    from viz_place.cost import compile_problem, evaluate_indices
    prob = compile_problem(inst.graph, inst.cluster)
    best = math.inf
    for combo in itertools.product(range(prob.num_devices), repeat=len(prob.groups)):
        seen, prev, ok = set(), None, True
        for d in combo:
            if d != prev:
                if d in seen:
                    ok = False
                    break
                seen.add(d)
            prev = d
        if not ok:
            continue
        dev = np.empty(prob.n, dtype=np.int64)
        for g, d in enumerate(combo):
            dev[list(prob.groups[g])] = d
        ev = evaluate_indices(prob, dev, pins=inst.pins)
        if not ev.violations:
            best = min(best, ev.max_load)
    return best


def test_pipedream_is_the_best_chain_split():
    checked = 0
    for seed in range(500, 560):
        inst = random_instance(seed, n_max=5)
        if combos(inst) > MAX_COMBOS:
            continue
        best = _best_chain_split(inst)
        try:
            p = run_solver("pipedream", inst.graph, inst.cluster, pins=inst.pins)
        except InfeasibleError:
            assert best == math.inf, seed
            continue
        assert p.claimed_value == pytest.approx(best, abs=1e-9), seed
        checked += 1
    assert checked >= 15
