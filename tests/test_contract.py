"""The solver contract: one prepare step, one Placement built by run_solver, proven bounds with their set,
one objective vocabulary, internal errors apart from bad input, structured error attributes."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from _ilp_brute import MAX_COMBOS, brute_force, brute_force_many, combos
from viz_place.cli.main import main
from viz_place.cost import evaluate, simple_lower_bound
from viz_place.errors import (DeviceError, GraphValidationError, InfeasibleError, InternalError, PlacementError,
                              SolverError, VizPlaceError)
from viz_place.io import load_placement, write_placement
from viz_place.io.placement_json import placement_from_dict
from viz_place.model import Cluster, DeviceClass, OpGraph, Placement, validate_pins
from viz_place.samples import load_sample, make_graph
from viz_place.solvers import SolverInfo, SolverOptions, SolverResult, list_solvers, registry, run_solver
from viz_place.solvers.milp import available_backends
from viz_place.testing import assert_valid, random_instance

BACKEND = "highs" if "highs" in available_backends() else "cbc"


# --- the objective vocabulary -------------------------------------------------------------------------------

def test_one_objective_vocabulary_on_registrations_and_placements():
    for info in list_solvers():
        assert info.objective in ("max_load", "latency", "max_forward_plus_max_backward", "any"), info.name
    g = load_sample("residual")
    for name in ("dp", "topo-fill", "pipedream", "local-search"):
        assert run_solver(name, g, g.default_cluster, options={"time_limit": 5} if name == "local-search" else None
                          ).objective == "max_load"


@pytest.mark.parametrize("name", ["ilp", "single-device", "rl"])
def test_objective_throughput_is_an_alias_of_max_load(name):
    g = make_graph("chain", 8, seed=1)
    opts = {"objective": "throughput"}
    if name == "ilp":
        opts.update(backend=BACKEND, time_limit=10)
    if name == "rl":
        opts.update(mode="greedy")
    p = run_solver(name, g, g.default_cluster, options=opts)
    assert p.objective == "max_load" and p.options["objective"] == "max_load"
    assert p.claimed_value == pytest.approx(evaluate(g, g.default_cluster, p).max_load)


def test_placement_files_saying_throughput_and_without_bounds_still_read(tmp_path):
    g = make_graph("chain", 4)
    c = g.default_cluster
    old = {"assignment": {n: "cpu:0" for n in g.node_ids}, "solver": "dp", "status": "optimal",
           "objective": "throughput", "value": 1.0}
    p, _, _ = placement_from_dict(old)
    assert p.objective == "max_load" and p.lower_bound is None and p.bound_set is None
    # a new file carries the bound and reads it back
    q = run_solver("dp", g, c)
    path = tmp_path / "p.json"
    write_placement(path, g, c, q)
    data = json.loads(path.read_text())
    assert data["objective"] == "max_load" and data["bound_set"] == "pipeline"
    assert data["lower_bound"] == pytest.approx(q.claimed_value)
    back, _ = load_placement(path, g, c)
    assert (back.lower_bound, back.bound_set) == (q.lower_bound, q.bound_set)


def test_placement_rejects_a_bound_without_its_set():
    with pytest.raises(PlacementError, match="go together") as err:
        Placement({"a": "cpu:0"}, lower_bound=1.0)
    assert err.value.field == "bound_set"
    with pytest.raises(PlacementError, match="unknown bound_set"):
        Placement({"a": "cpu:0"}, lower_bound=1.0, bound_set="contiguous")


# --- which bound each solver reports ------------------------------------------------------------------------

def test_dp_bound_is_its_optimum_over_pipeline_splits_only_when_optimal():
    g = load_sample("residual")
    c = g.default_cluster
    p = run_solver("dp", g, c)
    assert p.status == "optimal" and p.lower_bound == pytest.approx(p.claimed_value) and p.bound_set == "pipeline"
    coarse = run_solver("dp", g, c, options={"linearize": True})
    assert coarse.status == "feasible" and coarse.lower_bound is None and coarse.bound_set is None


def test_heuristics_report_no_bound():
    g = load_sample("residual")
    for name in ("topo-fill", "greedy-latency", "pipedream", "single-device"):
        p = run_solver(name, g, g.default_cluster)
        assert p.lower_bound is None and p.bound_set is None, name


@pytest.mark.parametrize("seed", range(25))
def test_milp_bounds_never_exceed_the_optimum_of_their_set(seed):
    inst = random_instance(4000 + seed, n_max=6)
    if combos(inst) > MAX_COMBOS:
        pytest.skip("too many combinations to brute-force")
    opts = {"backend": BACKEND, "time_limit": 20}
    for name, extra, set_name, brute in (("ilp", {}, "pipeline", dict(contiguous="pipeline")),
                                         ("ilp", {"device_cycles": True}, "convex", dict(contiguous="forward")),
                                         ("ilp-noncontig", {}, "any", {})):
        best = brute_force(inst, "max_load", **brute)
        try:
            p = run_solver(name, inst.graph, inst.cluster, pins=inst.pins, options={**opts, **extra})
        except InfeasibleError:
            assert math.isinf(best)
            continue
        assert p.bound_set == set_name and p.lower_bound is not None
        assert p.lower_bound <= best * (1 + 1e-6) + 1e-9 <= p.claimed_value * (1 + 1e-6) + 2e-9, (name, seed)
    try:
        lat = run_solver("latency-ilp", inst.graph, inst.cluster, pins=inst.pins, options=opts)
    except InfeasibleError:
        return
    assert lat.bound_set == "convex"
    assert lat.lower_bound <= brute_force(inst, "latency", contiguous="accelerators") * (1 + 1e-6) + 1e-9
    two = run_solver("latency-ilp", inst.graph, inst.cluster, pins=inst.pins,
                     options={**opts, "max_pieces_per_accelerator": 2})
    assert two.lower_bound is None and two.bound_set is None   # model value is not the evaluator's: no bound


# --- simple_lower_bound -------------------------------------------------------------------------------------

def test_simple_lower_bound_never_exceeds_the_brute_force_optimum():
    """Each objective's bound against the brute-force optimum (one pass over the placements for all three)."""
    objectives = ("max_load", "latency", "max_forward_plus_max_backward")
    checked = dict.fromkeys(objectives, 0)
    for seed in range(120):
        inst = random_instance(7000 + seed, n_max=6, pins=False)
        if combos(inst) > MAX_COMBOS:
            continue
        optimum = brute_force_many(inst, objectives)
        for objective in objectives:
            value, why = simple_lower_bound(inst.graph, inst.cluster, objective)
            best = optimum[objective]
            assert isinstance(why, str) and why
            if math.isinf(best):
                continue
            assert value <= best * (1 + 1e-9) + 1e-12, (seed, objective, value, best, why)
            assert value > 0 or best == 0
            checked[objective] += 1
    assert min(checked.values()) >= 40, checked


