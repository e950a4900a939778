"""The roofline cost model: formula, edits, clusters, device files, validation."""
from __future__ import annotations

import math

import pytest

from viz_place.errors import DeviceError, GraphValidationError
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.model.roofline import (PRESETS, RooflineSpec, apply_roofline, default_cluster, default_specs,
                                      devices_from_dict, node_bytes, roofline_cluster, specs_from_dict)


def _graph():
    nodes = [{"id": "conv", "op_type": "Conv", "flops": 4e9, "size": 1e6, "output_bytes": 2e6},
             {"id": "relu", "op_type": "Relu", "flops": 5e5, "output_bytes": 2e6},
             {"id": "view", "op_type": "Reshape", "flops": 0.0, "output_bytes": 2e6},
             {"id": "cat", "op_type": "Concat", "flops": 0.0, "output_bytes": 4e6}]
    edges = [("conv", "relu", {"bytes": 2e6}), ("relu", "view", {"bytes": 2e6}), ("view", "cat", {"bytes": 2e6}),
             ("conv", "cat", {"bytes": 2e6})]
    return OpGraph.from_records(nodes, edges)


def test_latency_is_max_of_compute_and_memory_plus_overhead():
    g = apply_roofline(_graph(), default_specs())
    gpu = PRESETS["a100"]
    # compute-bound conv, memory-bound relu (bytes in + out), in milliseconds
    assert g.node("conv").latency["gpu"] == pytest.approx(1e3 * (4e9 / gpu.peak_flops + gpu.launch_overhead))
    assert g.node("relu").latency["gpu"] == pytest.approx(1e3 * (4e6 / gpu.memory_bandwidth + gpu.launch_overhead))
    assert node_bytes(g, "cat") == 2e6 + 2e6 + 4e6
    assert g.node("view").latency == {"cpu": 0.0, "gpu": 0.0}  # a view launches nothing
    assert g.node("cat").latency["gpu"] > 0  # data movement still costs its bytes
    assert g.node("relu").transfer_cost == pytest.approx(1e3 * 2e6 / gpu.link_bandwidth)


def test_editing_a_device_recomputes_latencies():
    specs = default_specs()
    g = apply_roofline(_graph(), specs)
    faster = dict(specs, gpu=specs["gpu"].with_(peak_flops=2 * specs["gpu"].peak_flops,
                                                memory_bandwidth=4 * specs["gpu"].memory_bandwidth, launch_overhead=0.0))
    g2 = apply_roofline(g, faster)
    assert g2.node("conv").latency["gpu"] == pytest.approx((g.node("conv").latency["gpu"] - 5e-3) / 2)
    assert g2.node("relu").latency["gpu"] == pytest.approx((g.node("relu").latency["gpu"] - 5e-3) / 4)
    assert g2.node("conv").latency["cpu"] == g.node("conv").latency["cpu"]  # other kinds untouched
    assert g.node("conv").latency["gpu"] > g2.node("conv").latency["gpu"]  # g itself is unchanged
    slow_link = dict(specs, gpu=specs["gpu"].with_(link_bandwidth=specs["gpu"].link_bandwidth / 2))
    assert apply_roofline(g, slow_link).node("conv").transfer_cost == pytest.approx(2 * g.node("conv").transfer_cost)


def test_unknown_flops_is_an_error_naming_the_node():
    g = OpGraph.from_records([{"id": "mystery", "output_bytes": 8.0}], [])
    with pytest.raises(GraphValidationError, match="'mystery'.*flops"):
        apply_roofline(g, default_specs())


def test_clusters_and_link_factors():
    c = default_cluster()
    assert [(k.name, k.kind, k.count, k.pays_communication) for k in c.classes] == \
        [("cpu", "cpu", 1, False), ("gpu", "gpu", 4, True)]
    assert c.class_named("gpu").memory == PRESETS["a100"].memory
    specs = {"cpu": PRESETS["xeon-8380"], "fast": PRESETS["a100"], "slow": PRESETS["v100"]}
    base = Cluster((DeviceClass("host", "cpu", 1, pays_communication=False), DeviceClass("a", "fast", 2, memory=1e9),
                    DeviceClass("b", "slow", 1, link_factor=2.0)))
    out = roofline_cluster(specs, base=base)
    assert out.class_named("a").memory == 1e9 and out.class_named("a").link_factor == 1.0
    assert out.class_named("b").link_factor == pytest.approx(2.0 * 32e9 / 16e9)
    assert out.class_named("b").memory == 16e9
    with pytest.raises(DeviceError, match="kind 'tpu' has no roofline figures"):
        roofline_cluster(specs, base=Cluster((DeviceClass("t", "tpu", 1),)))


def test_device_files():
    specs, base = devices_from_dict({"roofline": {"gpu": "v100", "cpu": {"preset": "cpu", "launch_overhead": 0}}})
    assert base is None and specs["gpu"] == PRESETS["v100"] and specs["cpu"].launch_overhead == 0.0
    specs, base = devices_from_dict({"classes": [{"name": "x", "kind": "v100", "count": 3}]})
    assert specs == {"v100": PRESETS["v100"]} and base.class_named("x").count == 3
    custom = {"peak_flops": 1e12, "memory_bandwidth": 1e11, "link_bandwidth": 1e10}
    assert specs_from_dict({"mine": custom})["mine"].launch_overhead == 0.0


@pytest.mark.parametrize("data, fragment", [
    ({"gpu": {"preset": "h900"}}, "unknown preset 'h900'"),
    ({"gpu": {"peak_flops": 1e12}}, "missing field(s) ['memory_bandwidth', 'link_bandwidth']"),
    ({"gpu": {"preset": "a100", "peak_flops": -1}}, "'peak_flops' must be a finite number > 0"),
    ({"gpu": {"preset": "a100", "speed": 2}}, "unknown field(s) ['speed']"),
    ({"gpu": 42}, "kind 'gpu': must be an object or a preset name"),
])
def test_bad_figures_are_named(data, fragment):
    with pytest.raises(DeviceError) as info:
        specs_from_dict(data)
    assert fragment in str(info.value)


def test_spec_validation():
    with pytest.raises(DeviceError, match="launch_overhead"):
        RooflineSpec(1e12, 1e11, 1e10, -1.0)
    with pytest.raises(DeviceError, match="memory_bandwidth"):
        RooflineSpec(1e12, math.inf, 1e10)
    assert RooflineSpec(1e12, 1e11, 1e10, memory=math.inf).memory is None
    for name, spec in PRESETS.items():
        assert spec.source, f"preset {name} cites no source"
