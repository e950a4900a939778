"""Manual overrides before export: the nodes moved or pinned since the run they started
from, each with its effect on max-load, and a button to put one back.

The effect of an override is the current max-load minus the max-load with that
group put back where the base run had it (from
:meth:`~viz_place.widgets.state.ExplorerState.overrides`): positive means the
override costs time per sample.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> s = ExplorerState(make_graph("chain", 6)); o = OverridesPanel(s)
>>> s.move(s.graph.node_ids[0], "fpga:3"); "1 override" in o.summary.value
True
>>> o.choice.value = s.graph.node_ids[0]; o.revert_button.click(); o.state.overrides()
[]
"""
from __future__ import annotations

import ipywidgets as W

from viz_place.errors import VizPlaceError

from .common import error_html, escape_text, fmt, ok_html


def _signed(x) -> str:
    if x is None:
        return "-"
    if abs(x) < 1e-12:
        return "0"
    return f"{x:+.4g}"


def overrides_html(state, rows) -> str:
    """The overrides as a table against the base run."""
    base = state.base_row()
    if base is None:
        return "<i>no base run</i>"
    name = "start" if base["solver"] == "start" else f"{base['solver']}"
    head = f"run #{base['run']} ({escape_text(name)}, max-load {fmt(base.get('max_load'))})"
    if not rows:
        return f"<small>no overrides: the placement is {head}</small>"
    now = state.evaluation.max_load
    delta = now - base["max_load"] if isinstance(base.get("max_load"), (int, float)) else None
    th = "".join(f"<th style='padding:0 6px'>{h}</th>" for h in
                 ("node", "nodes", "from", "to", "pinned", "effect on max-load"))
    body = "".join(
        "<tr>" + "".join(f"<td style='padding:0 6px'>{c}</td>" for c in (
            escape_text(r["name"]), r["nodes"], escape_text(r["from"]), escape_text(r["to"]),
            "pinned" if r["pinned"] else "", _signed(r["effect"]))) + "</tr>" for r in rows)
    n = len(rows)
    return (f"<b>{n} override{'s' if n != 1 else ''}</b> of {head}: max-load now {fmt(now)} "
            f"({_signed(delta)}) <small>(effect = now minus with that override put back)</small>"
            f"<table class='vp-overrides'><tr>{th}</tr>{body}</table>")


class OverridesPanel:
    """The list of overrides, refreshed after every change."""

    def __init__(self, state) -> None:
        self.state = state
        self.summary = W.HTML()
        self.choice = W.Dropdown(description="override", layout=W.Layout(width="330px"))
        self.revert_button = W.Button(description="Put back", icon="reply",
                                      tooltip="move it back where the base run had it (and drop a pin it got)")
        self.message = W.HTML()
        self.revert_button.on_click(lambda _b: self.revert())
        for ev in ("placement", "pins", "history", "graph"):
            state.on(ev, lambda s, **_: self.update())
        self.widget = W.VBox([W.HTML("<b>Overrides</b> <small>(nodes moved or pinned since the run they "
                                     "started from)</small>"), self.summary,
                              W.HBox([self.choice, self.revert_button]), self.message])
        self.update()

    def update(self) -> None:
        rows = self.state.overrides()
        self.rows = rows
        self.summary.value = overrides_html(self.state, rows)
        keep = self.choice.value
        self.choice.options = [(f"{r['name']}: {r['from']} \u2192 {r['to']}", r["node"]) for r in rows]
        nodes = [r["node"] for r in rows]
        self.choice.value = keep if keep in nodes else (nodes[0] if nodes else None)
        self.revert_button.disabled = not rows

    def revert(self, node: str | None = None) -> bool:
        """Put override ``node`` (default: the chosen one) back: drop a pin it got, move it back."""
        node = node or self.choice.value
        row = next((r for r in self.rows if r["node"] == node), None)
        if row is None:
            return False
        s = self.state
        base_pins = (s.base_row() or {}).get("pins") or {}
        try:
            if node in s.pins and s.pins.get(node) != base_pins.get(node):
                s.unpin(node)
            if base_pins.get(node) and s.pins.get(node) != base_pins[node]:
                s.pin(node, base_pins[node])
            if s.placement[node] != row["from"]:
                s.move(node, row["from"])
        except VizPlaceError as err:
            self.message.value = error_html(str(err))
            return False
        self.message.value = ok_html(f"put {row['name']} back on {row['from']} (undo to redo it)")
        return True
