"""The set-partitioning (column-generation) bound of ``ilp-noncontig`` (issue #16): a device set's load
is the evaluator's, the pricing MILP never under-states the best set, and the bound never exceeds the
brute-force optimum over all placements while it does lift the simple bound on instances where
communication decides."""
from __future__ import annotations

import itertools
import time

import networkx as nx
import numpy as np
import pytest

from _ilp_brute import MAX_COMBOS, brute_force, combos
from viz_place.cost import compile_problem, evaluate_indices, simple_lower_bound
from viz_place.errors import InfeasibleError
from viz_place.model import Cluster, DeviceClass, OpGraph
from viz_place.solvers import run_solver
from viz_place.solvers.groups import allowed_devices
from viz_place.solvers.milp import available_backends
from viz_place.solvers.milp.set_bound import (LocalPricer, Pricer, Sources, device_types, placement_columns,
                                              refute, set_load, set_partition_bound)
from viz_place.solvers.milp.set_bound_worker import BesideHooks
from viz_place.solvers.milp.set_pricing import ExactPricer, exact_pricing_built
from viz_place.testing import Instance, random_instance

pytestmark = pytest.mark.skipif("highs" not in available_backends(), reason="the set bound needs HiGHS (highspy)")


def chatty_instance(seed: int, n_min: int = 5, n_max: int = 8) -> Instance:
    """A few accelerators with tight memory and a slow CPU, on a graph whose transfers cost about as
    much as its operators: the device sets' communication decides the optimum."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_min, n_max + 1))
    g = nx.DiGraph()
    for i in range(n):
        fpga = float(rng.uniform(0.5, 2.0))
        g.add_node(str(i), latency={"cpu": fpga * float(rng.uniform(3.0, 8.0)), "fpga": round(fpga, 3)},
                   size=float(rng.integers(1, 5)), transfer_cost=float(rng.choice([0.2, 0.5, 1.0])), op_type="op")
    for v in range(1, n):
        g.add_edge(str(v - 1), str(v))
        for u in range(v - 1):
            if rng.random() < 0.25:
                g.add_edge(str(u), str(v))
    total = sum(a["size"] for _, a in g.nodes(data=True))
    k = int(rng.integers(2, 4))
    mem = float(np.ceil(total / k * rng.uniform(1.0, 1.3)))
    cluster = Cluster((DeviceClass("fpga", "fpga", k, memory=mem),
                       DeviceClass("cpu", "cpu", 1, memory=None, pays_communication=False)))
    return Instance(OpGraph(g, name=f"chatty_{seed}", default_cluster=cluster), cluster, {}, seed)


def _random_placement(prob, allowed, rng) -> np.ndarray:
    gdev = [int(rng.choice(ds)) for ds in allowed]
    dev = np.empty(prob.n, dtype=np.int64)
    for g, members in enumerate(prob.groups):
        dev[list(members)] = gdev[g]
    return dev


@pytest.mark.parametrize("seed", range(12))
def test_device_set_loads_are_the_evaluators(seed):
    inst = random_instance(seed) if seed % 2 else chatty_instance(seed)
    prob = compile_problem(inst.graph, inst.cluster)
    allowed = allowed_devices(prob, inst.pins)
    types = device_types(prob, allowed)
    assert sorted(d for t in types for d in t.devices) == list(range(prob.num_devices))
    sources = Sources.of(prob)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        dev = _random_placement(prob, allowed, rng)
        ev = evaluate_indices(prob, dev, pins=inst.pins)
        for ti, in_set in placement_columns(prob, types, dev):
            d = next(d for d in types[ti].devices
                     if (dev[[m[0] for m in prob.groups]] == d)[in_set].all())
            assert set_load(types[ti], sources, in_set) == pytest.approx(ev.devices[d].load, rel=1e-9, abs=1e-12)


def _fits(t, sources, in_set, T) -> bool:
    return bool(np.isfinite(t.work[in_set]).all()) and float(t.mem[in_set].sum()) <= t.capacity * (1 + 1e-9) \
        and set_load(t, sources, in_set) <= T + 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_pricing_bound_is_never_below_the_best_set_and_local_search_keeps_sets_valid(seed):
    inst = chatty_instance(100 + seed, 5, 7)
    prob, types, sources, G = _pricing_problem(inst)
    rng = np.random.default_rng(seed)
    pi = rng.uniform(-0.3, 1.0, G)
    floor = simple_lower_bound(inst.graph, inst.cluster)[0]
    for T in (floor, 1.3 * floor):
        for t in types:
            best = max(float(pi[list(s)].sum()) for r in range(G + 1) for s in itertools.combinations(range(G), r)
                       if _fits(t, sources, np.isin(np.arange(G), s), T))
            ub, sets = Pricer(t, sources).solve(pi, T, 10.0)
            assert ub >= best - 1e-9
            assert ub <= best + 1e-4          # solved to optimality on so few groups
            for s in sets:
                assert _fits(t, sources, s, T * (1 + 1e-6))
            start = np.zeros(G, dtype=bool)
            s = LocalPricer(t, sources).improve(pi, T, start)
            assert _fits(t, sources, s, T) and float(pi[s].sum()) >= 0.0


@pytest.mark.skipif(not exact_pricing_built(), reason="the pricing extension was not built (no C compiler)")
@pytest.mark.parametrize("graph", ["chatty", "inception:40:3:training", "transformer:60:1"])
def test_the_compiled_local_search_makes_the_python_loops_moves(graph):
    """The compiled LocalPricer.improve returns the Python loop's set, bit for bit, from empty and from
    fitting starts, under prices of both signs (the column generation's trajectory must not depend on
    whether the extension is built)."""
    from viz_place.samples import make_graph
    from viz_place.solvers.milp.set_pricing import set_load
    if graph == "chatty":
        insts = [chatty_instance(300 + k, 8, 14) for k in range(6)]
    else:
        fam, n, seed, *rest = graph.split(":")
        g = make_graph(fam, int(n), int(seed), training=bool(rest))
        insts = [Instance(g, g.default_cluster, {})]
    rng = np.random.default_rng(7)
    compared = moved = 0
    for inst in insts:
        prob, types, sources, G = _pricing_problem(inst)
        floor = simple_lower_bound(inst.graph, inst.cluster)[0]
        for t in types:
            local = LocalPricer(t, sources)
            for trial in range(25):
                pi = rng.uniform(-0.5, 1.0, G) * rng.choice([1.0, 1e-3, 1e3])
                T = floor * float(rng.uniform(0.3, 1.5))
                start = np.zeros(G, dtype=bool)
                if trial % 2:       # a fitting start: the search's own result under other prices
                    start = local.improve_python(rng.uniform(-0.5, 1.0, G), T, start)
                fast, slow = local.improve(pi, T, start), local.improve_python(pi, T, start)
                assert fast.dtype == bool and (fast == slow).all(), (graph, trial)
                assert not fast.any() or set_load(t, sources, fast) <= T
                compared += 1
                moved += int((fast != start).any())
    assert compared >= 50 and moved >= compared // 2     # the searches did move


def _pricing_problem(inst):
    """The compiled problem, device types, sources and group count the pricing tests work on."""
    prob = compile_problem(inst.graph, inst.cluster)
    return prob, device_types(prob, allowed_devices(prob, inst.pins)), Sources.of(prob), len(prob.groups)


def _pricing_dp_built() -> bool:
    try:
        from viz_place.solvers.milp import _pricing  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _pricing_dp_built(), reason="the pricing DP's extension was not built (no C compiler)")
@pytest.mark.parametrize("seed", range(40))
def test_exact_pricing_equals_brute_force(seed):
    """The label DP's value is the brute-force maximum (not just a bound), and its set fits and reaches it:
    chatty and random instances, prices of both signs, thresholds from tight to loose, and a start set. The
    other sets it returns (the best met on the way, columns besides the maximum) are distinct sets that fit."""
    inst = chatty_instance(300 + seed, 6, 11) if seed % 3 else random_instance(seed)
    try:
        prob, types, sources, G = _pricing_problem(inst)
    except InfeasibleError:      # a random instance whose pins cannot hold: a chatty one instead
        inst = chatty_instance(300 + seed, 6, 11)
        prob, types, sources, G = _pricing_problem(inst)
    rng = np.random.default_rng(seed)
    subsets = [np.isin(np.arange(G), s) for r in range(G + 1) for s in itertools.combinations(range(G), r)]
    floor = simple_lower_bound(inst.graph, inst.cluster)[0]
    for T in (0.6 * floor, floor, 1.4 * floor):
        pi = rng.uniform(-0.5, 1.0, G)
        for t in types:
            fitting = [s for s in subsets if _fits(t, sources, s, T)]
            best = max(float(pi[s].sum()) for s in fitting)
            pricer, narrow = ExactPricer(t, sources), ExactPricer(t, sources)
            narrow.beam = 2     # a beam of two labels per layer: a poor start, the same maximum
            for start, p in itertools.product((None, max(fitting, key=lambda s: float(pi[s].sum()) - rng.random())),
                                              (pricer, narrow)):
                ub, sets = p.solve(pi, T, 10.0, start=start)
                assert p.last_exact
                assert best - 1e-9 <= ub <= best + 1e-6 * (1 + abs(best)), (T, t.devices, ub, best)
                assert all(_fits(t, sources, s, T * (1 + 1e-9)) for s in sets)
                if best > 0:     # a set reaching the maximum (the empty set's 0 is not a column)
                    assert sets and float(pi[sets[0]].sum()) == pytest.approx(best, abs=1e-9)
                # and up to SETS_PER_CALL - 1 others, distinct, each a set the brute force knows (so within T)
                assert len(sets) <= p.keep and len({s.tobytes() for s in sets}) == len(sets)
                fits = {s.tobytes() for s in fitting}
                assert all(s.tobytes() in fits and float(pi[s].sum()) <= best + 1e-9 for s in sets)
            # a floor the maximum passes changes nothing; one it does not pass comes back as the bound, with no
            # set reaching it (the sets met below it are still columns)
            ub, sets = pricer.solve(pi, T, 10.0, floor=best - 0.25)
            assert best - 1e-9 <= ub <= best + 1e-6 * (1 + abs(best)), (T, t.devices, ub, best)
            if best > 0:
                assert sets and float(pi[sets[0]].sum()) == pytest.approx(best, abs=1e-9)
            ub, sets = pricer.solve(pi, T, 10.0, floor=best + 0.25)
            assert ub == pytest.approx(max(0.0, best + 0.25), abs=1e-6), (T, t.devices, ub, best)
            assert all(_fits(t, sources, s, T * (1 + 1e-9)) and float(pi[s].sum()) <= best + 1e-9 for s in sets)
            # `enough`: the search stops at the first set worth it (no bound, that set first); above the maximum
            # it changes nothing
            if best > 0:
                ub, sets = pricer.solve(pi, T, 10.0, enough=0.5 * best)
                assert pricer.last_skipped and not pricer.last_exact and ub == np.inf
                assert float(pi[sets[0]].sum()) >= 0.5 * best - 1e-12 and _fits(t, sources, sets[0], T * (1 + 1e-9))
                top = max(fitting, key=lambda s: float(pi[s].sum()))     # a start worth it: that start first
                ub, sets = pricer.solve(pi, T, 10.0, start=top, enough=0.5 * best)
                assert pricer.last_skipped and ub == np.inf and float(pi[sets[0]].sum()) >= 0.5 * best - 1e-12
            ub, sets = pricer.solve(pi, T, 10.0, enough=best + 0.25)
            assert not pricer.last_skipped and pricer.last_exact
            assert best - 1e-9 <= ub <= best + 1e-6 * (1 + abs(best)), (T, t.devices, ub, best)


@pytest.mark.skipif(not _pricing_dp_built(), reason="the pricing DP's extension was not built (no C compiler)")
@pytest.mark.parametrize("seed", range(12))
def test_lagrangian_bounds_of_the_pricing_dp_are_the_brute_force_dual_values(seed):
    """The DP's Lagrangian completion tables (indexed by three statuses per open source) give, for any
    multipliers ``(lam, mu) >= 0``, exactly ``max over all sets S (no load or memory row) of pi(S) - lam
    load(S) - mu mem(S) + lam T + mu cap`` — the Lagrangian dual value, so never below the best set that fits.
    Half the instances are small training graphs, whose backward groups put successors before their source
    in the group order (the statuses with the own group still undecided). The pairs are computed in one sweep
    over the states, each exactly as it would be alone."""
    from viz_place.samples import make_graph
    if seed % 2:
        g = make_graph(("residual", "inception", "transformer")[seed // 2 % 3], 8, seed, training=True)
        inst = Instance(g, g.default_cluster, {}, seed)
    else:
        inst = chatty_instance(500 + seed, 7, 11)
    prob, types, sources, G = _pricing_problem(inst)
    assert G <= 12
    rng = np.random.default_rng(seed)
    subsets = [np.isin(np.arange(G), s) for r in range(G + 1) for s in itertools.combinations(range(G), r)]
    t = next(t for t in types if t.pay)
    pricer = ExactPricer(t, sources)
    T = 0.8 * simple_lower_bound(inst.graph, inst.cluster)[0]
    sets = np.array([s for s in subsets if np.isfinite(t.work[s]).all()])
    load = np.array([set_load(t, sources, s) for s in sets])
    mem = sets @ t.mem
    fits = (load <= T + 1e-9) & (mem <= t.capacity * (1 + 1e-9))
    for trial in range(8):      # prices of both signs; multipliers up to where communication decides
        pi = rng.uniform(-0.3, 1.0, G)
        lam = rng.uniform(0.0, 0.5 * 10 ** (trial % 3), 4)
        mu = rng.uniform(0.0, 0.3, 4) * G / t.capacity   # memory in bytes: a price per byte
        roots = pricer._roots(pi, T, list(lam), list(mu))
        assert roots is not None and len(roots) == 4
        value = sets @ pi
        for p in range(4):
            dual = float(np.max(value - lam[p] * load - mu[p] * mem)) + lam[p] * T + mu[p] * t.capacity
            assert roots[p] == pytest.approx(dual, abs=1e-9), (trial, p, roots[p], dual)
            assert roots[p] >= float(value[fits].max()) - 1e-9
            # the pairs share one sweep over the states: each pair's table is the one it gets alone, bit for bit
            assert pricer._roots(pi, T, [lam[p]], [mu[p]])[0] == roots[p]
    assert pricer._roots(pi, T, [0.0], [0.0])[0] == pytest.approx(float(value.max()), abs=1e-9)


@pytest.mark.skipif(not _pricing_dp_built(), reason="the pricing DP's extension was not built (no C compiler)")
@pytest.mark.parametrize("graph", [("transformer", 40, 3, True), ("inception", 30, 1, False), ("residual", 24, 2, True)])
def test_the_batched_multiplier_search_ends_where_the_stepwise_one_does(graph):
    """The pattern search over the Lagrangian multipliers prices the moves of every remaining step in one
    compiled call; it must take the same moves as one step at a time — from a cold start, from a warm one
    (the last call's pair), with and without a memory multiplier — and it does take fewer calls."""
    from viz_place.samples import make_graph
    from viz_place.solvers.milp.set_pricing import _critical_ratio
    g = make_graph(graph[0], graph[1], graph[2], training=graph[3])
    prob = compile_problem(g, g.default_cluster)
    sources = Sources.of(prob)
    t = next(t for t in device_types(prob, allowed_devices(prob, {})) if t.pay)
    rng = np.random.default_rng(graph[2])
    T = 0.3 * float(t.work[np.isfinite(t.work)].sum())
    batched, stepwise = ExactPricer(t, sources), ExactPricer(t, sources)
    calls = {"batched": 0, "stepwise": 0}
    for name, pricer in (("batched", batched), ("stepwise", stepwise)):
        roots = pricer._roots

        def counted(*args, _name=name, _roots=roots):
            calls[_name] += 1
            return _roots(*args)
        pricer._roots = counted
    searched = 0
    for trial in range(12):
        pi = rng.uniform(-0.2, 1.0, len(t.mem))
        ok = np.isfinite(t.work) & (pi > 0)
        lam0 = _critical_ratio(pi[ok], t.work[ok], T)
        mu0 = _critical_ratio(pi[ok], t.mem[ok], t.capacity) if trial % 3 and np.isfinite(t.capacity) else 0.0
        if lam0 <= 0:
            continue
        if trial % 4 == 0:
            batched._ab = stepwise._ab = None      # a cold start now and then
        start = stepwise._ab if stepwise._ab is not None else (0.75, 0.25 if mu0 > 0 else 0.0)
        assert batched._ab == stepwise._ab
        got = batched._search_multipliers(pi, T, lam0, mu0)
        want = stepwise._search_stepwise(pi, T, lam0, mu0, *start)
        assert got == want and batched._ab == stepwise._ab, (trial, got, want)
        searched += 1
    assert searched >= 8
    assert calls["batched"] < calls["stepwise"], calls


@pytest.mark.skipif(not _pricing_dp_built(), reason="the pricing DP's extension was not built (no C compiler)")
def test_exact_pricing_returns_several_columns_that_fit():
    """Besides the maximum, the pricing hands back up to ``keep - 1`` other sets (the best its beam and exact
    runs met): on a generated training graph, with and without the beam, several distinct sets, each within
    ``T`` and the memory, none dearer than the first (the maximum); ``keep = 1`` gives the maximum alone."""
    from viz_place.samples import make_graph
    g = make_graph("inception", 40, 1, training=True)
    prob = compile_problem(g, g.default_cluster)
    types = device_types(prob, allowed_devices(prob, {}))
    sources = Sources.of(prob)
    t = next(t for t in types if t.pay)
    T = 0.5 * simple_lower_bound(g, g.default_cluster)[0] * len(prob.groups) / max(1, len(t.groups))
    pi = np.random.default_rng(0).uniform(-0.2, 1.0, len(prob.groups))
    for beam in (0, 2000):
        pricer = ExactPricer(t, sources)
        pricer.beam = beam
        ub, sets = pricer.solve(pi, T, 20.0)
        assert pricer.last_exact and 3 <= len(sets) <= pricer.keep, (beam, len(sets))
        assert len({s.tobytes() for s in sets}) == len(sets)
        assert float(pi[sets[0]].sum()) == pytest.approx(ub, rel=1e-6)
        for s in sets:
            assert set_load(t, sources, s) <= T * (1 + 1e-9) and float(t.mem[s].sum()) <= t.capacity
            assert float(pi[s].sum()) <= float(pi[sets[0]].sum()) + 1e-9
        pricer.keep = 1
        assert len(pricer.solve(pi, T, 20.0)[1]) == 1


@pytest.mark.skipif(not _pricing_dp_built(), reason="the pricing DP's extension was not built (no C compiler)")
def test_exact_pricing_hands_over_to_the_milp_beyond_its_label_limit(monkeypatch):
    from viz_place.solvers.milp import set_pricing
    inst = chatty_instance(301, 8, 9)
    prob, types, sources, G = _pricing_problem(inst)
    t = types[0]
    pi = np.random.default_rng(1).uniform(-0.2, 1.0, G)
    T = simple_lower_bound(inst.graph, inst.cluster)[0]
    exact, _ = ExactPricer(t, sources).solve(pi, T, 10.0)
    monkeypatch.setattr(set_pricing, "LABEL_LIMIT", 2)
    pricer = ExactPricer(t, sources)
    ub, sets = pricer.solve(pi, T, 10.0)
    assert not pricer.last_exact and ub >= exact - 1e-9   # the MILP's bound: never below the maximum
    assert all(_fits(t, sources, s, T * (1 + 1e-6)) for s in sets)


def _brute_forced_chatty(seeds: int):
    """The chatty instances among the first ``seeds`` that brute force can solve, as
    ``(seed, instance, optimum, compiled problem, simple floor)``."""
    for seed in range(seeds):
        inst = chatty_instance(seed)
        if combos(inst) > MAX_COMBOS:
            continue
        best = brute_force(inst, "max_load")
        if np.isfinite(best):
            prob = compile_problem(inst.graph, inst.cluster)
            yield seed, inst, best, prob, simple_lower_bound(inst.graph, inst.cluster)[0]


def test_set_bound_never_exceeds_brute_force_and_lifts_the_simple_bound():
    lifted = checked = 0
    for seed, inst, best, prob, floor in _brute_forced_chatty(60):
        sb = set_partition_bound(prob, allowed_devices(prob, inst.pins), floor=floor, target=best,
                                 deadline=time.perf_counter() + 10)
        checked += 1
        assert floor - 1e-9 <= sb.bound <= best * (1 + 1e-9), (seed, floor, sb.bound, best)
        assert all(not r.refuted for r in sb.probes if r.threshold >= best * (1 + 1e-9))
        lifted += sb.bound > floor * 1.01
    print(f"lifted {lifted} of {checked}")
    assert checked >= 25
    assert lifted >= 0.3 * checked, f"the set bound lifted the simple bound on only {lifted} of {checked}"


def test_refute_keeps_the_threshold_of_a_real_placement_unrefuted():
    """At the max-load of an actual placement its device sets fit: the relaxation is feasible (lp 0)."""
    inst = chatty_instance(7)
    prob = compile_problem(inst.graph, inst.cluster)
    allowed = allowed_devices(prob, inst.pins)
    types = device_types(prob, allowed)
    sources = Sources.of(prob)
    p = run_solver("local-search", inst.graph, inst.cluster, options={"seed": 0})
    dev = prob.to_index_array(p)
    T = evaluate_indices(prob, dev).max_load
    r = refute(types, sources, T, pricers=[Pricer(t, sources) for t in types],
               columns=placement_columns(prob, types, dev), deadline=time.perf_counter() + 10)
    assert not r.refuted and r.lp_value <= 1e-9


def test_prices_carried_to_a_lower_threshold_keep_refuting_and_never_refute_a_real_value():
    """A refutation's best prices (``centre``) start the next one: a threshold below a refuted one is refuted
    again from them, and one at the brute-force optimum never is (any prices give a valid certificate)."""
    from viz_place.solvers.milp.set_bound import column_generation_start
    carried = 0
    for seed, inst, best, prob, floor in _brute_forced_chatty(40):
        types, sources, exact, pool = column_generation_start(prob, allowed_devices(prob, inst.pins))
        T1 = floor + 0.9 * (best - floor)
        r1 = refute(types, sources, T1, pricers=exact, exact=exact, columns=pool, deadline=time.perf_counter() + 5)
        if r1.centre is None:
            continue
        at_best = refute(types, sources, best, pricers=exact, exact=exact, columns=r1.pool, centre=r1.centre,
                         deadline=time.perf_counter() + 5)
        assert not at_best.refuted, (seed, best)
        if r1.refuted:
            r2 = refute(types, sources, (floor + T1) / 2, pricers=exact, exact=exact, columns=r1.pool,
                        centre=r1.centre, deadline=time.perf_counter() + 5)
            assert r2.refuted, (seed, floor, T1)
            carried += 1
    assert carried >= 5, f"only {carried} instances refuted a threshold below the optimum"


def _milp_stops_short(monkeypatch):
    """The integer program ends as if out of time: its incumbent kept, its bound only the floor's."""
    from viz_place.solvers.milp import max_load

    real = max_load.solve_milp

    def short(lp, **kw):
        res = real(lp, **kw)
        if res.has_solution:
            res.bound, res.status, res.stopped_by = 0.0, "feasible", "time limit"
        return res
    monkeypatch.setattr(max_load, "solve_milp", short)


def test_ilp_noncontig_with_the_set_bound_proves_the_brute_force_optimum(monkeypatch):
    """The set bound runs last, when the integer program stopped short: its bound is valid (never above
    brute force) and lifts the simple bound the run would otherwise end with."""
    _milp_stops_short(monkeypatch)
    for seed in (3, 5, 8):
        inst = chatty_instance(seed)
        best = brute_force(inst, "max_load")
        floor = simple_lower_bound(inst.graph, inst.cluster)[0]
        seen = []
        p = run_solver("ilp-noncontig", inst.graph, inst.cluster, progress=lambda ev: seen.append(ev.message),
                       options={"backend": "highs", "time_limit": 20, "set_bound": 0.5,
                                "set_bound_beside": False, "set_bound_comm": 0.0,
                                "lns": 0.0})
        assert p.claimed_value == pytest.approx(best, rel=1e-6)
        assert floor * (1 + 1e-3) < p.lower_bound <= best * (1 + 1e-9), (seed, floor, p.lower_bound, best)
        assert "proven by the set-partitioning bound" in p.message and p.bound_set == "any"
        assert any("set-partitioning bound: nothing fits within" in m for m in seen)


def test_a_failed_master_lp_skips_the_set_bound_and_the_integer_program_still_proves(monkeypatch):
    from viz_place.solvers.milp import set_bound

    def broken(self):
        raise set_bound.MasterFailed("its master LP ended 'Numerical error' (test)")
    monkeypatch.setattr(set_bound.Master, "solve", broken)
    inst = chatty_instance(3)
    best = brute_force(inst, "max_load")
    seen = []
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, progress=lambda ev: seen.append(ev.message),
                   options={"backend": "highs", "time_limit": 20, "set_bound": 0.5,
                            "set_bound_beside": False, "set_bound_comm": 0.0})
    assert p.status == "optimal" and p.claimed_value == pytest.approx(best, rel=1e-6)   # proven without it
    _milp_stops_short(monkeypatch)
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, progress=lambda ev: seen.append(ev.message),
                   options={"backend": "highs", "time_limit": 20, "set_bound": 0.5,
                                "set_bound_beside": False, "set_bound_comm": 0.0,
                            "lns": 0.0})
    assert p.status == "feasible" and p.claimed_value == pytest.approx(best, rel=1e-6)   # the placement is kept
    assert any("set-partitioning bound skipped: its master LP ended 'Numerical error'" in m for m in seen)


