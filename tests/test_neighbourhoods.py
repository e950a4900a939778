"""Re-solving device subsets (issue #16, :mod:`viz_place.solvers.milp.neighbourhoods`): the subproblem
is exact for its neighbourhood (brute force over the subset's groups), leaves the other devices' loads
as they were, and the search only ever returns valid placements no worse than its start."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from _ilp_brute import MAX_COMBOS, brute_force, combos
from test_polish import _first_fit
from viz_place.cost import compile_problem, evaluate_indices
from viz_place.solvers import run_solver
from viz_place.solvers.groups import allowed_devices
from viz_place.solvers.milp import available_backends
from viz_place.solvers.milp.max_load import IlpNoncontigOptions
from viz_place.solvers.milp.neighbourhoods import SPREAD, improve_by_subsets, resolve_subset, subset_allowed
from viz_place.testing import random_instance

pytestmark = pytest.mark.skipif("highs" not in available_backends(), reason="needs highspy")
OPTS = IlpNoncontigOptions(backend="highs", threads=1)


def _instances(first_seed: int, count: int, min_devices: int = 3):
    """``(seed, instance, problem, allowed, a random placement within memory)`` with at least
    ``min_devices`` devices."""
    for seed in range(first_seed, first_seed + count):
        inst = random_instance(seed, n_min=5, n_max=9, n_classes=3)
        prob = compile_problem(inst.graph, inst.cluster)
        if prob.num_devices < min_devices:
            continue
        allowed = allowed_devices(prob, inst.pins)
        start = _first_fit(prob, allowed, np.random.default_rng(seed))
        if start is not None:
            yield seed, inst, prob, allowed, start


def _loads(prob, dev):
    ev = evaluate_indices(prob, dev)
    return [d.load for d in ev.devices], ev


def _brute_subset(prob, al, dev, subset, spread: float = 0.0) -> float:
    """Smallest max-load over ``subset`` (plus ``spread`` times the subset's total load) of any placement
    within memory that moves only the groups with several devices in ``al`` (every assignment of them tried)."""
    free = [g for g, a in enumerate(al) if len(a) > 1]
    best = math.inf
    trial = np.array(dev)
    for choice in itertools.product(*(al[g] for g in free)):
        for g, d in zip(free, choice):
            trial[list(prob.groups[g])] = d
        loads, ev = _loads(prob, trial)
        if not ev.violations:
            best = min(best, max(loads[d] for d in subset) + spread * sum(loads[d] for d in subset))
    return best


@pytest.mark.parametrize("spread", [0.0, SPREAD, 0.05])
def test_a_subproblem_is_exact_and_leaves_the_other_devices_alone(spread):
    """Exact for its objective: the max-load over the subset, plus ``spread`` times the subset's total load
    (the default, :data:`SPREAD`, breaks ties towards less load in all; 0.05 makes that term matter)."""
    checked = 0
    for seed, inst, prob, allowed, start in _instances(12000, 80):
        rng = np.random.default_rng(seed)
        subset = tuple(sorted(int(d) for d in rng.choice(prob.num_devices, 2, replace=False)))
        al = subset_allowed(prob, allowed, start, subset)
        if math.prod(len(a) for a in al) > 4000:
            continue
        new, res, free = resolve_subset(prob, allowed, start, subset, time_limit=20, opts=OPTS, spread=spread)
        assert res.status == "optimal", (seed, res.status)
        assert free == sum(1 for a in al if len(a) > 1)
        before, _ = _loads(prob, start)
        after, ev = _loads(prob, new)
        assert not ev.violations, (seed, ev.violations)
        for d in range(prob.num_devices):
            if d not in subset:
                assert after[d] == pytest.approx(before[d], rel=1e-12, abs=1e-12), (seed, d)
        for g, members in enumerate(prob.groups):
            assert int(new[members[0]]) in al[g] and len({int(new[v]) for v in members}) == 1
        exact = _brute_subset(prob, al, start, subset, spread)
        got = max(after[d] for d in subset) + spread * sum(after[d] for d in subset)
        assert got == pytest.approx(exact, rel=1e-7, abs=1e-9), seed
        assert res.objective == pytest.approx(exact, rel=1e-6, abs=1e-6), seed
        if spread:          # M + spread * S <= P + spread * S_P, and S_P <= |subset| * P: the max-load gives up
            plain = _brute_subset(prob, al, start, subset)     # at most spread * |subset| of the plain optimum P
            assert max(after[d] for d in subset) <= plain * (1 + spread * len(subset)) + 1e-9, seed
        checked += 1
    assert checked >= 25, checked


def test_the_search_returns_valid_placements_no_worse_than_its_start():
    checked = improved = 0
    for seed, inst, prob, allowed, start in _instances(12200, 40):
        out = improve_by_subsets(prob, allowed, start, size=2, time_limit=5, sub_time=2, opts=OPTS)
        ev = evaluate_indices(prob, out.dev, pins=inst.pins)
        assert not ev.violations, (seed, ev.violations)
        first = evaluate_indices(prob, start).max_load
        assert ev.max_load <= first * (1 + 1e-9)
        assert out.key[0] == pytest.approx(ev.max_load, rel=1e-12)
        for g, members in enumerate(prob.groups):
            assert int(out.dev[members[0]]) in allowed[g] and len({int(out.dev[v]) for v in members}) == 1
        assert all(row[1] and len(row[1]) >= 2 for row in out.log)
        checked += 1
        improved += ev.max_load < first * (1 - 1e-9)
    assert checked >= 15 and improved >= checked // 3, (checked, improved)


def test_growing_subsets_reach_the_brute_force_optimum():
    """Subsets grow to all devices but one after a round without improvement; with two or three
    devices that leaves moves the polisher cannot make, and the result is mostly the optimum."""
    checked = optimal = 0
    for seed, inst, prob, allowed, start in _instances(12400, 60):
        if combos(inst) > MAX_COMBOS:
            continue
        best = brute_force(inst, "max_load")
        out = improve_by_subsets(prob, allowed, start, size=2, time_limit=10, sub_time=5, opts=OPTS)
        assert out.key[0] >= best * (1 - 1e-9)
        checked += 1
        optimal += out.key[0] <= best * (1 + 1e-9)
    assert checked >= 15 and optimal >= 0.6 * checked, (checked, optimal)


def test_a_cancelled_search_hands_back_its_start():
    seed, inst, prob, allowed, start = next(_instances(12200, 40))
    out = improve_by_subsets(prob, allowed, start, time_limit=5, opts=OPTS, cancel=lambda: True)
    assert np.array_equal(out.dev, start) and not out.log


def test_ilp_noncontig_hands_its_incumbent_to_the_subset_search(monkeypatch):
    """When the integer program stops short of the gap, the subset search starts from its best
    placement and what it returns is the run's placement, the MILP's bound still below it."""
    from viz_place.solvers.milp import max_load
    seen = []
    real = max_load.run_lns

    def recording(*args, **kw):
        out = real(*args, **kw)
        seen.append((kw["start"], kw["bound"], out))
        return out

    monkeypatch.setattr(max_load, "run_lns", recording)
    from viz_place.samples import make_graph
    g = make_graph("residual", 40, 3, training=True)
    p = run_solver("ilp-noncontig", g, g.default_cluster,
                   options={"backend": "highs", "threads": 1, "time_limit": 6, "lns": 0.5, "polish": 0.0})
    assert seen, "the subset search did not run"
    start, bound, out = seen[0]
    value = evaluate_indices(compile_problem(g, g.default_cluster), start).max_load
    assert p.claimed_value <= value * (1 + 1e-12)
    if out is not None:
        assert p.claimed_value == pytest.approx(out[1], rel=1e-12)
        assert "re-solving device subsets" in p.message
    assert p.lower_bound is not None and p.lower_bound <= p.claimed_value * (1 + 1e-9)
    assert bound == pytest.approx(p.lower_bound, rel=1e-6) or p.lower_bound >= bound


def test_a_run_cancelled_during_the_subset_search_says_so_and_keeps_its_best(monkeypatch):
    import threading

    from viz_place.samples import make_graph
    from viz_place.solvers.milp import max_load
    stop = threading.Event()
    starts = []
    real = max_load.run_lns

    def cancel_first(*args, **kw):
        stop.set()                        # the user presses Stop as the subset search begins
        starts.append(kw["start"])
        return real(*args, **kw)

    monkeypatch.setattr(max_load, "run_lns", cancel_first)
    g = make_graph("residual", 40, 3, training=True)
    p = run_solver("ilp-noncontig", g, g.default_cluster, cancel=stop,
                   options={"backend": "highs", "threads": 1, "time_limit": 4, "lns": 0.5, "polish": 0.0})
    assert starts, "the subset search did not run"
    assert p.status == "cancelled" and "cancelled" in p.message
    ev = evaluate_indices(compile_problem(g, g.default_cluster), starts[0])
    assert p.claimed_value <= ev.max_load * (1 + 1e-12)


def test_a_proven_run_skips_the_subset_search(monkeypatch):
    from viz_place.solvers.milp import max_load
    calls = []
    monkeypatch.setattr(max_load, "run_lns", lambda *a, **kw: calls.append(kw) or None)
    seed, inst, prob, allowed, start = next(_instances(12200, 40))
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, pins=inst.pins,
                   options={"backend": "highs", "threads": 1, "time_limit": 20, "lns": 0.5})
    assert p.status == "optimal" and not calls


def test_with_the_set_bound_pairs_are_re_solved_before_the_integer_program(monkeypatch):
    """On long runs (the set bound on) a first pass over pairs of devices (then three, after a round of pairs
    without gain) starts from the polished warm start before the integer program is built, within its share
    (``EARLY_LNS``) of the subset search's; its improvements are the run's incumbents, so the placement
    returned is no worse than what it found."""
    from viz_place.samples import make_graph
    from viz_place.solvers.milp import max_load
    calls, messages = [], []
    real = max_load.run_lns

    def recording(*args, **kw):
        began = max_load._now()
        out = real(*args, **kw)
        calls.append((len(messages), kw, out, max_load._now() - began))
        return out

    monkeypatch.setattr(max_load, "run_lns", recording)
    g = make_graph("residual", 40, 3, training=True)
    opts = {"backend": "highs", "threads": 1, "time_limit": 10, "lns": 0.4, "set_bound": 0.2,
            "set_bound_beside": False, "set_bound_comm": 0.0}
    p = run_solver("ilp-noncontig", g, g.default_cluster, options=opts,
                   progress=lambda ev: messages.append(ev.message))
    assert calls, "no subset search ran"
    at, kw, out, seconds = calls[0]
    built = next(i for i, m in enumerate(messages) if m.startswith("building the integer program"))
    assert at <= built and kw["max_size"] == max_load.EARLY_LNS_MAX_SIZE == 3, (at, built, kw.get("max_size"))
    # its share, or on past it while it keeps finding better placements, up to the integer program's share
    assert kw["deadline"] <= kw["extend_to"] and seconds <= (1 - max_load.MAIN_SHARE) * 10 + 1.0, seconds
    start = evaluate_indices(compile_problem(g, g.default_cluster), kw["start"]).max_load
    assert p.claimed_value <= (out[1] if out is not None else start) * (1 + 1e-12)
    assert all(c[1].get("max_size") is None for c in calls[1:]), "later passes grow past three devices"


def _fake_search(improving_for: float, step: float = 0.1):
    """An ``improve_by_subsets`` stand-in that finds a better placement every ``step`` seconds for
    ``improving_for`` seconds, then nothing, until its time or ``cancel``; it records when it stopped."""
    import time

    from viz_place.solvers.milp import neighbourhoods as nb
    stopped = {}

    def fake(prob, allowed, dev, *, time_limit, cancel, on_better, **kw):
        t0 = time.perf_counter()
        value = 100.0
        while time.perf_counter() - t0 < time_limit and not cancel():
            if time.perf_counter() - t0 < improving_for:
                value -= 0.01
                on_better(dev, value)
            time.sleep(step)
        stopped["after"] = time.perf_counter() - t0
        return nb.SubsetSearch(np.asarray(dev), (value, 0.0))
    return fake, stopped


@pytest.mark.parametrize("improving_for, low, high", [(0.0, 0.9, 1.6), (2.0, 2.3, 3.5), (30.0, 4.7, 5.6)])
def test_a_pass_goes_on_past_its_deadline_only_while_it_improves(monkeypatch, improving_for, low, high):
    """With ``extend_to``, :func:`run_lns` goes on past ``deadline`` (1 s here) until ``idle`` seconds
    (0.6) pass without a better placement, never past ``extend_to`` (5 s)."""
    import time

    from viz_place.solvers.base import Hooks
    from viz_place.solvers.milp import neighbourhoods as nb
    inst = random_instance(3)
    prob = compile_problem(inst.graph, inst.cluster)

    class _Problem:          # the two things run_lns asks of a Problem
        compiled = prob

        @staticmethod
        def value(dev):
            return 100.0
    fake, stopped = _fake_search(improving_for)
    monkeypatch.setattr(nb, "improve_by_subsets", fake)
    now = time.perf_counter()
    nb.run_lns(_Problem, allowed_devices(prob, inst.pins), [], OPTS, Hooks(None, None),
               start=np.zeros(prob.n, dtype=np.int64), bound=None, deadline=now + 1.0, extend_to=now + 5.0, idle=0.6)
    assert low <= stopped["after"] <= high, stopped


def test_without_the_set_bound_no_pass_comes_before_the_integer_program(monkeypatch):
    from viz_place.samples import make_graph
    from viz_place.solvers.milp import max_load
    calls = []
    monkeypatch.setattr(max_load, "run_lns", lambda *a, **kw: calls.append(kw) or None)
    g = make_graph("residual", 40, 3, training=True)
    run_solver("ilp-noncontig", g, g.default_cluster,
               options={"backend": "highs", "threads": 1, "time_limit": 4, "lns": 0.5, "set_bound": 0})
    assert all(kw.get("max_size") is None for kw in calls)


def test_a_first_pass_that_reaches_the_gap_of_the_floor_keeps_the_proof(workloads):
    """resnet50_training at 300 s: the pairs re-solved before the integer program bring the warm start
    (76.8071) within 1 % of the proven floor (75.7975). The set bound beside is then stopped (its settled gap
    once read as a cancel of the model's build, and the run ended with no bound at all) and the run ends
    proven. Polishing is off: how far it gets in its time depends on the machine, and where it reaches
    76.5501 (within 1 % of the floor by itself) no pass comes first and this path is not taken."""
    from viz_place import load_graph
    g = load_graph(workloads / "throughput-inputs" / "LayerGraphs" / "resnet50_training.json")
    messages = []
    p = run_solver("ilp-noncontig", g, g.default_cluster, progress=lambda ev: messages.append(ev.message),
                   options={"backend": "highs", "threads": 1, "time_limit": 300, "gap": 0.01, "polish": 0})
    assert any(m.startswith("re-solving device subsets") for m in messages[:messages.index(
        next(m for m in messages if m.startswith("building the integer program")))]), messages
    assert p.bound_set == "any" and p.lower_bound is not None, p.message
    assert p.claimed_value <= p.lower_bound * 1.01 * (1 + 1e-9), (p.claimed_value, p.lower_bound)
