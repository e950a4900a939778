"""Fuzzing every registered solver, the DP = ILP property, and the reproducers of issue #13.

* ``test_fuzz_every_solver`` — 80 seeded random instances x every registered
  solver (and ``ilp -o device_cycles=true``), MILPs alternating CBC / HiGHS:
  valid placements, claimed = evaluator, exact solvers agree on the same set, no
  placement below a proven optimum of a set it belongs to, bounds never above
  values, brute force on the smallest (:mod:`viz_place.fuzzing`);
  ``benchmarks/fuzz.py`` runs the same over 1,000 instances.
* ``test_dp_equals_ilp`` — the DP and the default ILP (pipeline splits, HiGHS,
  no warm start, so the ILP proves its optimum on its own) on 300 instances
  (training, colour classes, memory, pins, 2–3 classes).
* the reproducers (``tests/data/repro_*``, copied from ``../shared/repro/``):
  devices feeding each other, CBC's false "optimal", a latency of 1e308.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from viz_place.errors import GraphValidationError, InfeasibleError
from viz_place.fuzzing import EXACT_SETS, PIPELINE, check_instance, default_labels, fuzz
from viz_place.io import load_graph
from viz_place.io.placement_json import read_pins
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.solvers import list_solvers, run_solver
from viz_place.solvers.milp import available_backends
from viz_place.testing import Instance, assert_valid, random_instance

DATA = Path(__file__).resolve().parent / "data"
HAVE_HIGHS = "highs" in available_backends()
BACKENDS = ("cbc", "highs") if HAVE_HIGHS else ("cbc",)
need_highs = pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")


@pytest.mark.parametrize("block", range(4))
def test_fuzz_every_solver(block):
    seeds = range(1000 + 20 * block, 1020 + 20 * block)
    report = fuzz(seeds, backends=BACKENDS)
    assert report.failures == [], "\n".join(f"seed {s}: {what}" for s, _, what in report.failures)
    registered = {s.name for s in list_solvers()}
    assert set(report.labels) >= registered, "every registered solver is fuzzed"
    assert report.runs >= 20 * (len(report.labels) - 2)    # expert needs a split; a few baselines may refuse
    assert report.brute_forced >= 5


def test_fuzz_catches_devices_feeding_each_other(monkeypatch):
    """The harness fails on issue #13's first defect: a convex-set optimum sold as a pipeline-split one."""
    graph = load_graph(DATA / "repro_dp_vs_ilp_s196.json")
    pins = read_pins(DATA / "repro_dp_vs_ilp_s196_pins.json", graph, graph.default_cluster)
    inst = Instance(graph, graph.default_cluster, pins, seed=196)
    runs, fails, _ = check_instance(inst, ["dp", "ilp", "ilp device_cycles=true"], backend="cbc")
    assert fails == []
    values = {r.label: r.placement.claimed_value for r in runs}
    assert values == {"dp": 36.0, "ilp": 36.0, "ilp device_cycles=true": 32.0}
    monkeypatch.setitem(EXACT_SETS, "ilp device_cycles=true", PIPELINE)   # the old, wrong claim
    _, fails, _ = check_instance(inst, ["dp", "ilp device_cycles=true"], backend="cbc")
    assert any("optimum 32.0 pipeline splits but dp proved 36.0" in f for f in fails), fails


def test_fuzz_catches_a_wrong_claim(monkeypatch):
    """A solver whose claimed value is not the evaluator's is reported."""
    import dataclasses

    import viz_place.solvers as solvers
    real = solvers.run_solver

    def lying(name, *a, **kw):
        p = real(name, *a, **kw)
        return dataclasses.replace(p, claimed_value=p.claimed_value - 1) if name == "topo-fill" else p
    monkeypatch.setattr(solvers, "run_solver", lying)
    _, fails, _ = check_instance(random_instance(3), ["dp", "topo-fill"])
    assert any(f.startswith("topo-fill: invalid placement: claimed") for f in fails), fails


def test_default_labels_cover_the_registry():
    labels = default_labels()
    assert "ilp device_cycles=true" in labels
    assert {s.name for s in list_solvers()} <= set(labels)