def _milp_runs_until_stopped(monkeypatch, given: list, on_start=lambda: None):
    """The integer program ends as if it ran until stopped (its bound only the floor's): beside the set bound,
    by the hooks (the set bound settling the gap, or a cancel) or after 30 s; else at once; ``given`` records
    each time limit it got, ``on_start`` is called as it starts. The set bound's worker is not told the bounds
    it proves meanwhile (else it could stop, the gap settled by them, where the point is its own proof)."""
    from viz_place.solvers.milp import max_load, set_bound_worker
    real = max_load.solve_milp
    monkeypatch.setattr(set_bound_worker.SetBoundWorker, "proven_elsewhere", lambda self, bound: None)

    def until_stopped(lp, **kw):
        given.append(kw["time_limit"])
        on_start()
        res = real(lp, **{**kw, "time_limit": min(kw["time_limit"], 5.0)})
        end = time.perf_counter() + (30 if isinstance(kw["hooks"], BesideHooks) else 0)
        while not kw["hooks"].cancelled and time.perf_counter() < end:
            time.sleep(0.02)
        if res.has_solution:
            res.bound, res.status = 0.0, "feasible"
            res.stopped_by = "cancel" if kw["hooks"].cancelled else "time limit"
        return res
    monkeypatch.setattr(max_load, "solve_milp", until_stopped)


