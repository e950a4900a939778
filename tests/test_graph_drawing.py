"""The structural drawing: group hierarchies, the dot layout of groups, the graph figure
(glyphs, boxes split by device, collapse/expand, labels) — plain pytest over Bokeh sources."""
from __future__ import annotations

import math

import numpy as np
import pytest
from bokeh.models import Range1d

from viz_place.cost import evaluate
from viz_place.model import OpGraph, Placement
from viz_place.render import (collapse_group, expand_group, graph_view, hierarchy, initial_expanded, set_expanded,
                              set_placement)
from viz_place.start import starting_placement
from viz_place.render.drawing import DOT_MAX_ITEMS, item_drawing
from viz_place.render.families import FAMILY_MARKERS, op_family
from viz_place.render.graph_figure import BOX_LABEL_PPU, LABEL_LIMIT, NODE_LABEL_PPU, label_visibility
from viz_place.render.groups import MAX_CHILDREN, default_expanded
from viz_place.samples import load_sample, make_graph
from viz_place.testing import random_instance


def _partition_ok(h, n):
    seen = np.zeros(n, dtype=int)
    for g in h.groups.values():
        for i in g.nodes:
            seen[i] += 1
    assert (seen == 1).all(), "every node sits directly in exactly one group"
    for gid, g in h.groups.items():
        assert g.size == len(h.members(gid))
        for c in g.children:
            assert h.groups[c].parent == gid


@pytest.mark.parametrize("name", ["gpt2_small", "resnet_small"])
def test_module_samples_group_by_their_module_paths(name):
    g = load_sample(name)
    h = hierarchy(g)
    assert h.source == "modules"
    _partition_ok(h, g.num_nodes)
    # the nodes of a module group all have layer paths inside that module
    nodes = g.nodes()
    for gid in h.all_groups():
        members = h.members(gid)
        if len(members) < 2:
            continue
        layers = [nodes[int(i)].layer for i in members]
        prefix = min(layers, key=len)
        common = prefix
        for la in layers:
            while not la.startswith(common):
                common = common.rsplit("/", 1)[0]
        assert common.count("/") >= 2, f"group {h.groups[gid].label} mixes unrelated modules: {set(layers)}"
    # opened at the top level: one box per module, fewer items than nodes
    items = set(h.visible_items(initial_expanded(g, h)))
    assert 2 < len(items) < g.num_nodes


def test_gpt2_sample_has_its_blocks_as_modules():
    h = hierarchy(load_sample("gpt2_small"))
    labels = {g.label for g in h.groups.values()}
    assert {"h.0", "h.1", "attn", "mlp"} <= labels


def test_structural_groups_cut_residual_blocks_where_one_tensor_flows():
    # x -> a -> b -> add(x, b) -> c -> d -> add2(add, d) -> out: two residual blocks
    ids = ["x", "a", "b", "add", "c", "d", "add2", "out"] + [f"t{i}" for i in range(6)]
    edges = [("x", "a"), ("a", "b"), ("b", "add"), ("x", "add"), ("add", "c"), ("c", "d"), ("d", "add2"),
             ("add", "add2"), ("add2", "out")] + [("out", "t0")] + [(f"t{i}", f"t{i + 1}") for i in range(5)]
    g = OpGraph.from_records([{"id": i, "latency": {"cpu": 1.0}} for i in ids], edges)
    h = hierarchy(g)
    assert h.source == "structure"
    _partition_ok(h, g.num_nodes)
    block_sets = [{g.node_ids[int(i)] for i in h.members(gid)} for gid in h.all_groups()]
    # no group splits a residual block: each block lies inside one group or is cut only at its ends
    for block in ({"a", "b", "add"}, {"c", "d", "add2"}):
        for s in block_sets:
            inter = s & block
            assert not inter or block <= s or inter in ({"add"}, {"add2"}) or s <= block, (s, block)


@pytest.mark.parametrize("name", ["onnx_resnet50", "transformer_large", "onnx_inception_v1"])
def test_structural_hierarchy_of_large_graphs(name):
    g = load_sample(name)
    h = hierarchy(g)
    _partition_ok(h, g.num_nodes)
    assert len(h.groups[h.root].children) <= MAX_CHILDREN
    top = set(h.visible_items(initial_expanded(g, h)))
    assert len(top) <= 30


