"""More explorer state: every registered solver gets a form, training graphs, violations, ONNX upload."""
from __future__ import annotations

import math

import dataclasses
from pathlib import Path

import pytest

from viz_place.cost import evaluate
from viz_place.samples import load_sample
from viz_place.solvers import list_solvers
from viz_place.widgets import ExplorerState, PlacementExplorer
from viz_place.widgets.options_form import OptionsForm
from viz_place.widgets.solver_panel import curve_point


@pytest.fixture(scope="module")
def ex():
    return PlacementExplorer("residual_training", load_bokehjs=False)


def test_every_registered_solver_is_offered_with_a_working_form(ex):
    infos = list_solvers()
    offered = [v for _, v in ex.solver.solver.options]
    assert offered == [i.name for i in infos]
    for info in infos:
        form = OptionsForm(info.options_cls)
        assert set(form.fields) == {f.name for f in dataclasses.fields(info.options_cls)
                                    if not f.metadata.get("internal")}   # e.g. rl's loaded weights
        # the untouched form reproduces the defaults exactly
        assert form.options() == info.options_cls(), info.name


def test_refresh_picks_up_a_newly_registered_solver(monkeypatch, ex):
    from viz_place.solvers import SolverInfo, SolverOptions, registry

    @dataclasses.dataclass(frozen=True)
    class NoOptions(SolverOptions):
        pass

    info = SolverInfo("late-arrival", lambda *a, **k: None, NoOptions, "throughput", "registered after start")
    monkeypatch.setitem(registry._REGISTRY, info.name, info)
    assert "late-arrival" not in [v for _, v in ex.solver.solver.options]
    ex.solver.refresh_button.click()
    assert "late-arrival" in [v for _, v in ex.solver.solver.options]
    monkeypatch.undo()
    ex.solver.refresh()
    assert "late-arrival" not in [v for _, v in ex.solver.solver.options]


def test_curve_points_from_progress_data():
    assert curve_point({"episode": 2, "objective": 3.0, "best": 1.5}) == {"episode": 2, "objective": 3.0, "best": 1.5}
    only_best = curve_point({"sweep": 1, "best": 4.0})   # no objective: no point on the episode line
    assert only_best["best"] == 4.0 and math.isnan(only_best["objective"])
    assert curve_point({"episode": 1}) is None
    assert curve_point({"episode": 1, "objective": float("inf")}) is None


def test_training_graph_moves_colour_class_together():
    g = load_sample("residual_training")
    s = ExplorerState(g)
    fwd = next(n for n in g.node_ids if not g.node(n).backward and g.node(n).color_class is not None)
    group = s.group_of(fwd)
    assert len(group) >= 2 and any(g.node(n).backward for n in group)
    s.move(fwd, "fpga:2")
    assert {s.placement[n] for n in group} == {"fpga:2"}
    assert not any("colour class" in v for v in s.evaluation.violations)
    ev = evaluate(g, s.cluster, s.placement, pins=s.pins)
    assert s.evaluation.max_load == pytest.approx(ev.max_load, rel=1e-9)


def test_violations_are_listed_in_the_summary():
    ex = PlacementExplorer("chain", load_bokehjs=False)
    s = ex.state
    for n in s.graph.node_ids:   # everything on one memory-limited accelerator
        s.move(n, "fpga:0")
    assert not s.evaluation.feasible
    assert "violation" in ex.metrics.summary.value and "memory" in ex.metrics.summary.value
    assert any(ex.metrics.view.bars.data["over"])


def test_removing_a_class_with_pins_is_refused():
    ex = PlacementExplorer("chain", load_bokehjs=False)
    s = ex.state
    s.pin(s.graph.node_ids[0], "cpu:0")
    cluster = s.cluster
    ex.devices._remove(ex.devices.rows[1])   # the cpu class
    assert s.cluster is cluster and len(ex.devices.rows) == 2
    assert "cpu:0" in ex.devices.message.value


def test_onnx_upload_when_available():
    onnx = pytest.importorskip("onnx")
    model = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    if not model.exists():
        pytest.skip(f"{model} is not shipped with this onnx wheel")
    ex = PlacementExplorer("chain", load_bokehjs=False)
    ok = ex.files.load_bytes("squeezenet.onnx", model.read_bytes())
    assert ok, ex.files.load_message.value
    assert ex.state.graph.num_nodes > 20
    assert len(ex.graph_panel.view.nodes.data["device"]) == ex.state.graph.num_nodes


def test_graph_without_devices_gets_one_class_per_kind():
    from viz_place.model import OpGraph
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 2.0, "gpu": 0.5}, "transfer_cost": 0.1},
                              {"id": "b", "latency": {"cpu": 3.0}}], [("a", "b")])
    ex = PlacementExplorer(g, load_bokehjs=False)
    s = ex.state
    assert [c.name for c in s.cluster.classes] == ["gpu", "cpu"]
    assert s.evaluation.feasible and s.placement["b"] == "cpu:0"
    s.move("a", "gpu:0")
    assert s.evaluation.max_load == pytest.approx(evaluate(g, s.cluster, s.placement).max_load)


def test_autosave_writes_the_session_after_each_change(tmp_path):
    ex = PlacementExplorer("chain", load_bokehjs=False, workdir=tmp_path)
    path = tmp_path / "sessions" / "explorer.session.json"
    ex.files.autosave.value = True
    s = ex.state
    node = s.graph.node_ids[1]
    before = s.placement[node]
    target = "fpga:2" if before != "fpga:2" else "fpga:3"
    s.move(node, target)
    import json
    data = json.loads(path.read_text())
    assert data["placement"]["assignment"][node] == target
    s.undo()
    data = json.loads(path.read_text())
    assert data["placement"]["assignment"][node] == before


def test_open_from_a_path_and_a_clear_error_for_an_unknown_name(tmp_path):
    from viz_place.errors import InputFormatError
    from viz_place.samples import sample_dir
    ex = PlacementExplorer(sample_dir() / "fork_join.json", load_bokehjs=False)
    assert ex.state.graph.name == "fork_join"
    with pytest.raises(InputFormatError, match="unknown sample graph 'no-such-graph'"):
        PlacementExplorer("no-such-graph", load_bokehjs=False)
    with pytest.raises(InputFormatError, match="not found"):
        PlacementExplorer(tmp_path / "missing.json", load_bokehjs=False)
