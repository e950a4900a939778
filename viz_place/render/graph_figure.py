"""The graph figure: ops by family and share of compute, modules as boxes that open by a tap.

What is drawn (see :mod:`viz_place.render.drawing` for where):

* every op as a glyph of its family (square conv, diamond matmul, hexagon
  normalisation, triangle activation, circle element-wise, inverted triangle
  data movement, star other), sized by its share of the graph's compute,
  filled with its device's colour; backward ops get a crimson outline;
* a collapsed group (a module, or a structural block) as a box split into
  vertical stripes, one per device holding some of its ops (width = share of
  its ops), labelled with its name; a tap opens it;
* an open group as a light frame with a header bar; a tap on the header
  closes it;
* edges as dot's splines (grey), the edges that cross devices dark and dashed;
* labels of ops and boxes, shown only when at most :data:`LABEL_LIMIT` items
  are in view (a ``CustomJS`` on the ranges toggles them, so zooming in shows them).

Recolouring sends only the ``device`` column, the box stripes and the cross
edges; opening or closing a group sends new positions.

>>> from viz_place.samples import make_graph
>>> from viz_place.model import Placement
>>> g = make_graph("chain", 5)
>>> view = graph_view(g, g.default_cluster, Placement({n: "fpga:0" for n in g.node_ids}))
>>> view.nodes.data["device"][:2], view.nodes.data["family"][0]
(['fpga:0', 'fpga:0'], 'element-wise')
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from bokeh.models import (CategoricalColorMapper, ColumnDataSource, CustomJS, HoverTool, Legend, LegendItem,
                          Range1d, TapTool)
from bokeh.plotting import figure
from bokeh.transform import factor_cmap, factor_mark

from ..model import Cluster, OpGraph, Placement
from .data import NAN_COLOUR, device_colours, device_column, legend_columns, node_columns
from .drawing import ItemDrawing, item_drawing, join_lines
from .families import FAMILY_MARKERS, op_family
from .groups import Hierarchy, default_expanded, hierarchy

#: Labels show when at most this many ops and boxes are in view.
LABEL_LIMIT = 45
#: Graphs above this many nodes open collapsed at the top level (module graphs always do; the
#: issue asks for > 500, but beyond ~120 ops a whole-graph view is too dense to read).
OPEN_COLLAPSED_ABOVE = 120
#: Assumed width / height of the figure in pixels, to keep boxes undistorted.
ASPECT = 2.6
HEADER_H = 0.2

_NUMBERED = re.compile(r"^[a-z]?_?\d+$")

_LABEL_JS = """
const x0 = xr.start, x1 = xr.end, y0 = yr.start, y1 = yr.end;
const ppu = (plot.inner_width || width) / Math.max(x1 - x0, 1e-9);
const counts = [nodes, boxes].map(src => {
  const xs = src.data.x, ys = src.data.y;
  let c = 0;
  for (let i = 0; i < xs.length && c <= limit; i++) {
    const x = xs[i], y = ys[i];
    if (x >= x0 && x <= x1 && y >= y0 && y <= y1) c++;
  }
  return c;
});
const few = counts[0] + counts[1] <= limit;
const show = [few && counts[0] > 0 && ppu >= node_ppu, few && counts[1] > 0 && ppu >= box_ppu, ppu >= box_ppu];
for (let k = 0; k < labels.length; k++) { if (labels[k].visible !== show[k]) labels[k].visible = show[k]; }
"""
#: Pixels per inch of layout from which op labels (then box and frame labels) are drawn.
NODE_LABEL_PPU, BOX_LABEL_PPU = 70.0, 30.0
#: Assumed plot width in pixels before the browser has measured it.
PLOT_WIDTH = 1100


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
    node_labels: ColumnDataSource = None
    edges: ColumnDataSource = None
    boxes: ColumnDataSource = None
    stripes: ColumnDataSource = None
    frames: ColumnDataSource = None
    box_renderer: Any = None
    header_renderer: Any = None
    label_renderers: list = field(default_factory=list)
    hierarchy: Hierarchy | None = None
    drawing: ItemDrawing | None = None
    expanded: frozenset = frozenset()
    device_names: tuple = ()
    layout_method: str = "auto"
    _esrc: np.ndarray | None = None
    _edst: np.ndarray | None = None


def initial_expanded(graph: OpGraph, hier: Hierarchy | None = None) -> set[str]:
    """What the explorer opens: every group for a small graph without module paths; the top
    level only (:func:`~viz_place.render.groups.default_expanded`) for module graphs and
    graphs over :data:`OPEN_COLLAPSED_ABOVE` nodes."""
    h = hier or hierarchy(graph)
    if h.source == "modules" or graph.num_nodes > OPEN_COLLAPSED_ABOVE:
        return default_expanded(h)
    return set(h.all_groups())


def _shares(graph: OpGraph) -> np.ndarray:
    lat = np.array([np.mean([v for v in n.latency.values() if math.isfinite(v)]) if n.latency else 0.0
                    for n in graph.nodes()], dtype=float)
    lat = np.nan_to_num(lat)
    total = lat.sum()
    return lat / total if total > 0 else np.zeros(len(lat))


def graph_view(graph: OpGraph, cluster: Cluster, placement: Placement, *, pins: Mapping[str, str] | None = None,
               evaluation=None, expanded=None, layout: str = "auto", height: int = 460) -> GraphView:
    """Build the graph figure for ``placement`` with the groups ``expanded`` open
    (default: :func:`initial_expanded`); ``layout``: ``"auto"``, ``"dot"`` or ``"layered"``."""
    h = hierarchy(graph)
    expanded = frozenset(initial_expanded(graph, h) if expanded is None else expanded)
    drawing = item_drawing(graph, expanded, method=layout, hier=h)
    colours = device_colours(cluster)
    mapper = CategoricalColorMapper(factors=list(colours), palette=list(colours.values()), nan_color=NAN_COLOUR)
    xr, yr = Range1d(0, 1), Range1d(0, 1)
    p = figure(height=height, sizing_mode="stretch_width", output_backend="canvas", x_range=xr, y_range=yr,
               tools="pan,wheel_zoom,box_zoom,reset,save", active_scroll="wheel_zoom",
               title=f"{graph.name}: {graph.num_nodes} nodes, {graph.num_edges} edges")
    p.axis.visible = False
    p.grid.visible = False
    p.toolbar.logo = None
    frames = ColumnDataSource(_frame_columns(h, drawing))
    _lean(p.rect("x", "y", "w", "h", source=frames, fill_color="#eef2f7", fill_alpha=0.55, line_color="#9aa7b8",
                 line_width=1))
    header_r = p.rect("hx", "hy", "w", "hh", source=frames, fill_color="#cfd8e3", line_color="#9aa7b8",
                      selection_fill_color="#cfd8e3", nonselection_fill_alpha=1.0, nonselection_line_alpha=1.0)
    frame_lab = _lean(p.text("tx", "hy", text="label", source=frames, text_font_size="7.5pt",
                             text_baseline="middle", text_color="#34495e"))
    xs, ys = join_lines(drawing.edge_lines)
    edges = ColumnDataSource({"x": xs, "y": ys})
    _lean(p.line("x", "y", source=edges, line_color="#a9a9a9", line_width=0.9, line_alpha=0.9))
    esrc = np.array([graph.index[u] for u, _ in graph.edges], dtype=np.int64)
    edst = np.array([graph.index[v] for _, v in graph.edges], dtype=np.int64)
    dev_col = device_column(graph, placement)
    cross = ColumnDataSource(dict(zip(("x", "y"), _cross_lines(drawing, esrc, edst, dev_col))))
    cross_r = _lean(p.line("x", "y", source=cross, line_color="#222222", line_width=1.8, line_alpha=0.9,
                           line_dash="dashed"))
    stripes = ColumnDataSource(_stripe_columns(h, drawing, graph, dev_col, cluster.device_names))
    _lean(p.rect("x", "y", "w", "h", source=stripes, fill_color={"field": "device", "transform": mapper},
                 line_color=None))
    boxes = ColumnDataSource(_box_columns(h, drawing, graph, dev_col, cluster.device_names))
    box_r = p.rect("x", "y", "w", "h", source=boxes, fill_alpha=0, line_color="#2c3e50", line_width=1.4,
                   selection_fill_alpha=0, selection_line_color="black", nonselection_fill_alpha=0,
                   nonselection_line_alpha=1.0)
    box_lab = _lean(p.text("x", "y", text="name", source=boxes, text_font_size="7.5pt", text_align="center",
                     text_baseline="middle", text_color="#1c2833", background_fill_color="white",
                     background_fill_alpha=0.75, padding=1))
    cols = node_columns(graph, drawing.node_xy)
    cols["x"], cols["y"] = drawing.node_xy[:, 0].copy(), drawing.node_xy[:, 1].copy()   # binary arrays (NaN = hidden)
    cols["device"] = dev_col
    cols["family"] = [op_family(n.op_type) for n in graph.nodes()]
    share = _shares(graph)
    cols["share"] = (share * 100).round(2).tolist()
    top = share.max() if len(share) else 0.0
    cols["size"] = (6.0 + 16.0 * np.sqrt(share / top if top > 0 else share)).round(2).tolist()
    nodes = ColumnDataSource(cols)
    marker = factor_mark("family", list(FAMILY_MARKERS.values()), list(FAMILY_MARKERS))
    outline = factor_cmap("dir", ["#333333", "#c2185b"], ["forward", "backward"])
    node_r = p.scatter("x", "y", source=nodes, size="size", marker=marker,
                       fill_color={"field": "device", "transform": mapper}, line_color=outline, line_width=0.8,
                       selection_line_color="black", selection_line_width=3, selection_fill_alpha=1.0,
                       nonselection_fill_alpha=1.0, nonselection_line_alpha=1.0)
    node_labels = ColumnDataSource(_node_label_columns(graph, drawing))   # only the ops drawn
    node_lab = _lean(p.text("x", "y", text="name", source=node_labels, text_font_size="7pt", x_offset=0,
                            y_offset=-9, text_align="center", text_baseline="bottom", text_color="#222222", angle=0.5))
    pin_src = ColumnDataSource(_pin_cols(graph, drawing.node_xy, pins or {}))
    pin_r = _lean(p.scatter("x", "y", source=pin_src, marker="circle", size=22, fill_alpha=0, line_color="black",
                            line_width=2.5))
    leg_src = ColumnDataSource(legend_columns(cluster, evaluation))
    leg_r = _lean(p.scatter("x", "y", source=leg_src, marker="square", size=12,
                            fill_color={"field": "device", "transform": mapper}, line_color=None))
    fams = list(FAMILY_MARKERS)
    fam_src = ColumnDataSource({"x": [math.nan] * len(fams), "y": [math.nan] * len(fams), "family": fams,
                                "marker": list(FAMILY_MARKERS.values())})
    fam_r = _lean(p.scatter("x", "y", source=fam_src, marker="marker", size=10, fill_color="#dddddd",
                            line_color="#333333"))
    fam_items = [LegendItem(label=fam, renderers=[fam_r], index=k) for k, fam in enumerate(fams)]
    legend = Legend(items=[LegendItem(label={"field": "label"}, renderers=[leg_r]),
                           LegendItem(label="cross-device edge", renderers=[cross_r]),
                           LegendItem(label="pinned", renderers=[pin_r])] + fam_items,
                    location="top_left", click_policy="none", label_text_font_size="8pt", spacing=0,
                    label_height=15, glyph_height=15, glyph_width=18)
    p.add_layout(legend, "right")
    p.add_tools(HoverTool(renderers=[node_r], tooltips=[
        ("node", "@name (@id)"), ("op", "@op (@family, @dir)"), ("compute share", "@share%"),
        ("latency", "@lat"), ("memory", "@mem"), ("device", "@device")]))
    p.add_tools(HoverTool(renderers=[box_r], tooltips=[
        ("group", "@label"), ("ops", "@count"), ("devices", "@split"), ("", "tap to open")]))
    p.add_tools(HoverTool(renderers=[header_r], tooltips=[("group", "@full"), ("", "tap to close")]))
    p.add_tools(TapTool(renderers=[node_r, box_r, header_r]))
    labels = [node_lab, box_lab, frame_lab]
    cb = CustomJS(args=dict(xr=xr, yr=yr, plot=p, nodes=nodes, boxes=boxes, labels=labels, limit=LABEL_LIMIT,
                            width=PLOT_WIDTH, node_ppu=NODE_LABEL_PPU, box_ppu=BOX_LABEL_PPU), code=_LABEL_JS)
    for rng in (xr, yr):
        rng.js_on_change("start", cb)
        rng.js_on_change("end", cb)
    view = GraphView(p, nodes, cross, pin_src, leg_src, mapper, node_r, drawing.node_xy, node_labels=node_labels,
                     edges=edges, boxes=boxes,
                     stripes=stripes, frames=frames, box_renderer=box_r, header_renderer=header_r,
                     label_renderers=labels, hierarchy=h, drawing=drawing, expanded=expanded,
                     device_names=tuple(cluster.device_names), layout_method=layout, _esrc=esrc, _edst=edst)
    _fit(view)
    return view


def _lean(renderer):
    """A renderer nobody selects or hovers: no extra glyph models to build, send and draw."""
    renderer.update(selection_glyph="auto", nonselection_glyph="auto", hover_glyph=None, muted_glyph=None)
    return renderer


def fit_ranges(bounds, aspect: float = ASPECT) -> tuple[float, float, float, float]:
    """Ranges showing ``bounds`` (x0, y0, x1, y1) with the figure's aspect ratio (undistorted boxes).

    >>> fit_ranges((0, 0, 10, 1), aspect=2.0)
    (0, -2.0, 10, 3.0)
    """
    x0, y0, x1, y1 = bounds
    w, hgt = max(x1 - x0, 1e-9), max(y1 - y0, 1e-9)
    if w / hgt > aspect:
        extra = (w / aspect - hgt) / 2
        return x0, y0 - extra, x1, y1 + extra
    extra = (hgt * aspect - w) / 2
    return x0 - extra, y0, x1 + extra, y1


def _fit(view: GraphView) -> None:
    x0, y0, x1, y1 = fit_ranges(view.drawing.bounds)
    xr, yr = view.figure.x_range, view.figure.y_range
    xr.update(start=x0, end=x1, reset_start=x0, reset_end=x1)
    yr.update(start=y0, end=y1, reset_start=y0, reset_end=y1)
    for r, show in zip(view.label_renderers, label_visibility(view.drawing, x1 - x0)):
        r.visible = show


def label_visibility(drawing: ItemDrawing, x_span: float, plot_width: float = PLOT_WIDTH) -> tuple[bool, bool, bool]:
    """(op labels, box labels, frame labels) shown for the whole drawing in view (the rule the
    browser applies on every zoom: few items in view and enough pixels per inch)."""
    n_nodes = int((~np.isnan(drawing.node_xy[:, 0])).sum())
    n_boxes = len(drawing.boxes)
    ppu = plot_width / max(x_span, 1e-9)
    few = n_nodes + n_boxes <= LABEL_LIMIT
    return (few and n_nodes > 0 and ppu >= NODE_LABEL_PPU, few and n_boxes > 0 and ppu >= BOX_LABEL_PPU,
            ppu >= BOX_LABEL_PPU)


def _cross_lines(drawing: ItemDrawing, esrc, edst, dev_col) -> tuple[np.ndarray, np.ndarray]:
    if len(esrc) == 0:
        return np.zeros(0), np.zeros(0)
    dev = np.asarray(dev_col, dtype=object)
    crossing = (dev[esrc] != dev[edst]) & (drawing.edge_items >= 0)
    return join_lines(drawing.edge_lines, np.unique(drawing.edge_items[crossing]))


def _device_counts(h: Hierarchy, drawing: ItemDrawing, dev_col, device_names) -> dict[str, list[tuple[str, int]]]:
    out = {}
    for gid in drawing.boxes:
        members = h.members(gid)
        counts: dict[str, int] = {}
        for i in members:
            d = dev_col[int(i)]
            counts[d] = counts.get(d, 0) + 1
        order = {d: k for k, d in enumerate(device_names)}
        out[gid] = sorted(counts.items(), key=lambda kv: order.get(kv[0], len(order)))
    return out


def _box_columns(h, drawing, graph, dev_col, device_names) -> dict[str, list]:
    gids = list(drawing.boxes)
    counts = _device_counts(h, drawing, dev_col, device_names)
    cols = {"x": [], "y": [], "w": [], "h": [], "gid": gids, "label": [], "name": [], "count": [],
            "split": []}
    for gid in gids:
        x, y, w, hh = drawing.boxes[gid]
        g = h.groups[gid]
        cols["x"].append(x)
        cols["y"].append(y)
        cols["w"].append(w)
        cols["h"].append(hh)
        cols["label"].append(g.label)
        cols["name"].append(g.label.split(" \u00b7 ")[0])
        cols["count"].append(g.size)
        cols["split"].append(", ".join(f"{d or '-'} {c}" for d, c in counts[gid]))
    return cols


def _stripe_columns(h, drawing, graph, dev_col, device_names) -> dict[str, list]:
    cols = {"x": [], "y": [], "w": [], "h": [], "device": [], "gid": []}
    for gid, split in _device_counts(h, drawing, dev_col, device_names).items():
        x, y, w, hh = drawing.boxes[gid]
        total = sum(c for _, c in split) or 1
        left = x - w / 2
        for d, c in split:
            sw = w * c / total
            cols["x"].append(left + sw / 2)
            cols["y"].append(y)
            cols["w"].append(sw)
            cols["h"].append(hh)
            cols["device"].append(d)
            cols["gid"].append(gid)
            left += sw
    return cols


def _frame_columns(h: Hierarchy, drawing: ItemDrawing) -> dict[str, list]:
    cols = {"x": [], "y": [], "w": [], "h": [], "hx": [], "hy": [], "hh": [], "tx": [], "gid": [], "label": [],
            "full": []}
    for gid, (x0, y0, x1, y1) in drawing.frames.items():
        cols["x"].append((x0 + x1) / 2)
        cols["y"].append((y0 + y1) / 2)
        cols["w"].append(x1 - x0)
        cols["h"].append(y1 - y0)
        cols["hx"].append((x0 + x1) / 2)
        cols["hy"].append(y1 - HEADER_H / 2)
        cols["hh"].append(HEADER_H)
        cols["tx"].append(x0 + 0.05)
        cols["gid"].append(gid)
        cols["label"].append("\u25be " + h.groups[gid].label.split(" \u00b7 ")[0])
        cols["full"].append(h.groups[gid].label)
    return cols


def _node_label_columns(graph: OpGraph, drawing: ItemDrawing) -> dict[str, list]:
    shown = np.flatnonzero(~np.isnan(drawing.node_xy[:, 0]))
    ids = graph.node_ids
    return {"x": drawing.node_xy[shown, 0], "y": drawing.node_xy[shown, 1],
            "name": [_label_text(graph.node(ids[i])) for i in shown.tolist()]}


def _label_text(node) -> str:
    """An op's label: its name, or its op type when the name is only a number (``n51``)."""
    return node.op_type if _NUMBERED.match(node.name or "") else node.name


