"""Small helpers shared by the explorer's panels.

>>> escape_text("<b>")
'&lt;b&gt;'
>>> "color" in error_html("bad")
True
"""
from __future__ import annotations

import html
import math
from typing import Any

from jupyter_bokeh import BokehModel


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


def load_bokehjs() -> None:
    """Load BokehJS into the notebook page from the installed package (no CDN).

    Call once per page before showing Bokeh widgets; the explorer does it for you.
    Only the core BokehJS bundle is sent (1.3 MB; the explorer uses no Bokeh
    widgets, tables, MathJax or WebGL), which keeps opening fast.
    """
    from bokeh.io import output_notebook
    from bokeh.resources import Resources
    output_notebook(resources=Resources(mode="inline", components=["bokeh"]), hide_banner=True)



class BokehWidget(BokehModel):
    """``jupyter_bokeh.BokehModel`` with a safe ``close`` and a ``refresh``.

    ``BokehModel.close`` raises ``KeyError`` the second time (an explicit close
    followed by garbage collection); ``refresh`` re-sends the figure.
    """

    def close(self) -> None:
        try:
            super().close()
        except KeyError:
            pass

    def refresh(self) -> None:
        """Re-send the whole figure. Patches reach only views that exist, so a view
        created later (first display, page reload) would otherwise start stale."""
        self.update_from_model(self._model)


def bokeh_widget(model, **kwargs) -> BokehWidget:
    """Embed a Bokeh layout as an ipywidget."""
    return BokehWidget(model, **kwargs)
