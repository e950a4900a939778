"""The graph view and the selection tools: pick a node, move it, pin it, undo.

The Bokeh figure (from :func:`viz_place.render.graph_view`) is embedded with
``jupyter_bokeh.BokehModel``. A tap selects a node (``selected.indices``);
the search box does the same by name (opening the groups that hide it). A tap
on a collapsed box opens that group, a tap on an open group's header closes
it; **Expand all** / **Collapse all** do it for every group. State changes
recolour the figure by sending only the ``device`` column (a patch for a few
nodes) and the box stripes.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> panel = GraphPanel(ExplorerState(make_graph("residual", 40)))
>>> panel.search.value = "relu"; panel.state.selected is not None
True
>>> panel.collapse_all(); len(panel.view.boxes.data["gid"]) >= 1
True
>>> panel.expand_all(); len(panel.view.boxes.data["gid"])
0
"""
from __future__ import annotations

import ipywidgets as W

from viz_place.errors import VizPlaceError
from viz_place.render import (collapse_group, expand_group, format_bytes, graph_view, set_cluster, set_expanded,
                              set_legend, set_pins, set_placement)

from .common import bokeh_widget, error_html, escape_text, fmt, ok_html


class GraphPanel:
    """Graph figure plus the selection / move / pin / undo controls."""

    def __init__(self, state) -> None:
        self.state = state
        self.view = None
        self.bokeh = W.Box(layout=W.Layout(width="100%"))
        self.search = W.Text(placeholder="find node by name or id", continuous_update=False,
                             layout=W.Layout(width="220px"))
        self.info = W.HTML("<i>tap a node (or search) to select it</i>")
        self.device = W.Dropdown(description="device", layout=W.Layout(width="200px"))
        self.move_button = W.Button(description="Move", icon="arrows-alt", tooltip="move the node (and its colour class)")
        self.pin_button = W.Button(description="Pin", icon="thumb-tack", tooltip="solvers must keep it there")
        self.unpin_button = W.Button(description="Unpin", icon="times")
        self.undo_button = W.Button(description="Undo", icon="undo")
        self.redo_button = W.Button(description="Redo", icon="repeat")
        self.pins_list = W.Select(options=[], rows=5, description="pins", layout=W.Layout(width="330px"))
        self.unpin_selected = W.Button(description="Unpin selected")
        self.expand_all_button = W.Button(description="Expand all", icon="expand",
                                          tooltip="open every group (tap a box to open one)")
        self.collapse_all_button = W.Button(description="Collapse all", icon="compress",
                                            tooltip="close every group (tap an open group's header to close it)")
        self.message = W.HTML()
        self.expand_all_button.on_click(lambda _b: self.expand_all())
        self.collapse_all_button.on_click(lambda _b: self.collapse_all())
        self.search.observe(self._on_search, "value")
        self.move_button.on_click(self._on_move)
        self.pin_button.on_click(self._on_pin)
        self.unpin_button.on_click(self._on_unpin)
        self.unpin_selected.on_click(self._on_unpin_selected)
        self.undo_button.on_click(lambda _b: self._guard(self.state.undo))
        self.redo_button.on_click(lambda _b: self._guard(self.state.redo))
        state.on("graph", lambda s, **_: self._rebuild())
        state.on("cluster", lambda s, **_: self._on_cluster())
        state.on("pins", lambda s, **_: self._on_pins())
        state.on("placement", self._on_placement)
        state.on("selected", lambda s, **_: self._on_selected())
        self.controls = W.VBox([
            W.HBox([self.search, self.device, self.move_button, self.pin_button, self.unpin_button]),
            self.info,
            W.HBox([self.pins_list, W.VBox([self.unpin_selected, W.HBox([self.undo_button, self.redo_button]),
                                            W.HBox([self.expand_all_button, self.collapse_all_button])])]),
            self.message])
        self._rebuild()

    # --- building ------------------------------------------------------------------
    def _rebuild(self) -> None:
        s = self.state
        self.view = graph_view(s.graph, s.cluster, s.placement, pins=s.pins, evaluation=s.evaluation)
        self.view.nodes.selected.on_change("indices", self._on_tap)
        self.view.boxes.selected.on_change("indices", self._on_box_tap)
        self.view.frames.selected.on_change("indices", self._on_header_tap)
        old = self.bokeh.children
        self.widget = bokeh_widget(self.view.figure, layout=W.Layout(width="100%"))
        self.bokeh.children = (self.widget,)
        for w in old:
            w.retire()   # closing at once makes the kernel log "No such comm" (defect 8)
        self._on_cluster()
        self._on_pins()
        self._on_selected()
        self._refresh_buttons()

    def _on_cluster(self) -> None:
        s = self.state
        set_cluster(self.view, s.cluster, s.evaluation)
        keep = self.device.value
        self.device.options = list(s.cluster.device_names)
        self.device.value = keep if keep in s.cluster.device_names else s.cluster.device_names[0]

    def _on_pins(self) -> None:
        s = self.state
        set_pins(self.view, s.graph, s.pins)
        self.pins_list.options = [(f"{s.graph.node(n).name}  \u2192  {d}", n) for n, d in s.pins.items()]
        self._on_selected()

    def _on_placement(self, s, changed=None, **_) -> None:
        set_placement(self.view, s.graph, s.placement, changed)
        set_legend(self.view, s.cluster, s.evaluation)
        self._on_selected()
        self._refresh_buttons()

    # --- collapse / expand --------------------------------------------------------------
    def expand(self, gid: str) -> None:
        """Open group ``gid`` (a box becomes its members inside a frame)."""
        s = self.state
        expand_group(self.view, s.graph, s.placement, gid, s.pins)
        self._on_selected()

    def collapse(self, gid: str) -> None:
        """Close group ``gid`` (its members become one box)."""
        s = self.state
        collapse_group(self.view, s.graph, s.placement, gid, s.pins)

    def expand_all(self) -> None:
        s = self.state
        set_expanded(self.view, s.graph, s.placement, self.view.hierarchy.all_groups(), s.pins)
        self._on_selected()

    def collapse_all(self) -> None:
        s = self.state
        set_expanded(self.view, s.graph, s.placement, (), s.pins)

    # jupyter_bokeh calls these twice per browser event with the same ``new``; the first call
    # clears the selection (set_expanded does), so a repeat no longer matches it and is ignored
    # (else it would open the box that has meanwhile moved to that index).
    def _on_box_tap(self, _attr, _old, new) -> None:
        src = self.view.boxes
        if new and list(src.selected.indices) == list(new) and int(new[0]) < len(src.data["gid"]):
            self.expand(src.data["gid"][int(new[0])])

    def _on_header_tap(self, _attr, _old, new) -> None:
        src = self.view.frames
        if new and list(src.selected.indices) == list(new) and int(new[0]) < len(src.data["gid"]):
            self.collapse(src.data["gid"][int(new[0])])

    def _refresh_buttons(self) -> None:
        self.undo_button.disabled = not self.state.can_undo
        self.redo_button.disabled = not self.state.can_redo

    # --- selection -----------------------------------------------------------------
    def _on_tap(self, _attr, _old, new) -> None:
        # Runs twice per browser event (jupyter_bokeh): idempotent. A tap on empty canvas deselects.
        self.state.select(self.state.graph.node_ids[int(new[0])] if new else None)

    def _on_search(self, change) -> None:
        hits = self.state.find(change["new"])
        if not hits:
            # A failed search clears the selection, so Move cannot act on the previous node.
            self.state.select(None)
            self.message.value = error_html(f"no node matches {change['new']!r}; nothing selected") \
                if change["new"] else ""
            return
        self.message.value = ok_html(f"{len(hits)} match(es); selected the first") if len(hits) > 1 else ""
        self.state.select(hits[0])

    def _on_selected(self) -> None:
        s = self.state
        n = s.selected
        on = n is not None
        for b in (self.move_button, self.pin_button):
            b.disabled = not on
        self.unpin_button.disabled = not (on and n in s.pins)
        if not on:
            if list(self.view.nodes.selected.indices):
                self.view.nodes.selected.indices = []
            self.info.value = "<i>tap a node (or search) to select it</i>"
            return
        node = s.graph.node(n)
        i = s.graph.index[n]
        hidden = [g for g in self.view.hierarchy.path_to(i) if g not in self.view.expanded]
        if hidden:   # the node is inside a collapsed group: open the groups round it
            set_expanded(self.view, s.graph, s.placement, set(self.view.expanded) | set(hidden), s.pins)
        if list(self.view.nodes.selected.indices) != [i]:
            self.view.nodes.selected.indices = [i]
        where = s.placement.assignment.get(n, "-")
        if where in s.cluster.device_names and self.device.value != where:
            self.device.value = where
        lat = ", ".join(f"{k} {fmt(v)}" for k, v in sorted(node.latency.items())) or "none"
        group = s.group_of(n)
        extra = f" &middot; colour class {escape_text(node.color_class)} ({len(group)} nodes move together)" \
            if len(group) > 1 else ""
        pin = f" &middot; <b>pinned to {escape_text(s.pins[n])}</b>" if n in s.pins else ""
        self.info.value = (f"<b>{escape_text(node.name)}</b> ({escape_text(n)}) &middot; {escape_text(node.op_type)}"
                           f"{' (backward)' if node.backward else ''} &middot; on <b>{escape_text(where)}</b>{pin}"
                           f" &middot; latency {escape_text(lat)} &middot; memory {format_bytes(node.size)}{extra}")

    # --- actions -------------------------------------------------------------------
    def _guard(self, fn, *args) -> None:
        try:
            fn(*args)
            self.message.value = ""
        except VizPlaceError as err:
            self.message.value = error_html(str(err))
        self._refresh_buttons()

    def _on_move(self, _b=None) -> None:
        if self.state.selected is not None:
            self._guard(self.state.move, self.state.selected, self.device.value)

    def _on_pin(self, _b=None) -> None:
        if self.state.selected is not None:
            self._guard(self.state.pin, self.state.selected, self.device.value)

    def _on_unpin(self, _b=None) -> None:
        if self.state.selected is not None:
            self._guard(self.state.unpin, self.state.selected)

    def _on_unpin_selected(self, _b=None) -> None:
        if self.pins_list.value is not None:
            self._guard(self.state.unpin, self.pins_list.value)
