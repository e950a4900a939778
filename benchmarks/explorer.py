"""Explorer speed on the 2,003-node sample ``transformer_large`` and on ONNX ResNet-50.

Browser (JupyterLab + headless Chromium, as in ``tests/test_browser.py``), per graph:

* **open** — run-all until the explorer's widgets are on the page (kernel import,
  layout, figures, BokehJS loaded inline);
* **first draw** — run-all until the graph canvas has painted;
* **recolour after a solve** — click → repaint for a whole-placement change (Undo / Redo
  of a solve result: the same code path as a solve result arriving);
* **expand / collapse** — a tap on a box → the repainted canvas shows it open; a tap
  on its header → closed again (kernel round trip, new dot layout, new positions).

Targets: open ≤ 3 s, recolour ≤ 0.3 s, collapse/expand ≤ 0.5 s.

Python side (no browser): building the explorer, applying a solve result, expand and
collapse of a group. ``--layout`` also prints how ``dot`` and the built-in layout scale
with the number of items drawn (what sets ``DOT_MAX_ITEMS``).

    .venv/bin/python benchmarks/explorer.py               # python + browser
    .venv/bin/python benchmarks/explorer.py --no-browser
    .venv/bin/python benchmarks/explorer.py --layout
"""
from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GRAPHS = ("transformer_large", "onnx_resnet50")


def timed(fn, repeat: int = 5) -> tuple[float, float]:
    """(median wall, median CPU) seconds of ``fn()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def blocks_placement(graph, cluster):
    """A stand-in for a solver result: topological order cut into equal blocks over the accelerators."""
    from viz_place.model import Placement
    accel = [d.name for d in cluster.devices if d.cls.pays_communication]
    groups = graph.colocation_groups
    assignment = {n: accel[gi * len(accel) // len(groups)] for gi, g in enumerate(groups) for n in g}
    return Placement(assignment, solver="blocks", status="heuristic")


def python_side(name: str) -> list[tuple[str, float, float, str]]:
    from viz_place.samples import load_sample
    from viz_place.widgets import PlacementExplorer

    g = load_sample(name)
    rows = [(f"{name}: PlacementExplorer(graph), no browser",
             *timed(lambda: PlacementExplorer(g, load_bokehjs=False), repeat=3), "-")]
    ex = PlacementExplorer(g, load_bokehjs=False)
    s = ex.state
    flip = [blocks_placement(g, s.cluster), s.placement]

    def solve_result():
        s.apply_result(flip[0])
        flip.reverse()
    rows.append((f"{name}: apply a solve result (evaluate + recolour + metrics)", *timed(solve_result), "-"))
    panel = ex.graph_panel
    gid = panel.view.boxes.data["gid"][0]

    def open_close():
        panel.expand(gid)
        panel.collapse(gid)
    rows.append((f"{name}: expand + collapse a group (layouts cached)", *timed(open_close), "-"))
    return rows


def layout_scaling() -> list[tuple[str, float, float, str]]:
    """dot vs built-in layout time against the number of items drawn (transformer_large)."""
    from viz_place.render.drawing import _CACHE, item_drawing
    from viz_place.render.groups import hierarchy
    from viz_place.samples import load_sample

    g = load_sample("transformer_large")
    h = hierarchy(g)
    groups = sorted(h.all_groups(), key=lambda x: int(x[1:]))
    rows = []
    for k in (0, 20, 60, 120, 200, 320, len(groups)):
        exp = set(groups[:k])
        for method in ("dot", "layered"):
            def run():
                _CACHE.pop(g, None)
                return item_drawing(g, exp, method=method)
            d = run()
            items = len(set(d.items))
            rows.append((f"layout {method:7s} {items:5d} items", *timed(run, repeat=1 if items > 800 else 3), "-"))
    return rows


def _lab_module():
    spec = importlib.util.spec_from_file_location("_vp_browser", REPO / "tests" / "test_browser.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Paint-aware state of the graph view: boxes and frames, with screen positions.
STATE_JS = """() => {
  const idx = window.Bokeh ? Bokeh.index : null; if (!idx) return null;
  const roots = typeof idx[Symbol.iterator] === 'function' ? [...idx] : Object.values(idx);
  const pv = roots.find(v => v.model && v.model.title && v.model.title.text && v.model.title.text.includes(' nodes, '));
  if (!pv || !pv.has_finished()) return null;
  const find = (col) => pv.model.renderers.find(r => r.data_source && r.data_source.data
                                                 && r.data_source.data[col] != null).data_source;
  const boxes = find('split'), frames = find('hh');
  const c = pv.canvas_view.el.getBoundingClientRect();
  const sx = (x) => c.left + pv.frame.x_scale.compute(x), sy = (y) => c.top + pv.frame.y_scale.compute(y);
  return {boxes: Array.from(boxes.data.gid), frames: Array.from(frames.data.gid),
          box_xy: Array.from(boxes.data.x).map((x, i) => [sx(x), sy(boxes.data.y[i])]),
          head_xy: Array.from(frames.data.hx).map((x, i) => [sx(x), sy(frames.data.hy[i])]),
          painted: window.__vp_painted || 0, t0: window.__vp_t0 || 0};
}"""


def _wait(page, pred, timeout=30.0, settle=0.25):
    """The state once ``pred`` holds and nothing has repainted for ``settle`` s (data, then
    ranges arrive in separate messages: the time reported is that of the last repaint)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = page.evaluate(STATE_JS)
        if st is not None and pred(st):
            time.sleep(settle)
            again = page.evaluate(STATE_JS)
            if again["painted"] == st["painted"] and pred(again):
                return again
            continue
        time.sleep(0.01)
    raise RuntimeError("browser state not reached")


