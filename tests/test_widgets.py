"""The explorer's widget state, driven the way a user would (button handlers, field edits).

Test-only solvers are registered for the duration of each test (monkeypatched
into the registry) so these tests do not depend on which real solvers exist.
"""
from __future__ import annotations

import datetime
import json
import math
import time
from dataclasses import dataclass, field

import pytest

from viz_place.cost import evaluate
from viz_place.errors import SolverError
from viz_place.io import graph_to_paper_dict, load_placement
from viz_place.solvers import SolverInfo, SolverOptions, SolverResult, registry
from viz_place.widgets import PlacementExplorer
from viz_place.widgets.session import FORMAT as SESSION_FORMAT


@dataclass(frozen=True)
class BlockOptions(SolverOptions):
    blocks: int = field(default=0, metadata={"help": "accelerators to use (0 = all)", "min": 0, "max": 64})
    scale: float = field(default=1.0, metadata={"help": "unused number", "min": 0.0})
    mode: str = field(default="even", metadata={"help": "unused choice", "choices": ("even", "odd")})
    verbose: bool = field(default=False, metadata={"help": "unused flag"})
    limit: float | None = field(default=None, metadata={"help": "optional number"})


def _block_solve(problem, options, hooks):
    """Cut the topological order into equal blocks over the accelerators; honour pins."""
    graph, cluster, pins = problem.graph, problem.cluster, problem.pins
    accel = [d.name for d in cluster.devices if d.cls.pays_communication]
    if options.blocks:
        accel = accel[:options.blocks]
    groups = graph.colocation_groups
    assignment = {}
    for gi, group in enumerate(groups):
        pinned = next((pins[n] for n in group if n in pins), None)
        dev = pinned or accel[gi * len(accel) // len(groups)]
        for n in group:
            assignment[n] = dev
        if gi % 10 == 0:
            hooks.report(gi / len(groups), "placing", force=True,
                         data={"episode": gi, "objective": float(gi), "best": 0.0})
    # a naive split may overflow memory: it is then labelled a manual split (run_solver refuses a
    # "heuristic" result with violations as a solver bug)
    overflows = bool(evaluate(graph, cluster, assignment, pins=pins).violations)
    return SolverResult(assignment, status="manual" if overflows else "heuristic",
                        message="blocks overflow memory" if overflows else "")


def _failing_solve(problem, options, hooks):
    raise SolverError("test-fail: no placement fits on purpose")


def _slow_solve(problem, options, hooks):
    for _ in range(500):
        if hooks.cancelled:
            from viz_place.start import fallback_placement   # every group on a host: valid
            return SolverResult(dict(fallback_placement(problem.graph, problem.cluster, problem.pins).assignment),
                                status="cancelled")
        time.sleep(0.01)
    raise SolverError("test-slow was not cancelled")


@pytest.fixture
def solvers(monkeypatch):
    for info in (SolverInfo("test-blocks", _block_solve, BlockOptions, "throughput", "test: blocks", exact=True),
                 SolverInfo("test-fail", _failing_solve, BlockOptions, "throughput", "test: always fails"),
                 SolverInfo("test-slow", _slow_solve, BlockOptions, "throughput", "test: waits for cancel")):
        monkeypatch.setitem(registry._REGISTRY, info.name, info)


@pytest.fixture
def ex(solvers, tmp_path):
    return PlacementExplorer("residual", load_bokehjs=False, workdir=tmp_path)


def _device_col(ex):
    return list(ex.graph_panel.view.nodes.data["device"])


def _assert_consistent(ex):
    s = ex.state
    ev = evaluate(s.graph, s.cluster, s.placement, pins=s.pins)
    assert math.isclose(s.evaluation.max_load, ev.max_load, rel_tol=1e-9)
    assert [d.load for d in s.evaluation.devices] == pytest.approx([d.load for d in ev.devices], rel=1e-9)
    assert _device_col(ex) == [s.placement[n] for n in s.graph.node_ids]
    assert ex.metrics.view.bars.data["load"] == pytest.approx([d.load for d in ev.devices], rel=1e-9)


def _select(ex, i):
    """What a tap in the browser does: the node source's selection changes."""
    ex.graph_panel.view.nodes.selected.indices = [i]


def test_opens_with_figure_and_every_registered_solver(ex):
    from jupyter_bokeh import BokehModel
    assert isinstance(ex.graph_panel.widget, BokehModel)
    assert {"test-blocks", "test-fail", "test-slow"} <= set(ex.solver.names())
    assert {n for _, n in ex.solver.solver.options} == set(ex.solver.names())
    assert "max-load" in ex.metrics.summary.value
    _assert_consistent(ex)


def test_click_run_changes_placement_evaluation_sources_and_history(ex):
    before_summary = ex.metrics.summary.value
    before_cols = _device_col(ex)
    ex.solver.solver.value = "test-blocks"
    assert set(ex.solver.form.fields) == {"blocks", "scale", "mode", "verbose", "limit"}
    ex.solver.run_button.click()
    assert ex.solver.wait(10)
    assert ex.state.placement.solver == "test-blocks"
    assert _device_col(ex) != before_cols
    assert ex.metrics.summary.value != before_summary
    assert [r["solver"] for r in ex.state.history] == ["start", "test-blocks"]
    assert len(ex.graph_panel.view.cross_edges.data["x"]) > 0
    assert "heuristic" in ex.solver.status.value
    # the training curve was fed by the progress data
    assert len(ex.solver.curve.curve.data["episode"]) >= 1
    assert ex.tradeoffs.view.points.data["throughput"] == [r["throughput"] for r in ex.state.history]
    _assert_consistent(ex)


def test_run_is_accepted_the_moment_the_button_comes_back(ex):
    """The defect a browser test hit on a slow machine: Run re-enabled while the finished
    solve's thread was still writing its status, so a quick click was refused as "already running"."""
    seen = []

    def on_button(change):
        if change["new"] is False and not seen:       # fires on the worker thread, as the browser sees it
            seen.append((ex.solver.status.value, ex.solver.running, ex.solver.run()))

    ex.solver.solver.value = "test-blocks"
    ex.solver.run_button.observe(on_button, "disabled")
    ex.solver.run_button.click()
    deadline = time.monotonic() + 20
    while len(ex.state.history) < 3 and time.monotonic() < deadline:
        assert ex.solver.wait(10)
    status, running, accepted = seen[0]
    assert "heuristic" in status and running is False and accepted is True, seen
    assert [r["solver"] for r in ex.state.history] == ["start", "test-blocks", "test-blocks"]


def test_task_counts_as_running_until_its_callbacks_return():
    from viz_place.widgets.tasks import BackgroundTask
    log = []
    task = BackgroundTask(lambda cancel: 1, on_done=lambda r: log.append(("done", task.running)),
                          on_finish=lambda: log.append(("finish", task.running)))
    task.start()
    assert task.wait(5)
    assert log == [("done", True), ("finish", False)]
    failing = BackgroundTask(lambda cancel: 1 / 0, on_error=lambda e: log.append(("error", failing.running)),
                             on_finish=lambda: log.append(("finish", failing.running)))
    failing.start()
    assert failing.wait(5) and log[2:] == [("error", True), ("finish", False)]


def test_options_form_refuses_bad_values_with_a_message(ex):
    ex.solver.solver.value = "test-blocks"
    f = ex.solver.form.fields
    f["blocks"].value = "two"
    assert ex.solver.run() is False
    assert "blocks" in ex.solver.form.error.value
    f["blocks"].value = "99"
    assert ex.solver.run() is False and "maximum" in ex.solver.form.error.value
    f["blocks"].value = "2"
    f["limit"].value = ""
    f["mode"].value = "odd"
    opts = ex.solver.form.options()
    assert (opts.blocks, opts.limit, opts.mode) == (2, None, "odd")
    assert ex.run("test-blocks", {"blocks": 2})
    assert set(ex.state.placement.assignment.values()) <= {"fpga:0", "fpga:1", "cpu:0"}


def test_failing_solver_shows_why_and_keeps_placement(ex):
    before = ex.state.placement
    ex.run("test-fail")
    assert ex.state.placement is before
    assert "no placement fits on purpose" in ex.solver.status.value
    assert "kept" in ex.solver.status.value
    assert ex.solver.run_button.disabled is False and [r["solver"] for r in ex.state.history] == ["start"]


def test_cancel_stops_a_running_solve(ex):
    ex.run("test-slow", wait=False)
    assert ex.solver.running and ex.solver.run_button.disabled
    assert ex.solver.run() is False   # busy
    ex.solver.cancel_button.click()
    assert ex.solver.wait(10)
    # the cancelled run (everything on one device) is worse than the start: recorded, not installed
    assert ex.state.history[-1]["status"] == "cancelled" and ex.state.history[-1]["applied"] is False
    assert ex.state.placement.solver == "start" and "kept the current placement" in ex.solver.status.value
    assert ex.solver.cancel_button.disabled


def test_edit_device_count_applies_and_bad_value_is_refused(ex):
    s = ex.state
    row = ex.devices.rows[0]
    assert row.fields["name"].value == "fpga"
    row.fields["count"].value = "2"
    assert s.cluster.class_named("fpga").count == 2
    assert list(ex.graph_panel.view.mapper.factors) == list(s.cluster.device_names)
    assert list(ex.graph_panel.device.options) == list(s.cluster.device_names)
    names = list(s.cluster.device_names)
    beyond = sorted({d for d in s.placement.assignment.values() if d not in names})
    assert sorted(ex.metrics.view.bars.data["device"]) == sorted(names + beyond)
    if beyond:   # the placement is kept (never lose work); the evaluation names the excess devices
        assert any("more devices used than exist" in v for v in s.evaluation.violations)
    good = s.cluster
    row.fields["count"].value = "-1"
    assert s.cluster is good
    assert "count" in row.error.value and row.fields["count"].layout.border
    row.fields["count"].value = "3"
    assert s.cluster.class_named("fpga").count == 3 and row.error.value == ""
    ex.devices.rows[1].fields["memory"].value = "lots"
    assert "memory" in ex.devices.rows[1].error.value and s.cluster.class_named("cpu").memory is None
    ex.devices.rows[1].fields["memory"].value = ""
    ex.devices.add_class()
    assert len(s.cluster.classes) == 3
    ex.devices.rows[2].fields["name"].value = "fpga"   # duplicate name
    assert "duplicate" in ex.devices.message.value and len({c.name for c in s.cluster.classes}) == 3
    ex.devices._remove(ex.devices.rows[2])
    assert len(s.cluster.classes) == 2
    # solver runs on the edited devices
    ex.run("test-blocks")
    assert set(s.placement.assignment.values()) <= set(s.cluster.device_names)
    _assert_consistent(ex)


def test_tap_pin_and_solvers_keep_the_pin(ex):
    s = ex.state
    _select(ex, 5)
    node = s.graph.node_ids[5]
    assert s.selected == node and node in ex.graph_panel.info.value
    ex.graph_panel.device.value = "fpga:3"
    ex.graph_panel.pin_button.click()
    assert s.pins == {node: "fpga:3"} and s.placement[node] == "fpga:3"
    assert ex.graph_panel.view.pins.data["device"] == ["fpga:3"]
    assert ex.graph_panel.pins_list.options[0][1] == node
    ex.run("test-blocks")
    assert s.placement[node] == "fpga:3"
    assert s.selected is None   # a solver result clears the selection
    # moving a pinned node elsewhere is refused with a message
    _select(ex, 5)
    ex.graph_panel.device.value = "fpga:0"
    ex.graph_panel.move_button.click()
    assert "pinned" in ex.graph_panel.message.value and s.placement[node] == "fpga:3"
    ex.graph_panel.pins_list.value = node
    ex.graph_panel.unpin_selected.click()
    assert s.pins == {} and ex.graph_panel.view.pins.data["device"] == []
    _assert_consistent(ex)


def test_move_reevaluates_at_once_and_undo_redo(ex):
    s = ex.state
    start = s.placement
    _select(ex, 3)
    node = s.graph.node_ids[3]
    ex.graph_panel.device.value = "fpga:1"
    ex.graph_panel.move_button.click()
    assert s.placement[node] == "fpga:1"
    assert _device_col(ex)[3] == "fpga:1"
    assert len(ex.graph_panel.view.cross_edges.data["x"]) > 0
    _assert_consistent(ex)
    moved = s.placement
    ex.graph_panel.undo_button.click()
    assert s.placement is start and _device_col(ex)[3] == start[node]
    _assert_consistent(ex)
    ex.graph_panel.redo_button.click()
    assert s.placement is moved
    _assert_consistent(ex)
    # several incremental moves in a row stay equal to a full evaluation
    for i, dev in ((0, "fpga:2"), (7, "fpga:2"), (3, "cpu:0"), (10, "fpga:0")):
        s.move(s.graph.node_ids[i], dev)
        _assert_consistent(ex)
    # undo also restores a device edit
    ex.devices.rows[0].fields["count"].value = "2"
    assert s.cluster.class_named("fpga").count == 2
    s.undo()
    assert s.cluster.class_named("fpga").count == 4
    assert ex.devices.rows[0].fields["count"].value == "4"


def test_search_selects_by_name(ex):
    name = ex.state.graph.node(ex.state.graph.node_ids[4]).name
    ex.graph_panel.search.value = name
    assert ex.state.selected == ex.state.graph.node_ids[4]
    assert list(ex.graph_panel.view.nodes.selected.indices) == [4]
    ex.graph_panel.search.value = "no-such-node-anywhere"
    assert "no node matches" in ex.graph_panel.message.value
    # a tap on empty canvas clears the selection; handlers are idempotent (jupyter_bokeh fires them twice)
    ex.graph_panel.view.nodes.selected.indices = []
    ex.graph_panel._on_tap("indices", [4], [])
    assert ex.state.selected is None and ex.graph_panel.pin_button.disabled
    for _ in range(2):
        ex.graph_panel._on_tap("indices", [], [7])
    assert ex.state.selected == ex.state.graph.node_ids[7]


def test_export_all_formats_to_disk_and_download(ex, tmp_path):
    ex.run("test-blocks")
    s = ex.state
    p = ex.files.export("ours", str(tmp_path / "p.json"))
    placement, pins = load_placement(p, s.graph, s.cluster)
    assert dict(placement.assignment) == dict(s.placement.assignment)
    assert "download" in ex.files.export_message.value and "base64" in ex.files.export_message.value
    split = json.loads(ex.files.export("paper", str(tmp_path / "p.split.json")).read_text())
    assert len(split["fpgas"]) == 4 and len(split["cpus"]) == 1
    again = load_placement(tmp_path / "p.split.json", s.graph, s.cluster)[0]
    assert dict(again.assignment) == dict(s.placement.assignment)
    csv_text = ex.files.export("csv", str(tmp_path / "p.csv")).read_text()
    assert csv_text.splitlines()[0] == "node,name,op_type,device,pinned"
    assert len(csv_text.splitlines()) == s.graph.num_nodes + 1
    # default path goes under the work folder, via the button
    ex.files.export_format.value = "csv"
    ex.files.export_button.click()
    assert (tmp_path / "exports" / f"{s.graph.name}_placement.csv").exists()


def test_session_round_trip(ex, tmp_path, solvers):
    s = ex.state
    s.pin(s.graph.node_ids[2], "fpga:1")
    ex.devices.rows[0].fields["count"].value = "3"
    ex.run("test-blocks")
    ex.files.save_button.click()
    path = tmp_path / "sessions" / "explorer.session.json"
    data = json.loads(path.read_text())
    assert data["format"] == SESSION_FORMAT
    other = PlacementExplorer("chain", load_bokehjs=False, workdir=tmp_path)
    other.files.restore_button.click()
    t = other.state
    assert "restored" in other.files.session_message.value
    assert t.graph.num_nodes == s.graph.num_nodes and t.graph.name == s.graph.name
    assert t.cluster == s.cluster and t.pins == s.pins
    assert dict(t.placement.assignment) == dict(s.placement.assignment)
    assert [r["max_load"] for r in t.history] == [r["max_load"] for r in s.history]
    assert math.isclose(t.evaluation.max_load, s.evaluation.max_load, rel_tol=1e-12)
    assert _device_col(other) == _device_col(ex)
    assert [r.fields["count"].value for r in other.devices.rows] == ["3", "1"]
    # a broken file is refused with a message and changes nothing
    (tmp_path / "bad.json").write_text("{\"format\": \"nope\"}")
    assert other.files.restore(str(tmp_path / "bad.json")) is False
    assert "not a viz_place session" in other.files.session_message.value


def test_load_sample_upload_and_bad_upload(ex):
    ex.files.sample.value = "chain"
    ex.files.load_sample_button.click()
    assert ex.state.graph.name == "chain" and "loaded" in ex.files.load_message.value
    assert len(_device_col(ex)) == ex.state.graph.num_nodes
    assert [r["solver"] for r in ex.state.history] == ["start"] and not ex.state.can_undo
    from viz_place.samples import make_graph
    g = make_graph("fork_join", 30)
    payload = json.dumps(graph_to_paper_dict(g, g.default_cluster)).encode()
    ex.files.upload.value = ({"name": "fj.json", "type": "application/json", "size": len(payload),
                              "content": memoryview(payload),
                              "last_modified": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)},)
    assert ex.state.graph.num_nodes == g.num_nodes and ex.state.graph.name == "fj"
    assert "ONNX" not in ex.files.load_message.value
    before = ex.state.graph
    assert ex.files.load_bytes("broken.json", b"{\"nodes\": 3}") is False
    assert ex.state.graph is before and "broken.json" in ex.files.load_message.value
    _assert_consistent(ex)


