"""Explorer speed on the 2,003-node sample graph (``sample_graphs/transformer_large.json``).

Python side (no browser): layout, building the explorer, recolouring after a
solve (whole device column) and after a move (one patch), CPU and wall time.
Browser side (JupyterLab + headless Chromium, as in ``tests/test_browser.py``):
opening the explorer (run-all until the graph is painted, including layout
and loading BokehJS inline) and the time from a click to the repainted canvas
for a manual move and for a whole-placement change (undo of a solve, the same
code path as a solve result). Targets: open < 5 s, recolour < 1 s.

    .venv/bin/python benchmarks/explorer.py            # both parts
    .venv/bin/python benchmarks/explorer.py --no-browser
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
GRAPH = "transformer_large"


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


def python_side() -> list[tuple[str, float, float, str]]:
    from viz_place.render import graph_view, layered_layout, set_placement
    from viz_place.render.layout import _CACHE
    from viz_place.samples import load_sample
    from viz_place.widgets import PlacementExplorer

    g = load_sample(GRAPH)
    c = g.default_cluster
    rows = []

    def fresh_layout():
        _CACHE.pop(g, None)
        layered_layout(g)
    rows.append(("layered layout (uncached)", *timed(fresh_layout), "-"))
    rows.append(("PlacementExplorer(graph) without a browser",
                 *timed(lambda: PlacementExplorer(g, load_bokehjs=False), repeat=3), "-"))
    ex = PlacementExplorer(g, load_bokehjs=False)
    s = ex.state
    a, b = blocks_placement(g, c), s.placement
    flip = [a, b]

    def solve_result():
        s.apply_result(flip[0])
        flip.reverse()
    rows.append(("apply a solve result (evaluate + recolour + metrics + history)", *timed(solve_result), "-"))
    view = graph_view(g, c, b)
    rows.append(("  of which: set_placement, whole device column",
                 *timed(lambda: (set_placement(view, g, flip[0]), flip.reverse())), "-"))
    nodes = g.node_ids
    k = [0]

    def move():
        k[0] += 1
        s.move(nodes[(37 * k[0]) % len(nodes)], c.device_names[k[0] % 4])
    rows.append(("manual move (incremental evaluation + patch + metrics)", *timed(move, repeat=21), "-"))
    return rows


def browser_side() -> list[tuple[str, float, float, str]]:
    spec = importlib.util.spec_from_file_location("_vp_browser", REPO / "tests" / "test_browser.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    reason = mod.browser_skip_reason()
    if reason:
        print(f"browser part skipped: {reason}")
        return []
    nb = json.loads(mod.NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][0]
    src = "".join(code["source"]).replace('PlacementExplorer("residual")', f'PlacementExplorer("{GRAPH}")')
    src += ("\nfrom viz_place.model import Placement as _P\n"
            "_accel = [d.name for d in explorer.state.cluster.devices if d.cls.pays_communication]\n"
            "_groups = explorer.state.graph.colocation_groups\n"
            "explorer.state.apply_result(_P({n: _accel[i * len(_accel) // len(_groups)] "
            "for i, g in enumerate(_groups) for n in g}, solver='blocks', status='heuristic'))\n"
            "explorer")
    code["source"] = src
    nb["cells"] = [c for c in nb["cells"] if c["cell_type"] == "markdown"][:1] + [code]
    rows = []
    with tempfile.TemporaryDirectory() as d, mod.LabSession(Path(d), json.dumps(nb)) as lab:
        opened = lab.open_and_run_all(timeout_ms=120000)
        rows.append(("browser: open explorer (run-all -> graph painted)", opened, float("nan"), "5 s"))
        node = lab.graph(0)
        start_dev = node["device"]
        # whole-placement recolour: Undo the solve result (same path as a solve), then Redo
        for label, target in (("Undo", "cpu:0"), ("Redo", start_dev)):
            lab.mark_paint()
            lab.click_button(label)
            t = lab.seconds_to_paint(0, target)
            rows.append((f"browser: recolour 2,003 nodes after a solve ({label.lower()})", t, float("nan"), "1 s"))
        # a manual move of one node: search it, pick a device, Move
        lab.page.get_by_placeholder("find node by name or id").fill(node["name"])
        lab.page.keyboard.press("Enter")
        time.sleep(0.5)
        lab.select("device", "fpga:3")
        lab.mark_paint()
        lab.click_button("Move")
        t = lab.seconds_to_paint(0, "fpga:3")
        rows.append(("browser: recolour after a manual move (click -> repaint)", t, float("nan"), "1 s"))
    return rows


def main() -> int:
    rows = python_side()
    if "--no-browser" not in sys.argv:
        rows += browser_side()
    print(f"graph: sample_graphs/{GRAPH}.json (2,003 nodes)")
    print(f"{'measure':66s} {'wall':>9s} {'cpu':>9s} {'target':>7s}")
    for name, wall, cpu, target in rows:
        cpu_s = "-" if cpu != cpu else f"{cpu * 1e3:7.1f}ms"
        print(f"{name:66s} {wall * 1e3:7.1f}ms {cpu_s:>9s} {target:>7s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
