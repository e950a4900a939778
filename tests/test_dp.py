"""The throughput DP: errors, options, hooks, CLI, and every published throughput workload."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from viz_place.cost import evaluate
from viz_place.errors import InfeasibleError, PlacementError, SolverError
from viz_place.io import load_graph
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.solvers import get_solver, run_solver
from viz_place.solvers.dp import DPOptions
from viz_place.solvers.dp.ideals import enumerate_ideals
from viz_place.solvers.dp.contraction import contract
from viz_place.testing import assert_valid

WORKLOADS = Path(__file__).resolve().parents[2] / "shared" / "workloads" / "throughput-inputs"
REPO = Path(__file__).resolve().parents[1]


def chain(n: int, *, cpu=4.0, fpga=1.0, size=1.0, tc=0.5) -> OpGraph:
    nodes = [{"id": f"n{i}", "latency": {"cpu": cpu, "fpga": fpga}, "size": size, "transfer_cost": tc}
             for i in range(n)]
    return OpGraph.from_records(nodes, [(f"n{i}", f"n{i + 1}") for i in range(n - 1)])


def test_registered_as_exact_throughput_solver():
    info = get_solver("dp")
    assert info.objective == "max_load" and info.exact


def test_chain_splits_evenly():
    g = chain(4)
    p = run_solver("dp", g, Cluster.paper(2, 1, None))
    # two fpgas with two nodes each: compute 2 + one transfer each side 0.5
    assert p.claimed_value == pytest.approx(2.5)
    assert p.status == "optimal"
    assert_valid(g, Cluster.paper(2, 1, None), p, objective="throughput")


def test_memory_too_small_is_infeasible_with_reason():
    g = chain(3, size=5.0)
    cluster = Cluster((DeviceClass("fpga", "fpga", 2, memory=4.0),))
    with pytest.raises(InfeasibleError, match=r"node .n0. fit\(s\) on no device \(size 5\).*memory 4"):
        run_solver("dp", g, cluster)


def test_memory_too_small_overall_is_infeasible():
    g = chain(3, size=3.0)
    cluster = Cluster((DeviceClass("fpga", "fpga", 2, memory=4.0),))
    with pytest.raises(InfeasibleError, match="no contiguous placement"):
        run_solver("dp", g, cluster)


def test_pins_contradicting_contiguity_are_infeasible():
    # a and c share a colour class; b lies between them, so b must share their device
    g = OpGraph.from_records(
        [{"id": "a", "latency": {"cpu": 1.0}, "color_class": "x"}, {"id": "b", "latency": {"cpu": 1.0}},
         {"id": "c", "latency": {"cpu": 1.0}, "color_class": "x"}], [("a", "b"), ("b", "c")])
    cluster = Cluster((DeviceClass("cpu", "cpu", 2, pays_communication=False),))
    with pytest.raises(InfeasibleError, match=r"'b'.*must share a device"):
        run_solver("dp", g, cluster, pins={"a": "cpu:0", "b": "cpu:1"})


def test_pins_splitting_a_colour_class_are_rejected():
    g = OpGraph.from_records(
        [{"id": "a", "latency": {"cpu": 1.0}, "color_class": "x"}, {"id": "b", "latency": {"cpu": 1.0}, "color_class": "x"}],
        [("a", "b")])
    cluster = Cluster((DeviceClass("cpu", "cpu", 2, pays_communication=False),))
    with pytest.raises(PlacementError, match="colour class"):
        run_solver("dp", g, cluster, pins={"a": "cpu:0", "b": "cpu:1"})


def test_pins_are_honoured():
    g = chain(4)
    cluster = Cluster.paper(2, 1, None)
    pins = {"n3": "fpga:0", "n0": "fpga:1"}
    p = run_solver("dp", g, cluster, pins=pins)
    assert p["n3"] == "fpga:0" and p["n0"] == "fpga:1"
    assert_valid(g, cluster, p, pins, objective="throughput")


def test_unsupported_everywhere_is_infeasible():
    g = OpGraph.from_records([{"id": "a", "latency": {"tpu": 1.0}}, {"id": "b", "latency": {"cpu": 1.0}}], [("a", "b")])
    with pytest.raises(InfeasibleError, match=r"node 'a' fit\(s\) on no device.*fpga: cannot run it; cpu: cannot run it"):
        run_solver("dp", g, Cluster.paper(1, 1, None))


def test_pinned_node_too_big_for_its_device():
    g = chain(2, size=5.0)
    cluster = Cluster((DeviceClass("fpga", "fpga", 2, memory=4.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    with pytest.raises(InfeasibleError, match=r"node 'n0'.*pinned to fpga:1.*fpga:1: memory 4; cpu: its pin is elsewhere"):
        run_solver("dp", g, cluster, pins={"n0": "fpga:1"})


def test_zero_cost_leaves_option():
    # a zero-cost weight node feeding each layer; memory could bind, so 'safe' keeps them separate
    nodes, edges = [], []
    for i in range(4):
        nodes += [{"id": f"n{i}", "latency": {"cpu": 4.0, "fpga": 1.0}, "size": 1.0, "transfer_cost": 0.5},
                  {"id": f"w{i}", "latency": {"cpu": 0.0, "fpga": 0.0}, "size": 1.0, "transfer_cost": 0.5}]
        edges.append((f"w{i}", f"n{i}"))
        if i:
            edges.append((f"n{i - 1}", f"n{i}"))
    g = OpGraph.from_records(nodes, edges)
    cluster = Cluster.paper(2, 1, 5.0)
    safe = run_solver("dp", g, cluster)
    always = run_solver("dp", g, cluster, options={"zero_cost_leaves": "always"})
    off = run_solver("dp", g, cluster, options={"zero_cost_leaves": "off"})
    assert safe.status == off.status == "optimal" and always.status == "feasible"
    assert safe.claimed_value == pytest.approx(off.claimed_value)
    assert always.claimed_value >= safe.claimed_value - 1e-12
    assert safe.options["stats"]["supernodes"] == 8 and always.options["stats"]["supernodes"] == 4
    for p in (safe, always, off):
        assert_valid(g, cluster, p, objective="throughput")


def test_too_many_ideals_says_what_to_do():
    # 14 independent nodes: 2**14 ideals
    nodes = [{"id": f"n{i}", "latency": {"cpu": 1.0}, "layer": str(i // 7)} for i in range(14)]
    g = OpGraph.from_records(nodes, [])
    cluster = Cluster((DeviceClass("cpu", "cpu", 2, pays_communication=False),))
    with pytest.raises(SolverError, match=r"more than 1,000 ideals.*contract_layers.*linearize.*ilp"):
        run_solver("dp", g, cluster, options={"max_ideals": 1000})
    p = run_solver("dp", g, cluster, options={"max_ideals": 1000, "contract_layers": True})
    assert p.claimed_value == pytest.approx(7.0) and p.status == "feasible"
    p = run_solver("dp", g, cluster, options={"max_ideals": 1000, "linearize": True})
    assert p.claimed_value == pytest.approx(7.0) and "topological order" in p.message
    assert_valid(g, cluster, p, objective="throughput")


def test_linearize_gives_prefix_ideals_only():
    g = OpGraph.from_records([{"id": f"n{i}", "latency": {"cpu": 1.0}} for i in range(6)], [])
    ct = contract(g, Cluster.paper(1, 1, None), linearize=True)
    assert enumerate_ideals(ct.num, ct.pred_masks, ct.succ_lists).count == 7


def test_options_are_validated():
    with pytest.raises(SolverError, match="max_ideals"):
        DPOptions(max_ideals=0)
    with pytest.raises(SolverError, match="unknown option"):
        run_solver("dp", chain(2), Cluster.paper(1, 1, None), options={"speed": 2})


def test_progress_and_cancel():
    g = OpGraph.from_records([{"id": f"n{i}", "latency": {"cpu": 1.0 + i, "fpga": 1.0}, "transfer_cost": 0.1}
                              for i in range(12)], [])
    cluster = Cluster.paper(3, 1, None)
    events = []
    p = run_solver("dp", g, cluster, progress=events.append)
    assert events and events[-1].fraction == 1.0
    fired = threading.Event()
    fired.set()
    p2 = run_solver("dp", g, cluster, cancel=fired)
    assert p2.status == "cancelled"
    assert_valid(g, cluster, p2)
    assert p2.claimed_value >= p.claimed_value - 1e-12


def test_cli_json(tmp_path):
    g = chain(5)
    path = tmp_path / "g.json"
    from viz_place.io import graph_to_paper_dict
    data = graph_to_paper_dict(g, Cluster.paper(2, 1, None))
    path.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-m", "viz_place", "solve", str(path), "--solver", "dp", "--json"],
                         capture_output=True, text=True, cwd=REPO, check=True)
    row = json.loads(out.stdout)
    assert row["solver"] == "dp" and row["objective"] == "max_load" and row["status"] == "optimal"
    assert row["value"] == pytest.approx(row["max_load"]) and row["seconds"] >= 0


def _workloads():
    if not WORKLOADS.is_dir():
        return []
    return sorted(WORKLOADS.glob("*/*.json"))


def _ids(paths):
    return [f"{p.parent.name}/{p.stem}" for p in paths]


ALL_PATHS = _workloads()


def _solve_workload(path):
    g = load_graph(path)
    cluster = g.default_cluster
    p = run_solver("dp", g, cluster)
    assert p.status == "optimal"
    assert_valid(g, cluster, p, objective="throughput")
    # optimal contiguous <= a contiguous split along the graph's own topological order
    ev_line = evaluate(g, cluster, run_solver("dp", g, cluster, options={"linearize": True}))
    assert p.claimed_value <= ev_line.max_load * (1 + 1e-9)
    # ... and <= the human experts' split, where the authors published one
    expert = WORKLOADS.parent / "human-experts" / f"{path.stem}_expert.json"
    if path.parent.name == "LayerGraphs" and expert.exists():
        from viz_place.io import read_paper_split
        ev_expert = evaluate(g, cluster, read_paper_split(expert, g, cluster))
        assert ev_expert.feasible and p.claimed_value <= ev_expert.max_load * (1 + 1e-9)
    return p


@pytest.mark.skipif(not WORKLOADS.is_dir(), reason="published workloads not found next to the repository")
@pytest.mark.parametrize("path", ALL_PATHS, ids=_ids(ALL_PATHS))
def test_workload_reaches_optimum(path):
    _solve_workload(path)


def _unpruned_optimum(graph, cluster, pins=None):
    """The same recursion with no threshold, no state bounds and all ideals (pruning cross-check)."""
    from viz_place.cost import compile_problem
    from viz_place.solvers.dp import recursion as dp_core, solver as dp
    prob = compile_problem(graph, cluster)
    pins = pins or {}
    ct = contract(graph, cluster, pins=pins)
    classes = dp._dp_classes(cluster, pins, prob)
    pin_of = dp._check_pins(graph, ct, prob, pins)
    lat, size, forbid = dp._supernode_tables(graph, prob, ct, classes, pin_of)
    ids = enumerate_ideals(ct.num, ct.pred_masks, ct.succ_lists)
    t = dp_core.Tables.build(ids, succs=ct.succ_lists, lat=lat, size=size, forbid=forbid,
                             hyperedges=dp._hyperedges(prob, ct), counts=[c.count for c in classes],
                             pays=[c.pays for c in classes], link=[c.link for c in classes],
                             cap=[c.cap for c in classes])
    return dp_core.run(t, math.inf).value


@pytest.mark.parametrize("seed", range(40))
def test_pruned_equals_unpruned_on_medium_instances(seed, monkeypatch):
    import viz_place.solvers.dp.solver as dp_solver
    from viz_place.testing import random_instance
    monkeypatch.setattr(dp_solver, "SMALL_IDEALS", 0)      # the upper bound and the pruned pass, not one plain pass
    inst = random_instance(10_000 + seed, n_min=10, n_max=16)
    try:
        p = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins)
    except InfeasibleError:
        assert math.isinf(_unpruned_optimum(inst.graph, inst.cluster, inst.pins))
        return
    assert_valid(inst.graph, inst.cluster, p, inst.pins, objective="throughput")
    assert p.claimed_value == pytest.approx(_unpruned_optimum(inst.graph, inst.cluster, inst.pins), rel=1e-9)


SMALL_WORKLOADS = [p for p in _workloads() if p.stem in ("bert24_training", "resnet50_inference", "bert_l-3_inference")]


@pytest.mark.skipif(not WORKLOADS.is_dir(), reason="published workloads not found next to the repository")
@pytest.mark.parametrize("path", SMALL_WORKLOADS, ids=_ids(SMALL_WORKLOADS))
def test_workload_pruned_equals_unpruned(path, monkeypatch):
    import viz_place.solvers.dp.solver as dp_solver
    monkeypatch.setattr(dp_solver, "SMALL_IDEALS", 0)      # the pruned pass even where one plain pass would do
    g = load_graph(path)
    p = run_solver("dp", g, g.default_cluster)
    assert p.claimed_value == pytest.approx(_unpruned_optimum(g, g.default_cluster), rel=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_dp_agrees_with_contiguous_ilp(seed):
    """Two exact methods, one answer (skipped where the ILP solver is not installed)."""
    from viz_place.solvers import list_solvers
    from viz_place.testing import random_instance
    if "ilp" not in {s.name for s in list_solvers()}:
        pytest.skip("solver 'ilp' not available")
    inst = random_instance(500 + seed, n_max=7)
    try:
        dp_value = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins).claimed_value
    except InfeasibleError:
        dp_value = math.inf
    try:
        ilp_value = run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins).claimed_value
    except (InfeasibleError, SolverError):
        ilp_value = math.inf
    assert dp_value == pytest.approx(ilp_value, rel=1e-6) or (math.isinf(dp_value) and math.isinf(ilp_value))


def test_memory_guard_and_device_count_cap():
    g = chain(3)
    many = Cluster((DeviceClass("fpga", "fpga", 4000), DeviceClass("cpu", "cpu", 4000, pays_communication=False)))
    p = run_solver("dp", g, many)          # counts are capped at the number of supernodes
    assert_valid(g, many, p, objective="throughput")
    assert p.claimed_value == pytest.approx(2.0)   # one node per accelerator; the middle one pays twice
    wide = OpGraph.from_records([{"id": f"n{i}", "latency": {"cpu": 1.0}} for i in range(10)], [])
    with pytest.raises(SolverError, match=r"1,024 ideals x 121 device-count states.*max_memory_mb=1"):
        run_solver("dp", wide, many, options={"max_memory_mb": 1})
    big = Cluster(tuple(DeviceClass(f"c{i}", "fpga", 3) for i in range(12)))
    with pytest.raises(SolverError, match="device-count states"):
        run_solver("dp", chain(40), big)


def test_cancel_during_the_exact_pass_returns_the_incumbent():
    nodes = [{"id": f"n{i}", "latency": {"cpu": 3.0 + i % 5, "fpga": 1.0 + i % 3}, "transfer_cost": 0.2}
             for i in range(14)]
    g = OpGraph.from_records(nodes, [("n0", "n1"), ("n2", "n3")])     # ~2**12 ideals
    cluster = Cluster.paper(3, 1, None)
    stop = threading.Event()
    seen = []

    def progress(ev):
        seen.append(ev.message)
        if ev.message.startswith("DP pass"):
            stop.set()
    p = run_solver("dp", g, cluster, progress=progress, cancel=stop)
    assert p.status == "cancelled" and any(m.startswith("DP pass") for m in seen)
    assert p.claimed_value == pytest.approx(p.options["stats"]["upper_bound"])
    assert_valid(g, cluster, p, objective="throughput")
    full = run_solver("dp", g, cluster)
    assert full.status == "optimal" and full.claimed_value <= p.claimed_value + 1e-12


def test_time_limit_returns_best_so_far(tmp_path):
    nodes = [{"id": f"n{i}", "latency": {"cpu": 3.0 + i % 5, "fpga": 1.0 + i % 3}, "transfer_cost": 0.2}
             for i in range(14)]
    g = OpGraph.from_records(nodes, [("n0", "n1")])
    cluster = Cluster.paper(3, 1, None)
    p = run_solver("dp", g, cluster, options={"time_limit": 1e-9})
    assert p.status == "feasible" and "time limit" in p.message
    assert_valid(g, cluster, p, objective="throughput")
    assert run_solver("dp", g, cluster, options={"time_limit": 600}).status == "optimal"
