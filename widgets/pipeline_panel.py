"""The Pipeline tab: the pipelined schedule (Gantt), the single-sample schedule and the
device-level graph, redrawn from the evaluation after every change.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> s = ExplorerState(make_graph("residual", 30))
>>> panel = PipelinePanel(s)
>>> sorted(panel.figures())
['devices_graph', 'latency_schedule', 'pipeline']
>>> s.move(s.graph.node_ids[0], "fpga:3"); "fpga:3" in panel.view.blocks.data["device"]
True
"""
from __future__ import annotations

import ipywidgets as W
from bokeh.layouts import column

from viz_place.render.pipeline_figure import pipeline_view, set_pipeline

from .common import bokeh_widget

EXPLAIN = ("<div style='font-size:12px;max-width:1100px'><b>Why max-load is the time per sample.</b> "
           "When samples stream through the devices, each device works on one sample per period; a period "
           "cannot be shorter than the busiest device's load (its compute plus its communication), so "
           "the bottleneck lane is never idle and every other lane waits for it. <b>Latency</b> is one sample "
           "start to finish under the latency model: an accelerator runs its ops as pieces, each waiting "
           "until all its inputs have arrived. The device graph shows which devices send data to which "
           "(arc width = transfer cost); a red cycle means two devices feed each other.</div>")


class PipelinePanel:
    """Pipeline Gantt chart, latency schedule and device graph over one :class:`ExplorerState`."""

    def __init__(self, state) -> None:
        self.state = state
        self.view = pipeline_view(state.evaluation, state.cluster)
        # (no Bokeh Div: the explorer loads only the core BokehJS bundle, without widgets)
        layout = column(self.view.pipeline, self.view.latency, sizing_mode="stretch_width")
        self.plots = bokeh_widget(layout, layout=W.Layout(width="100%"))
        self.devices_plot = bokeh_widget(self.view.devices_graph)
        self.widget = W.VBox([self.plots, W.HBox([self.devices_plot, W.HTML(EXPLAIN, layout=W.Layout(width="560px"))])],
                             layout=W.Layout(width="100%"))
        for event in ("placement", "cluster", "graph"):
            state.on(event, lambda s, **_: self.update())

    def update(self) -> None:
        s = self.state
        set_pipeline(self.view, s.evaluation, s.cluster)

    def figures(self) -> dict:
        return self.view.figures()