def test_simple_lower_bound_is_tight_when_one_op_dominates():
    g = OpGraph.from_records([{"id": "big", "latency": {"cpu": 50.0}},
                              {"id": "x", "latency": {"cpu": 1.0, "fpga": 1.0}}], [("big", "x")])
    c = Cluster.paper(3, 1, None)
    value, why = simple_lower_bound(g, c)
    assert value == 50.0 and "big" in why
    assert run_solver("dp", g, c).claimed_value == pytest.approx(50.0)
    assert simple_lower_bound(g, c, "throughput")[0] == 50.0   # the alias


def test_simple_lower_bound_says_when_nothing_fits():
    g = OpGraph.from_records([{"id": "a", "latency": {"fpga": 1.0}, "size": 9.0}], [])
    value, why = simple_lower_bound(g, Cluster((DeviceClass("fpga", "fpga", 1, memory=1.0),)))
    assert math.isinf(value) and "'a'" in why


# --- run_solver builds the one Placement; bugs are InternalError ---------------------------------------------

@dataclasses.dataclass(frozen=True)
class _NoOptions(SolverOptions):
    pass


def _register(monkeypatch, name, fn, objective="max_load"):
    monkeypatch.setitem(registry._REGISTRY, name, SolverInfo(name, fn, _NoOptions, objective, "test solver"))


def _all_on_host(problem):
    return [problem.cluster.device_index("cpu:0")] * problem.compiled.n


def test_run_solver_evaluates_and_builds_the_placement(monkeypatch):
    calls = []

    def solve(problem, options, hooks):
        calls.append((problem.objective.name, problem.pins, type(options).__name__))
        return SolverResult(_all_on_host(problem), status="heuristic", message="host", stats={"steps": 3})

    _register(monkeypatch, "t-host", solve)
    g = make_graph("chain", 5)
    c = g.default_cluster
    pins = {g.node_ids[0]: "cpu:0"}
    p = run_solver("t-host", g, c, pins=pins)
    assert calls == [("max_load", pins, "_NoOptions")]
    assert p.solver == "t-host" and p.status == "heuristic" and p.message == "host"
    assert p.claimed_value == evaluate(g, c, p).max_load and p.wall_time >= 0
    assert p.options == {"stats": {"steps": 3}}
    assert_valid(g, c, p, pins)


@pytest.mark.parametrize("bug", ["violation", "value", "bound", "shape"])
def test_solver_bugs_are_internal_errors_not_bad_input(monkeypatch, bug):
    def solve(problem, options, hooks):
        dev = _all_on_host(problem)
        if bug == "violation":   # moves a pinned node
            dev = [problem.cluster.device_index("fpga:0")] * problem.compiled.n
            return SolverResult(dev)
        if bug == "value":
            return SolverResult(dev, expected_value=problem.value(dev) + 1.0)
        if bug == "bound":
            return SolverResult(dev, lower_bound=problem.value(dev) * 2, bound_set="any")
        return SolverResult(dev[:-1])

    _register(monkeypatch, "t-bug", solve)
    g = make_graph("chain", 5)
    with pytest.raises(InternalError) as err:
        run_solver("t-bug", g, g.default_cluster, pins={g.node_ids[0]: "cpu:0"})
    assert not isinstance(err.value, VizPlaceError)


