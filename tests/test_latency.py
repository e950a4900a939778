"""Single-sample latency: the paper's latency model, pieces, deadlocks."""
from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from reference_cost import reference_latency
from viz_place.cost import compile_problem, evaluate, pieces_of
from viz_place.model import Cluster, OpGraph
from viz_place.testing import random_instance


def chain3():
    return OpGraph.from_records(
        [{"id": "a", "latency": {"cpu": 5.0, "fpga": 1.0}, "transfer_cost": 0.5},
         {"id": "b", "latency": {"cpu": 5.0, "fpga": 2.0}, "transfer_cost": 0.25},
         {"id": "c", "latency": {"cpu": 5.0, "fpga": 3.0}, "transfer_cost": 1.0}],
        [("a", "b"), ("b", "c")])


def test_cpu_only_is_longest_path():
    g = OpGraph.from_records(
        [{"id": "s", "latency": {"cpu": 1.0}}, {"id": "x", "latency": {"cpu": 5.0}},
         {"id": "y", "latency": {"cpu": 2.0}}, {"id": "t", "latency": {"cpu": 1.0}}],
        [("s", "x"), ("s", "y"), ("x", "t"), ("y", "t")])
    ev = evaluate(g, Cluster.paper(0, 1, None), {n: "cpu:0" for n in g.node_ids})
    assert ev.latency == 7.0  # CPUs are unlimited: x and y run in parallel


def test_accelerator_piece_inputs_compute_outputs():
    g = chain3()
    ev = evaluate(g, Cluster.paper(1, 1, None), {"a": "cpu:0", "b": "fpga:0", "c": "cpu:0"})
    # a on cpu: 5; b's piece: starts 5, in 0.5 + compute 2 + out 0.25 -> 7.75; c: +5
    assert ev.latency == 12.75
    assert ev.finish_times == {"a": 5.0, "b": 7.75, "c": 12.75}


def test_two_accelerators_in_a_row():
    g = chain3()
    ev = evaluate(g, Cluster.paper(2, 1, None), {"a": "fpga:0", "b": "fpga:0", "c": "fpga:1"})
    # piece 1: a,b: compute 3 + out(b) 0.25 = 3.25; piece 2: in(b) 0.25 + 3 = 6.5
    assert ev.latency == 6.5


def test_non_contiguous_set_runs_as_ordered_pieces():
    g = chain3()
    c = Cluster.paper(1, 1, None)
    a = {"a": "fpga:0", "b": "cpu:0", "c": "fpga:0"}
    prob = compile_problem(g, c)
    assert pieces_of(prob, prob.to_index_array(a)) == {0: [[0], [2]]}
    # piece a: 1 + out 0.5 = 1.5; b on cpu: 6.5; piece c: start 6.5, in(b) .25 + 3 = 9.75
    assert evaluate(g, c, a).latency == 9.75


def test_interleaved_pieces_that_wait_on_each_other_have_no_schedule():
    # x1 -> x2 and y2 -> y1, with P1 = {z1, x1, y1} on fpga:0 and P2 = {x2, y2, z2} on fpga:1
    recs = [{"id": i, "latency": {"cpu": 1.0, "fpga": 1.0}, "transfer_cost": 1.0} for i in
            ("z1", "x1", "y1", "x2", "y2", "z2")]
    g = OpGraph.from_records(recs, [("z1", "x1"), ("z1", "y1"), ("x2", "z2"), ("y2", "z2"),
                                    ("x1", "x2"), ("y2", "y1")])
    a = {"z1": "fpga:0", "x1": "fpga:0", "y1": "fpga:0", "x2": "fpga:1", "y2": "fpga:1", "z2": "fpga:1"}
    ev = evaluate(g, Cluster.paper(2, 1, None), a)
    assert math.isinf(ev.latency)
    assert "fpga:0" in ev.latency_issue and "fpga:1" in ev.latency_issue
    assert ev.feasible  # a latency-model limitation, not a constraint violation
    assert math.isfinite(ev.max_load)


def is_convex(graph, nodes):
    nodes = set(nodes)
    g = graph.nx
    outside_reach = set()
    for v in nodes:
        for w in g.successors(v):
            if w not in nodes:
                outside_reach |= {w} | nx.descendants(g, w)
    return not (outside_reach & nodes)


@pytest.mark.parametrize("seed", range(60))
def test_contiguous_placements_match_the_latency_ip_constraints(seed):
    inst = random_instance(seed, n_max=7, training=False, pins=False)
    g, c = inst.graph, inst.cluster
    rng = np.random.default_rng(seed)
    tried = 0
    for _ in range(40):
        a = {}
        for n in g.node_ids:
            options = [d for d in c.device_names if c.device_class_of(d).kind in g.node(n).latency]
            a[n] = options[rng.integers(len(options))]
        accel = [d for d in c.device_names if c.device_class_of(d).pays_communication]
        if not all(is_convex(g, [n for n in g.node_ids if a[n] == d]) for d in accel):
            continue
        ev = evaluate(g, c, a)
        if ev.latency_issue:
            continue
        tried += 1
        assert ev.latency == pytest.approx(reference_latency(g, c, a), rel=1e-12)
    assert tried > 0


@pytest.mark.parametrize("seed", range(40))
def test_pieces_are_convex_and_partition_each_accelerator(seed):
    inst = random_instance(seed, n_min=6, n_max=10, pins=False)
    g, c = inst.graph, inst.cluster
    prob = compile_problem(g, c)
    rng = np.random.default_rng(seed)
    dev = rng.integers(0, prob.num_devices, prob.n)
    pieces = pieces_of(prob, dev)
    for d, plist in pieces.items():
        members = sorted(i for p in plist for i in p)
        assert members == sorted(np.flatnonzero(dev == d).tolist())
        for p in plist:
            assert is_convex(g, [prob.node_ids[i] for i in p])
