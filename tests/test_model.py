"""The graph validator, device classes, placements and pins: every error is clear."""
from __future__ import annotations

import math

import networkx as nx
import pytest

from viz_place.errors import DeviceError, GraphValidationError, PlacementError
from viz_place.model import Cluster, DeviceClass, OpGraph, Placement, validate_pins


def rec(i, **kw):
    return {"id": i, "latency": {"cpu": 1.0, "fpga": 0.5}, **kw}


def test_valid_graph_topological_ids():
    g = OpGraph.from_records([rec("c"), rec("a"), rec("b")], [("a", "b"), ("b", "c")])
    assert g.node_ids == ("a", "b", "c")
    assert g.index["c"] == 2
    assert g.node("a").supported_on("fpga")


@pytest.mark.parametrize("seed", range(30))
def test_topological_ids_are_networkx_lexicographic_order(seed):
    """node_ids: the smallest insertion position first, whether the nodes were inserted in a topological order (its
    shortcut: that order itself) or shuffled."""
    import random
    rng = random.Random(seed)
    n = rng.randrange(1, 25)
    edges = [(f"n{u}", f"n{v}") for u in range(n) for v in range(u + 1, n) if rng.random() < 0.15]
    for order in (list(range(n)), rng.sample(range(n), n)):
        g = OpGraph.from_records([rec(f"n{i}") for i in order], edges)
        assert g.node_ids == tuple(nx.lexicographical_topological_sort(g.nx, key=g._order_key))
        if order == sorted(order):
            assert g.node_ids == tuple(f"n{i}" for i in order)


@pytest.mark.parametrize("nodes, edges, message", [
    ([rec("a"), rec("b")], [("a", "b"), ("b", "a")], "cycle: a -> b -> a"),
    ([rec("a"), rec("a")], [], "duplicate node id 'a'"),
    ([rec("a")], [("a", "zz")], "edge a -> zz: unknown destination node 'zz'"),
    ([rec("a")], [("yy", "a")], "edge yy -> a: unknown source node 'yy'"),
    ([rec("a")], [("a", "a")], "edge a -> a: self-loop"),
    ([rec("a", size=-1.0)], [], "node 'a': field 'size' is negative"),
    ([rec("a", transfer_cost=float("nan"))], [], "node 'a': field 'transfer_cost' is NaN"),
    ([{"id": "a", "latency": {"cpu": -2.0}}], [], "node 'a': latency on 'cpu' is negative"),
    ([{"id": "a", "latency": {"cpu": "fast"}}], [], "node 'a': latency on 'cpu' must be a number"),
    ([rec("a", backward=True, color_class="x"), rec("b", color_class="y")], [("a", "b")],
     "edge a -> b: goes from a backward node to a forward node"),
    ([rec("a", colour="red")], [], "node 'a': unknown attribute(s) ['colour']"),
    ([rec("a"), rec("b")], [("a", "b"), ("a", "b")], "edge a -> b: duplicate edge"),
])
def test_validator_rejects_with_named_culprit(nodes, edges, message):
    with pytest.raises(GraphValidationError) as err:
        OpGraph.from_records(nodes, edges)
    assert message in str(err.value)


def test_cycle_message_names_a_real_cycle():
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    for n in g:
        g.nodes[n]["latency"] = {"cpu": 1.0}
    with pytest.raises(GraphValidationError, match=r"cycle: ([abc]) -> [abc] -> [abc] -> \1"):
        OpGraph(g)


def test_orphan_backward_gets_documented_artificial_twin():
    g = OpGraph.from_records([rec("f", color_class="1"), rec("b1", backward=True, color_class="1"),
                              rec("b2", backward=True, color_class="2")], [("f", "b1"), ("b2", "b1")])
    assert g.num_nodes == 4
    twin = [n for n in g.nodes() if n.artificial]
    assert len(twin) == 1 and twin[0].color_class == "2" and not twin[0].backward
    assert twin[0].latency == {"cpu": 0.0, "fpga": 0.0} and twin[0].size == 0.0
    assert any("'b2'" in note and twin[0].id in note for note in g.notes)