def _pin_cols(graph: OpGraph, xy: np.ndarray, pins: Mapping[str, str]) -> dict[str, list]:
    idx = [graph.index[n] for n in pins if graph.has_node(n)]
    return {"x": [float(xy[i, 0]) for i in idx], "y": [float(xy[i, 1]) for i in idx],
            "name": [graph.node(graph.node_ids[i]).name for i in idx],
            "device": [pins[graph.node_ids[i]] for i in idx]}


# --- updates -----------------------------------------------------------------------------

def set_placement(view: GraphView, graph: OpGraph, placement: Placement | Mapping[str, str],
                  changed: Sequence[int] | None = None) -> None:
    """Recolour: replace the ``device`` column (or patch ``changed`` rows), the box stripes and the cross edges."""
    dev_col = device_column(graph, placement)
    if changed is not None and len(changed) <= 64:
        patches = [(int(i), dev_col[i]) for i in changed if view.nodes.data["device"][i] != dev_col[i]]
        if patches:
            view.nodes.patch({"device": patches})
    else:
        view.nodes.data.update(device=dev_col)
    _recolour_boxes(view, graph, dev_col)
    xs, ys = _cross_lines(view.drawing, view._esrc, view._edst, dev_col)
    view.cross_edges.data = {"x": xs, "y": ys}