def _agreement_instance(seed: int) -> Instance:
    return random_instance(seed, n_min=3, n_max=7, training=seed % 3 == 0, n_classes=2 + seed % 2)


@need_highs
@pytest.mark.parametrize("block", range(6))
def test_dp_equals_ilp(block):
    """300 instances: dp and ilp (pipeline splits; HiGHS, no warm start) prove the same optimum, or both infeasible."""
    seen = {"training": 0, "pins": 0, "memory": 0, "three classes": 0, "colour classes": 0, "feasible": 0}
    for seed in range(2000 + 50 * block, 2050 + 50 * block):
        inst = _agreement_instance(seed)
        try:
            dp = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins)
        except InfeasibleError:
            dp = None
        try:
            ilp = run_solver("ilp", inst.graph, inst.cluster, pins=inst.pins,
                             options={"backend": "highs", "warm_start": False, "time_limit": 30})
        except InfeasibleError:
            ilp = None
        assert (dp is None) == (ilp is None), (seed, dp, ilp)
        seen["training"] += inst.graph.is_training
        seen["pins"] += bool(inst.pins)
        seen["memory"] += any(c.memory is not None for c in inst.cluster.classes)
        seen["three classes"] += len(inst.cluster.classes) == 3
        seen["colour classes"] += any(len(g) > 1 for g in inst.graph.colocation_groups)
        if dp is None:
            continue
        seen["feasible"] += 1
        assert dp.status == ilp.status == "optimal", (seed, ilp.message)
        assert_valid(inst.graph, inst.cluster, ilp, inst.pins)
        assert ilp.claimed_value == pytest.approx(dp.claimed_value, rel=1e-6, abs=1e-9), seed
    assert seen["feasible"] >= 35 and seen["training"] >= 15 and seen["pins"] >= 8, seen
    assert seen["memory"] >= 15 and seen["three classes"] >= 20 and seen["colour classes"] >= 10, seen


def test_ilp_default_is_the_dp_set_and_device_cycles_the_authors():
    graph = load_graph(DATA / "repro_dp_vs_ilp_s196.json")
    cluster = graph.default_cluster
    pins = read_pins(DATA / "repro_dp_vs_ilp_s196_pins.json", graph, cluster)
    dp = run_solver("dp", graph, cluster, pins=pins)
    for backend in BACKENDS:
        ilp = run_solver("ilp", graph, cluster, pins=pins, options={"backend": backend})
        cyc = run_solver("ilp", graph, cluster, pins=pins, options={"backend": backend, "device_cycles": True})
        assert (dp.claimed_value, ilp.claimed_value, cyc.claimed_value) == (36.0, 36.0, 32.0)
        assert dp.status == ilp.status == cyc.status == "optimal"
        assert dp.message.startswith("optimal among pipeline splits")
        assert ilp.message.startswith("optimal among pipeline splits")
        assert cyc.message.startswith("optimal among per-device convex sets")
        a = cyc.assignment
        crossing = {(a[u], a[v]) for u, v in graph.edges if a[u] != a[v] and not graph.node(u).backward}
        assert any((d, c) in crossing for c, d in crossing), "the convex optimum has two devices feeding each other"


def test_cbc_false_optimal_reproducer_is_fixed():
    """CBC said 43.5 'optimal' where 42.5 exists: its restarted search is no longer trusted."""
    graph = load_graph(DATA / "repro_cbc_false_optimal_s150.json")
    for opts in ({}, {"warm_start": False}, {"symmetry_breaking": False}):
        p = run_solver("ilp-noncontig", graph, graph.default_cluster,
                       options={"backend": "cbc", "time_limit": 60, **opts})
        assert p.claimed_value == pytest.approx(42.5), (opts, p.message)
        assert p.status == "optimal" and p.message.startswith("optimal over all placements"), p.message


