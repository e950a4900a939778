"""Pure rendering: layout, column data and Bokeh figures from (graph, placement, evaluation).

Nothing here needs Jupyter; the explorer (:mod:`viz_place.widgets`) wraps
these figures in widgets and calls the ``set_*`` updaters when its state changes.

>>> from viz_place.render import graph_view, layered_layout
"""
from .data import (device_bar_columns, device_colours, device_column, edge_polyline, format_bytes, legend_columns,
                   node_columns, pareto_front, pin_columns)
from .figures import (CurveView, GraphView, MetricsView, TradeoffView, curve_view, graph_view, metrics_view,
                      set_cluster, set_legend, set_metrics, set_pins, set_placement, set_sweep, set_tradeoffs,
                      tradeoff_columns, tradeoff_view)
from .layout import dot_available, layered_layout

__all__ = ["device_bar_columns", "device_colours", "device_column", "edge_polyline", "format_bytes", "legend_columns",
           "node_columns", "pareto_front", "pin_columns", "CurveView", "GraphView", "MetricsView",
           "TradeoffView", "curve_view", "graph_view", "metrics_view", "set_cluster", "set_legend",
           "set_metrics", "set_pins", "set_placement", "set_sweep", "set_tradeoffs", "tradeoff_columns",
           "tradeoff_view", "dot_available", "layered_layout"]