@pytest.mark.skipif(not exact_pricing_built(), reason="the compiled pricing DP is not built")
@pytest.mark.parametrize("seed", [3, 5])
def test_the_set_bound_beside_the_integer_program_settles_the_gap_and_stops_it(monkeypatch, seed):
    """Beside the integer program (its own process), the set bound's proven bound reaches the progress,
    stops the integer program once it settles the gap (not a cancel: the run is not "cancelled") and is the
    run's bound, never above brute force."""
    given: list = []
    _milp_runs_until_stopped(monkeypatch, given)
    inst = chatty_instance(seed)
    best = brute_force(inst, "max_load")
    seen = []
    t0 = time.perf_counter()
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, progress=seen.append,
                   options={"backend": "highs", "threads": 1, "time_limit": 60, "gap": 0.02, "set_bound_comm": 0.0,
                            "lns": 0.0})
    assert time.perf_counter() - t0 < 30, "the set bound did not stop the integer program"
    assert p.status == "feasible" and p.claimed_value == pytest.approx(best, rel=1e-6)
    assert p.claimed_value / p.lower_bound - 1 <= 0.02 + 1e-9 and p.lower_bound <= best * (1 + 1e-9)
    assert "in a process beside the integer program" in p.message
    assert "set-partitioning bound settled the gap" in p.message and p.bound_set == "any"
    proven = [ev.bound for ev in seen if "nothing fits within" in ev.message]
    assert proven and max(proven) == pytest.approx(p.lower_bound, rel=1e-9)
    assert all(ev.data["bound"] >= proven[0] for ev in seen[seen.index(next(
        ev for ev in seen if "nothing fits within" in ev.message)):] if ev.data and "bound" in ev.data)