def test_graph_is_immutable():
    g = OpGraph.from_records([rec("a")], [])
    with pytest.raises(nx.NetworkXError):
        g.nx.add_node("b")


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="1bad", kind="cpu"), "field 'name'"),
    (dict(name="gpu", kind=""), "field 'kind'"),
    (dict(name="gpu", kind="fpga", count=-1), "field 'count'"),
    (dict(name="gpu", kind="fpga", count=1.5), "field 'count'"),
    (dict(name="gpu", kind="fpga", memory=-3.0), "field 'memory'"),
    (dict(name="gpu", kind="fpga", memory=float("nan")), "field 'memory'"),
    (dict(name="gpu", kind="fpga", speed=0.0), "field 'speed'"),
    (dict(name="gpu", kind="fpga", link_factor=-1.0), "field 'link_factor'"),
    (dict(name="gpu", kind="fpga", pays_communication="yes"), "field 'pays_communication'"),
])
def test_device_class_validation_names_field(kwargs, message):
    with pytest.raises(DeviceError, match=message):
        DeviceClass(**kwargs)


def test_cluster_rules_and_edits():
    c = Cluster.paper(2, 1, 10.0)
    assert c.device_names == ("fpga:0", "fpga:1", "cpu:0")
    assert c.device_class_of("fpga:1").memory == 10.0
    assert c.device_class_of("cpu:0").pays_communication is False
    c3 = c.with_class_count("fpga", 3)
    assert c3.device_names[:3] == ("fpga:0", "fpga:1", "fpga:2") and c.device_names[1] == "fpga:1"
    assert DeviceClass("x", "cpu", memory=math.inf).memory is None
    with pytest.raises(DeviceError, match="duplicate class name"):
        Cluster((DeviceClass("a", "cpu"), DeviceClass("a", "fpga")))
    with pytest.raises(DeviceError, match="at least one device"):
        Cluster((DeviceClass("a", "cpu", count=0),))
    with pytest.raises(DeviceError, match="unknown device 'fpga:9'"):
        c.device_index("fpga:9")
    with pytest.raises(DeviceError, match=r"unknown field\(s\) \['colour'\]"):
        Cluster.from_dict({"classes": [{"name": "a", "kind": "cpu", "colour": 1}]})
    assert Cluster.from_dict(c.to_dict()) == c
    assert Cluster.from_dict({"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 10.0}) == c


def test_placement_is_immutable_and_tracks_provenance():
    p = Placement({"a": "fpga:0"}, solver="dp", status="optimal", claimed_value=2.0)
    q = p.moved("a", "cpu:0")
    assert p["a"] == "fpga:0" and q["a"] == "cpu:0" and q.solver == "manual"
    with pytest.raises(TypeError):
        p.assignment["a"] = "cpu:0"
    with pytest.raises(PlacementError, match="unknown status"):
        Placement({"a": "x"}, status="great")
    with pytest.raises(PlacementError, match="node 'zz' is not placed"):
        p["zz"]


def test_pins_validation():
    g = OpGraph.from_records([rec("a", color_class="k"), rec("b", color_class="k"),
                              {"id": "c", "latency": {"cpu": 1.0}}], [])
    c = Cluster.paper(2, 1, None)
    assert validate_pins(g, c, {"a": "fpga:0", "b": "fpga:0"}) == {"a": "fpga:0", "b": "fpga:0"}
    with pytest.raises(PlacementError, match="pin: unknown node 'q'"):
        validate_pins(g, c, {"q": "fpga:0"})
    with pytest.raises(PlacementError, match="unknown device 'gpu:0'"):
        validate_pins(g, c, {"a": "gpu:0"})
    with pytest.raises(PlacementError, match="cannot run on device 'fpga:1'"):
        validate_pins(g, c, {"c": "fpga:1"})
    with pytest.raises(PlacementError, match="share colour class 'k'"):
        validate_pins(g, c, {"a": "fpga:0", "b": "fpga:1"})
