"""The common checks of viz_place.testing.check_solver over every registered solver.

Parametrised over ``list_solvers(only_available=False)`` and the checks that
apply to each, so a new or removed solver is covered without editing this file;
a solver whose back-end is missing here is skipped with that reason.
"""
from __future__ import annotations

import dataclasses

import pytest

from viz_place.errors import SolverError
from viz_place.solvers import SolverInfo, SolverOptions, list_solvers, registry, run_solver
from viz_place.testing import CHECKS, applicable_checks, check_solver, run_check, unavailable_reason
from viz_place.testing.solver_checks import module_path_instances

CASES = [(info.name, check) for info in list_solvers(only_available=False) for check in applicable_checks(info)]


@pytest.mark.parametrize("name,check", CASES, ids=[f"{n}-{c}" for n, c in CASES])
def test_solver_passes_the_common_checks(name, check):
    info = registry._REGISTRY[name]
    reason = unavailable_reason(info)
    if reason:
        pytest.skip(reason)
    run_check(name, check)


def test_every_solver_is_covered():
    names = {n for n, _ in CASES}
    assert names == {s.name for s in list_solvers(only_available=False)}
    assert {"dp", "ilp", "rl", "expert"} <= names
    assert {c for _, c in CASES} == set(CHECKS)


@dataclasses.dataclass(frozen=True)
class _SplitOptions(SolverOptions):
    pass


def _by_top_module(problem, options, hooks):
    """A small real solver that needs module paths: each top-level module on its own device, round robin."""
    from viz_place.solvers import SolverResult
    devices = [d.name for d in problem.cluster.devices]
    tops = sorted({problem.graph.node(n).layer.split("/")[1] for n in problem.graph.node_ids
                   if problem.graph.node(n).layer})
    where = {}
    for group in problem.graph.colocation_groups:
        layer = next((problem.graph.node(n).layer for n in group if problem.graph.node(n).layer), None)
        dev = problem.pins.get(group[0]) or devices[tops.index(layer.split("/")[1]) % len(devices) if layer else 0]
        where.update({n: dev for n in group})
    return SolverResult(where, status="heuristic")


@pytest.fixture
def module_path_solver():
    info = registry.register(SolverInfo("by-top-module", _by_top_module, _SplitOptions, "max_load",
                                        "one device per top-level module", needs=("module_paths",)))
    yield info
    registry._REGISTRY.pop(info.name)


def test_a_solver_needing_module_paths_is_checked_on_graphs_that_have_them(module_path_solver):
    pytest.importorskip("torch")
    assert all(any(n.layer and n.layer.startswith("/enc/") for n in inst.graph.nodes())
               for inst in module_path_instances())
    assert check_solver("by-top-module", checks=["valid", "pins", "options_round_trip", "same_seed", "bound"]) == []
    from viz_place.samples import make_graph
    g = make_graph("chain", 4)
    with pytest.raises(SolverError, match="has no module paths; it needs module paths") as err:
        run_solver("by-top-module", g, g.default_cluster)
    assert err.value.field == "graph"


def test_broken_solvers_fail_the_checks():
    """The checks can fail: a solver that ignores pins, one that is not repeatable."""
    import random

    from viz_place.solvers import SolverResult
    from viz_place.testing.solver_checks import pinned_instance

    def ignore_pins(problem, options, hooks):
        return SolverResult([0] * problem.compiled.n, status="heuristic")

    def unseeded(problem, options, hooks):
        return SolverResult([0] * problem.compiled.n, status=random.choice(["heuristic", "feasible"]))

    broken = [registry.register(SolverInfo("ignores-pins", ignore_pins, _SplitOptions, "max_load", "broken")),
              registry.register(SolverInfo("unseeded", unseeded, _SplitOptions, "max_load", "broken"))]
    try:
        assert pinned_instance().pins
        with pytest.raises(AssertionError, match="ignores-pins: check 'pins' failed: InternalError: .*pinned node"):
            run_check("ignores-pins", "pins")
        random.seed(1)
        with pytest.raises(AssertionError, match="unseeded: check 'same_seed' failed"):
            for _ in range(8):      # two runs may agree by chance: try a few times
                run_check("unseeded", "same_seed")
    finally:
        for info in broken:
            registry._REGISTRY.pop(info.name)