def test_history_restore_and_pareto(ex):
    ex.run("test-blocks", {"blocks": 1})
    ex.run("test-blocks", {"blocks": 4})
    h = ex.state.history
    assert [r["run"] for r in h] == [1, 2, 3]
    ex.tradeoffs.restore.value = 2
    ex.tradeoffs.restore_button.click()
    assert dict(ex.state.placement.assignment) == h[1]["assignment"]
    assert len(ex.tradeoffs.view.front.data["throughput"]) >= 1
    assert "<table" in ex.tradeoffs.table.value


def test_sweep_uses_an_exact_solver_and_the_evaluator(ex):
    t = ex.tradeoffs
    t.sweep_solver.value = "test-blocks"
    t.sweep_k.value = 3
    t.sweep_button.click()
    assert t.wait(20)
    rows = t.sweep_rows
    assert [r["count"] for r in rows] == [1, 2, 3]
    s = ex.state
    for r in rows:
        c = s.cluster.with_class_count("fpga", r["count"])
        p = registry.run_solver("test-blocks", s.graph, c, options=BlockOptions())
        assert math.isclose(r["max_load"], evaluate(s.graph, c, p).max_load, rel_tol=1e-9)
    assert t.view.sweep.data["count"] == [1, 2, 3]
    assert "sweep done" in t.sweep_status.value
    # with a pin on fpga:1 the sweep starts at 2 accelerators and says why
    s.pin(s.graph.node_ids[0], "fpga:1")
    t.sweep_button.click()
    assert t.wait(20)
    assert [r["count"] for r in t.sweep_rows] == [2, 3]
    assert "skipped" in t.sweep_status.value and "error" not in t.sweep_status.value