def _recolour_boxes(view: GraphView, graph: OpGraph, dev_col) -> None:
    if not view.drawing.boxes and not len(view.stripes.data["x"]):
        return
    view.stripes.data = _stripe_columns(view.hierarchy, view.drawing, graph, dev_col, view.device_names)
    split = _box_columns(view.hierarchy, view.drawing, graph, dev_col, view.device_names)["split"]
    view.boxes.data.update(split=split)


def set_expanded(view: GraphView, graph: OpGraph, placement: Placement | Mapping[str, str], expanded,
                 pins: Mapping[str, str] | None = None) -> None:
    """Open exactly the groups in ``expanded`` (new layout, positions, boxes, frames, edges; ranges refit)."""
    expanded = frozenset(expanded)
    drawing = item_drawing(graph, expanded, method=view.layout_method, hier=view.hierarchy)
    view.expanded, view.drawing, view.positions = expanded, drawing, drawing.node_xy
    dev_col = device_column(graph, placement)
    view.nodes.data.update(x=drawing.node_xy[:, 0].copy(), y=drawing.node_xy[:, 1].copy())
    view.node_labels.data = _node_label_columns(graph, drawing)
    h = view.hierarchy
    view.boxes.selected.indices = []
    view.frames.selected.indices = []
    view.boxes.data = _box_columns(h, drawing, graph, dev_col, view.device_names)
    view.stripes.data = _stripe_columns(h, drawing, graph, dev_col, view.device_names)
    view.frames.data = _frame_columns(h, drawing)
    xs, ys = join_lines(drawing.edge_lines)
    view.edges.data = {"x": xs, "y": ys}
    cxs, cys = _cross_lines(drawing, view._esrc, view._edst, dev_col)
    view.cross_edges.data = {"x": cxs, "y": cys}
    set_pins(view, graph, pins or {})
    _fit(view)


