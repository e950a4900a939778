"""Bokeh figures of the explorer and the cheap updates that keep them current.

The graph view is one figure: all edges as one light NaN-separated line,
the edges that cross devices (the communication) as a second, darker line,
nodes as one scatter coloured on the client by a ``device`` column through a
categorical colour mapper (circles forward, triangles backward), rings round
pinned nodes and a legend of devices with their loads. Recolouring after a
solve or a move replaces only the ``device`` column and the (small) cross-edge
line — the figure is never rebuilt. Canvas backend (WebGL is far slower under
software GL).

>>> from viz_place.samples import make_graph
>>> from viz_place.model import Placement
>>> g = make_graph("chain", 5)
>>> view = graph_view(g, g.default_cluster, Placement({n: "fpga:0" for n in g.node_ids}))
>>> view.nodes.data["device"][:2]
['fpga:0', 'fpga:0']
>>> set_placement(view, g, Placement({n: "cpu:0" for n in g.node_ids}))
>>> view.nodes.data["device"][0]
'cpu:0'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bokeh.models import (CategoricalColorMapper, ColumnDataSource, FactorRange, HoverTool, Legend, LegendItem,
                          NumeralTickFormatter, TapTool)
from bokeh.plotting import figure
from bokeh.transform import factor_mark

from ..model import Cluster, OpGraph, Placement
from .data import (NAN_COLOUR, device_bar_columns, device_colours, device_column, edge_polyline, legend_columns,
                   node_columns, pin_columns)
from .layout import layered_layout


@dataclass(eq=False)
class GraphView:
    """The graph figure and the handles the explorer updates."""

    figure: Any
    nodes: ColumnDataSource
    cross_edges: ColumnDataSource
    pins: ColumnDataSource
    legend: ColumnDataSource
    mapper: CategoricalColorMapper
    node_renderer: Any
    positions: Any


def graph_view(graph: OpGraph, cluster: Cluster, placement: Placement, *, pins: Mapping[str, str] | None = None,
               evaluation=None, positions=None, height: int = 430) -> GraphView:
    """Build the graph figure for ``placement`` (positions from :func:`layered_layout` by default)."""
    pos = layered_layout(graph) if positions is None else positions
    colours = device_colours(cluster)
    mapper = CategoricalColorMapper(factors=list(colours), palette=list(colours.values()), nan_color=NAN_COLOUR)
    p = figure(height=height, sizing_mode="stretch_width", output_backend="canvas",
               tools="pan,wheel_zoom,box_zoom,reset,save", active_scroll="wheel_zoom",
               title=f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges")
    p.y_range.min_interval = 6.0   # a one-row graph stays flat instead of filling the height with arcs
    p.axis.visible = False
    p.grid.visible = False
    p.toolbar.logo = None
    xs, ys = edge_polyline(graph, pos)
    all_edges = ColumnDataSource({"x": xs, "y": ys})
    p.line("x", "y", source=all_edges, line_color="#b8b8b8", line_width=0.8, line_alpha=0.8)
    dev_col = device_column(graph, placement)
    cxs, cys = edge_polyline(graph, pos, cross_only_for=dev_col)
    cross = ColumnDataSource({"x": cxs, "y": cys})
    cross_r = p.line("x", "y", source=cross, line_color="#222222", line_width=1.8, line_alpha=0.9,
                     line_dash="dashed")
    cols = node_columns(graph, pos)
    cols["device"] = dev_col
    nodes = ColumnDataSource(cols)
    marker = factor_mark("dir", ["circle", "triangle"], ["forward", "backward"])
    node_r = p.scatter("x", "y", source=nodes, size=10 if graph.num_nodes <= 500 else 7, marker=marker,
                       fill_color={"field": "device", "transform": mapper}, line_color="#333333", line_width=0.5,
                       selection_line_color="black", selection_line_width=3, selection_fill_alpha=1.0,  # the others stay undimmed
                       nonselection_fill_alpha=1.0, nonselection_line_alpha=1.0)
    pin_src = ColumnDataSource(pin_columns(graph, pos, pins or {}))
    pin_r = p.scatter("x", "y", source=pin_src, marker="circle", size=18, fill_alpha=0, line_color="black",
                      line_width=2.5)
    leg_src = ColumnDataSource(legend_columns(cluster, evaluation))
    leg_r = p.scatter("x", "y", source=leg_src, marker="square", size=12,
                      fill_color={"field": "device", "transform": mapper}, line_color=None)
    legend = Legend(items=[LegendItem(label={"field": "label"}, renderers=[leg_r]),
                           LegendItem(label="cross-device edge (communication)", renderers=[cross_r]),
                           LegendItem(label="pinned", renderers=[pin_r])],
                    location="top_left", click_policy="none", label_text_font_size="9pt")
    p.add_layout(legend, "right")
    p.add_tools(HoverTool(renderers=[node_r], tooltips=[
        ("node", "@name (@id)"), ("op", "@op (@dir)"), ("latency", "@lat"), ("memory", "@mem"),
        ("device", "@device")]))
    p.add_tools(TapTool(renderers=[node_r]))
    return GraphView(p, nodes, cross, pin_src, leg_src, mapper, node_r, pos)


def set_placement(view: GraphView, graph: OpGraph, placement: Placement | Mapping[str, str],
                  changed: Sequence[int] | None = None) -> None:
    """Recolour: replace the ``device`` column (or patch ``changed`` rows) and the cross edges."""
    dev_col = device_column(graph, placement)
    if changed is not None and len(changed) <= 64:
        patches = [(int(i), dev_col[i]) for i in changed if view.nodes.data["device"][i] != dev_col[i]]
        if patches:
            view.nodes.patch({"device": patches})
    else:
        view.nodes.data.update(device=dev_col)
    xs, ys = edge_polyline(graph, view.positions, cross_only_for=dev_col)
    view.cross_edges.data = {"x": xs, "y": ys}


def set_cluster(view: GraphView, cluster: Cluster, evaluation=None) -> None:
    """New device list: new colour factors and legend rows."""
    colours = device_colours(cluster)
    view.mapper.update(factors=list(colours), palette=list(colours.values()))
    set_legend(view, cluster, evaluation)


def set_legend(view: GraphView, cluster: Cluster, evaluation=None) -> None:
    view.legend.data = legend_columns(cluster, evaluation)


def set_pins(view: GraphView, graph: OpGraph, pins: Mapping[str, str]) -> None:
    view.pins.data = pin_columns(graph, view.positions, pins)


# --- metrics -------------------------------------------------------------------

@dataclass(eq=False)
class MetricsView:
    load_figure: Any
    memory_figure: Any
    bars: ColumnDataSource


def metrics_view(evaluation, cluster: Cluster) -> MetricsView:
    """Per device: stacked compute + communication bar, and memory against capacity."""
    data = device_bar_columns(evaluation, cluster)
    src = ColumnDataSource(data)
    rng = FactorRange(factors=list(reversed(data["device"])))
    h = max(160, 24 * len(data["device"]) + 70)
    load = figure(y_range=rng, height=h, width=380, title="load per device (compute + communication)",
                  tools="", toolbar_location=None, output_backend="canvas")
    load.hbar_stack(["compute", "communication"], y="device", height=0.7, source=src,
                    color=["#4c72b0", "#dd8452"], legend_label=["compute", "communication"])
    legend = load.legend[0]
    legend.orientation = "horizontal"
    legend.label_text_font_size = "8pt"
    load.add_layout(legend, "below")
    load.add_tools(HoverTool(tooltips=[("device", "@device"), ("compute", "@compute{0.000}"),
                                       ("communication", "@communication{0.000}"), ("load", "@load{0.000}"),
                                       ("nodes", "@nodes")]))
    mem = figure(y_range=load.y_range, height=h, width=380, title="memory per device (frame = capacity)",
                 tools="", toolbar_location=None, output_backend="canvas")
    mem.hbar(y="device", right="memory", height=0.7, source=src, fill_color="colour", line_color=None)
    mem.hbar(y="device", right="capacity", height=0.7, source=src, fill_alpha=0, line_color="black",
             line_width=1.5)
    mem.xaxis.formatter = NumeralTickFormatter(format="0.0b")
    mem.add_tools(HoverTool(tooltips=[("device", "@device"), ("memory", "@memory{0.0b}"),
                                      ("capacity", "@capacity{0.0b}"), ("over capacity", "@over")]))
    for f in (load, mem):
        f.x_range.start = 0
    return MetricsView(load, mem, src)


def set_metrics(view: MetricsView, evaluation, cluster: Cluster) -> None:
    data = device_bar_columns(evaluation, cluster)
    factors = list(reversed(data["device"]))
    if list(view.load_figure.y_range.factors) != factors:
        view.load_figure.y_range.factors = factors
    view.bars.data = data


# The trade-offs charts and the solver curve live in :mod:`viz_place.render.charts`.
