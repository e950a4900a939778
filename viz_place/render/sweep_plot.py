"""The design-sweep figure: value vs number of accelerators, one line per solver (and device
mix), drawn from a sweep's rows (pure: no solver runs here).

>>> view = design_sweep_view()
>>> set_design_sweep(view, {"dp": ([1, 2], [4.0, 2.5]), "topo-fill": ([1, 2], [4.0, 3.0])})
>>> view.lines.data["label"], view.points.data["x"]
(['dp', 'topo-fill'], [1, 2, 1, 2])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f")


@dataclass(eq=False)
class DesignSweepView:
    figure: Any
    lines: ColumnDataSource
    points: ColumnDataSource


def design_sweep_view(y_label: str = "max-load (time per sample)") -> DesignSweepView:
    """An empty figure: lines (one per series) and hoverable points."""
    lines = ColumnDataSource({"xs": [], "ys": [], "label": [], "colour": []})
    points = ColumnDataSource({"x": [], "y": [], "label": [], "colour": []})
    f = figure(height=320, width=560, title="design sweep: value vs accelerators, per solver",
               x_axis_label="number of accelerators", y_axis_label=y_label, tools="pan,wheel_zoom,reset",
               output_backend="canvas")
    f.multi_line("xs", "ys", source=lines, line_color="colour", line_width=2, legend_field="label")
    r = f.scatter("x", "y", source=points, size=7, fill_color="colour", line_color="black")
    f.add_tools(HoverTool(renderers=[r], tooltips=[("series", "@label"), ("accelerators", "@x"), ("value", "@y{0.000}")]))
    f.legend.location = "top_right"
    return DesignSweepView(f, lines, points)


def set_design_sweep(view: DesignSweepView, series: Mapping[str, tuple[Sequence, Sequence]]) -> None:
    """Draw ``{label: (xs, ys)}`` (e.g. :meth:`~viz_place.runtime.sweep_store.SweepTable.series`)."""
    labels = list(series)
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(labels))]
    view.lines.data = {"xs": [list(series[k][0]) for k in labels], "ys": [list(series[k][1]) for k in labels],
                       "label": labels, "colour": colours}
    pts: dict[str, list] = {"x": [], "y": [], "label": [], "colour": []}
    for k, c in zip(labels, colours):
        xs, ys = series[k]
        pts["x"] += list(xs)
        pts["y"] += list(ys)
        pts["label"] += [k] * len(xs)
        pts["colour"] += [c] * len(xs)
    view.points.data = pts
