"""The page echoes every patch the kernel sends (jupyter_bokeh 4.1); the kernel must not
apply those echoes (a stale value came back, streamed rows doubled), and figures changed from
worker threads while page messages arrive must stay whole (see ``widgets/bokeh_sync.py``).

``FakePage`` stands in for the browser: it collects the patches a ``BokehWidget`` sends and
echoes them back in the page's own format (a replaced ``data`` comes back as a
``ModelChanged``; streams, patches and other changes as they went out).
"""
from __future__ import annotations

import json
import math
import threading

from bokeh.models import ColumnDataSource, Range1d
from bokeh.plotting import figure

from viz_place.render import curve_view, stream_curve
from viz_place.widgets.bokeh_sync import UI_LOCK, EchoFilter, same_value
from viz_place.widgets.common import bokeh_widget


class FakePage:
    """Records what the widget sends; :meth:`echo` returns it as the page does."""

    def __init__(self, widget) -> None:
        self.widget, self.events, self._lock = widget, [], threading.Lock()
        widget.send = self._send

    def _send(self, content, buffers=None) -> None:
        payload = content.get("payload")
        if isinstance(payload, str) and payload.startswith("{"):
            body = json.loads(payload)
            if "events" in body:
                with self._lock:
                    self.events.extend(body["events"])

    def take(self) -> list[dict]:
        with self._lock:
            out, self.events = self.events, []
        return out

    def echo(self, events=None) -> None:
        for ev in self.take() if events is None else events:
            self.widget._sync_model(self.widget, page_message(ev), [])


def page_message(ev: dict) -> dict:
    """A patch event as the page sends it back after applying it."""
    if ev["kind"] == "ColumnDataChanged":
        return {"kind": "ModelChanged", "model": ev["model"], "attr": ev["attr"], "new": ev["data"],
                "event": "jsevent"}
    return dict(ev, event="jsevent")


def user_message(model, attr: str, new) -> dict:
    """A change the user made in the page (a pan, a tap)."""
    return {"kind": "ModelChanged", "model": {"id": model.id}, "attr": attr, "new": new, "event": "jsevent"}


def _plot():
    src = ColumnDataSource({"x": [], "y": []})
    f = figure(x_range=Range1d(0, 1), y_range=Range1d(0, 1), width=200, height=200)
    f.scatter("x", "y", source=src)
    w = bokeh_widget(f)
    return f, src, w, FakePage(w)


def test_an_echo_of_an_older_value_does_not_bring_it_back():
    f, src, w, page = _plot()
    src.data = {"x": [2], "y": [88.5]}           # the sweep's first row...
    first = page.take()
    src.data = {"x": [1, 2], "y": [194.6, 88.5]}  # ...then both
    page.echo(first)                              # the page's echo of the first arrives late
    assert src.data["x"] == [1, 2]
    page.echo()
    assert src.data["x"] == [1, 2]
    assert not w.echoes._values[(src.id, "data")], "every echo was matched and forgotten"


def test_streamed_rows_are_not_appended_twice():
    view = curve_view()
    w = bokeh_widget(view.figure)
    page = FakePage(w)
    for i in range(5):
        stream_curve(view, {"episode": i, "objective": 10.0 - i, "best": 10.0 - i})  # bound: NaN
        page.echo()
    assert view.curve.data["episode"] == [0, 1, 2, 3, 4]
    assert all(math.isnan(b) for b in view.curve.data["bound"])


def test_changes_made_in_the_page_still_reach_the_kernel():
    f, src, w, page = _plot()
    f.x_range.start = 0.5                      # the kernel sets a range...
    seen = []
    f.x_range.on_change("start", lambda attr, old, new: seen.append(new))
    w._sync_model(w, user_message(f.x_range, "start", 0.25), [])   # ...the user pans elsewhere
    assert f.x_range.start == 0.25 and seen == [0.25]
    page.echo()                                # the late echo of 0.5 changes nothing
    assert f.x_range.start == 0.25
    w._sync_model(w, user_message(src.selected, "indices", [3]), [])   # a tap
    assert src.selected.indices == [3]


def test_a_value_the_user_sets_back_after_its_echo_is_applied():
    f, src, w, page = _plot()
    f.x_range.start = 0.5
    page.echo()
    w._sync_model(w, user_message(f.x_range, "start", 0.25), [])
    w._sync_model(w, user_message(f.x_range, "start", 0.5), [])   # the user pans back to 0.5
    assert f.x_range.start == 0.5


def test_a_worker_thread_streaming_while_the_page_echoes_keeps_every_row_once():
    view = curve_view()
    w = bokeh_widget(view.figure)
    page = FakePage(w)
    n, errors, done = 300, [], threading.Event()

    def solver_progress():
        try:
            for i in range(n):
                with UI_LOCK:     # as SolverPanel._on_progress
                    stream_curve(view, {"episode": i, "objective": float(i), "best": 0.0})
        except Exception as err:  # noqa: BLE001 - the test reports it
            errors.append(err)
        finally:
            done.set()

    t = threading.Thread(target=solver_progress)
    t.start()
    while not done.is_set():
        page.echo()
        w._sync_model(w, user_message(view.figure, "inner_width", 300), [])   # the page resizing
    t.join()
    page.echo()
    assert not errors, errors
    assert view.curve.data["episode"] == list(range(n))


def test_same_value_treats_nan_and_sequences_as_the_page_sends_them():
    import numpy as np
    assert same_value({"a": [1.0, math.nan]}, {"a": (1.0, float("nan"))})
    assert same_value(np.array([1.0, np.nan]), [1.0, math.nan])
    assert not same_value({"a": [1]}, {"a": [1], "b": []})
    assert not same_value([1.0], [1.0000001])


def test_the_filter_forgets_values_the_page_never_echoes():
    f = EchoFilter()
    for i in range(1000):
        f.sent_value("m", "start", float(i))
    assert len(f._values[("m", "start")]) <= 64
    assert not f.is_echo_value("m", "start", 3.0)   # long forgotten: a user's change