@pytest.mark.skipif(not exact_pricing_built(), reason="the compiled pricing DP is not built")
def test_a_cancel_during_the_set_bound_beside_ends_the_run_as_cancelled(monkeypatch):
    import threading
    given: list = []
    stop = threading.Event()
    _milp_runs_until_stopped(monkeypatch, given, on_start=stop.set)     # the user presses Stop as it starts
    inst = chatty_instance(3)
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, cancel=stop,
                   options={"backend": "highs", "threads": 1, "time_limit": 60, "gap": 0.0, "set_bound_comm": 0.0,
                            "lns": 0.0})
    assert given and p.status == "cancelled" and p.claimed_value is not None and "cancelled" in p.message


@pytest.mark.skipif(not exact_pricing_built(), reason="the compiled pricing DP is not built")
def test_long_runs_run_the_set_bound_by_default(monkeypatch):
    """With ``set_bound`` and ``lns`` left at their defaults (none): a run of 60 s or more runs the set bound
    beside the integer program, which keeps all but the subset search's 0.3 of the time; without a second
    process (``set_bound_beside=false``) a 300 s run keeps 0.55 for the set bound after it and 0.15 for the
    subset search, a 240 s run none; a 10 s run has no set bound (the integer program's time limit shows
    what it was given)."""
    from viz_place.solvers.milp import max_load, set_bound_worker
    given: list = []
    _milp_runs_until_stopped(monkeypatch, given)
    monkeypatch.setattr(max_load, "run_lns", lambda *a, **kw: None)
    inst = chatty_instance(3)
    opts = {"backend": "highs", "threads": 1, "set_bound_comm": 0.0, "gap": 0.02}
    if set_bound_worker.second_core():
        p = run_solver("ilp-noncontig", inst.graph, inst.cluster, options={**opts, "time_limit": 60})
        assert 60 * 0.7 - 10 < given[-1] <= 60 * 0.7 and "beside the integer program" in p.message
    for seconds, kept in ((300, 1 - 0.55 - 0.15), (240, 1 - 0.3)):
        p = run_solver("ilp-noncontig", inst.graph, inst.cluster,
                       options={**opts, "time_limit": seconds, "set_bound_beside": False})
        assert kept * seconds - 10 < given[-1] <= kept * seconds, (seconds, given)
    p = run_solver("ilp-noncontig", inst.graph, inst.cluster, options={**opts, "time_limit": 10})
    assert 10 * 0.7 - 3 < given[-1] <= 10 * 0.7 and "set-partitioning" not in p.message