def test_dp_disagreeing_with_the_evaluator_is_an_internal_error(monkeypatch):
    import viz_place.solvers.dp.solver as dp_solver
    real = dp_solver.recursion.run

    def wrong(*a, **k):
        res = real(*a, **k)
        return dataclasses.replace(res, value=res.value * 1.5 + 1.0) if math.isfinite(res.value) else res

    monkeypatch.setattr(dp_solver.recursion, "run", wrong)
    g = make_graph("chain", 6)
    with pytest.raises(InternalError, match="dp: the solver's value"):
        run_solver("dp", g, g.default_cluster)


def test_cli_exits_1_on_an_internal_error_and_2_on_bad_input(monkeypatch, capsys):
    def solve(problem, options, hooks):
        dev = _all_on_host(problem)
        return SolverResult(dev, expected_value=problem.value(dev) + 1.0)

    _register(monkeypatch, "t-bug", solve)
    code = main(["solve", "chain", "--solver", "t-bug"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("viz-place: internal error (please report): t-bug:")
    assert len(err.strip().splitlines()) == 1
    code = main(["solve", "chain", "--solver", "dp", "-o", "max_ideals=0"])
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err and "max_ideals" in err


def test_a_failing_warm_start_is_reported_in_the_message(monkeypatch):
    def boom(problem, options, hooks):
        raise SolverError("pipedream: broken on purpose")

    info = registry._REGISTRY["pipedream"]
    monkeypatch.setitem(registry._REGISTRY, "pipedream", dataclasses.replace(info, solve=boom))
    inst = random_instance(3)
    p = run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins, options={"backend": BACKEND, "time_limit": 10})
    assert "warm starts that failed: pipedream: pipedream: broken on purpose" in p.message
    assert_valid(inst.graph, inst.cluster, p, inst.pins)


# --- structured errors --------------------------------------------------------------------------------------

def test_errors_name_the_field_node_device_or_edge():
    with pytest.raises(DeviceError) as err:
        DeviceClass("fpga", "fpga", count=-1)
    assert err.value.field == "count" and err.value.device == "fpga"
    with pytest.raises(DeviceError) as err:
        Cluster.from_dict({"classes": [{"name": "gpu", "kind": "gpu", "count": 1, "speed": 0}]})
    assert err.value.field == "speed"
    with pytest.raises(GraphValidationError) as err:
        OpGraph.from_records([{"id": "a"}], [("a", "zz")])
    assert err.value.edge == ("a", "zz") and err.value.node == "zz"
    with pytest.raises(GraphValidationError) as err:
        OpGraph.from_records([{"id": "a", "size": -1}], [])
    assert err.value.node == "a" and err.value.field == "size"
    with pytest.raises(GraphValidationError) as err:
        OpGraph.from_records([{"id": "a"}, {"id": "b"}], [("a", "b"), ("b", "a")])
    assert err.value.edge is not None
    g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}}], [])
    c = Cluster.paper(1, 1, None)
    with pytest.raises(PlacementError) as err:
        validate_pins(g, c, {"a": "fpga:0"})
    assert (err.value.node, err.value.device) == ("a", "fpga:0")
    with pytest.raises(PlacementError) as err:
        validate_pins(g, c, {"a": "tpu:3"})
    assert (err.value.node, err.value.device) == ("a", "tpu:3")
    with pytest.raises(SolverError) as err:
        run_solver("dp", g, c, options={"max_ideals": 0})
    assert err.value.field == "max_ideals"
    with pytest.raises(SolverError) as err:
        run_solver("dp", g, c, options={"speed": 1})
    assert err.value.field == "speed"


def test_error_attributes_survive_pickling():
    import pickle
    err = pickle.loads(pickle.dumps(PlacementError("pin: x", node="x", device="cpu:0")))
    assert isinstance(err, PlacementError) and (err.node, err.device, str(err)) == ("x", "cpu:0", "pin: x")


def test_devices_panel_outlines_the_field_the_error_names():
    from viz_place.widgets.devices_panel import DevicesEditor
    from viz_place.widgets.state import ExplorerState
    ed = DevicesEditor(ExplorerState(make_graph("chain", 5)))
    row = ed.rows[0]
    row.fields["speed"].value = "0"
    assert row.fields["speed"].layout.border and not row.fields["count"].layout.border
    row.fields["speed"].value = "1"
    assert not row.fields["speed"].layout.border and row.error.value == ""


def test_cli_prints_the_bound_and_its_set(capsys):
    assert main(["solve", "residual", "--solver", "dp", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["objective"] == "max_load" and row["bound_set"] == "pipeline"
    assert row["lower_bound"] == pytest.approx(row["value"])
    assert main(["solve", "residual", "--solver", "dp"]) == 0
    assert "over pipeline splits" in capsys.readouterr().out
    assert main(["solve", "residual", "--solver", "topo-fill", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["lower_bound"] is None and row["bound_set"] is None
