"""The structural drawing in a real browser (JupyterLab + headless Chromium, see test_browser.py):
ONNX ResNet-50 draws with no band connectors and shows labels after zooming in; a module of
the GPT-2 sample opens by a tap on its box and closes by a tap on its header.

Skipped with a reason when ``/usr/bin/chromium`` or Playwright is missing.
"""
from __future__ import annotations

import json
import time

import pytest

from test_browser import NOTEBOOK, LabSession, browser_skip_reason

#: Console messages of Bokeh / jupyter_bokeh seen on this machine that are not ours (see the README).
KNOWN_CONSOLE = ("No such comm", "[bokeh", "Cannot send", "ownKeys", "Kernel", "favicon", "Failed to load resource",
                 "DOMException", "Content Security Policy", "terminals plugin")

# The graph plot view and its sources, found by their columns; screen positions of items.
GRAPH_STATE_JS = """() => {
  if (!window.Bokeh) return null;
  const idx = Bokeh.index;
  const roots = typeof idx[Symbol.iterator] === 'function' ? [...idx] : Object.values(idx);
  const pv = roots.find(v => v.model && v.model.title && v.model.title.text && v.model.title.text.includes(' nodes, '));
  if (!pv || !pv.has_finished()) return null;
  const rs = pv.model.renderers;
  const src = (col) => { const r = rs.find(r => r.data_source && r.data_source.data && r.data_source.data[col] != null);
                         return r ? r.data_source : null; };
  const nodes = src('op'), boxes = src('split'), frames = src('hh');
  const edgeR = rs.find(r => r.glyph && r.glyph.type === 'Line' && r.glyph.line_color.value === '#a9a9a9');
  const texts = rs.filter(r => r.glyph && r.glyph.type === 'Text');
  const xs = pv.frame.x_scale, ys = pv.frame.y_scale;
  const c = pv.canvas_view.el.getBoundingClientRect();
  const scr = (x, y) => [c.left + xs.compute(x), c.top + ys.compute(y)];
  const arr = (s, k) => Array.from(s.data[k]);
  const k = Math.floor(nodes.data.x.length * 0.3);
  return {
    node_screen: scr(nodes.data.x[k], nodes.data.y[k]),
    nodes: {x: arr(nodes, 'x'), y: arr(nodes, 'y'), name: arr(nodes, 'name')},
    boxes: {x: arr(boxes, 'x'), y: arr(boxes, 'y'), gid: arr(boxes, 'gid'),
            screen: arr(boxes, 'x').map((x, i) => scr(x, boxes.data.y[i]))},
    frames: {gid: arr(frames, 'gid'), screen: arr(frames, 'hx').map((x, i) => scr(x, frames.data.hy[i]))},
    edges: {x: arr(edgeR.data_source, 'x'), y: arr(edgeR.data_source, 'y')},
    labels: texts.map(r => ({source: r.data_source === boxes ? 'boxes' : r.data_source === frames ? 'frames' : 'nodes',
                             visible: r.visible})),
    canvas: {left: c.left, top: c.top, width: c.width, height: c.height},
    view: [pv.model.x_range.start, pv.model.x_range.end, pv.model.y_range.start, pv.model.y_range.end],
  };
}"""


PIPELINE_JS = """() => {
  const idx = window.Bokeh ? Bokeh.index : null; if (!idx) return false;
  const views = [];
  const walk = (v) => { views.push(v); for (const c of (v.child_views || [])) walk(c); };
  for (const r of (typeof idx[Symbol.iterator] === 'function' ? [...idx] : Object.values(idx))) walk(r);
  const titles = views.filter(v => v.model && v.model.title && v.model.title.text && v.has_finished())
                      .map(v => v.model.title.text);
  return ['pipelined', 'one sample', 'devices'].every(t => titles.some(s => s.startsWith(t)));
}"""


def _notebook(sample: str) -> str:
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][0]
    code["source"] = "".join(code["source"]).replace('PlacementExplorer("residual")', f'PlacementExplorer("{sample}")')
    nb["cells"] = [code]
    return json.dumps(nb)


