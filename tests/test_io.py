"""Reading and writing: paper graphs and splits, node-link, placement JSON, CSV, atomic writes."""
from __future__ import annotations

import json
import os

import pytest

from viz_place.cost import evaluate
from viz_place.errors import GraphValidationError, InputFormatError, PlacementError
from viz_place.io import (graph_from_dict, graph_to_paper_dict, load_graph, load_placement, placement_to_csv,
                          read_cluster, read_pins, split_from_placement, write_nodelink, write_paper_split,
                          write_placement)
from viz_place.io.atomic import atomic_write_text
from viz_place.model import Cluster, Placement
from viz_place.samples import load_sample, make_graph, sample_names

PAPER = {
    "maxSizePerFPGA": 10.0, "maxFPGAs": 2, "maxCPUs": 1,
    "nodes": [
        {"id": 1, "cpuLatency": 4.0, "fpgaLatency": 1.0, "supportedOnFpga": 1, "isBackwardNode": 0, "colorClass": 1, "size": 2.0},
        {"id": 2, "cpuLatency": 4.0, "fpgaLatency": 2.0, "supportedOnFpga": 0, "isBackwardNode": 0, "colorClass": 2},
        {"id": 3, "cpuLatency": 8.0, "fpgaLatency": 2.0, "supportedOnFpga": 1, "isBackwardNode": True, "colorClass": 1},
    ],
    "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5, "size": 100}, {"sourceId": 1, "destId": 3, "cost": 0.5},
              {"sourceId": 2, "destId": 3, "cost": 0.25}],
}


def write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def test_paper_graph_reads_all_fields(tmp_path):
    g = load_graph(write(tmp_path, "g.json", PAPER))
    assert g.node_ids == ("1", "2", "3") and g.default_cluster == Cluster.paper(2, 1, 10.0)
    assert g.node("1").transfer_cost == 0.5 and g.node("2").transfer_cost == 0.25
    assert g.node("2").supported_on("fpga") is False and g.node("3").backward
    assert g.nx.edges["1", "2"]["bytes"] == 100
    back = graph_to_paper_dict(g)
    assert [n["id"] for n in back["nodes"]] == [1, 2, 3] and back["nodes"][1]["supportedOnFpga"] == 0
    g2 = graph_from_dict(back)
    assert evaluate(g2, g2.default_cluster, {"1": "fpga:0", "2": "cpu:0", "3": "fpga:0"}).max_load == \
        evaluate(g, g.default_cluster, {"1": "fpga:0", "2": "cpu:0", "3": "fpga:0"}).max_load


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["edges"].append({"sourceId": 1, "destId": 9, "cost": 0.5}), "edge 1 -> 9: unknown destination node '9'"),
    (lambda d: d["edges"].append({"sourceId": 2, "destId": 1, "cost": 0.25}), "cycle"),
    (lambda d: d["edges"].__setitem__(1, {"sourceId": 1, "destId": 3, "cost": 0.7}), "node '1' has two different outgoing edge costs"),
    (lambda d: d["nodes"].append(dict(d["nodes"][0])), "duplicate node id '1'"),
    (lambda d: d["nodes"][0].pop("cpuLatency"), "missing field 'cpuLatency'"),
    (lambda d: d.pop("maxFPGAs"), "missing field 'maxFPGAs'"),
    (lambda d: d["nodes"][0].__setitem__("size", -5), "field 'size' is negative"),
    (lambda d: d["edges"].__setitem__(2, {"sourceId": 3, "destId": 2, "cost": 1.0}), "edge 3 -> 2: goes from a backward node to a forward node"),
])
def test_paper_graph_errors_name_the_culprit(tmp_path, mutate, message):
    data = json.loads(json.dumps(PAPER))
    mutate(data)
    with pytest.raises((GraphValidationError, InputFormatError), match=message):
        load_graph(write(tmp_path, "bad.json", data))


def test_unreadable_files(tmp_path):
    with pytest.raises(InputFormatError, match="file not found"):
        load_graph(tmp_path / "missing.json")
    p = tmp_path / "broken.json"
    p.write_text("{ not json")
    with pytest.raises(InputFormatError, match="invalid JSON at line 1"):
        load_graph(p)
    with pytest.raises(InputFormatError, match="not a graph file"):
        load_graph(write(tmp_path, "other.json", {"hello": 1}))