@pytest.mark.skipif(not exact_pricing_built(), reason="the compiled pricing DP is not built")
@pytest.mark.parametrize("gap", [0.0, 0.03])
def test_the_worker_never_proves_more_than_brute_force_and_aims_below_better_values(gap):
    """The set bound's process, started from a local-search placement and handed the brute-force optimum's
    value as it runs: it ends by itself (the gap settled, or its relaxation fits), and its bound is proven:
    never above the optimum, never below the floor; with a gap it settles it when it ends that way."""
    from viz_place.solvers.milp.set_bound_worker import SetBoundWorker
    for seed in range(6):
        inst = chatty_instance(seed)
        prob = compile_problem(inst.graph, inst.cluster)
        allowed = allowed_devices(prob, inst.pins)
        floor = simple_lower_bound(inst.graph, inst.cluster)[0]
        dev = prob.to_index_array(run_solver("local-search", inst.graph, inst.cluster, options={"seed": 0}))
        best = brute_force(inst, "max_load")
        w = SetBoundWorker(prob, allowed, floor=floor, value=evaluate_indices(prob, dev).max_load, gap=gap,
                           starts=[dev], seconds=20)
        try:
            w.offer(best)
            assert w.wait(25), (seed, w.messages)
        finally:
            w.stop()
        assert floor - 1e-9 <= w.bound <= best * (1 + 1e-9), (seed, floor, w.bound, best)
        if "settles the gap" in w.messages[-1][1]:
            assert best / w.bound - 1 <= gap + 3e-6, (seed, w.bound, best)   # (its last step: 2e-6)