def _state(lab, timeout: float = 30.0, until=None) -> dict:
    """The graph's state once ``until`` holds and the view has stopped changing (new data and
    the refitted ranges arrive in separate messages)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = lab.page.evaluate(GRAPH_STATE_JS)
        if st is not None and (until is None or until(st)):
            time.sleep(0.3)
            again = lab.page.evaluate(GRAPH_STATE_JS)
            if json.dumps(again) == json.dumps(st):   # (NaN != NaN: compare the text)
                return st
            continue
        time.sleep(0.1)
    raise AssertionError(f"graph state not reached within {timeout} s")


def _label_visible(st, source):
    return any(lab["visible"] for lab in st["labels"] if lab["source"] == source)


def _polylines(xs, ys):
    lines, cur = [], []
    for x, y in zip(xs, ys):
        if x is None or x != x:
            if cur:
                lines.append(cur)
            cur = []
        else:
            cur.append((x, y))
    if cur:
        lines.append(cur)
    return lines


def _console(page):
    messages = []
    page.on("console", lambda m: messages.append((m.type, m.text)) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
    return messages


def _ours(messages):
    return [m for m in messages if not any(k in m[1] for k in KNOWN_CONSOLE) or "initial ranges" in m[1]]


@pytest.mark.browser
def test_resnet50_draws_without_band_connectors_and_labels_show_when_zoomed(tmp_path):
    reason = browser_skip_reason()
    if reason:
        pytest.skip(reason)
    with LabSession(tmp_path, _notebook("onnx_resnet50")) as lab:
        messages = _console(lab.page)
        lab.open_and_run_all()
        st = _state(lab)
        assert len(st["boxes"]["gid"]) > 3            # 176 ops open collapsed into blocks
        lab.click_button("Expand all")
        st = _state(lab, until=lambda s: len(s["boxes"]["gid"]) == 0)
        # every edge runs from one drawn op to another, left to right: nothing joins bands
        pts = [(x, y) for x, y in zip(st["nodes"]["x"], st["nodes"]["y"]) if x is not None]
        assert len(pts) == 176
        lines = _polylines(st["edges"]["x"], st["edges"]["y"])
        assert len(lines) == 191

        def at_node(p):
            return min((p[0] - x) ** 2 + (p[1] - y) ** 2 for x, y in pts) ** 0.5 < 0.4
        for line in lines:
            assert at_node(line[0]) and at_node(line[-1])
            assert line[-1][0] > line[0][0]
        assert not _label_visible(st, "nodes"), "176 op labels at once would be unreadable"
        # zoom in around an op (the wheel zooms about the pointer): op labels appear
        lab.page.mouse.move(*st["node_screen"])
        for _ in range(5):
            lab.page.mouse.wheel(0, -240)
            time.sleep(0.08)
        st = _state(lab, until=lambda s: _label_visible(s, "nodes"))
        x0, x1, y0, y1 = st["view"]
        in_view = [(x, y) for x, y in pts if x0 <= x <= x1 and min(y0, y1) <= y <= max(y0, y1)]
        assert 0 < len(in_view) <= 45, "labels show with a few ops in view"
        assert not _ours(messages), _ours(messages)


@pytest.mark.browser
def test_a_module_opens_by_a_tap_and_closes_by_its_header(tmp_path):
    reason = browser_skip_reason()
    if reason:
        pytest.skip(reason)
    with LabSession(tmp_path, _notebook("gpt2_small")) as lab:
        messages = _console(lab.page)
        lab.open_and_run_all()
        st = _state(lab)
        assert st["boxes"]["gid"], "the GPT-2 sample opens with its modules as boxes"
        assert _label_visible(st, "boxes")
        gid = st["boxes"]["gid"][0]
        n_frames = len(st["frames"]["gid"])
        x, y = st["boxes"]["screen"][0]
        lab.page.mouse.click(x, y)
        st = _state(lab, until=lambda s: gid in s["frames"]["gid"])
        assert gid not in st["boxes"]["gid"]
        assert len(st["frames"]["gid"]) == n_frames + 1, "one tap opens one group"
        hx, hy = st["frames"]["screen"][st["frames"]["gid"].index(gid)]
        lab.page.mouse.click(hx, hy)
        st = _state(lab, until=lambda s: gid in s["boxes"]["gid"])
        assert gid not in st["frames"]["gid"] and len(st["frames"]["gid"]) == n_frames
        # the Pipeline tab draws its three figures (explicit ranges: no "could not set initial ranges")
        lab.open_tab("Pipeline")
        lab.page.wait_for_function(PIPELINE_JS, timeout=30000)
        time.sleep(0.5)
        assert not _ours(messages), _ours(messages)