def test_a_bound_above_a_known_value_proves_nothing():
    """milp_result refuses 'optimal' when the back-end's bound is above a placement the model allows."""
    from viz_place.solvers import get_solver
    from viz_place.solvers.contract import prepare
    from viz_place.solvers.milp.backends import MilpResult
    from viz_place.solvers.milp.result import milp_result
    inst = random_instance(3)
    p = run_solver("dp", inst.graph, inst.cluster, pins=inst.pins)
    problem = prepare(get_solver("ilp-noncontig"), inst.graph, inst.cluster, inst.pins, None)
    dev = problem.compiled.to_index_array(p)
    for bound, status in ((p.claimed_value, "optimal"), (p.claimed_value + 1, "feasible")):
        res = MilpResult("optimal", "cbc", objective=p.claimed_value + 1, bound=bound)
        result, value = milp_result(problem, solver="x", res=res, ilp_dev=None, warm=(dev, "dp"), bound_set="any",
                                    scope="over all placements")
        assert result.status == status, result.message
    assert result.lower_bound is None and result.bound_set is None
    assert "proof is not trusted" in result.message
    assert result.message.startswith("not proven optimal over all placements")


def test_cbc_restart_triggers_a_strategy_0_resolve(monkeypatch):
    """When CBC restarts (Cbc0044I), its answer is not taken as proof: a -strategy 0 run decides."""
    import pulp

    from viz_place.solvers.milp import backends, cbc
    calls = []

    def fake_run(lp, time_limit, gap, warm_start, hooks, threads, extra):
        calls.append((extra, warm_start))
        if not extra:   # the first run restarted and "proved" 3 with a bound of 3; before the restart: 1
            return backends.MilpResult("feasible", "cbc", values={"x": 1.0, "y": 1.0}, objective=3.0, bound=3.0), (1.0,)
        return backends.MilpResult("feasible", "cbc", values={"x": 1.0, "y": 0.0}, objective=1.0, bound=1.0), None
    monkeypatch.setattr(cbc, "_run_cbc", fake_run)
    lp = pulp.LpProblem("t", pulp.LpMinimize)
    x, y = lp.add_variable("x", cat="Binary"), lp.add_variable("y", cat="Binary")
    lp += x + 2 * y
    lp += x + y >= 1
    res = backends.solve_milp(lp, backend="cbc", time_limit=10)
    assert [c[0] for c in calls] == [(), ("-strategy", "0")]
    assert calls[1][1] == {"x": 1.0, "y": 1.0}          # warm-started from the first run's solution
    assert (res.status, res.objective, res.bound) == ("optimal", 1.0, 1.0)
    assert "restarted" in res.note and "-strategy 0" in res.note


def test_huge_latency_is_refused_naming_the_node(tmp_path):
    """../shared/repro/huge-latency.json: one cpuLatency of 1e308 (the DP's running sums lost the other figures)."""
    import json
    nodes = [{"id": i, "cpuLatency": c, "fpgaLatency": float(i + 1), "supportedOnFpga": 1, "isBackwardNode": 0,
              "size": 10.0} for i, c in enumerate([5.0, 1e308, 7.0, 8.0, 9.0])]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 1.0} for i in range(4)]
    path = tmp_path / "huge-latency.json"
    path.write_text(json.dumps({"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 100.0, "nodes": nodes, "edges": edges}))
    with pytest.raises(GraphValidationError, match=r"node '1': latency on 'cpu' 1e\+308 .*above the largest total"):
        load_graph(path)
    import subprocess
    import sys
    cli = Path(sys.executable).with_name("viz-place")
    run = subprocess.run([str(cli), "solve", str(path), "--solver", "dp"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "node '1': latency on 'cpu' 1e+308" in run.stderr, run.stderr
    # two figures that each pass but sum past the limit are refused too, naming the larger
    with pytest.raises(GraphValidationError, match=r"node 'b': field 'size' 7e\+14 brings the graph's total to 1.3e\+15"):
        OpGraph.from_records([{"id": "a", "latency": {"cpu": 1.0}, "size": 6e14},
                              {"id": "b", "latency": {"cpu": 1.0}, "size": 7e14}], [])
    ok = OpGraph.from_records([{"id": "a", "latency": {"cpu": 1e12, "fpga": 1.0}},
                               {"id": "b", "latency": {"cpu": 5.0, "fpga": 2.0}}], [("a", "b")])
    p = run_solver("dp", ok, Cluster((DeviceClass("cpu", "cpu", 1, pays_communication=False),
                                      DeviceClass("fpga", "fpga", 1))))
    assert math.isclose(p.claimed_value, 3.0) and p.status == "optimal"
