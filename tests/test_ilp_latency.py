"""The latency integer program (``latency-ilp``) against brute force with the evaluator's latency."""
from __future__ import annotations

import math

import pytest

from _ilp_brute import MAX_COMBOS, brute_force, combos
from viz_place.cost import compile_problem, evaluate
from viz_place.errors import InfeasibleError
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.solvers import run_solver
from viz_place.solvers.groups import nonconvex_devices
from viz_place.solvers.milp import available_backends
from viz_place.testing import assert_valid, random_instance

BACKEND = "highs" if "highs" in available_backends() else "cbc"


def _lat(inst, **opts):
    return run_solver("latency-ilp", inst.graph, inst.cluster, pins=inst.pins,
                      options={"backend": BACKEND, "time_limit": 30, **opts})


@pytest.mark.parametrize("block", range(4))
def test_q1_equals_brute_force_over_contiguous_placements(block):
    checked = 0
    for seed in range(block * 25, block * 25 + 25):
        inst = random_instance(1000 + seed, n_max=6)
        if combos(inst) > MAX_COMBOS:
            continue
        best = brute_force(inst, "latency", contiguous="accelerators")
        try:
            p = _lat(inst, warm_start=seed % 2 == 0)
        except InfeasibleError as err:
            assert best == math.inf and "infeasible" in str(err)
            continue
        assert_valid(inst.graph, inst.cluster, p, inst.pins)
        ev = evaluate(inst.graph, inst.cluster, p, pins=inst.pins)
        assert p.claimed_value == pytest.approx(ev.latency, rel=1e-9)
        assert p.status == "optimal", p.message
        assert math.isclose(p.claimed_value, best, rel_tol=1e-9, abs_tol=1e-9), (seed, p.claimed_value, best)
        prob = compile_problem(inst.graph, inst.cluster)
        assert not [d for d in nonconvex_devices(prob, prob.to_index_array(p)) if prob.pays[d]]
        checked += 1
    assert checked >= 10


def test_q2_between_the_global_optimum_and_q1():
    checked = 0
    for seed in range(30):
        inst = random_instance(2000 + seed, n_max=5)
        if combos(inst) > MAX_COMBOS:
            continue
        try:
            p1 = _lat(inst)
        except InfeasibleError:
            continue
        p2 = _lat(inst, max_pieces_per_accelerator=2)
        assert_valid(inst.graph, inst.cluster, p2, inst.pins)
        assert p2.claimed_value == pytest.approx(evaluate(inst.graph, inst.cluster, p2).latency, rel=1e-9)
        assert brute_force(inst, "latency") - 1e-9 <= p2.claimed_value <= p1.claimed_value + 1e-9
        if p2.status == "feasible":
            assert p2.message
        checked += 1
    assert checked >= 8


def test_q2_finds_a_two_piece_placement():
    """a -> b -> c, b only on the CPU: one accelerator holding a and c needs two pieces."""
    g = OpGraph.from_records([
        {"id": "a", "latency": {"cpu": 10.0, "fpga": 1.0}, "transfer_cost": 0.1},
        {"id": "b", "latency": {"cpu": 1.0}, "transfer_cost": 0.1},
        {"id": "c", "latency": {"cpu": 10.0, "fpga": 1.0}}], [("a", "b"), ("b", "c")])
    c = Cluster.paper(1, 1, None)
    one = run_solver("latency-ilp", g, c, options={"backend": BACKEND})
    two = run_solver("latency-ilp", g, c, options={"backend": BACKEND, "max_pieces_per_accelerator": 2})
    assert one.claimed_value == pytest.approx(12.1)          # a on fpga, c on cpu
    assert two.claimed_value == pytest.approx(3.2)           # 1.1 + 1 + 1.1
    assert dict(two.assignment) == {"a": "fpga:0", "b": "cpu:0", "c": "fpga:0"}
    assert two.status == "optimal"


def test_cpu_only_and_infeasible():
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 2.0}}, {"id": "b", "latency": {"cpu": 3.0}}],
                             [("a", "b")])
    p = run_solver("latency-ilp", g, Cluster.paper(2, 1, None), options={"backend": BACKEND})
    assert p.claimed_value == pytest.approx(5.0) and p.status == "optimal"
    big = OpGraph.from_records([{"id": "a", "latency": {"fpga": 2.0}, "size": 3.0}], [])
    with pytest.raises(InfeasibleError, match="node 'a'.*memory 3 exceeds"):
        run_solver("latency-ilp", big, Cluster((DeviceClass("fpga", "fpga", 2, memory=2.0),)))


def test_cbc_backend_agrees():
    for seed in (1003, 1010, 1020):
        inst = random_instance(seed, n_max=5)
        if combos(inst) > MAX_COMBOS:
            continue
        try:
            p = run_solver("latency-ilp", inst.graph, inst.cluster, pins=inst.pins, options={"time_limit": 30})
        except InfeasibleError:
            continue
        assert p.claimed_value == pytest.approx(brute_force(inst, "latency", contiguous="accelerators"), abs=1e-9)


def _training_pair():
    """f1 -> f2 -> b2 -> b1 with colour classes {f1, b1}, {f2, b2}; one class per accelerator (memory)."""
    nodes = [{"id": i, "latency": {"cpu": 10.0, "fpga": 1.0}, "size": 1.0, "transfer_cost": 0.5,
              "color_class": cc, "backward": i.startswith("b")}
             for i, cc in (("f1", "k1"), ("f2", "k2"), ("b2", "k2"), ("b1", "k1"))]
    g = OpGraph.from_records(nodes, [("f1", "f2"), ("f2", "b2"), ("b2", "b1")])
    c = Cluster((DeviceClass("fpga", "fpga", 2, memory=2.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    return g, c


def test_q1_says_when_a_baseline_beats_the_contiguous_model():
    g, c = _training_pair()
    p1 = run_solver("latency-ilp", g, c, options={"backend": BACKEND})
    greedy = run_solver("greedy-latency", g, c)
    assert greedy.claimed_value < p1.claimed_value          # {f1, b1} on one accelerator is two pieces
    assert p1.status == "optimal" and "one contiguous piece" in p1.message
    assert "found a placement outside this model" in p1.message
    p2 = run_solver("latency-ilp", g, c, options={"backend": BACKEND, "max_pieces_per_accelerator": 2})
    assert_valid(g, c, p2)
    assert p2.claimed_value <= greedy.claimed_value + 1e-9
    assert p2.claimed_value == pytest.approx(evaluate(g, c, p2).latency)
