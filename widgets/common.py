"""Small helpers shared by the explorer's panels.

>>> escape_text("<b>")
'&lt;b&gt;'
>>> "color" in error_html("bad")
True
"""
from __future__ import annotations

import html
import math
import threading
from typing import Any

from bokeh.core.serialization import Deserializer, Serialized
from bokeh.models import ColumnDataSource
from jupyter_bokeh import BokehModel

from .bokeh_sync import UI_LOCK, EchoFilter


def escape_text(text: Any) -> str:
    return html.escape(str(text))


def error_html(message: str) -> str:
    """A message shown next to the control that caused it."""
    return f'<span style="color:#c0392b">&#9888; {escape_text(message)}</span>'


def ok_html(message: str) -> str:
    return f'<span style="color:#1e7d32">{escape_text(message)}</span>'


def fmt(x: Any, digits: int = 4) -> str:
    """Numbers for people: 4 significant digits, ``inf`` and ``-`` for missing."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        if isinstance(x, float) and math.isnan(x):
            return "-"
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}g}"
    return str(x)


def in_kernel() -> bool:
    """Whether we run inside a Jupyter kernel (where widgets can be shown)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and hasattr(ip, "kernel")


#: Runs in the page after BokehJS: a figure whose widget lost its kernel (kernel restarted,
#: widget closed) makes jupyter_bokeh throw ``Error: Cannot send`` from inside BokehJS's
#: document change callbacks (uncaught, on every resize or pan). This catches exactly that
#: error and shows a banner on the figure instead. See README "Known issues".
DISCONNECT_GUARD_JS = r"""
(function () {
  function banner(doc) {
    var views = [];
    try { views = [...Bokeh.index].filter(function (v) { return v.model && v.model.document === doc; }); }
    catch (e) { return; }
    views.forEach(function (v) {
      var host = v.el && (v.el.closest('.jp-OutputArea-output') || v.el.parentElement);
      if (!host || host.querySelector('.vp-disconnected')) return;
      var div = document.createElement('div');
      div.className = 'vp-disconnected';
      div.style.cssText = 'background:#fdecea;color:#c0392b;padding:4px 8px;border:1px solid #c0392b;margin:2px 0';
      div.textContent = '\u26a0 This figure lost its kernel (the kernel restarted or the view was replaced): ' +
        'it no longer updates. Re-run the cell (then Restore session to get your work back).';
      host.insertBefore(div, host.firstChild);
    });
  }
  function patch() {
    if (!window.Bokeh || !Bokeh.require) return false;
    var D = Bokeh.require('document').Document;
    if (D.prototype.__vp_guarded) return true;
    var orig = D.prototype._trigger_on_change;
    D.prototype._trigger_on_change = function (event) {
      try { return orig.call(this, event); }
      catch (err) {
        if (String(err && err.message || err) !== 'Cannot send') throw err;
        window.__vp_disconnected = (window.__vp_disconnected || 0) + 1;
        banner(this);
      }
    };
    D.prototype.__vp_guarded = true;
    return true;
  }
  if (!patch()) { var t = setInterval(function () { if (patch()) clearInterval(t); }, 100);
                  setTimeout(function () { clearInterval(t); }, 20000); }
})();
"""


def load_bokehjs() -> None:
    """Load BokehJS into the notebook page from the installed package (no CDN).

    Call once per page before showing Bokeh widgets; the explorer does it for you.
    Only the core BokehJS bundle is sent (1.3 MB; the explorer uses no Bokeh
    widgets, tables, MathJax or WebGL), which keeps opening fast. Also installs
    :data:`DISCONNECT_GUARD_JS` and switches Bokeh to unique (not sequential) model ids,
    so figures made after a kernel restart never share ids with those still in the page.
    """
    from bokeh.io import output_notebook
    from bokeh.resources import Resources
    from bokeh.settings import settings
    from IPython.display import display
    settings.simple_ids.set_value(False)
    output_notebook(resources=Resources(mode="inline", components=["bokeh"]), hide_banner=True)
    display({"application/vnd.bokehjs_load.v0+json": DISCONNECT_GUARD_JS,
             "application/javascript": DISCONNECT_GUARD_JS}, raw=True)