def test_random_graphs_always_get_a_valid_hierarchy():
    for seed in range(25):
        g = random_instance(seed, n_min=5, n_max=60).graph
        h = hierarchy(g)
        _partition_ok(h, g.num_nodes)
        items = h.visible_items(default_expanded(h))
        assert all(it for it in items)


def test_op_families():
    assert {op_family(t) for t in ("Conv", "ConvTranspose")} == {"conv"}
    assert {op_family(t) for t in ("MatMul", "Gemm", "addmm")} == {"matmul"}
    assert {op_family(t) for t in ("BatchNormalization", "LayerNorm", "LRN")} == {"normalisation"}
    assert {op_family(t) for t in ("Relu", "Gelu", "Softmax", "Tanh")} == {"activation"}
    assert {op_family(t) for t in ("Add", "Mul", "Sum", "Dropout")} == {"element-wise"}
    assert {op_family(t) for t in ("Reshape", "Transpose", "Concat", "Gather", "Split")} == {"data movement"}
    assert op_family("MaxPool") == op_family("SomethingNew") == "other"
    assert set(FAMILY_MARKERS) >= {"conv", "matmul", "normalisation", "activation", "element-wise", "data movement"}


def _near(ax, ay, bx, by, tol):
    return math.hypot(ax - bx, ay - by) <= tol


@pytest.mark.parametrize("method", ["dot", "layered"])
def test_edges_join_their_own_ends_no_band_connectors(method):
    """Every drawn edge starts at its source item and ends at its target, and runs left to right:
    no line joins the end of one band to the start of the next."""
    g = load_sample("onnx_resnet50")
    h = hierarchy(g)
    d = item_drawing(g, set(h.all_groups()), method=method)
    assert d.method == method
    assert not np.isnan(d.node_xy).any()
    idx = g.index
    for k, (u, v) in enumerate(g.edges):
        xs, ys = d.edge_lines[d.edge_items[k]]
        (ux, uy), (vx, vy) = d.node_xy[idx[u]], d.node_xy[idx[v]]
        assert _near(xs[0], ys[0], ux, uy, 0.4) and _near(xs[-1], ys[-1], vx, vy, 0.4), (u, v)
        assert vx > ux
    width = d.bounds[2] - d.bounds[0]
    assert width > 20 * (d.bounds[3] - d.bounds[1]) / 10   # one long left-to-right drawing, not stacked bands


def test_dot_frames_enclose_their_members_and_nest():
    g = load_sample("gpt2_small")
    h = hierarchy(g)
    exp = set(h.all_groups())
    d = item_drawing(g, exp, method="dot")
    assert set(d.frames) == set(h.expanded_groups(exp))
    for gid, (x0, y0, x1, y1) in d.frames.items():
        for i in h.members(gid):
            x, y = d.node_xy[int(i)]
            assert x0 <= x <= x1 and y0 <= y <= y1, (h.groups[gid].label, g.node_ids[int(i)])
        parent = h.groups[gid].parent
        if parent in d.frames:
            px0, py0, px1, py1 = d.frames[parent]
            assert px0 <= x0 and x1 <= px1 and py0 <= y0 and y1 <= py1


def test_collapsed_boxes_hide_their_members():
    g = load_sample("transformer_large")
    h = hierarchy(g)
    d = item_drawing(g, set())
    assert d.method == "dot" and len(d.boxes) == len(h.groups[h.root].children)
    hidden = np.isnan(d.node_xy[:, 0])
    inside = np.zeros(g.num_nodes, bool)
    for gid in d.boxes:
        inside[h.members(gid)] = True
    assert (hidden == inside).all()
    # a drawn edge for every pair of items a graph edge joins, none inside a box
    assert (d.edge_items >= -1).all() and len(d.edge_lines) == d.edge_items.max() + 1


def test_large_fully_expanded_graph_falls_back_to_the_built_in_layout():
    g = load_sample("transformer_large")
    h = hierarchy(g)
    assert g.num_nodes > DOT_MAX_ITEMS
    assert item_drawing(g, set(h.all_groups())).method == "layered"


