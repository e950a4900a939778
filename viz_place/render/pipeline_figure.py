"""The pipeline views: a Gantt chart of the pipelined schedule, the single-sample (latency)
schedule, and the device-level graph. Numbers come from :mod:`viz_place.cost.schedule`.

>>> from viz_place.samples import make_graph
>>> from viz_place.cost import evaluate
>>> from viz_place.model import Placement
>>> g = make_graph("residual", 30)
>>> ev = evaluate(g, g.default_cluster, Placement({n: f"fpga:{4 * i // 30}" for i, n in enumerate(g.node_ids)}))
>>> v = pipeline_view(ev, g.default_cluster)
>>> sorted(v.figures())
['devices_graph', 'latency_schedule', 'pipeline']
>>> v.blocks.data["kind"][0], v.bottleneck.data["device"] == [ev.bottleneck]
('compute', True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, Range1d
from bokeh.plotting import figure

from ..cost.schedule import device_flows, latency_schedule, pipeline_order, pipeline_schedule
from ..model import Cluster
from .data import device_colours

COMM_COLOUR = "#f0a04b"
WAIT_COLOUR = "#d5d5d5"
SAMPLES = 4


@dataclass(eq=False)
class PipelineView:
    pipeline: Any
    latency: Any
    devices_graph: Any
    blocks: ColumnDataSource
    bottleneck: ColumnDataSource
    periods: ColumnDataSource
    units: ColumnDataSource
    dev_nodes: ColumnDataSource
    dev_edges: ColumnDataSource
    dev_arrows: ColumnDataSource

    def figures(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "latency_schedule": self.latency, "devices_graph": self.devices_graph}


def _fmt(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.4g}"


def pipeline_view(evaluation, cluster: Cluster, samples: int = SAMPLES) -> PipelineView:
    """Build the three figures for ``evaluation`` (see the module docstring)."""
    tools = "pan,wheel_zoom,box_zoom,reset,save"
    pipe = figure(height=260, sizing_mode="stretch_width", tools=tools, x_range=Range1d(0, 1), y_range=Range1d(-0.5, 0.5),
                  x_axis_label="time", output_backend="canvas")
    pipe.toolbar.logo = None
    bott = ColumnDataSource({"y": [], "device": [], "w": [], "x": []})
    pipe.rect("x", "y", "w", 1.0, source=bott, fill_color="#fdecea", line_color=None)
    periods = ColumnDataSource({"x": [], "y0": [], "y1": []})
    pipe.segment("x", "y0", "x", "y1", source=periods, line_color="#c0392b", line_dash="dotted", line_width=1)
    blocks = ColumnDataSource({k: [] for k in ("left", "right", "y", "h", "colour", "kind", "device", "sample",
                                                 "label", "mid", "dur")})
    r = pipe.hbar(y="y", left="left", right="right", height="h", source=blocks, fill_color="colour",
                  line_color="#333333", line_width=0.5)
    pipe.text("mid", "y", text="label", source=blocks, text_font_size="7.5pt", text_align="center",
              text_baseline="middle")
    pipe.add_tools(HoverTool(renderers=[r], tooltips=[("device", "@device"), ("sample", "@sample"),
                                                      ("", "@kind @left{0.000} \u2192 @right{0.000} (@dur{0.000})")]))
    lat = figure(height=240, sizing_mode="stretch_width", tools=tools, x_range=Range1d(0, 1), y_range=Range1d(-0.5, 0.5),
                 x_axis_label="time (one sample)", output_backend="canvas")
    lat.toolbar.logo = None
    units = ColumnDataSource({k: [] for k in ("left", "right", "y", "h", "colour", "kind", "device", "what", "dur")})
    r2 = lat.hbar(y="y", left="left", right="right", height="h", source=units, fill_color="colour",
                  line_color="#555555", line_width=0.4)
    lat.add_tools(HoverTool(renderers=[r2], tooltips=[("device", "@device"), ("", "@kind @left{0.000} \u2192 "
                                                      "@right{0.000} (@dur{0.000})"), ("ops", "@what")]))
    dg = figure(height=380, width=520, tools="pan,wheel_zoom,reset,save", x_range=Range1d(-1.6, 1.6),
                y_range=Range1d(-1.35, 1.35), output_backend="canvas", match_aspect=True)
    dg.toolbar.logo = None
    dg.axis.visible = False
    dg.grid.visible = False
    dev_edges = ColumnDataSource({k: [] for k in ("x0", "y0", "x1", "y1", "cx", "cy", "width", "colour")})
    dg.quadratic("x0", "y0", "x1", "y1", "cx", "cy", source=dev_edges, line_width="width", line_color="colour",
                 line_alpha=0.85)
    dev_arrows = ColumnDataSource({k: [] for k in ("x", "y", "angle", "colour", "label", "source", "target",
                                                     "cost", "bytes", "ops", "cycle", "lx", "ly")})
    ar = dg.scatter("x", "y", source=dev_arrows, marker="triangle", angle="angle", size=11, fill_color="colour",
                    line_color=None)
    dg.text("lx", "ly", text="label", source=dev_arrows, text_font_size="8pt", text_align="center",
            text_baseline="middle", text_color="#333333")
    dev_nodes = ColumnDataSource({k: [] for k in ("x", "y", "size", "colour", "device", "load", "label", "ly", "lw")})
    nr = dg.scatter("x", "y", source=dev_nodes, size="size", fill_color="colour", line_color="#222222",
                    line_width="lw")
    dg.text("x", "ly", text="label", source=dev_nodes, text_font_size="8.5pt", text_align="center",
            text_baseline="top")
    dg.add_tools(HoverTool(renderers=[nr], tooltips=[("device", "@device"), ("load", "@load{0.000}")]))
    dg.add_tools(HoverTool(renderers=[ar], tooltips=[("", "@source \u2192 @target"), ("transfer cost", "@cost{0.000}"),
                                                     ("bytes", "@bytes"), ("source ops", "@ops"),
                                                     ("on a cycle", "@cycle")]))
    view = PipelineView(pipe, lat, dg, blocks, bott, periods, units, dev_nodes, dev_edges, dev_arrows)
    set_pipeline(view, evaluation, cluster, samples)
    return view


def _lanes(fig, names: list[str], marks: dict[str, str]) -> None:
    ticks = list(range(len(names)))
    fig.yaxis.ticker = FixedTicker(ticks=ticks)
    fig.yaxis.major_label_overrides = {k: n + marks.get(n, "") for k, n in zip(ticks, names)}
    fig.y_range.update(start=len(names) - 0.5, end=-0.5)   # first device on top
    fig.ygrid.visible = False


def set_pipeline(view: PipelineView, evaluation, cluster: Cluster, samples: int = SAMPLES) -> None:
    """Recompute every figure of the view from ``evaluation``."""
    colours = device_colours(cluster)
    T = evaluation.max_load
    order = pipeline_order(evaluation)
    used = set(order)
    names = order + [d for d in cluster.device_names if d not in used and d in colours]
    lane = {n: k for k, n in enumerate(names)}
    bn = evaluation.bottleneck
    _lanes(view.pipeline, names, {bn: "  \u25c0 bottleneck"} if bn else {})
    cols = {k: [] for k in view.blocks.data}
    for b in pipeline_schedule(evaluation, samples):
        comm = b.kind == "communication"
        off = (0.18 if evaluation.overlap else 0.0) if comm else (-0.1 if evaluation.overlap else 0.0)
        cols["left"].append(b.start)
        cols["right"].append(b.end)
        cols["y"].append(lane[b.device] + off)
        cols["h"].append(0.28 if (comm and evaluation.overlap) else (0.45 if evaluation.overlap else 0.62))
        cols["colour"].append(COMM_COLOUR if comm else colours.get(b.device, "#cccccc"))
        cols["kind"].append(b.kind)
        cols["device"].append(b.device)
        cols["sample"].append(b.sample)
        cols["label"].append("" if comm else f"s{b.sample}")
        cols["mid"].append((b.start + b.end) / 2)
        cols["dur"].append(b.end - b.start)
    view.blocks.data = cols
    end = (len(order) + samples - 1) * T if math.isfinite(T) and T > 0 else 1.0
    if bn and math.isfinite(T):
        view.bottleneck.data = {"y": [lane[bn]], "device": [bn], "w": [end], "x": [end / 2]}
    else:
        view.bottleneck.data = {"y": [], "device": [], "w": [], "x": []}
    ks = range(len(order) + samples) if math.isfinite(T) and T > 0 else []
    view.periods.data = {"x": [k * T for k in ks], "y0": [-0.5] * len(ks), "y1": [len(names) - 0.5] * len(ks)}
    view.pipeline.x_range.update(start=0, end=end * 1.02, reset_start=0, reset_end=end * 1.02)
    view.pipeline.title.text = (f"pipelined, {samples} samples: a new sample every max-load = {_fmt(T)} "
                                f"(bottleneck {bn or '-'}); compute in device colour, communication orange")
    _set_latency(view, evaluation, names, lane, colours)
    _set_devices(view, evaluation, cluster, names, colours)


def _set_latency(view, evaluation, names, lane, colours) -> None:
    sched = latency_schedule(evaluation)
    _lanes(view.latency, names, {})
    cols = {k: [] for k in view.units.data}
    last_end: dict[str, float] = {}

    def add(dev, left, right, kind, colour, h, what):
        if right - left <= 0 and kind != "compute":
            return
        cols["left"].append(left)
        cols["right"].append(right)
        cols["y"].append(lane.get(dev, 0))
        cols["h"].append(h)
        cols["colour"].append(colour)
        cols["kind"].append(kind)
        cols["device"].append(dev)
        cols["what"].append(what)
        cols["dur"].append(right - left)

    for u in sched.units:
        what = ", ".join(u.nodes[:4]) + (f" (+{len(u.nodes) - 4})" if len(u.nodes) > 4 else "")
        col = colours.get(u.device, "#cccccc")
        if u.piece:
            prev = last_end.get(u.device, 0.0)
            add(u.device, prev, u.start, "waits for inputs", WAIT_COLOUR, 0.18, what)
            t = u.start
            add(u.device, t, t + u.comm_in, "receives inputs", COMM_COLOUR, 0.5, what)
            t += u.comm_in
            add(u.device, t, t + u.compute, f"computes piece ({len(u.nodes)} ops)", col, 0.62, what)
            t += u.compute
            add(u.device, t, u.finish, "sends outputs", COMM_COLOUR, 0.5, what)
            last_end[u.device] = u.finish
        else:
            add(u.device, u.start, u.finish, "computes (host op)", col, 0.62, what)
    view.units.data = cols
    L = sched.latency
    end = L if math.isfinite(L) and L > 0 else max(cols["right"], default=1.0) or 1.0
    view.latency.x_range.update(start=0, end=end * 1.02, reset_start=0, reset_end=end * 1.02)
    text = f"one sample (latency model): latency = {_fmt(L)}; grey = a piece waiting for its inputs"
    view.latency.title.text = text + (f" \u2014 {sched.issue}" if sched.issue else "")


def _set_devices(view, evaluation, cluster, names, colours) -> None:
    k = len(names)
    ang = {n: math.pi / 2 - 2 * math.pi * i / max(k, 1) for i, n in enumerate(names)}
    xy = {n: (math.cos(a), math.sin(a)) for n, a in ang.items()}
    loads = {d.name: d.load for d in evaluation.devices}
    mx = max([v for v in loads.values() if math.isfinite(v)], default=0.0) or 1.0
    used = set(pipeline_order(evaluation))
    bn = evaluation.bottleneck
    view.dev_nodes.data = {
        "x": [xy[n][0] for n in names], "y": [xy[n][1] for n in names],
        "size": [14 + 30 * math.sqrt(max(loads.get(n, 0.0), 0.0) / mx) if n in used else 10 for n in names],
        "colour": [colours.get(n, "#cccccc") for n in names], "device": names,
        "load": [loads.get(n, 0.0) for n in names],
        "label": [f"{n} ({_fmt(loads.get(n, 0.0))})" if n in used else f"{n} (unused)" for n in names],
        "ly": [xy[n][1] - 0.13 for n in names], "lw": [3.0 if n == bn else 1.0 for n in names]}
    flows = device_flows(evaluation)
    mc = max((f.cost for f in flows), default=0.0) or 1.0
    e = {k2: [] for k2 in view.dev_edges.data}
    a = {k2: [] for k2 in view.dev_arrows.data}
    for f in flows:
        (x0, y0), (x1, y1) = xy[f.source], xy[f.target]
        mxp, myp = (x0 + x1) / 2, (y0 + y1) / 2
        dx, dy = x1 - x0, y1 - y0
        nrm = math.hypot(dx, dy) or 1.0
        bend = 0.22 * nrm   # always bend to the left of the direction: a->b and b->a are two arcs
        cx, cy = mxp - dy / nrm * bend, myp + dx / nrm * bend
        colour = "#c0392b" if f.on_cycle else "#34495e"
        e["x0"].append(x0); e["y0"].append(y0); e["x1"].append(x1); e["y1"].append(y1)
        e["cx"].append(cx); e["cy"].append(cy)
        e["width"].append(1.0 + 7.0 * f.cost / mc)
        e["colour"].append(colour)
        t = 0.6
        px = (1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t ** 2 * x1
        py = (1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t ** 2 * y1
        tx = 2 * (1 - t) * (cx - x0) + 2 * t * (x1 - cx)
        ty = 2 * (1 - t) * (cy - y0) + 2 * t * (y1 - cy)
        a["x"].append(px); a["y"].append(py)
        a["angle"].append(math.atan2(ty, tx) - math.pi / 2)
        a["colour"].append(colour)
        a["label"].append(_fmt(f.cost))
        lx, ly = (x0 + 2 * cx + x1) / 4, (y0 + 2 * cy + y1) / 4
        a["lx"].append(lx - dy / nrm * 0.09); a["ly"].append(ly + dx / nrm * 0.09)
        a["source"].append(f.source); a["target"].append(f.target)
        a["cost"].append(f.cost)
        a["bytes"].append("-" if f.bytes is None else f"{f.bytes:.4g}")
        a["ops"].append(f.ops)
        a["cycle"].append("yes" if f.on_cycle else "no")
    view.dev_edges.data = e
    view.dev_arrows.data = a
    cyc = any(f.on_cycle for f in flows)
    view.devices_graph.title.text = ("devices (size = load), arcs = transfer cost"
                                     + ("; red: a cycle" if cyc else "; no cycle"))
