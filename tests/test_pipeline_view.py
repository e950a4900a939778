"""The pipeline views: schedules from the evaluator (cost.schedule) and their figures."""
from __future__ import annotations

import math

import numpy as np
import pytest

from viz_place.cost import evaluate
from viz_place.cost.schedule import device_flows, latency_schedule, pipeline_order, pipeline_schedule
from viz_place.model import Cluster, OpGraph, Placement
from viz_place.start import starting_placement
from viz_place.render.pipeline_figure import pipeline_view, set_pipeline
from viz_place.samples import load_sample, make_graph
from viz_place.testing import random_instance


def _ev(name="residual", placement=None, overlap=False):
    g = load_sample(name) if isinstance(name, str) else name
    c = g.default_cluster
    p = placement or starting_placement(g, c)
    return g, c, evaluate(g, c, p, overlap=overlap)


@pytest.mark.parametrize("overlap", [False, True])
def test_pipeline_blocks_are_the_evaluators_figures(overlap):
    g, c, ev = _ev(overlap=overlap)
    T = ev.max_load
    blocks = pipeline_schedule(ev, samples=3)
    figures = {d.name: d for d in ev.devices}
    order = pipeline_order(ev)
    assert set(order) == {d for d in ev._prob.device_names if (ev._dev == ev._prob.device_names.index(d)).any()}
    for b in blocks:
        want = figures[b.device].compute if b.kind == "compute" else figures[b.device].communication
        assert math.isclose(b.end - b.start, want)
        assert math.isclose(b.start - (b.stage + b.sample) * T, 0.0, abs_tol=1e-9) or \
            (b.kind == "communication" and not overlap)
    # the bottleneck's work fills the whole period: max-load is the time per sample
    bn = [b for b in blocks if b.device == ev.bottleneck]
    busy = sum(b.end - b.start for b in bn if b.sample == 0)
    if overlap:
        assert math.isclose(max(b.end - b.start for b in bn if b.sample == 0), T)
    else:
        assert math.isclose(busy, T)
    # every other device idles for T - load per period
    for name in order:
        assert figures[name].load <= T + 1e-9


def test_latency_schedule_is_the_latency_models():
    for seed in range(15):
        inst = random_instance(seed, n_min=4, n_max=20, pins=False)
        g, c = inst.graph, inst.cluster
        rng = np.random.default_rng(seed)
        names = c.device_names
        p = Placement({n: names[int(rng.integers(len(names)))] for n in g.node_ids})
        ev = evaluate(g, c, p)
        sched = latency_schedule(ev)
        if math.isinf(ev.latency):   # pieces waiting on each other, or an unsupported op (inf latency)
            assert math.isinf(sched.latency) and sched.issue == ev.latency_issue
            continue
        assert sched.latency == ev.latency
        assert math.isclose(max((u.finish for u in sched.units), default=0.0), ev.latency)
        finish = ev.finish_times
        for u in sched.units:
            for n in u.nodes:
                assert math.isclose(finish[n], u.finish)
            assert math.isclose(u.finish, u.start + u.comm_in + u.compute + u.comm_out)
        # every node is scheduled exactly once
        scheduled = [n for u in sched.units for n in u.nodes]
        assert sorted(scheduled) == sorted(g.node_ids)


