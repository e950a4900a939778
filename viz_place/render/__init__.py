"""Pure rendering: layout, column data and Bokeh figures from (graph, placement, evaluation).

Nothing here needs Jupyter; the explorer (:mod:`viz_place.widgets`) wraps
these figures in widgets and calls the ``set_*`` updaters when its state changes.

>>> from viz_place.render import graph_view, layered_layout
"""
from .data import (device_bar_columns, device_colours, device_column, edge_polyline, format_bytes, legend_columns,
                   node_columns, pareto_front, pin_columns)
from .charts import (CurveView, TradeoffView, curve_view, padded_range, reset_curve, set_sweep, set_tradeoffs,
                     stream_curve, tradeoff_columns, tradeoff_view)
from .figures import MetricsView, metrics_view, set_metrics
from .graph_figure import (GraphView, collapse_group, expand_group, graph_view, initial_expanded, set_cluster,
                           set_expanded, set_legend, set_pins, set_placement)
from .groups import Hierarchy, default_expanded, hierarchy
from .layout import dot_available, layered_layout

__all__ = ["device_bar_columns", "device_colours", "device_column", "edge_polyline", "format_bytes", "legend_columns",
           "node_columns", "pareto_front", "pin_columns", "CurveView", "GraphView", "MetricsView",
           "TradeoffView", "curve_view", "graph_view", "metrics_view", "set_cluster", "set_legend",
           "set_metrics", "set_pins", "set_placement", "set_sweep", "set_tradeoffs", "tradeoff_columns",
           "tradeoff_view", "padded_range", "reset_curve", "stream_curve", "dot_available", "layered_layout",
           "collapse_group", "expand_group", "initial_expanded", "set_expanded", "Hierarchy", "default_expanded",
           "hierarchy"]
