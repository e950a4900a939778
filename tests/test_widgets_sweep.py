"""The explorer's Design sweep tab and the Dask engine behind both sweeps (plain pytest,
no browser): values from the evaluator, one line per solver and mix, Cancel, the dashboard."""
from __future__ import annotations

import json
import math
import time
import urllib.request

import pytest

from viz_place.cost import evaluate
from viz_place.solvers import run_solver
from viz_place.widgets import PlacementExplorer
from viz_place.widgets.sweep_panel import EngineHandle, SweepPanel, parse_counts
from viz_place.widgets.state import ExplorerState
from viz_place.samples import load_sample


@pytest.fixture(scope="module")
def engine():
    h = EngineHandle(workers=2, processes=False)
    yield h
    h.close()


def test_design_sweep_plots_value_vs_accelerators_per_solver_and_mix(engine):
    state = ExplorerState(load_sample("residual"))
    panel = SweepPanel(state, engine)
    panel.solvers.value = ("dp", "topo-fill")
    panel.counts.value = "1-3"
    mix2 = json.loads(json.dumps(state.cluster.to_dict()))
    mix2["classes"][0]["speed"] = 2.0          # the same accelerators, twice as fast
    panel.mixes.value = json.dumps([mix2])
    panel.workers.value = 2
    assert panel.run()
    assert panel.wait(120)
    t = panel.table
    assert len(t) == 2 * 3 * 2 and not t.cancelled
    assert {r["worker"] for r in t} <= {"0", "1"}      # the engine's two worker threads
    assert set(panel.view.lines.data["label"]) == {"dp / mix 1", "dp / mix 2", "topo-fill / mix 1", "topo-fill / mix 2"}
    for r in t:                                   # every value is the evaluator's
        c = state.cluster.__class__.from_dict(r["devices_json"])
        p = run_solver(r["solver"], state.graph, c)
        assert math.isclose(r["value"], evaluate(state.graph, c, p).max_load, rel_tol=1e-9)
    i = panel.view.lines.data["label"].index("dp / mix 1")
    assert panel.view.lines.data["xs"][i] == [1, 2, 3]
    assert "design sweep done" in panel.status.value and panel.bar.value == 1.0
    link = engine.dashboard_link
    assert link and link in panel.dashboard.value
    with urllib.request.urlopen(link, timeout=20) as resp:   # the real Dask dashboard answers
        assert resp.status == 200


def test_cancel_stops_running_solvers_and_keeps_finished_rows(engine):
    state = ExplorerState(load_sample("transformer_large"))
    panel = SweepPanel(state, engine)
    panel.solvers.value = ("local-search",)
    panel.counts.value = "2-7"
    panel.seeds.value = "0,1"
    panel.time_limit.value = 30.0                   # 12 cells of up to 30 s each, two at a time
    panel.workers.value = 2
    t0 = time.monotonic()
    assert panel.run()
    time.sleep(1.0)
    panel.cancel_button.click()
    assert panel.wait(60)
    assert time.monotonic() - t0 < 30, "cancel did not stop the running solvers"
    t = panel.table
    assert t.cancelled and len(t) < 12
    assert "cancelled" in panel.status.value
    assert not panel.run_button.disabled and panel.cancel_button.disabled


def test_bad_counts_are_refused_next_to_the_control(engine):
    panel = SweepPanel(ExplorerState(load_sample("chain")), engine)
    panel.counts.value = "1,x"
    assert panel.run() is False
    assert "accelerators &#x27;1,x&#x27;: expected counts" in panel.status.value and panel.task is None
    assert parse_counts("3,1-2") == [1, 2, 3]


def test_explorer_has_the_tab_and_shares_one_engine(tmp_path):
    handle = EngineHandle(workers=0)
    ex = PlacementExplorer("chain", load_bokehjs=False, workdir=tmp_path, engine=handle)
    assert ex.tabs.titles[-1] == "Design sweep"
    assert ex.sweeps.engine is handle and ex.tradeoffs.engine is handle
    ex.sweeps.solvers.value = ("pipedream",)
    ex.sweeps.counts.value = "1,2"
    ex.sweeps.workers.value = 0                  # in the kernel, without Dask
    assert ex.sweeps.run() and ex.sweeps.wait(60)
    assert [r["worker"] for r in ex.sweeps.table] == ["local", "local"]
    assert ex.sweeps.plot in ex.bokeh_widgets()
    t = ex.tradeoffs                             # the accelerator sweep: the same engine, with its own bar
    t.sweep_solver.value, t.sweep_k.value = "dp", 3
    assert t.sweep() and t.wait(60)
    assert [r["count"] for r in t.sweep_rows] == [1, 2, 3] and t.sweep_bar.value == 1.0
