"""Issue #11 (explorer 2): every result against the optimum, overrides, units, the
scripting contract, and one test per defect (1)-(15) seen in the browser. Each defect
test failed before its fix (see the commit that added it).

Plain pytest over the widget state and the Bokeh documents the page would receive
(``BokehWidget.get_state()`` is what a new view gets); the browser itself is driven in
tests/test_browser.py.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

import pytest

from viz_place.cost import evaluate
from viz_place.results import Bound, annotate_rows, best_bound, gap, objective_key, optimality_note
from viz_place.solvers import SolverInfo, SolverOptions, SolverResult, registry
from viz_place.widgets import PlacementExplorer


@dataclass(frozen=True)
class FakeOptions(SolverOptions):
    blocks: int = field(default=0, metadata={"help": "accelerators to use (0 = all)", "min": 0, "max": 64})


def _blocks(problem, options, hooks):
    """Equal blocks of the topological order over the first ``blocks`` accelerators; pins kept."""
    graph, cluster, pins = problem.graph, problem.cluster, problem.pins
    accel = [d.name for d in cluster.devices if d.cls.pays_communication]
    if options.blocks:
        accel = accel[:options.blocks]
    groups = graph.colocation_groups
    a = {}
    for gi, group in enumerate(groups):
        dev = next((pins[n] for n in group if n in pins), None) or accel[gi * len(accel) // len(groups)]
        for n in group:
            a[n] = dev
    overflows = bool(evaluate(graph, cluster, a, pins=pins).violations)
    return SolverResult(a, status="manual" if overflows else "heuristic")


def _cancelled_worse(problem, options, hooks):
    """A cancelled run that hands back everything on the host: valid, and worse than the start."""
    from viz_place.start import fallback_placement
    return SolverResult(dict(fallback_placement(problem.graph, problem.cluster, problem.pins).assignment),
                        status="cancelled")


@pytest.fixture
def fakes(monkeypatch):
    for info in (SolverInfo("fake-blocks", _blocks, FakeOptions, "throughput", "test: blocks"),
                 SolverInfo("fake-cancel", _cancelled_worse, FakeOptions, "throughput", "test: cancelled, worse")):
        monkeypatch.setitem(registry._REGISTRY, info.name, info)


@pytest.fixture
def ex(fakes, tmp_path):
    return PlacementExplorer("residual", load_bokehjs=False, workdir=tmp_path)


def page_doc(widget):
    """The Bokeh document a view created now would show (what a new view gets from the kernel)."""
    from bokeh.document import Document
    bundle = json.loads(widget.get_state()["render_bundle"])
    return Document.from_json(next(iter(bundle["docs_json"].values())))


# --- the results module --------------------------------------------------------------------

def test_only_bounds_for_all_placements_count_and_gap_is_never_negative():
    rows = [{"solver": "dp", "run": 1, "status": "optimal", "value": 8.783, "lower_bound": 8.783,
             "bound_set": "pipeline"},
            {"solver": "ilp", "run": 2, "status": "optimal", "value": 8.76, "lower_bound": 8.76, "bound_set": "convex"},
            {"solver": "ilp-noncontig", "run": 3, "status": "feasible", "value": 8.70, "lower_bound": 8.5,
             "bound_set": "any"},
            {"solver": "rl", "run": 4, "status": "heuristic", "value": 8.688}]
    b = best_bound(rows, Bound(8.0, "total work / number of devices"))
    assert (b.value, b.source) == (8.5, "ilp-noncontig bound (run #3)")
    out = annotate_rows(rows, Bound(8.0, "simple"))
    assert all(r["bound"] == 8.5 and r["gap"] >= 0 for r in out)
    assert out[0]["note"].startswith("optimal among contiguous pipeline splits (not over all placements: rl")
    assert out[1]["note"].startswith("optimal among per-device convex placements")
    assert out[3]["best_known"] == 8.688 and out[3]["best_known_source"] == "rl run #4"
    assert math.isclose(out[3]["gap"], 8.688 / 8.5 - 1)
    # a value a hair under the bound (rounding) has gap 0, and then it is optimal over all placements
    assert gap(8.5 * (1 - 1e-13), 8.5) == 0.0
    assert optimality_note({"value": 8.5, "status": "heuristic"}, Bound(8.5, "x"), None).startswith(
        "optimal over all placements")
    assert objective_key("throughput") == "max_load"


def test_simple_bound_holds_for_the_solvers_results():
    from viz_place.results import simple_bound
    from viz_place.samples import load_sample
    from viz_place.solvers import run_solver
    g = load_sample("residual")
    c = g.default_cluster
    b = simple_bound(g, c)
    assert b.value > 0 and b.source
    for name in ("dp", "local-search", "topo-fill"):
        p = run_solver(name, g, c)
        assert evaluate(g, c, p).max_load >= b.value * (1 - 1e-9)


# --- history, headline, scripting contract ---------------------------------------------------

def test_history_rows_carry_value_gap_bound_and_source(ex):
    assert ex.run("fake-blocks", {"blocks": 2})
    h = ex.history
    assert [r["solver"] for r in h] == ["start", "fake-blocks"]
    for r in h:
        assert {"solver", "status", "value", "gap", "bound", "bound_source"} <= set(r)
        assert r["bound"] > 0 and r["gap"] >= 0 and r["bound_source"]
        assert math.isclose(r["gap"], r["value"] / r["bound"] - 1, abs_tol=1e-12)
    assert "gap" in ex.tradeoffs.table.value and "lower bound" in ex.tradeoffs.table.value
    summary = ex.metrics.summary.value
    assert "against the optimum" in summary and "gap" in summary and h[-1]["bound_source"] in summary


def test_figures_by_name_are_the_live_figures(ex):
    figs = ex.figures()
    assert {"graph", "pareto", "sweep", "curve", "load", "memory"} <= set(figs)
    assert figs["pareto"] is ex.tradeoffs.view.scatter_figure
    assert figs["graph"] is ex.graph_panel.view.figure


def test_rl_curve_and_pareto_draw_the_best_known_value(ex):
    ex.run("fake-blocks")
    best = min(r["max_load"] for r in ex.history)
    assert math.isclose(ex.tradeoffs.view.best_throughput.location, 1 / best)
    assert ex.tradeoffs.view.best_latency.location == min(r["latency"] for r in ex.history)
    ex.run("fake-blocks", {"blocks": 1})
    assert math.isclose(ex.solver.curve.best_known.location, best)


# --- overrides -------------------------------------------------------------------------------

def test_overrides_list_each_move_and_pin_with_its_effect_on_max_load(ex):
    s = ex.state
    ex.run("fake-blocks")
    a, b = s.graph.node_ids[3], s.graph.node_ids[20]
    s.move(a, "cpu:0")
    s.pin(b, "fpga:0")
    rows = {r["node"]: r for r in s.overrides()}
    assert set(rows) == {a, b} and rows[b]["pinned"] and not rows[a]["pinned"]
    for node, r in rows.items():
        back = dict(s.placement.assignment)
        back[node] = r["from"]
        want = s.evaluation.max_load - evaluate(s.graph, s.cluster, back).max_load
        assert math.isclose(r["effect"], want, abs_tol=1e-9)
    assert "2 overrides of fake-blocks run #2" in ex.metrics.summary.value
    assert "2 overrides" in ex.overrides.summary.value
    ex.overrides.revert(a)
    assert [r["node"] for r in s.overrides()] == [b]


# --- defects (1)-(15) ------------------------------------------------------------------------

def test_1_scatter_is_filled_when_trade_offs_is_first_opened_after_runs(ex, tmp_path):
    ex.run("fake-blocks", {"blocks": 1})
    ex.run("fake-blocks", {"blocks": 3})
    assert "tradeoffs" not in ex._panels   # the tab was never opened
    doc = page_doc(ex.tradeoffs.plots)
    src = doc.get_model_by_id(ex.tradeoffs.view.points.id)
    assert len(src.data["throughput"]) == 3
    # and after Restore session into a fresh explorer (as after a kernel restart)
    ex.files.save(str(tmp_path / "s.json"))
    other = PlacementExplorer("chain", load_bokehjs=False, workdir=tmp_path)
    other.files.restore(str(tmp_path / "s.json"))
    src2 = page_doc(other.tradeoffs.plots).get_model_by_id(other.tradeoffs.view.points.id)
    assert len(src2.data["throughput"]) == 3


def test_2_loading_another_graph_clears_the_sweep(ex):
    t = ex.tradeoffs
    t.sweep_solver.value = "fake-blocks"
    t.sweep_k.value = 2
    assert t.sweep() and t.wait(20)
    assert len(t.view.sweep.data["count"]) == 2 and "sweep done" in t.sweep_status.value
    ex.files.load_sample("chain")
    assert t.view.sweep.data["count"] == [] and t.sweep_rows == [] and t.sweep_status.value == ""


def test_3_rl_finetune_curve_shows_the_episode_line():
    ex = PlacementExplorer("residual", load_bokehjs=False)
    ex.run("rl", {"mode": "finetune", "time_limit": 2.0, "seed": 0})
    d = ex.solver.curve.curve.data
    obj = [o for o in d["objective"] if isinstance(o, float) and math.isfinite(o)]
    assert len(obj) >= 3
    assert any(not math.isclose(o, b) for o, b in zip(d["objective"], d["best"]) if math.isfinite(o))


def test_4_count_that_would_drop_a_pinned_device_is_outlined_and_explained(ex):
    s = ex.state
    s.pin(s.graph.node_ids[5], "fpga:3")
    row = ex.devices.rows[0]
    row.fields["count"].value = "3"
    assert s.cluster.class_named("fpga").count == 4
    assert "red" in row.fields["count"].layout.border or "#c0392b" in row.fields["count"].layout.border
    assert "fpga:3" in row.error.value and "pinned" in row.error.value


def test_5_memory_in_human_units(ex):
    row = ex.devices.rows[0]
    assert row.fields["memory"].value == "395 MiB"
    row.fields["memory"].value = "2 GiB"
    assert ex.state.cluster.class_named("fpga").memory == 2 * 2**30
    row.fields["memory"].value = "512 MiB"
    assert ex.state.cluster.class_named("fpga").memory == 512 * 2**20
    row.fields["memory"].value = "lots"
    assert "not a size" in row.error.value and ex.state.cluster.class_named("fpga").memory == 512 * 2**20
    row.fields["memory"].value = "1 KiB"
    text = " ".join(ex.state.evaluation.violations)
    assert "used of 1 KiB" in text and "e+" not in text


def test_6_failed_search_clears_the_selection(ex):
    gp = ex.graph_panel
    gp.search.value = ex.state.graph.node(ex.state.graph.node_ids[4]).name
    assert ex.state.selected is not None
    before = dict(ex.state.placement.assignment)
    gp.search.value = "no-such-node-xyz"
    assert ex.state.selected is None and gp.move_button.disabled
    gp.move_button.click()
    assert dict(ex.state.placement.assignment) == before


def test_7_a_new_view_gets_the_current_figure(ex):
    s = ex.state
    ex.graph_panel.widget.get_state()      # the first view
    node = s.graph.node_ids[7]
    s.pin(node, "cpu:0")
    doc = page_doc(ex.graph_panel.widget)   # a page reload with the kernel alive
    assert list(doc.get_model_by_id(ex.graph_panel.view.pins.id).data["device"]) == ["cpu:0"]
    assert list(doc.get_model_by_id(ex.graph_panel.view.nodes.id).data["device"]) == \
        [s.placement[n] for n in s.graph.node_ids]


def test_8_replaced_graph_widget_is_closed_later_not_at_once(ex, monkeypatch):
    from viz_place.widgets import common
    delays = []
    monkeypatch.setattr(common.BokehWidget, "retire", lambda self, delay=10.0: delays.append((self, delay)))
    old = ex.graph_panel.widget
    ex.files.load_sample("chain")
    assert old.comm is not None        # still open: its view may still report its size
    assert delays and delays[0][0] is old and delays[0][1] > 0


def test_8_bokehjs_loader_guards_disconnected_figures_and_uses_unique_ids(monkeypatch):
    from bokeh.settings import settings
    from viz_place.widgets import common
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append(obj))
    monkeypatch.setattr("bokeh.io.output_notebook", lambda **kw: None)
    common.load_bokehjs()
    assert any("Cannot send" in str(o) for o in shown)
    assert settings.simple_ids() is False
    settings.simple_ids.unset_value()


def test_9_axis_ranges_fit_one_run_and_sweeps_count_in_whole_devices(ex):
    v = ex.tradeoffs.view
    thr = ex.history[0]["throughput"]
    assert 0 <= v.scatter_figure.x_range.start < thr < v.scatter_figure.x_range.end < 2 * thr
    t = ex.tradeoffs
    t.sweep_solver.value = "fake-blocks"
    t.sweep_k.value = 3
    assert t.sweep() and t.wait(20)
    assert v.sweep_figure.xaxis[0].ticker.interval == 1
    assert (v.sweep_figure.x_range.start, v.sweep_figure.x_range.end) == (0.5, 3.5)


def test_10_cancelled_worse_run_does_not_replace_the_placement(ex):
    ex.run("fake-blocks")
    best = dict(ex.state.placement.assignment)
    ex.run("fake-cancel")
    assert dict(ex.state.placement.assignment) == best
    assert ex.history[-1]["status"] == "cancelled" and ex.history[-1]["applied"] is False
    assert "worse than the current" in ex.solver.status.value
    ex.tradeoffs.restore.value = ex.history[-1]["run"]
    ex.tradeoffs.restore_button.click()      # it can still be used on purpose
    assert dict(ex.state.placement.assignment) == ex.history[-1]["assignment"]


def test_11_selection_does_not_dim_and_a_solve_clears_it(ex):
    r = ex.graph_panel.view.node_renderer
    assert r.nonselection_glyph.fill_alpha == 1.0 and r.nonselection_glyph.line_alpha == 1.0
    ex.graph_panel.view.nodes.selected.indices = [3]
    assert ex.state.selected is not None
    ex.run("fake-blocks")
    assert ex.state.selected is None and list(ex.graph_panel.view.nodes.selected.indices) == []


def test_12_paper_split_export_has_the_device_loads(ex, tmp_path):
    ex.run("fake-blocks")
    path = ex.files.export("paper", str(tmp_path / "p.split.json"))
    data = json.loads(path.read_text())
    loads = {d.name: d.load for d in ex.state.evaluation.devices}
    fpgas = [d for d in ex.state.cluster.device_names if d.startswith("fpga")]
    assert [x["load"] for x in data["fpgas"]] == pytest.approx([loads[d] for d in fpgas])
    assert all(x["load"] != -1 for x in data["fpgas"] + data["cpus"])


def test_13_start_row_and_headline_say_where_the_placement_comes_from(ex):
    assert [r["solver"] for r in ex.history] == ["start"]
    assert "placement: start (topo-fill baseline)" in ex.metrics.summary.value
    ex.state.move(ex.state.graph.node_ids[0], "cpu:0")
    assert "manual: 1 override of start (topo-fill baseline)" in ex.metrics.summary.value
    assert "manual (manual)" not in ex.metrics.summary.value


def test_14_devices_row_error_goes_under_the_row(ex):
    row = ex.devices.rows[0]
    row.fields["speed"].value = "fast"
    fields_box = row.box.children[0]
    assert row.error not in fields_box.children and row.box.children[1] is row.error
    assert "speed" in row.error.value


def test_15_headline_is_sticky_and_run_comes_before_the_options(ex):
    assert "vp-headline" in ex.headline._dom_classes and ex.metrics.summary in ex.headline.children
    assert "position: sticky" in ex.headline.children[0].value
    kids = list(ex.solver.widget.children)
    run_row = next(k for k in kids if ex.solver.run_button in getattr(k, "children", ()))
    assert kids.index(run_row) < kids.index(ex.solver.form_box)


# --- with the real solvers (the solver contract: lower_bound + bound_set) ----------------------

def test_dp_is_optimal_only_among_pipeline_splits_and_a_noncontig_bound_counts():
    ex = PlacementExplorer("residual", load_bokehjs=False)
    ex.run("dp")
    ex.run("ilp-noncontig", {"time_limit": 8.0, "backend": "highs"})
    dp_row, nc_row = ex.history[1], ex.history[2]
    assert dp_row["bound_set"] == "pipeline" and nc_row["bound_set"] == "any"
    assert dp_row["note"].startswith("optimal among contiguous pipeline splits")
    simple = ex.state.simple_bound("max_load")
    want = max(simple.value, nc_row["lower_bound"])
    for r in ex.history:
        assert math.isclose(r["bound"], want) and r["gap"] >= 0
        assert r["value"] >= r["bound"] * (1 - 1e-9)      # a bound, never above a valid placement
    assert r["bound_source"] == ("ilp-noncontig bound (run #3)" if nc_row["lower_bound"] > simple.value
                                 else simple.source)
    if nc_row["value"] < dp_row["value"] * (1 - 1e-9):   # a non-contiguous split beats the pipeline optimum
        assert "not over all placements: ilp-noncontig run #3 found" in dp_row["note"]


def test_compare_shows_gap_bound_and_source(capsys):
    from viz_place.cli.main import main
    code = main(["compare", "chain", "--solvers", "dp,ilp-noncontig,topo-fill", "--time-limit", "10",
                 "--backend", "highs", "--json"])
    assert code == 0
    rows = {r["solver"]: r for r in json.loads(capsys.readouterr().out)}
    for r in rows.values():
        assert r["gap"] >= 0 and r["bound"] > 0 and r["bound_source"]
        assert r["value"] >= r["bound"] * (1 - 1e-9)
    assert rows["dp"]["note"].startswith("optimal among contiguous pipeline splits")
    assert rows["dp"]["bound"] >= rows["ilp-noncontig"]["lower_bound"] - 1e-9
    code = main(["compare", "chain", "--solvers", "dp,topo-fill"])
    out = capsys.readouterr().out
    assert code == 0 and "gap" in out and "best lower bound over all placements" in out


def test_milp_progress_streams_bound_and_gap_live():
    """While ilp-noncontig runs, the status line shows incumbent, bound and gap, and the solver curve
    draws the incumbent and the proven bound over time (seconds); the bound never decreases and never
    exceeds the value of the placement that comes back."""
    pytest.importorskip("highspy")
    ex = PlacementExplorer("residual", load_bokehjs=False)
    live: list[str] = []
    ex.solver.status.observe(lambda ch: live.append(ch["new"]), "value")
    ex.run("ilp-noncontig", {"time_limit": 3.0, "backend": "highs"})
    running = [s for s in live if s.startswith("running")]
    assert any("incumbent" in s and "bound" in s and "gap" in s for s in running), running[-5:]
    d = ex.solver.curve.curve.data
    bounds = [(t, b) for t, b in zip(d["episode"], d["bound"]) if math.isfinite(b)]
    best = [b for b in d["best"] if math.isfinite(b)]
    assert len(bounds) >= 2 and best, d
    assert all(t2 >= t1 and b2 >= b1 * (1 - 1e-7) for (t1, b1), (t2, b2) in zip(bounds, bounds[1:]))
    value = ex.history[-1]["value"]
    assert bounds[-1][1] <= value * (1 + 1e-6) and min(best) >= value * (1 - 1e-5) - 1e-9
    assert ex.solver.curve_widget.layout.display != "none"