def test_split_round_trip_and_colour_class_inference(tmp_path):
    g = load_graph(write(tmp_path, "g.json", PAPER))
    c = g.default_cluster
    split = write(tmp_path, "s.json", {"maxLoad": 3.0, "cpus": [{"nodes": [2]}], "fpgas": [{"nodes": [1]}, {"nodes": []}]})
    p, pins = load_placement(split, g, c)
    assert dict(p.assignment) == {"1": "fpga:0", "2": "cpu:0", "3": "fpga:0"} and pins == {}
    out = tmp_path / "out.json"
    write_paper_split(out, g, c, p, 3.0)
    assert json.loads(out.read_text())["fpgas"][0]["nodes"] == [1, 3]
    p2, _ = load_placement(out, g, c)
    assert dict(p2.assignment) == dict(p.assignment)
    with pytest.raises(PlacementError, match="lists unknown node '7'"):
        load_placement(write(tmp_path, "s2.json", {"cpus": [{"nodes": [7]}], "fpgas": []}), g, c)
    with pytest.raises(PlacementError, match="node '1' is listed twice"):
        load_placement(write(tmp_path, "s3.json", {"cpus": [{"nodes": [1, 2]}], "fpgas": [{"nodes": [1]}]}), g, c)
    with pytest.raises(PlacementError, match="node '2' is not listed"):
        load_placement(write(tmp_path, "s4.json", {"cpus": [], "fpgas": [{"nodes": [1]}]}), g, c)


def test_our_placement_json_and_csv(tmp_path):
    g = make_graph("residual", 12, seed=1)
    c = g.default_cluster
    p = Placement({n: "fpga:0" for n in g.node_ids}, solver="test", status="heuristic", objective="throughput",
                  claimed_value=1.0, options={"k": 2}, wall_time=0.5)
    pins = {g.node_ids[0]: "fpga:0"}
    out = tmp_path / "p.json"
    write_placement(out, g, c, p, pins=pins, evaluation=evaluate(g, c, p))
    p2, pins2 = load_placement(out, g, c)
    assert p2 == p and pins2 == pins
    data = json.loads(out.read_text())
    assert data["format"] == "viz_place.placement/1" and "evaluation" in data
    csv = placement_to_csv(g, p, pins).splitlines()
    assert csv[0] == "node,name,op_type,device,pinned" and len(csv) == g.num_nodes + 1
    assert csv[1].endswith(",fpga:0,1")


def test_nodelink_round_trip(tmp_path):
    g = make_graph("transformer", 30, seed=2, training=True)
    out = tmp_path / "g.json"
    write_nodelink(out, g)
    g2 = load_graph(out)
    assert g2.node_ids == g.node_ids and g2.default_cluster == g.default_cluster
    assert [n.to_attrs() for n in g2.nodes()] == [n.to_attrs() for n in g.nodes()]


def test_devices_and_pins_files(tmp_path):
    g = make_graph("chain", 5, seed=0)
    c = read_cluster(write(tmp_path, "d.json", {"classes": [{"name": "cpu", "kind": "cpu", "count": 1, "pays_communication": False},
                                                            {"name": "fpga", "kind": "fpga", "count": 3, "memory": 1e9}]}))
    assert c.device_names == ("cpu:0", "fpga:0", "fpga:1", "fpga:2")
    assert read_pins(write(tmp_path, "p.json", {"pins": {"0": "fpga:2"}}), g, c) == {"0": "fpga:2"}
    with pytest.raises(PlacementError, match="unknown device 'fpga:7'"):
        read_pins(write(tmp_path, "p2.json", {"0": "fpga:7"}), g, c)


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "keep.json"
    atomic_write_text(p, "old")

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(p, "new")
    assert p.read_text() == "old" and [f.name for f in tmp_path.iterdir()] == ["keep.json"]


def test_shipped_samples_load_and_differ_in_shape():
    names = sample_names()
    for required in ("chain", "fork_join", "residual", "inception", "transformer", "residual_training"):
        assert required in names
    shapes = set()
    for name in names:
        g = load_sample(name)
        assert g.num_nodes > 0 and g.default_cluster is not None
        shapes.add((g.num_nodes, g.num_edges))
    assert load_sample("residual_training").is_training
    assert len(shapes) == len(names)


def test_sample_generators_are_deterministic():
    a, b = make_graph("inception", 50, seed=3), make_graph("inception", 50, seed=3)
    assert [n.to_attrs() for n in a.nodes()] == [n.to_attrs() for n in b.nodes()]
    assert [n.to_attrs() for n in a.nodes()] != [n.to_attrs() for n in make_graph("inception", 50, seed=4).nodes()]


@pytest.mark.parametrize("sub", ["throughput-inputs", "latency-inputs"])
def test_every_published_workload_loads(workloads, sub):
    files = sorted((workloads / sub).rglob("*.json"))
    assert files
    for f in files:
        g = load_graph(f)
        assert g.num_nodes > 0 and g.default_cluster.classes[0].name == "fpga"
