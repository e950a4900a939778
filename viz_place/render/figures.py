"""Bokeh figures of the explorer beside the graph: the metrics (trade-offs and the solver
curve are in :mod:`viz_place.render.charts`).

The graph figure is in :mod:`viz_place.render.graph_figure`, the pipeline and
device-level views in :mod:`viz_place.render.pipeline_figure`. Canvas backend
(WebGL is far slower under software GL).

>>> from viz_place.samples import make_graph
>>> from viz_place.cost import evaluate
>>> from viz_place.model import Placement
>>> g = make_graph("chain", 5)
>>> ev = evaluate(g, g.default_cluster, Placement({n: "fpga:0" for n in g.node_ids}))
>>> metrics_view(ev, g.default_cluster).bars.data["device"][0]
'fpga:0'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bokeh.models import ColumnDataSource, FactorRange, HoverTool, NumeralTickFormatter
from bokeh.plotting import figure

from ..model import Cluster
from .data import device_bar_columns


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