# --- the figure ----------------------------------------------------------------------------

def _view(name, placement=None, **kw):
    g = load_sample(name)
    c = g.default_cluster
    p = placement or starting_placement(g, c)
    return g, c, p, graph_view(g, c, p, evaluation=evaluate(g, c, p), **kw)


def test_nodes_are_glyphs_of_their_family_sized_by_compute_share():
    g, c, p, v = _view("onnx_resnet50", expanded=set(hierarchy(load_sample("onnx_resnet50")).all_groups()))
    fam = v.nodes.data["family"]
    assert fam == [op_family(n.op_type) for n in g.nodes()]
    assert v.node_renderer.glyph.marker.transform.markers == list(FAMILY_MARKERS.values())
    from viz_place.render.graph_figure import _shares
    share, size = _shares(g), np.array(v.nodes.data["size"])
    assert np.allclose(np.array(v.nodes.data["share"]), share * 100, atol=0.01)
    order = np.argsort(share, kind="stable")
    assert (np.diff(size[order]) >= -0.02).all() and size.max() > size.min()   # (both columns are rounded)
    assert math.isclose(share.sum(), 1.0)


def test_boxes_are_split_by_device_and_recolour_updates_the_split():
    g, c, p, v = _view("transformer_large")
    assert len(v.boxes.data["gid"]) > 3 and np.isnan(v.nodes.data["x"]).all()
    h = v.hierarchy

    def check(placement):
        st = v.stripes.data
        for k, gid in enumerate(v.boxes.data["gid"]):
            mine = [j for j, s in enumerate(st["gid"]) if s == gid]
            assert math.isclose(sum(st["w"][j] for j in mine), v.boxes.data["w"][k])
            want = {}
            for i in h.members(gid):
                want[placement[g.node_ids[int(i)]]] = want.get(placement[g.node_ids[int(i)]], 0) + 1
            got = {st["device"][j]: st["w"][j] / v.boxes.data["w"][k] for j in mine}
            total = sum(want.values())
            assert set(got) == set(want)
            for d, frac in got.items():
                assert math.isclose(frac, want[d] / total)
    check(p)
    assert any(len({d for d, s in zip(v.stripes.data["device"], v.stripes.data["gid"]) if s == gid}) > 1
               for gid in v.boxes.data["gid"]) or len(set(p.assignment.values())) == 1
    accel = [d for d in c.device_names if d.startswith(("fpga", "gpu"))]
    p2 = Placement({n: accel[i % len(accel)] for i, n in enumerate(g.node_ids)})
    set_placement(v, g, p2)
    check(p2)
    assert all(len([s for s in v.stripes.data["gid"] if s == gid]) == len(accel) for gid in v.boxes.data["gid"])


def test_collapse_and_expand_round_trip():
    g, c, p, v = _view("gpt2_small")
    before = {k: list(v.boxes.data[k]) for k in ("gid", "x", "y")}
    xy0 = np.array(v.nodes.data["x"], dtype=float)
    gid = v.boxes.data["gid"][0]
    expand_group(v, g, p, gid)
    assert gid not in v.boxes.data["gid"] and gid in v.frames.data["gid"]
    members = v.hierarchy.members(gid)
    assert not np.isnan(np.array(v.nodes.data["x"], dtype=float)[members]).all()
    collapse_group(v, g, p, gid)
    assert {k: list(v.boxes.data[k]) for k in ("gid", "x", "y")} == before
    assert np.array_equal(np.isnan(np.array(v.nodes.data["x"], dtype=float)), np.isnan(xy0))
    # closing an outer group closes the groups inside it
    outer = v.frames.data["gid"][0]
    collapse_group(v, g, p, outer)
    assert outer in v.boxes.data["gid"]
    assert not any(outer in v.hierarchy.ancestors(x) for x in v.expanded)


def test_cross_edges_follow_the_drawn_items():
    g, c, p, v = _view("residual")
    one = Placement({n: "fpga:0" for n in g.node_ids})
    set_placement(v, g, one)
    assert len(v.cross_edges.data["x"]) == 0
    set_placement(v, g, p)
    assert len(v.cross_edges.data["x"]) > 0
    set_expanded(v, g, p, ())   # everything collapsed into a few boxes: fewer, not more, drawn edges
    assert len(v.edges.data["x"]) < len(item_drawing(g, set(v.hierarchy.all_groups())).edge_lines) * 30