def _differing_node(name: str) -> tuple[int, str, str]:
    """A node whose device differs between the explorer's start and the stand-in solve result."""
    from viz_place.start import starting_placement
    from viz_place.samples import load_sample
    g = load_sample(name)
    start = starting_placement(g, g.default_cluster)
    result = blocks_placement(g, g.default_cluster)
    k = next(i for i, n in enumerate(g.node_ids) if start[n] != result[n])
    return k, start[g.node_ids[k]], result[g.node_ids[k]]


def browser_side(mod, name: str) -> list[tuple[str, float, float, str]]:
    nb = json.loads(mod.NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][0]
    src = "".join(code["source"]).replace('PlacementExplorer("residual")', f'PlacementExplorer("{name}")')
    src += ("\nfrom viz_place.model import Placement as _P\n"
            "_accel = [d.name for d in explorer.state.cluster.devices if d.cls.pays_communication]\n"
            "_groups = explorer.state.graph.colocation_groups\n"
            "explorer.state.apply_result(_P({n: _accel[i * len(_accel) // len(_groups)] "
            "for i, g in enumerate(_groups) for n in g}, solver='blocks', status='heuristic'))\n"
            "explorer")
    code["source"] = src
    nb["cells"] = [code]
    rows = []
    with tempfile.TemporaryDirectory() as d, mod.LabSession(Path(d), json.dumps(nb)) as lab:
        page = lab.page
        page.goto(f"http://127.0.0.1:{lab.port}/lab/tree/explorer.ipynb?reset&token={lab.token}")
        page.wait_for_function(mod.KERNEL_IDLE_JS, timeout=120000)
        t0 = time.perf_counter()
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".vp-metrics", timeout=120000)
        opened = time.perf_counter() - t0
        page.wait_for_function(mod.GRAPH_JS, arg=0, timeout=120000, polling=20)
        drawn = time.perf_counter() - t0
        rows.append((f"{name}: browser open (run-all -> explorer shown)", opened, float("nan"), "3 s"))
        rows.append((f"{name}: browser first draw (run-all -> graph painted)", drawn, float("nan"), "-"))
        time.sleep(1.0)
        k, before, after = _differing_node(name)
        for label, target in (("Undo", before), ("Redo", after)):
            lab.mark_paint()
            lab.click_button(label)
            t = lab.seconds_to_paint(k, target)
            rows.append((f"{name}: browser recolour after a solve ({label.lower()})", t, float("nan"), "0.3 s"))
        for attempt in range(2):
            st = _wait(page, lambda s: len(s["boxes"]) > 0)
            gid, (x, y) = st["boxes"][0], st["box_xy"][0]
            lab.mark_paint()
            page.mouse.click(x, y)
            st = _wait(page, lambda s: gid in s["frames"] and s["painted"] > s["t0"])
            rows.append((f"{name}: browser expand a group (tap -> repainted){' again' if attempt else ''}",
                         (st["painted"] - st["t0"]) / 1000, float("nan"), "0.5 s"))
            hx, hy = st["head_xy"][st["frames"].index(gid)]
            lab.mark_paint()
            page.mouse.click(hx, hy)
            st = _wait(page, lambda s: gid in s["boxes"] and s["painted"] > s["t0"])
            rows.append((f"{name}: browser collapse it (tap on header -> repainted)"
                         f"{' again' if attempt else ''}", (st["painted"] - st["t0"]) / 1000, float("nan"), "0.5 s"))
    return rows


def main() -> int:
    rows = []
    for name in GRAPHS:
        rows += python_side(name)
    if "--layout" in sys.argv:
        rows += layout_scaling()
    if "--no-browser" not in sys.argv:
        mod = _lab_module()
        reason = mod.browser_skip_reason()
        if reason:
            print(f"browser part skipped: {reason}")
        else:
            for name in GRAPHS:
                rows += browser_side(mod, name)
    print(f"{'measure':72s} {'wall':>9s} {'cpu':>9s} {'target':>7s}")
    for label, wall, cpu, target in rows:
        cpu_s = "-" if cpu != cpu else f"{cpu * 1e3:7.1f}ms"
        print(f"{label:72s} {wall * 1e3:7.1f}ms {cpu_s:>9s} {target:>7s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
