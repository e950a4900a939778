"""Bokeh figures of the explorer beside the graph (metrics, trade-offs, training curve).

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

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bokeh.models import ColumnDataSource, FactorRange, HoverTool, NumeralTickFormatter
from bokeh.plotting import figure

from ..model import Cluster
from .data import device_bar_columns, pareto_front


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


# --- trade-offs ---------------------------------------------------------------------

@dataclass(eq=False)
class TradeoffView:
    scatter_figure: Any
    points: ColumnDataSource
    front: ColumnDataSource
    sweep_figure: Any
    sweep: ColumnDataSource


def tradeoff_view() -> TradeoffView:
    """Throughput-vs-latency scatter of runs with the Pareto front, and the accelerator sweep."""
    pts = ColumnDataSource({"throughput": [], "latency": [], "label": [], "colour": []})
    front = ColumnDataSource({"throughput": [], "latency": []})
    sc = figure(height=300, width=420, title="runs: throughput vs latency (line = Pareto front)",
                x_axis_label="throughput (samples / time unit)", y_axis_label="latency", tools="pan,wheel_zoom,reset",
                output_backend="canvas")
    sc.line("throughput", "latency", source=front, line_color="#d62728", line_width=2)
    r = sc.scatter("throughput", "latency", source=pts, size=9, fill_color="colour", line_color="black")
    sc.add_tools(HoverTool(renderers=[r], tooltips=[("run", "@label"), ("throughput", "@throughput{0.0000}"),
                                                    ("latency", "@latency{0.000}")]))
    sw_src = ColumnDataSource({"count": [], "max_load": [], "label": []})
    sw = figure(height=300, width=420, title="accelerator sweep: optimal max-load vs count",
                x_axis_label="number of accelerators", y_axis_label="max-load (time per sample)",
                tools="pan,wheel_zoom,reset", output_backend="canvas")
    sw.line("count", "max_load", source=sw_src, line_width=2)
    r2 = sw.scatter("count", "max_load", source=sw_src, size=8)
    sw.add_tools(HoverTool(renderers=[r2], tooltips=[("accelerators", "@count"), ("max-load", "@max_load{0.000}"),
                                                     ("status", "@label")]))
    return TradeoffView(sc, pts, front, sw, sw_src)


def tradeoff_columns(history: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list], dict[str, list]]:
    """(points, Pareto front) columns from history rows with ``throughput``/``latency``."""
    keep = [h for h in history if _finite(h.get("throughput")) and _finite(h.get("latency"))]
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
    solvers = list(dict.fromkeys(h["solver"] for h in keep))
    pts = {"throughput": [h["throughput"] for h in keep], "latency": [h["latency"] for h in keep],
           "label": [f"#{h.get('run', '?')} {h['solver']} ({h.get('status', '')})" for h in keep],
           "colour": [palette[solvers.index(h["solver"]) % len(palette)] for h in keep]}
    idx = pareto_front(list(zip(pts["throughput"], pts["latency"])))
    front = {"throughput": [pts["throughput"][i] for i in idx], "latency": [pts["latency"][i] for i in idx]}
    return pts, front


def set_tradeoffs(view: TradeoffView, history: Sequence[Mapping[str, Any]]) -> None:
    pts, front = tradeoff_columns(history)
    view.points.data = pts
    view.front.data = front


def set_sweep(view: TradeoffView, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows ``{"count", "max_load", "status"}`` of a sweep, in count order."""
    view.sweep.data = {"count": [r["count"] for r in rows],
                       "max_load": [r["max_load"] if _finite(r["max_load"]) else math.nan for r in rows],
                       "label": [str(r.get("status", "")) for r in rows]}


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


# --- solver training curve ---------------------------------------------------------

@dataclass(eq=False)
class CurveView:
    figure: Any
    curve: ColumnDataSource


def curve_view() -> CurveView:
    """A live training curve (episode vs objective and best so far)."""
    src = ColumnDataSource({"episode": [], "objective": [], "best": []})
    f = figure(height=220, width=420, title="training curve", x_axis_label="episode / sweep",
               y_axis_label="objective", tools="pan,wheel_zoom,reset", output_backend="canvas")
    f.line("episode", "objective", source=src, line_alpha=0.6, legend_label="episode")
    f.line("episode", "best", source=src, line_color="#d62728", line_width=2, legend_label="best")
    f.legend.location = "top_right"
    return CurveView(f, src)
