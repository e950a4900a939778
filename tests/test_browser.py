"""The explorer in a real browser: JupyterLab + headless Debian Chromium driven by Playwright.

Opens (a copy of) ``notebooks/explorer.ipynb``, runs all cells, taps a node on
the canvas, pins it, runs the DP (or the best registered solver) and checks
that the canvas repainted (screenshot difference) and the metrics text
changed. ``benchmarks/explorer.py`` reuses :class:`LabSession` for timings.

Skipped with a reason when ``/usr/bin/chromium`` or Playwright is missing
(``bash scripts/ensure-browser.sh`` installs Chromium through apt).
"""
from __future__ import annotations

import io
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = REPO / "notebooks" / "explorer.ipynb"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

KERNEL_IDLE_JS = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.sessionContext) return false; const s = w.sessionContext.session;
  return !!(s && s.kernel && s.kernel.connectionStatus === 'connected' && s.kernel.status === 'idle'); }"""

# The graph figure's plot view, its node renderer, and screen positions of nodes.
GRAPH_JS = """(k) => {
  // [...Bokeh.index], not Object.values(Bokeh.index): the index's ownKeys lists duplicate ids (README, known issues)
  const views = window.Bokeh ? [...Bokeh.index].filter(v => v.el && v.el.isConnected) : [];
  const pv = views.find(v => v.model.title && v.model.title.text && v.model.title.text.includes(' nodes, '));
  if (!pv || !pv.has_finished()) return null;
  const rm = pv.model.renderers.find(r => r.data_source && r.data_source.get_column
                                          && r.data_source.get_column('op') != null);
  const rv = pv.views.find_one(rm);
  if (!rv || !rv.glyph.sx) return null;
  const r = pv.canvas_view.el.getBoundingClientRect();
  const n = rm.data_source.get_column('name').length;
  if (!window.__vp_paint_hooked) {
    window.__vp_paint_hooked = true; window.__vp_painted = 0;
    pv.repainted.connect(() => { window.__vp_painted = performance.now(); });
  }
  k = Math.min(k, n - 1);
  const x = r.left + rv.glyph.sx[k], y = r.top + rv.glyph.sy[k];
  // what a click at (x, y) would reach: the topmost element there, through Bokeh's shadow roots
  // (a node hidden in a collapsed group has no screen position: nothing to reach)
  let e = Number.isFinite(x) && Number.isFinite(y) ? document.elementFromPoint(x, y) : null;
  while (e && e.shadowRoot) { const f = e.shadowRoot.elementFromPoint(x, y); if (!f || f === e) break; e = f; }
  let hit = false;
  for (let a = e; a && !hit; a = a.parentNode || a.host) hit = a === pv.canvas_view.el;
  return {x: x, y: y, n: n, name: rm.data_source.get_column('name')[k],
          device: rm.data_source.get_column('device')[k], left: r.left, top: r.top, width: r.width, height: r.height,
          hit: hit, at: e ? (e.tagName + '.' + e.className) : null};
}"""

# Scroll the graph figure's canvas to the middle of the notebook's viewport.
SCROLL_GRAPH_JS = """() => {
  const pv = [...Bokeh.index].filter(v => v.el && v.el.isConnected)
      .find(v => v.model.title && v.model.title.text && v.model.title.text.includes(' nodes, '));
  pv.canvas_view.el.scrollIntoView({block: 'center', inline: 'nearest'});
}"""


def browser_skip_reason() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (run `bash scripts/ensure-browser.sh` as root to install Debian's chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabSession:
    """A private JupyterLab server on 127.0.0.1 (token, temp dirs) and a headless Chromium page.

    ``notebook_text`` replaces the notebook served (default: notebooks/explorer.ipynb).
    Use as a context manager; everything started is stopped on exit.
    """

    def __init__(self, workdir: Path, notebook_text: str | None = None, *, viewport=(1400, 1100)) -> None:
        self.workdir = Path(workdir)
        self.root = self.workdir / "root"
        self.notebook_text = notebook_text or NOTEBOOK.read_text()
        self.viewport = viewport
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None
        self._pw = None
        self.browser = None
        self.page = None

    # --- server --------------------------------------------------------------------------
    def _start_server(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "explorer.ipynb").write_text(self.notebook_text)
        settings = self.workdir / "settings"
        for ext, content in (("@jupyterlab/notebook-extension/tracker", {"autoStartDefaultKernel": True}),
                             ("@jupyterlab/apputils-extension/notification",
                              {"fetchNews": "false", "checkForUpdates": False})):
            f = settings / f"{ext}.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(content))
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.workdir / "config"),
                   JUPYTER_RUNTIME_DIR=str(self.workdir / "runtime"))
        # A venv that borrows its packages from another environment (a .pth to its site-packages,
        # as the worktrees here do) lacks that environment's share/jupyter, where the ipywidgets and
        # jupyter_bokeh lab extensions live: without it every widget fails to open ("Exception
        # opening new comm"). Point JUPYTER_PATH at the environment jupyterlab comes from.
        import jupyterlab
        share = Path(jupyterlab.__file__).resolve().parents[4] / "share" / "jupyter"
        if share.is_dir() and share != Path(sys.prefix).resolve() / "share" / "jupyter":
            env["JUPYTER_PATH"] = os.pathsep.join(p for p in (env.get("JUPYTER_PATH"), str(share)) if p)
        jupyter = Path(sys.executable).parent / "jupyter"
        cmd = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}", "--allow-root",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
               "--LabApp.expose_app_in_browser=True", "--LabApp.extension_manager=readonly",
               "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={self.workdir / 'ws'}"]
        self.log_path = self.workdir / "lab.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited early; see {self.log_path}:\n{self.log_path.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/status?token={self.token}", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("jupyter lab did not answer within 60 s")

    def __enter__(self) -> "LabSession":
        self._start_server()
        from playwright.sync_api import sync_playwright
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": self.viewport[0], "height": self.viewport[1]})
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.browser is not None:
                self.browser.close()
            if self._pw is not None:
                self._pw.stop()
        finally:
            if self.proc is not None:
                self.proc.terminate()
                try:
                    self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            self._log.close()

    # --- notebook ----------------------------------------------------------------------------
    def open_and_run_all(self, timeout_ms: int = 60000) -> float:
        """Open the notebook, wait for an idle kernel, run all; returns seconds from run-all to a painted graph."""
        page = self.page
        page.goto(f"http://127.0.0.1:{self.port}/lab/tree/explorer.ipynb?reset&token={self.token}")
        page.wait_for_function(KERNEL_IDLE_JS, timeout=timeout_ms)
        t0 = time.perf_counter()
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(GRAPH_JS, arg=0, timeout=timeout_ms, polling=50)
        elapsed = time.perf_counter() - t0
        page.wait_for_selector(".vp-metrics", timeout=timeout_ms)
        return elapsed

    def graph(self, k: int = 0) -> dict:
        """Screen position and data of node ``k`` of the graph view, scrolled so that a click
        at (``x``, ``y``) reaches the graph's canvas (not the status bar, the sticky headline
        or whatever else covers it); ``hit`` says it does, ``at`` names the element there."""
        info = self.page.evaluate(GRAPH_JS, k)
        if info is None:
            raise AssertionError("graph view not rendered")
        if not info["hit"]:
            # not page.mouse.wheel: it scrolls what is under the pointer, and over the canvas it zooms
            self.page.evaluate(SCROLL_GRAPH_JS)
            time.sleep(0.3)
            info = self.page.evaluate(GRAPH_JS, k)
        return info

    def canvas_png(self) -> bytes:
        g = self.graph(0)
        return self.page.screenshot(clip={"x": g["left"], "y": g["top"], "width": g["width"], "height": g["height"]})

    def metrics_text(self) -> str:
        return self.page.locator(".vp-metrics").first.inner_text()

    def wait_text_change(self, get, old: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = get()
            if new != old:
                return new
            time.sleep(0.1)
        raise AssertionError(f"text did not change within {timeout} s: {old!r}")

    def click_button(self, label: str) -> None:
        exact = re.compile(rf"^\s*{re.escape(label)}\s*$")
        self.page.locator("button.jupyter-button").filter(has_text=exact).first.click()

    def open_tab(self, title: str) -> None:
        self.page.get_by_role("tab", name=title, exact=True).first.click()

    def select(self, widget_label: str, prefix: str) -> None:
        """Choose the first option starting with ``prefix`` in the dropdown labelled ``widget_label``."""
        box = self.page.locator(".widget-dropdown", has=self.page.locator("label", has_text=widget_label)).first
        sel = box.locator("select")
        sel.wait_for(timeout=20000)   # tabs are built when first opened
        options = sel.locator("option").all_inner_texts()
        sel.select_option(label=next(o for o in options if o.startswith(prefix)))

    def mark_paint(self) -> None:
        self.page.evaluate("() => { window.__vp_t0 = performance.now(); }")

    def seconds_to_paint(self, node: int, device: str, timeout_ms: int = 30000) -> float:
        """Seconds from :meth:`mark_paint` until node ``node`` shows ``device`` and the canvas repainted."""
        js = """([k, dev]) => { const g = (%s)(k); if (!g || g.device !== dev) return null;
                 return window.__vp_painted > window.__vp_t0 ? (window.__vp_painted - window.__vp_t0) / 1000 : null; }""" % GRAPH_JS
        return float(self.page.wait_for_function(js, arg=[node, device], timeout=timeout_ms, polling=20).json_value())


def pixel_difference(png_a: bytes, png_b: bytes) -> float:
    """Fraction of pixels that differ between two screenshots of one size."""
    from PIL import Image, ImageChops
    a = Image.open(io.BytesIO(png_a)).convert("RGB")
    b = Image.open(io.BytesIO(png_b)).convert("RGB")
    if a.size != b.size:
        return 1.0
    diff = ImageChops.difference(a, b).convert("L").point(lambda v: 255 if v > 16 else 0)
    return sum(diff.histogram()[255:]) / (a.size[0] * a.size[1])


def best_solver_name() -> str:
    from viz_place.solvers import list_solvers
    names = [s.name for s in list_solvers()]
    for n in ("dp", "ilp"):
        if n in names:
            return n
    exact = [s.name for s in list_solvers() if s.exact]
    return (exact or names or ["dp"])[0]


@pytest.mark.browser
def test_explorer_in_jupyterlab(tmp_path):
    reason = browser_skip_reason()
    if reason:
        pytest.skip(reason)
    solver = best_solver_name()
    with LabSession(tmp_path) as lab:
        lab.open_and_run_all()
        page = lab.page
        metrics0 = lab.metrics_text()
        assert "max-load" in metrics0
        before = lab.canvas_png()
        # tap a node on the canvas
        node = lab.graph(10)
        assert node["hit"], f"node {node['name']} at ({node['x']:.0f}, {node['y']:.0f}) is under {node['at']}"
        page.mouse.click(node["x"], node["y"])
        page.get_by_text(node["name"], exact=True).first.wait_for(timeout=20000)
        # pin it to an accelerator it is not on yet (the start already splits the graph)
        target = "fpga:1" if node["device"] != "fpga:1" else "fpga:2"
        lab.select("device", target)
        lab.click_button("Pin")
        metrics1 = lab.wait_text_change(lab.metrics_text, metrics0)
        assert f"pinned to {target}" in page.locator(".widget-html", has_text="pinned to").first.inner_text()
        # run the DP (or the best registered solver) from the solver tab
        lab.open_tab("Solver")
        lab.select("solver", solver)
        lab.click_button("Run")
        metrics2 = lab.wait_text_change(lab.metrics_text, metrics1, timeout=40)
        assert f"placement: {solver}" in metrics2, metrics2
        time.sleep(0.5)   # let the canvas repaint
        after = lab.canvas_png()
        changed = pixel_difference(before, after)
        assert changed > 0.001, f"canvas did not change ({changed:.5f} of pixels differ)"
        # the pinned node kept its device through the solve
        assert lab.graph(10)["device"] == target