@pytest.mark.skipif(not exact_pricing_built(), reason="the compiled pricing DP is not built")
def test_a_worker_that_dies_is_not_waited_for():
    """A set bound process killed from outside (out of memory, a signal) counts as finished: the run does not
    wait for it, and its bound stays what it had proven."""
    import os
    import signal
    from viz_place.solvers.milp.set_bound_worker import SetBoundWorker
    inst = chatty_instance(3)
    prob = compile_problem(inst.graph, inst.cluster)
    dev = prob.to_index_array(run_solver("local-search", inst.graph, inst.cluster, options={"seed": 0}))
    floor = simple_lower_bound(inst.graph, inst.cluster)[0]
    w = SetBoundWorker(prob, allowed_devices(prob, inst.pins), floor=floor, value=evaluate_indices(prob, dev).max_load,
                       gap=0.0, starts=[dev], seconds=60)
    try:
        os.kill(w._proc.pid, signal.SIGKILL)
        assert w.wait(10) and "its process ended (exit code -9)" in w.messages[-1][1]
        assert w.bound >= floor
    finally:
        w.stop()


def test_prices_alone_certify_only_thresholds_below_the_brute_force_optimum():
    """:func:`certified_threshold`: whatever the prices (a refutation's, one cut short, or random ones), the
    threshold they certify is below the brute-force optimum (at the optimum a placement fits); a refutation's
    prices certify the lower half of its threshold's range, and prices of a column generation cut short at
    the optimum (where nothing can be refuted) still certify something above the floor on some instances."""
    from viz_place.solvers.milp.set_bound import certificate, certified_threshold, column_generation_start
    rng = np.random.default_rng(0)
    checked = below_refuted = from_short = 0
    for seed, inst, best, prob, floor in _brute_forced_chatty(40):
        types, sources, exact, pool = column_generation_start(prob, allowed_devices(prob, inst.pins))
        T1 = floor + 0.9 * (best - floor)
        r1 = refute(types, sources, T1, pricers=exact, exact=exact, columns=pool, deadline=time.perf_counter() + 5)
        short = refute(types, sources, best, pricers=exact, exact=exact, columns=pool,   # straight to exact rounds
                       deadline=time.perf_counter() + 0.05, beam_rounds=False)
        G = len(prob.groups)
        for pi in [p for p in (r1.centre, short.centre) if p is not None] + [rng.uniform(-0.2, 1.0, G)]:
            got = certified_threshold(types, exact, pi, floor, best * 1.5, deadline=time.perf_counter() + 10,
                                      steps=10)
            assert floor <= got < best * (1 - 1e-9) or got == floor, (seed, floor, got, best)
            assert not certificate(types, exact, pi, best, deadline=time.perf_counter() + 10) > 1e-6, seed
        if r1.refuted:
            got = certified_threshold(types, exact, r1.centre, floor, T1, deadline=time.perf_counter() + 10)
            assert got >= floor + (T1 - floor) * (1 - 2 ** -6) - 1e-9, (seed, floor, got, T1)  # all of it
            below_refuted += 1
        if short.centre is not None:
            from_short += certified_threshold(types, exact, short.centre, floor, best,
                                              deadline=time.perf_counter() + 10) > floor
        checked += 1
    print(f"prices cut short at the optimum certified above the floor on {from_short} of {checked}")
    assert checked >= 20 and below_refuted >= 5 and from_short >= 1, (checked, below_refuted, from_short)


