"""viz_place.render: layout, column data and Bokeh figures, without Jupyter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from viz_place.cost import evaluate
from viz_place.model import Cluster, DeviceClass, OpGraph, Placement
from viz_place.render import (device_bar_columns, device_colours, device_column, edge_polyline, graph_view,
                              layered_layout, legend_columns, metrics_view, node_columns, pareto_front, set_cluster,
                              set_metrics, set_pins, set_placement, tradeoff_columns)
from viz_place.samples import load_sample, make_graph, training_variant
from viz_place.start import fallback_placement, starting_placement
from viz_place.testing import random_instance


@pytest.fixture(scope="module")
def large():
    return load_sample("transformer_large")


def test_layout_columns_follow_edges_and_positions_are_distinct():
    for seed in range(5):
        inst = random_instance(seed, n_min=5, n_max=30)
        g = inst.graph
        pos = layered_layout(g, method="layered")
        assert pos.shape == (g.num_nodes, 2)
        assert len({tuple(p) for p in pos.tolist()}) == g.num_nodes
        for u, v in g.edges:   # small graphs are not folded: x is the topological generation
            assert pos[g.index[u], 0] < pos[g.index[v], 0]


def test_layout_is_cached_and_read_only():
    g = make_graph("residual", 40)
    a = layered_layout(g)
    assert layered_layout(g) is a
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    with pytest.raises(ValueError, match="layout method"):
        layered_layout(g, method="spring")


def test_built_in_layout_does_not_fold(large):
    # no bands (their connecting lines were misleading): x is the topological generation, edges go right
    pos = layered_layout(large, method="layered")
    assert len({tuple(p) for p in pos.tolist()}) == large.num_nodes
    for u, v in large.edges:
        assert pos[large.index[u], 0] < pos[large.index[v], 0]


def test_node_columns_and_device_column():
    g = training_variant(make_graph("chain", 4))
    pos = layered_layout(g)
    cols = node_columns(g, pos)
    assert cols["id"] == list(g.node_ids)
    assert set(cols["dir"]) == {"forward", "backward"}
    assert all(len(v) == g.num_nodes for v in cols.values())
    p = starting_placement(g, g.default_cluster)
    assert device_column(g, p) == [p[n] for n in g.node_ids]
    assert device_column(g, {}) == [""] * g.num_nodes


def test_edge_polyline_shapes():
    g = make_graph("fork_join", 20)
    pos = layered_layout(g)
    xs, ys = edge_polyline(g, pos)
    assert len(xs) == 5 * g.num_edges - 1
    assert np.isnan(xs[4::5]).all() and not np.isnan(xs[0::5]).any() and not np.isnan(xs[3::5]).any()
    # edges start and end at their nodes
    starts = {(float(a), float(b)) for a, b in zip(xs[0::5], ys[0::5])}
    assert starts == {tuple(pos[g.index[u]]) for u, _ in g.edges}
    ends = {(float(a), float(b)) for a, b in zip(xs[3::5], ys[3::5])}
    assert ends == {tuple(pos[g.index[v]]) for _, v in g.edges}
    one_dev = device_column(g, {n: "fpga:0" for n in g.node_ids})
    assert len(edge_polyline(g, pos, cross_only_for=one_dev)[0]) == 0
    alt = ["fpga:0" if i % 2 else "fpga:1" for i in range(g.num_nodes)]
    crossing = sum(alt[g.index[u]] != alt[g.index[v]] for u, v in g.edges)
    assert len(edge_polyline(g, pos, cross_only_for=alt)[0]) == 5 * crossing - 1


def test_skip_edges_bend_so_they_are_visible():
    g = OpGraph.from_records([{"id": str(i)} for i in range(4)], [("0", "1"), ("1", "2"), ("2", "3"), ("0", "3")])
    pos = layered_layout(g, method="layered")   # the built-in layout (dot routes edges itself)
    xs, ys = edge_polyline(g, pos)
    skip = list(g.edges).index(("0", "3"))
    bent = ys[5 * skip + 1: 5 * skip + 3]
    assert (abs(bent - pos[0, 1]) > 0.3).all()
    for e, (u, v) in enumerate(g.edges):   # neighbours stay straight
        if (u, v) != ("0", "3"):
            assert np.allclose(ys[5 * e: 5 * e + 4], pos[g.index[u], 1])


def test_device_colours_distinct_and_stable():
    c = Cluster((DeviceClass("gpu", "fpga", 12), DeviceClass("cpu", "cpu", 2, pays_communication=False)))
    colours = device_colours(c)
    assert list(colours) == list(c.device_names)
    assert len(set(colours.values())) == len(colours)
    assert device_colours(c) == colours


def test_pareto_front_matches_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(30):
        pts = [tuple(map(float, rng.integers(0, 6, 2))) for _ in range(rng.integers(1, 12))]
        got = pareto_front(pts)
        want = set()
        for i, (t, l) in enumerate(pts):
            dominated = any((t2 >= t and l2 <= l and (t2 > t or l2 < l)) for t2, l2 in pts)
            if not dominated:
                want.add(i)
        # duplicates of one point: exactly one of them is kept
        assert {pts[i] for i in got} == {pts[i] for i in want}
        assert [pts[i][0] for i in got] == sorted(pts[i][0] for i in got)


def test_graph_view_recolour_sends_only_the_device_column():
    g = make_graph("residual", 40)
    c = g.default_cluster
    p0 = fallback_placement(g, c)   # everything on the host: no cross-device edge yet
    view = graph_view(g, c, p0, evaluation=evaluate(g, c, p0))
    assert view.figure.output_backend == "canvas"
    assert view.nodes.data["device"] == device_column(g, p0)
    assert len(view.cross_edges.data["x"]) == 0
    before = {k: list(v) for k, v in view.nodes.data.items() if k != "device"}
    p1 = Placement({n: f"fpga:{i % 4}" for i, n in enumerate(g.node_ids)})
    set_placement(view, g, p1)
    assert view.nodes.data["device"] == device_column(g, p1)
    assert {k: list(v) for k, v in view.nodes.data.items() if k != "device"} == before
    assert len(view.cross_edges.data["x"]) > 0
    # a one-node move is a patch of one row
    n0 = g.node_ids[0]
    set_placement(view, g, p1.moved(n0, "cpu:0"), changed=[0])
    assert view.nodes.data["device"][0] == "cpu:0"
    hover = [t for t in view.figure.tools if type(t).__name__ == "HoverTool"]
    assert hover and hover[0].renderers == [view.node_renderer]


def test_set_cluster_and_pins_update_mapper_legend_and_rings():
    g = make_graph("chain", 10)
    c = g.default_cluster
    p = starting_placement(g, c)
    view = graph_view(g, c, p)
    c2 = c.with_class_count("fpga", 6)
    set_cluster(view, c2)
    assert list(view.mapper.factors) == list(c2.device_names)
    assert view.legend.data["device"] == list(c2.device_names)
    set_pins(view, g, {g.node_ids[3]: "fpga:1"})
    assert view.pins.data["device"] == ["fpga:1"]
    assert view.pins.data["x"] == [view.positions[3, 0]]


def test_metrics_columns_match_the_evaluation():
    g = make_graph("inception", 60)
    c = g.default_cluster
    p = Placement({n: ("fpga:0" if i < 20 else "fpga:1" if i < 40 else "cpu:0") for i, n in enumerate(g.node_ids)})
    ev = evaluate(g, c, p)
    cols = device_bar_columns(ev, c)
    for i, d in enumerate(ev.devices):
        assert cols["device"][i] == d.name
        assert math.isclose(cols["compute"][i] + cols["communication"][i], d.load)
        assert cols["memory"][i] == d.memory
    assert math.isnan(cols["capacity"][cols["device"].index("cpu:0")])
    view = metrics_view(ev, c)
    assert list(view.load_figure.y_range.factors) == list(reversed(cols["device"]))
    c2 = c.with_class_count("fpga", 2)
    ev2 = evaluate(g, c2, p)
    set_metrics(view, ev2, c2)
    assert view.bars.data["device"] == [d.name for d in ev2.devices]
    labels = legend_columns(c, ev)["label"]
    assert any("load" in s for s in labels)


def test_tradeoff_columns_skip_infinite_and_build_the_front():
    hist = [{"run": 1, "solver": "a", "throughput": 1.0, "latency": 5.0},
            {"run": 2, "solver": "b", "throughput": 2.0, "latency": 9.0},
            {"run": 3, "solver": "a", "throughput": 0.5, "latency": 7.0},
            {"run": 4, "solver": "c", "throughput": 3.0, "latency": math.inf}]
    pts, front = tradeoff_columns(hist)
    assert pts["throughput"] == [1.0, 2.0, 0.5]
    assert front == {"throughput": [1.0, 2.0], "latency": [5.0, 9.0]}
