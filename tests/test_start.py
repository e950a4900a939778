"""viz_place.start: the placement the explorer opens on, and the layering it keeps (render runs no solver)."""
from __future__ import annotations

import subprocess
import sys

from viz_place.cost import evaluate
from viz_place.model import Cluster, OpGraph
from viz_place.samples import load_sample
from viz_place.start import fallback_placement, starting_placement


def test_starting_placement_is_complete_and_honours_pins_and_kinds():
    g = load_sample("residual_training")
    c = g.default_cluster
    p = starting_placement(g, c)
    assert set(p.assignment) == set(g.node_ids)
    ev = evaluate(g, c, p)
    assert ev.feasible, ev.violations
    first = g.node_ids[0]
    assert len(set(p.assignment.values())) > 1, "the start should already split the graph across devices"
    for start in (starting_placement, fallback_placement):
        pinned = start(g, c, {first: "fpga:2"})
        assert pinned[first] == "fpga:2" and pinned.solver == "start"
        cc = g.node(first).color_class
        if cc is not None:
            assert all(pinned[n] == "fpga:2" for n in g.node_ids if g.node(n).color_class == cc)


def test_without_topo_fill_the_start_says_why(monkeypatch):
    from viz_place.solvers import registry
    monkeypatch.delitem(registry._REGISTRY, "topo-fill")
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0, "fpga": 0.5}}], [])
    p = starting_placement(g, Cluster.paper(2, 1, 10.0))
    assert p["a"] == "cpu:0" and p.solver == "start" and "topo-fill is not available" in p.message


def test_render_imports_no_solver():
    """Layering: importing the rendering package must not pull in the solvers (render is pure)."""
    code = "import sys, viz_place.render; print('viz_place.solvers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