class BokehWidget(BokehModel):
    """``jupyter_bokeh.BokehModel`` with a safe ``close``, ``refresh``, ``retire``, and a
    figure that is never stale in a new view.

    * ``BokehModel.close`` raises ``KeyError`` the second time (an explicit close
      followed by garbage collection);
    * ``refresh`` re-sends the figure;
    * a view made later (the page reloaded with the kernel alive) asks the kernel for
      the widget's state: if the figure changed since it was embedded, the state sent
      is re-serialised from the live figure (upstream sends the figure as first embedded);
    * ``retire`` closes the widget a few seconds later: a view being removed from the page
      still reports its new size (4 messages); closing at once makes the kernel log
      "No such comm" for each;
    * the page's echoes of what the kernel sent are dropped, and every change holds
      :data:`~viz_place.widgets.bokeh_sync.UI_LOCK` (see :mod:`viz_place.widgets.bokeh_sync`).
    """

    _dirty = False
    _echoes: EchoFilter | None = None

    @property
    def echoes(self) -> EchoFilter:
        if self._echoes is None:
            self._echoes = EchoFilter()
        return self._echoes

    def _document_patched(self, event) -> None:
        with UI_LOCK:
            self._dirty = True
            if event.setter is not self:
                self.echoes.sent(event)
            super()._document_patched(event)

    def _sync_model(self, _model, content: dict[str, Any], _buffers) -> None:
        """A message from the page: applied unless it is the echo of something sent."""
        if content.get("event", "") != "jsevent":
            return
        with UI_LOCK:
            self._apply_page_event({k: v for k, v in content.items() if k != "event"})

    def _apply_page_event(self, content: dict[str, Any]) -> None:
        # upstream BokehModel._sync_model, with echoes dropped
        doc = self._document
        if doc is None:
            return
        kind, model_id, attr = content.get("kind"), (content.get("model") or {}).get("id"), content.get("attr")
        if kind in ("ColumnsStreamed", "ColumnsPatched") and self.echoes.is_echo_append(model_id, attr, kind + "Event"):
            return
        event = Deserializer(list(doc.models), setter=self).deserialize(Serialized(content=content, buffers=[]))
        if kind == "ModelChanged":
            model, new = event["model"], event["new"]
            if self.echoes.is_echo_value(model.id, attr, new):
                return
            descriptor = model.lookup(attr)
            new = descriptor.property.prepare_value(model, descriptor.name, new)
            # (upstream also calls the model's callbacks again after this: each ran twice)
            descriptor._set(model, descriptor._get(model), new, setter=self)
        elif kind == "ColumnsStreamed" and isinstance(event["model"], ColumnDataSource):
            event["model"]._stream(event["data"], event["rollover"], setter=self)
        elif kind == "ColumnsPatched" and isinstance(event["model"], ColumnDataSource):
            event["model"].patch(event["patches"], setter=self)
        elif kind == "MessageSent" and event["msg_type"] == "bokeh_event":
            doc.callbacks.trigger_event(event["msg_data"])

    def get_state(self, key=None, drop_defaults=False):
        wants_bundle = key is None or key == "render_bundle" or (not isinstance(key, str)
                                                                 and "render_bundle" in key)
        with UI_LOCK:
            if self._dirty and wants_bundle and getattr(self, "_model", None) is not None:
                # Re-serialise without a change notification (that would re-render every view).
                self._trait_values["render_bundle"] = self._model_to_traits(self._model)
                self._dirty = False
            return super().get_state(key=key, drop_defaults=drop_defaults)

    def close(self) -> None:
        try:
            super().close()
        except KeyError:
            pass

    def refresh(self) -> None:
        """Re-send the whole figure. Patches reach only views that exist, so a view
        created later (first display, page reload) would otherwise start stale."""
        with UI_LOCK:
            self._dirty = False
            self.update_from_model(self._model)

    def retire(self, delay: float = 10.0) -> None:
        """Close in ``delay`` seconds (after the page has removed its view)."""
        t = threading.Timer(delay, self.close)
        t.daemon = True
        t.start()


def bokeh_widget(model, **kwargs) -> BokehWidget:
    """Embed a Bokeh layout as an ipywidget."""
    return BokehWidget(model, **kwargs)