def test_state_is_safe_against_concurrent_reads(ex):
    """A solve finishing while the user moves nodes leaves a consistent state."""
    s = ex.state
    ex.run("test-blocks", wait=False)
    for i in range(5):
        try:
            s.move(s.graph.node_ids[i], "fpga:0")
        except Exception as err:  # pragma: no cover - should not happen
            pytest.fail(str(err))
    ex.solver.wait(10)
    _assert_consistent(ex)


def test_a_session_with_infinite_figures_saves_and_restores_them(tmp_path):
    """A DP solve on a small graph leaves stats.upper_bound = inf; saving used to fail on it."""
    ex = PlacementExplorer("residual", load_bokehjs=False, workdir=tmp_path)
    ex.run("dp")
    assert math.isinf(ex.state.placement.options["stats"]["upper_bound"])
    assert ex.files.save(str(tmp_path / "s.json")) is not None, ex.files.session_message.value
    json.loads((tmp_path / "s.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the file"))
    other = PlacementExplorer("chain", load_bokehjs=False, workdir=tmp_path)
    assert other.files.restore(str(tmp_path / "s.json")) is not False
    assert math.isinf(other.state.placement.options["stats"]["upper_bound"])
    assert dict(other.state.placement.assignment) == dict(ex.state.placement.assignment)