def test_labels_show_only_when_zoomed_in():
    g, c, p, v = _view("onnx_resnet50")
    d = v.drawing
    span = v.figure.x_range.end - v.figure.x_range.start
    node_lab, box_lab, _frame = label_visibility(d, span)
    assert [r.visible for r in v.label_renderers] == list(label_visibility(d, span))
    assert not label_visibility(d, 1e6)[0] and not label_visibility(d, 1e6)[1]
    full = item_drawing(g, set(v.hierarchy.all_groups()))
    assert not label_visibility(full, full.bounds[2] - full.bounds[0])[0]   # 176 ops: too many at once
    small = item_drawing(make_graph("chain", 8), set())
    assert label_visibility(small, 1100 / NODE_LABEL_PPU)[0]
    assert not label_visibility(small, 1100 / NODE_LABEL_PPU)[1]   # no boxes: no box labels
    # op labels are drawn from the ops on screen only (not one text per hidden op)
    assert len(v.node_labels.data["name"]) == int((~np.isnan(v.nodes.data["x"])).sum())
    expand_group(v, g, p, v.boxes.data["gid"][0])
    shown = np.flatnonzero(~np.isnan(v.nodes.data["x"]))
    from viz_place.render.graph_figure import _label_text
    assert v.node_labels.data["name"] == [_label_text(g.node(g.node_ids[i])) for i in shown]
    assert _label_text(g.node(g.node_ids[0])) == g.node(g.node_ids[0]).op_type   # ONNX names are n0, n1...
    # the browser applies the same rule on every range change
    cb = v.figure.x_range.js_property_callbacks["change:start"][0]
    assert cb.args["limit"] == LABEL_LIMIT and cb.args["box_ppu"] == BOX_LABEL_PPU
    assert cb.args["labels"] == v.label_renderers


def test_ranges_are_explicit_and_fit_the_drawing():
    g, c, p, v = _view("transformer_large")
    xr, yr = v.figure.x_range, v.figure.y_range
    assert isinstance(xr, Range1d) and isinstance(yr, Range1d)
    x0, y0, x1, y1 = v.drawing.bounds
    assert xr.start <= x0 and xr.end >= x1 and yr.start <= y0 and yr.end >= y1
    assert xr.end > xr.start and yr.end > yr.start
    gid = v.boxes.data["gid"][0]
    expand_group(v, g, p, gid)
    x0, y0, x1, y1 = v.drawing.bounds
    assert xr.start <= x0 and xr.end >= x1 and (xr.reset_start, xr.reset_end) == (xr.start, xr.end)


def test_hidden_pins_are_not_drawn_and_reappear_when_opened():
    g, c, p, v = _view("gpt2_small")
    from viz_place.render import set_pins
    hidden = [i for i, x in enumerate(v.nodes.data["x"]) if isinstance(x, float) and math.isnan(x)]
    n = g.node_ids[hidden[0]]
    set_pins(v, g, {n: "gpu:1"})
    assert math.isnan(v.pins.data["x"][0])
    set_expanded(v, g, p, v.hierarchy.all_groups(), {n: "gpu:1"})
    assert not math.isnan(v.pins.data["x"][0])


@pytest.mark.parametrize("n, edges", [(1, []), (30, [])])   # a graph of 0 nodes is refused by the validator
def test_tiny_and_edgeless_graphs_draw_with_ranges(n, edges):
    from viz_place.model import Cluster
    from viz_place.render.pipeline_figure import pipeline_view
    g = OpGraph.from_records([{"id": str(i), "latency": {"cpu": 0.0}} for i in range(n)], edges)
    c = Cluster.paper(2, 1, None)
    p = Placement({x: "cpu:0" for x in g.node_ids})
    v = graph_view(g, c, p)
    pv = pipeline_view(evaluate(g, c, p), c)
    for f in (v.figure, pv.pipeline, pv.latency, pv.devices_graph):
        assert f.x_range.end > f.x_range.start and f.y_range.end != f.y_range.start
