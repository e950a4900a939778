"""Metrics: max-load, throughput, latency, bottleneck, violations, and per-device bars.

Every figure comes from the state's :class:`~viz_place.cost.Evaluation`.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> m = MetricsPanel(ExplorerState(make_graph("chain", 5)))
>>> "max-load" in m.summary.value
True
"""
from __future__ import annotations

import ipywidgets as W
from bokeh.layouts import row

from viz_place.render import metrics_view, set_metrics
from viz_place.results import OBJECTIVE_LABELS, format_gap

from .common import bokeh_widget, escape_text, fmt


def optimum_html(st) -> str:
    """The current placement against the optimum: best known, best lower bound, gap, note."""
    what = OBJECTIVE_LABELS.get(st["objective"], st["objective"])
    known = (f"best known {fmt(st['best_known'])} ({escape_text(st['best_known_source'])})"
             if st.get("best_known") is not None else "best known -")
    bound = (f"lower bound {fmt(st['bound'])} over all placements ({escape_text(st['bound_source'])})"
             if st.get("bound") is not None else "no lower bound")
    note = f" &middot; <i>{escape_text(st['note'])}</i>" if st.get("note") else ""
    return (f'<div class="vp-optimum"><b>{escape_text(what)} against the optimum:</b> {fmt(st["value"])} '
            f'&middot; <b>gap {format_gap(st.get("gap"))}</b> &middot; {known} &middot; {bound}{note}</div>')


def summary_html(state) -> str:
    """The headline figures, where the placement comes from, the gap to the best lower
    bound (and up to five violations)."""
    ev = state.evaluation
    st = state.standing()
    head = (f"<b>max-load</b> {fmt(ev.max_load)} (time per sample) &middot; <b>throughput</b> {fmt(ev.throughput)}"
            f" &middot; <b>latency</b> {fmt(ev.latency)} &middot; <b>bottleneck</b> {escape_text(ev.bottleneck)}"
            f" &middot; placement: {escape_text(st['label'])}")
    if state.graph.is_training:
        head += f" &middot; max fwd + max bwd {fmt(ev.max_forward_plus_max_backward)}"
    opt = optimum_html(st)
    if ev.feasible:
        return f'<div class="vp-metrics">{head} &middot; <span style="color:#1e7d32">feasible</span>{opt}</div>'
    items = "".join(f"<li>{escape_text(v)}</li>" for v in ev.violations[:5])
    more = f"<li>\u2026 and {len(ev.violations) - 5} more</li>" if len(ev.violations) > 5 else ""
    issue = f"<li>{escape_text(ev.latency_issue)}</li>" if ev.latency_issue else ""
    return (f'<div class="vp-metrics">{head} &middot; <span style="color:#c0392b">'
            f'{len(ev.violations)} violation(s)</span><ul style="margin:0">{items}{more}{issue}</ul>{opt}</div>')


class MetricsPanel:
    """Headline figures (always visible) and per-device bars."""

    def __init__(self, state) -> None:
        self.state = state
        self.summary = W.HTML(layout=W.Layout(width="100%"))
        self.summary.add_class("vp-metrics-box")
        self.view = metrics_view(state.evaluation, state.cluster)
        self.bars_widget = bokeh_widget(row(self.view.load_figure, self.view.memory_figure))
        self.widget = W.VBox([self.bars_widget])
        state.on("placement", lambda s, **_: self.update())
        state.on("graph", lambda s, **_: self.update())
        state.on("history", lambda s, **_: self.update())   # a new bound or best value changes the gap
        self.update()

    def update(self) -> None:
        self.summary.value = summary_html(self.state)
        set_metrics(self.view, self.state.evaluation, self.state.cluster)