def test_device_flows_sum_the_transfer_costs_and_find_cycles():
    g = OpGraph.from_records([
        {"id": "a", "latency": {"fpga": 1.0}, "transfer_cost": 0.5},
        {"id": "b", "latency": {"fpga": 1.0}, "transfer_cost": 0.25},
        {"id": "c", "latency": {"fpga": 1.0}, "transfer_cost": 2.0},
        {"id": "d", "latency": {"fpga": 1.0}}], [("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("a", "d")])
    c = Cluster.paper(3, 0, None)
    # a, c on fpga:0; b on fpga:1; d on fpga:2: fpga:0 -> fpga:1 -> fpga:0 is a cycle
    ev = evaluate(g, c, Placement({"a": "fpga:0", "b": "fpga:1", "c": "fpga:0", "d": "fpga:2"}))
    flows = {(f.source, f.target): f for f in device_flows(ev)}
    assert set(flows) == {("fpga:0", "fpga:1"), ("fpga:1", "fpga:0"), ("fpga:0", "fpga:2")}
    assert flows[("fpga:0", "fpga:1")].cost == 0.5            # a's output, once
    assert flows[("fpga:0", "fpga:2")].cost == 0.5 + 2.0      # a and c both feed d
    assert flows[("fpga:0", "fpga:2")].ops == 2
    assert flows[("fpga:0", "fpga:1")].on_cycle and flows[("fpga:1", "fpga:0")].on_cycle
    assert not flows[("fpga:0", "fpga:2")].on_cycle
    # what each device pays is these flows seen from both ends (link factor 1)
    paid = {d.name: d.communication for d in ev.devices}
    for dev in ("fpga:0", "fpga:1", "fpga:2"):
        received = sum(f.cost for (s, t), f in flows.items() if t == dev)
        senders = {n for n in g.node_ids if ev._prob.device_names[ev._dev[g.index[n]]] == dev
                   and any(ev._prob.device_names[ev._dev[g.index[v]]] != dev for v in g.successors(n))}
        assert math.isclose(paid[dev], received + sum(g.node(n).transfer_cost for n in senders))


def test_pipeline_view_figures_follow_the_evaluation():
    g, c, ev = _ev("transformer")
    v = pipeline_view(ev, c)
    figs = v.figures()
    assert set(figs) == {"pipeline", "latency_schedule", "devices_graph"}
    for f in figs.values():   # explicit ranges: no "could not set initial ranges"
        assert type(f.x_range).__name__ == "Range1d" and f.x_range.end > f.x_range.start
        assert type(f.y_range).__name__ == "Range1d" and f.y_range.end != f.y_range.start
    assert v.bottleneck.data["device"] == [ev.bottleneck]
    overrides = v.pipeline.yaxis.major_label_overrides
    assert any("bottleneck" in s and ev.bottleneck in s for s in overrides.values())
    assert f"{ev.max_load:.4g}" in v.pipeline.title.text
    assert f"{ev.latency:.4g}" in v.latency.title.text
    assert len(v.dev_nodes.data["device"]) == len(c.device_names)
    assert len(v.dev_arrows.data["cost"]) == len(device_flows(ev))
    # after a change every figure is redrawn from the new evaluation
    one = Placement({n: "fpga:0" for n in g.node_ids})
    ev1 = evaluate(g, c, one)
    set_pipeline(v, ev1, c)
    assert set(v.blocks.data["device"]) == {"fpga:0"}
    assert v.dev_arrows.data["cost"] == []
    assert "no cycle" in v.devices_graph.title.text


def test_pipeline_view_of_an_empty_placement_has_ranges():
    g = make_graph("chain", 3)
    c = g.default_cluster
    ev = evaluate(g, c, Placement({n: "cpu:0" for n in g.node_ids}))
    v = pipeline_view(ev, c)
    assert v.pipeline.x_range.end > 0 and v.latency.x_range.end > 0


def test_explorer_figures_and_pipeline_tab_update():
    from viz_place.widgets import PlacementExplorer
    ex = PlacementExplorer("residual", load_bokehjs=False)
    figs = ex.figures()
    assert {"graph", "pipeline", "devices_graph"} <= set(figs)
    assert figs["graph"] is ex.graph_panel.view.figure
    before = list(ex.pipeline.view.blocks.data["right"])
    ex.run("single-device")
    assert ex.pipeline.view.blocks.data["right"] != before
    assert set(ex.pipeline.view.blocks.data["device"]) == {d.name for d in ex.evaluation.devices if d.num_nodes}


def test_graph_panel_tap_on_a_box_opens_it_and_on_a_header_closes_it():
    from viz_place.widgets.graph_panel import GraphPanel
    from viz_place.widgets.state import ExplorerState
    panel = GraphPanel(ExplorerState(load_sample("gpt2_small")))
    v = panel.view
    gid = v.boxes.data["gid"][0]
    frames_before = len(v.frames.data["gid"])
    # as jupyter_bokeh delivers a tap: the selection is set (callbacks run), then the callbacks run again
    v.boxes.selected.indices = [0]
    panel._on_box_tap("indices", [], [0])
    assert gid in v.frames.data["gid"] and gid not in v.boxes.data["gid"]
    assert len(v.frames.data["gid"]) == frames_before + 1, "one tap opens one group"
    k = v.frames.data["gid"].index(gid)
    v.frames.selected.indices = [k]
    panel._on_header_tap("indices", [], [k])
    assert gid in v.boxes.data["gid"] and len(v.frames.data["gid"]) == frames_before
    # searching a node hidden in a box opens the groups round it
    hidden = v.hierarchy.members(gid)[0]
    panel.search.value = panel.state.graph.node_ids[int(hidden)]
    assert not math.isnan(v.nodes.data["x"][int(hidden)])
    assert v.nodes.selected.indices == [int(hidden)]