def expand_group(view: GraphView, graph: OpGraph, placement, gid: str, pins=None) -> None:
    """Open group ``gid`` (and its ancestors)."""
    h = view.hierarchy
    set_expanded(view, graph, placement, set(view.expanded) | {gid} | set(h.ancestors(gid)) - {h.root}, pins)


def collapse_group(view: GraphView, graph: OpGraph, placement, gid: str, pins=None) -> None:
    """Close group ``gid`` (its open descendants close too)."""
    h = view.hierarchy
    inside = {g for g in view.expanded if gid in h.ancestors(g)}
    set_expanded(view, graph, placement, set(view.expanded) - {gid} - inside, pins)


def set_cluster(view: GraphView, cluster: Cluster, evaluation=None) -> None:
    """New device list: new colour factors and legend rows."""
    colours = device_colours(cluster)
    view.mapper.update(factors=list(colours), palette=list(colours.values()))
    view.device_names = tuple(cluster.device_names)
    set_legend(view, cluster, evaluation)


def set_legend(view: GraphView, cluster: Cluster, evaluation=None) -> None:
    view.legend.data = legend_columns(cluster, evaluation)


def set_pins(view: GraphView, graph: OpGraph, pins: Mapping[str, str]) -> None:
    view.pins.data = _pin_cols(graph, view.positions, pins)