@pytest.mark.parametrize("shape", ["line", "steps"])
def test_certified_threshold_finds_where_the_certificate_turns_and_prices_that_prove_nothing_cost_one_pricing(
        monkeypatch, shape):
    """:func:`certified_threshold` searches between a threshold proven and one not (secant steps, every other
    one bisection) with the certificate of the prices as a function of the threshold (here stubbed: a
    straight line, as on large graphs, or steps, as on small ones): the threshold it returns is certified and
    within the tolerance (the line) or a few bisections (steps) of where the certificate turns; the certificate
    at ``hi``, when given, is not priced again; prices that prove nothing just above ``lo`` cost one pricing."""
    from viz_place.solvers.milp import set_bound
    turn, calls = 63.3, []

    def certificate(types, exact, pi, T, *, deadline):
        calls.append(T)
        if shape == "line":
            return float(pi[0]) * (turn - T)
        return float(pi[0]) * (0.5 if T < turn - 0.4 else 0.2 if T < turn else -0.3)
    monkeypatch.setattr(set_bound, "certificate", certificate)
    up = np.ones(3)
    got = set_bound.certified_threshold(None, None, up, 61.0, 64.0, deadline=time.perf_counter() + 5,
                                        at_hi=certificate(None, None, up, 64.0, deadline=0))
    priced = calls[1:]
    assert 64.0 not in priced and len(priced) <= 6
    assert got < turn and certificate(None, None, up, got, deadline=0) > set_bound.CERTIFICATE_MARGIN
    assert got >= (turn * (1 - 2 * set_bound.PROBE_TOL) if shape == "line" else turn - 3.0 / 2 ** 2), (got, priced)
    calls.clear()
    nothing = -np.ones(3)           # a certificate below zero everywhere: proves nothing
    assert set_bound.certified_threshold(None, None, nothing, 61.0, 64.0, deadline=time.perf_counter() + 5) == 61.0
    assert len(calls) == 1


