"""The evaluator: the paper's model exactly, checked by hand, against a naive
re-statement, and on the published human-expert splits."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from reference_cost import reference_latency, reference_loads
from viz_place.cost import compile_problem, evaluate
from viz_place.errors import PlacementError
from viz_place.io import load_graph, read_paper_split
from viz_place.model import Cluster, DeviceClass, OpGraph, Placement
from viz_place.testing import random_instance


def diamond():
    #   a -> b -> d ; a -> c -> d   (a's output goes to b and c)
    nodes = [
        {"id": "a", "latency": {"cpu": 10.0, "fpga": 1.0}, "transfer_cost": 0.5, "size": 3.0},
        {"id": "b", "latency": {"cpu": 10.0, "fpga": 2.0}, "transfer_cost": 0.25, "size": 3.0},
        {"id": "c", "latency": {"cpu": 10.0, "fpga": 3.0}, "transfer_cost": 0.125, "size": 3.0},
        {"id": "d", "latency": {"cpu": 10.0, "fpga": 4.0}, "transfer_cost": 7.0, "size": 3.0},
    ]
    return OpGraph.from_records(nodes, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])


def test_communication_paid_once_per_source_and_receiving_device():
    g = diamond()
    c = Cluster.paper(3, 1, None)
    ev = evaluate(g, c, {"a": "fpga:0", "b": "fpga:1", "c": "fpga:1", "d": "fpga:2"})
    # fpga:0 sends a once; fpga:1 receives a once (two edges) and sends b and c; fpga:2 receives b, c.
    assert ev.device("fpga:0").communication == 0.5
    assert ev.device("fpga:1").communication == 0.5 + 0.25 + 0.125
    assert ev.device("fpga:2").communication == 0.25 + 0.125
    assert ev.device("fpga:1").load == 5.0 + 0.875
    assert ev.max_load == 5.875 and ev.bottleneck == "fpga:1"
    assert math.isclose(ev.throughput, 1 / 5.875)


def test_cpu_pays_no_communication_but_its_partner_does():
    g = diamond()
    ev = evaluate(g, Cluster.paper(1, 1, None), {"a": "cpu:0", "b": "fpga:0", "c": "fpga:0", "d": "cpu:0"})
    assert ev.device("cpu:0").communication == 0.0 and ev.device("cpu:0").compute == 20.0
    assert ev.device("fpga:0").communication == 0.5 + 0.25 + 0.125


def test_overlap_option_takes_max():
    g = diamond()
    a = {"a": "fpga:0", "b": "fpga:1", "c": "fpga:1", "d": "fpga:2"}
    ev = evaluate(g, Cluster.paper(3, 1, None), a, overlap=True)
    assert ev.device("fpga:1").load == 5.0 and ev.device("fpga:0").load == 1.0


def test_speed_and_link_factor():
    g = diamond()
    c = Cluster((DeviceClass("fast", "fpga", 2, speed=2.0, link_factor=2.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    ev = evaluate(g, c, {"a": "fast:0", "b": "fast:0", "c": "fast:1", "d": "fast:1"})
    assert ev.device("fast:0").compute == 1.5 and ev.device("fast:0").communication == 2 * (0.5 + 0.25)


def test_violations_are_named_and_figures_still_computed():
    g = OpGraph.from_records(
        [{"id": "a", "latency": {"cpu": 1.0, "fpga": 1.0}, "size": 8.0, "color_class": "k"},
         {"id": "b", "latency": {"cpu": 1.0, "fpga": 1.0}, "size": 8.0, "color_class": "k"},
         {"id": "c", "latency": {"cpu": 1.0}, "size": 1.0}], [("a", "b"), ("b", "c")])
    c = Cluster.paper(1, 1, 10.0)
    ev = evaluate(g, c, {"a": "fpga:0", "b": "cpu:0", "c": "fpga:0"}, pins={"b": "fpga:0"})
    text = " | ".join(ev.violations)
    assert not ev.feasible
    assert "unsupported op on device fpga:0: node 'c'" in text
    assert "colour class 'k' split across devices cpu:0, fpga:0" in text
    assert "pinned node 'b' moved: it is on cpu:0 but pinned to fpga:0" in text
    ev2 = evaluate(g, c, {"a": "fpga:0", "b": "fpga:0", "c": "cpu:0"})
    assert ev2.violations == ("memory over capacity on device fpga:0: 16 B used of 10 B",)
    assert ev2.device("fpga:0").memory == 16.0 and ev2.device("fpga:0").memory_capacity == 10.0
    ev3 = evaluate(g, c, {"a": "fpga:0", "b": "fpga:0", "c": "cpu:3"})
    assert "more devices used than exist: class 'cpu' has 1 device(s) but the placement uses cpu:3" in ev3.violations
    with pytest.raises(PlacementError, match="not placed"):
        evaluate(g, c, {"a": "fpga:0"})
    with pytest.raises(PlacementError, match="unknown device 'tpu:0'"):
        evaluate(g, c, {"a": "fpga:0", "b": "fpga:0", "c": "tpu:0"})


def test_training_load_is_forward_plus_backward():
    g = OpGraph.from_records(
        [{"id": "f", "latency": {"cpu": 1.0, "fpga": 1.0}, "color_class": "1", "transfer_cost": 1.0},
         {"id": "g", "latency": {"cpu": 1.0, "fpga": 2.0}, "color_class": "2", "transfer_cost": 1.0},
         {"id": "gb", "latency": {"cpu": 1.0, "fpga": 4.0}, "color_class": "2", "backward": True, "transfer_cost": 0.5},
         {"id": "fb", "latency": {"cpu": 1.0, "fpga": 8.0}, "color_class": "1", "backward": True}],
        [("f", "g"), ("g", "gb"), ("gb", "fb"), ("f", "fb")])
    ev = evaluate(g, Cluster.paper(2, 1, None), {"f": "fpga:0", "fb": "fpga:0", "g": "fpga:1", "gb": "fpga:1"})
    d0, d1 = ev.device("fpga:0"), ev.device("fpga:1")
    assert d0.load == 1 + 8 + 1 + 0.5 and d0.forward_load == 2 and d0.backward_load == 8.5
    assert d1.load == 2 + 4 + 1 + 0.5 and d1.forward_load == 3 and d1.backward_load == 4.5
    assert ev.max_forward_plus_max_backward == 3 + 8.5


@pytest.mark.parametrize("seed", range(150))
def test_matches_naive_reference_on_random_instances(seed):
    inst = random_instance(seed)
    rng = np.random.default_rng(seed)
    names = inst.cluster.device_names
    for _ in range(3):
        a = {n: names[rng.integers(len(names))] for n in inst.graph.node_ids}
        # keep ops where they are supported so the reference's lookups succeed
        for n in a:
            if inst.cluster.device_class_of(a[n]).kind not in inst.graph.node(n).latency:
                a[n] = "cpu:0"
        overlap = bool(rng.random() < 0.3)
        ev = evaluate(inst.graph, inst.cluster, a, overlap=overlap)
        ref = reference_loads(inst.graph, inst.cluster, a, overlap=overlap)
        for d in ev.devices:
            assert ref[d.name] == pytest.approx((d.compute, d.communication, d.load, d.memory), rel=1e-12, abs=1e-12)
        assert ev.max_load == pytest.approx(max(r[2] for r in ref.values()))


@pytest.mark.parametrize("seed", range(20))
def test_evaluation_invariant_to_renumbering_nodes(seed):
    inst = random_instance(seed, n_min=6, n_max=9)
    rng = np.random.default_rng(seed)
    perm = {n: f"x{i}" for n, i in zip(inst.graph.node_ids, rng.permutation(inst.graph.num_nodes))}
    nodes, edges = inst.graph.to_records()
    renamed = OpGraph.from_records(
        [{**n, "id": perm[n["id"]]} for n in reversed(nodes)],
        [(perm[e["source"]], perm[e["target"]]) for e in edges])
    a = {n: inst.cluster.device_names[i % 2] for i, n in enumerate(inst.graph.node_ids)}
    e1 = evaluate(inst.graph, inst.cluster, a)
    e2 = evaluate(renamed, inst.cluster, {perm[n]: d for n, d in a.items()})
    assert [d.load for d in e1.devices] == pytest.approx([d.load for d in e2.devices], rel=1e-12)
    assert [d.memory for d in e1.devices] == pytest.approx([d.memory for d in e2.devices], rel=1e-12)
    assert e1.latency == pytest.approx(e2.latency, rel=1e-12)
    assert len(e1.violations) == len(e2.violations)


EXPERTS = {
    "bert24_inference": "LayerGraphs/bert24_inference", "bert24_training": "LayerGraphs/bert24_training",
    "gnmt_inference": "LayerGraphs/gnmt_inference", "gnmt_training": "LayerGraphs/gnmt_training",
    "resnet50_inference": "LayerGraphs/resnet50_inference", "inceptionv3_inference": "LayerGraphs/inceptionv3_inference",
}


def authors_max_load(graph, cluster, assignment):
    """The authors' evaluator (computeLoadForResultOrg) restated: all CPU nodes form one
    group that pays nothing; each FPGA pays every crossing source once, sending or receiving."""
    group_lat, comm, receivers = {}, {}, {}
    for n in graph.node_ids:
        d = assignment[n]
        node = graph.node(n)
        group_lat[d] = group_lat.get(d, 0.0) + (node.latency["cpu"] if d.startswith("cpu") else node.latency["fpga"])
    for u, v in graph.edges:
        if assignment[u] != assignment[v]:
            receivers.setdefault(u, set()).add(assignment[v])
    for u, groups in receivers.items():
        comm[assignment[u]] = comm.get(assignment[u], 0.0) + graph.node(u).transfer_cost
        for d in groups:
            comm[d] = comm.get(d, 0.0) + graph.node(u).transfer_cost
    return max(lat + (0.0 if d.startswith("cpu") else comm.get(d, 0.0)) for d, lat in group_lat.items())


@pytest.mark.parametrize("expert", sorted(EXPERTS))
def test_human_expert_splits(workloads, expert):
    g = load_graph(workloads / "throughput-inputs" / f"{EXPERTS[expert]}.json")
    cluster = g.default_cluster
    p = read_paper_split(workloads / "human-experts" / f"{expert}_expert.json", g, cluster)
    ev = evaluate(g, cluster, p)
    assert ev.feasible, ev.violations
    assert ev.max_load == pytest.approx(authors_max_load(g, cluster, p.assignment), rel=1e-12)
    assert ev.max_load > 0


@pytest.mark.parametrize("model", ["gnmt", "resnet50", "inceptionv3", "bert24"])
def test_inference_split_applied_to_training_graph(workloads, model):
    g = load_graph(workloads / "throughput-inputs" / "LayerGraphs" / f"{model}_training.json")
    p = read_paper_split(workloads / "human-experts" / f"{model}_inference_expert.json", g, g.default_cluster)
    for n in g.nodes():
        if n.backward:
            twin = next(m for m in g.nodes() if not m.backward and m.color_class == n.color_class)
            assert p[n.id] == p[twin.id]
    ev = evaluate(g, g.default_cluster, p)
    assert ev.feasible and ev.max_load == pytest.approx(authors_max_load(g, g.default_cluster, p.assignment))
    inf = load_graph(workloads / "throughput-inputs" / "LayerGraphs" / f"{model}_inference.json")
    p_inf = read_paper_split(workloads / "human-experts" / f"{model}_inference_expert.json", inf, inf.default_cluster)
    assert ev.max_load > evaluate(inf, inf.default_cluster, p_inf).max_load


def test_compiled_problem_is_cached_and_read_only():
    g = diamond()
    c = Cluster.paper(1, 1, None)
    p = compile_problem(g, c)
    assert compile_problem(g, c) is p
    with pytest.raises(ValueError):
        p.lat[0, 0] = 3.0