class _StandInWorker:
    """What :class:`BesideHooks` asks of a worker: its best bound and placement, nothing more (no process)."""

    def __init__(self, bound: float, value: float, placement) -> None:
        self.bound, self.proven, self.floor, self.value, self.placement = bound, 0.0, 10.0, value, placement

    def offer(self, value) -> None: ...

    def proven_elsewhere(self, bound) -> None: ...

    def poll(self) -> list:
        return []

    def settles(self, gap: float) -> bool:
        return False


@pytest.mark.parametrize("dive", [False, True])
def test_a_phase_report_states_the_run_s_gap_with_the_set_bound_s_figures(dive):
    """A phase reports its own best and bound (the subset search: against the packing floor); when the set bound
    proved more (or dived to a better placement), the message says so and gives the gap with those figures —
    not only the phase's, which once read "gap 5.04%; bound 74.8606 (set-partitioning bound)" for 76.58."""
    from viz_place.solvers.base import Hooks
    from viz_place.solvers.milp.backends import progress_data
    seen = []
    worker = _StandInWorker(bound=74.8606, value=76.0 if dive else 80.0, placement=np.zeros(3) if dive else None)
    hooks = BesideHooks(Hooks(seen.append), worker, gap=0.01)
    hooks.report(None, "re-solving device subsets: best 76.5818, bound 72.905, gap 5.04%", incumbent=76.5818,
                 bound=72.905, force=True, data=progress_data(1.0, 76.5818, 72.905))
    p = seen[-1]
    best = 76.0 if dive else 76.5818
    assert p.bound == 74.8606 and p.incumbent == best
    assert p.data["gap"] == pytest.approx(best / 74.8606 - 1)
    said = f"gap {100 * (best / 74.8606 - 1):.3g}%"
    assert p.message.endswith(said) and "bound 74.8606 (set-partitioning bound)" in p.message
    assert ("best 76 (set-partitioning dive)" in p.message) == dive
    hooks.report(None, "MILP: best 74.9, bound 74.87, gap 0.04%", incumbent=74.9, bound=74.87, force=True)
    assert seen[-1].message == "MILP: best 74.9, bound 74.87, gap 0.04%" and seen[-1].bound == 74.87   # nothing better
