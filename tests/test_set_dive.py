"""Placements from the set-partitioning relaxation (issue #16): dives build valid placements within their
threshold (never below the brute-force optimum, their value the evaluator's), the process beside the
integer program hands them over checked by the evaluator, and the MILP back-end takes a solution found
elsewhere through ``incoming``."""
from __future__ import annotations

import functools
import time

import numpy as np
import pulp
import pytest

from _ilp_brute import brute_force
from test_set_bound import chatty_instance
from viz_place.cost import compile_problem, evaluate_indices, simple_lower_bound
from viz_place.solvers import run_solver
from viz_place.solvers.base import Hooks
from viz_place.solvers.groups import allowed_devices
from viz_place.solvers.milp import available_backends
from viz_place.solvers.milp.backends import solve_milp
from viz_place.solvers.milp.set_bound import column_generation_start, refute
from viz_place.solvers.milp.set_bound_worker import SetBoundWorker
from viz_place.solvers.milp.set_dive import dive
from viz_place.solvers.milp.set_pricing import exact_pricing_built

pytestmark = [pytest.mark.skipif("highs" not in available_backends(), reason="dives need HiGHS (highspy)"),
              pytest.mark.skipif(not exact_pricing_built(), reason="the compiled pricing DP is not built")]


@functools.lru_cache(maxsize=None)
def _best(seed: int) -> float:
    return brute_force(chatty_instance(seed), "max_load")


def _start(inst):
    prob = compile_problem(inst.graph, inst.cluster)
    allowed = allowed_devices(prob, inst.pins)
    dev = prob.to_index_array(run_solver("local-search", inst.graph, inst.cluster, options={"seed": 0}))
    return prob, allowed, dev


def test_dives_build_valid_placements_within_their_threshold():
    """On small instances where communication decides: at thresholds where the relaxation fits (5 % and
    15 % above the brute-force optimum), a dive's placement is valid, its value is the evaluator's
    max-load, at most the threshold and never below the optimum; and dives succeed on most of them."""
    tried = succeeded = 0
    for seed in range(10):
        inst = chatty_instance(seed)
        prob, allowed, dev = _start(inst)
        best = _best(seed)
        types, sources, exact, pool = column_generation_start(prob, allowed, [dev])
        for over in (1.05, 1.15):
            T = best * over
            r = refute(types, sources, T, pricers=exact, exact=exact, columns=pool, deadline=time.perf_counter() + 20)
            assert not r.refuted, (seed, T, best)          # a placement fits within T: never refuted
            if r.lp_value > 1e-9:
                continue
            tried += 1
            got = dive(prob, types, sources, T, pool=r.pool, first=r, deadline=time.perf_counter() + 20)
            if got is None:
                continue
            succeeded += 1
            ev = evaluate_indices(prob, got[0], pins=inst.pins)
            assert ev.feasible, (seed, ev.violations)
            assert got[1] == pytest.approx(ev.max_load, rel=1e-9)
            assert best * (1 - 1e-9) <= ev.max_load <= T * (1 + 1e-9), (seed, best, ev.max_load, T)
    assert tried >= 10 and succeeded >= 0.8 * tried, (tried, succeeded)


def test_a_dive_with_a_ceiling_stays_below_it():
    """Given a ceiling (the best value known), a dive that gets stuck at its threshold may raise it, but its
    placement stays within the ceiling."""
    dived = 0
    for seed in range(6):
        inst = chatty_instance(seed)
        prob, allowed, dev = _start(inst)
        best = _best(seed)
        types, sources, exact, pool = column_generation_start(prob, allowed, [dev])
        ceiling = evaluate_indices(prob, dev).max_load
        T = best * 1.01
        r = refute(types, sources, T, pricers=exact, exact=exact, columns=pool, deadline=time.perf_counter() + 20)
        if r.lp_value > 1e-9:
            continue
        got = dive(prob, types, sources, T, pool=r.pool, first=r, ceiling=max(ceiling, T),
                   deadline=time.perf_counter() + 20)
        if got is not None:
            dived += 1
            assert best * (1 - 1e-9) <= got[1] <= max(ceiling, T) * (1 + 1e-9)
            assert evaluate_indices(prob, got[0]).feasible
    assert dived >= 3, dived


def test_the_worker_hands_over_better_placements_checked_by_the_evaluator():
    """Told of a poor value (half as much again as a local search's), the process beside finds a better
    placement by diving; the parent keeps it only as the evaluator values it, and a placement the
    evaluator rejects is dropped with a message, never kept."""
    inst = chatty_instance(3)
    prob, allowed, dev = _start(inst)
    value = evaluate_indices(prob, dev).max_load * 1.5
    floor = simple_lower_bound(inst.graph, inst.cluster)[0]
    checked = []

    def check(d):
        ev = evaluate_indices(prob, d, pins=inst.pins)
        checked.append(ev.max_load)
        return ev.max_load if ev.feasible else None
    w = SetBoundWorker(prob, allowed, floor=floor, value=value, gap=0.01, starts=[dev], seconds=20, check=check)
    try:
        w.wait(25)
    finally:
        w.stop()
    assert w.placement is not None and checked, w.messages
    d, v = w.placement
    assert v < value and v == pytest.approx(evaluate_indices(prob, d).max_load, rel=1e-12) and w.value == v
    assert any("set-partitioning dive: a placement of" in m for _, m in w.messages)
    w = SetBoundWorker(prob, allowed, floor=floor, value=value, gap=0.01, starts=[dev], seconds=10,
                       check=lambda d: None)
    try:
        w.wait(15)
    finally:
        w.stop()
    assert w.placement is None and w.value == value
    assert any("was dropped (the evaluator rejects it)" in m for _, m in w.messages), w.messages


def test_the_back_end_takes_a_solution_from_elsewhere():
    """``solve_milp(incoming=...)``: HiGHS asks for solutions found elsewhere as it searches, and the run
    ends at least as good as the one handed over."""
    rng = np.random.default_rng(0)
    n = 40
    lp = pulp.LpProblem("knapsack", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(n)]
    w, c = rng.integers(10, 100, n), rng.integers(10, 100, n)
    lp += pulp.lpSum(int(c[i]) * x[i] for i in range(n))
    lp += pulp.lpSum(int(w[i]) * x[i] for i in range(n)) >= int(w.sum() // 2)
    plain = solve_milp(lp, backend="highs", time_limit=20, threads=1)
    asked = []

    def incoming(incumbent, bound):
        asked.append((incumbent, bound))
        return (plain.objective, plain.values) if len(asked) == 1 else None
    res = solve_milp(lp, backend="highs", time_limit=20, threads=1, incoming=incoming)
    assert asked and res.objective == pytest.approx(plain.objective) and res.status == "optimal"


def test_a_dive_that_beats_the_incumbent_is_improved_by_subsets_before_the_integer_program_takes_it():
    """``ilp-noncontig``'s ``incoming`` (:class:`~viz_place.solvers.milp.max_load._DiveOffers`): a dive's
    placement better than the integer program's incumbent is first re-solved by device subsets; what it
    hands over is a valid placement, the evaluator's value, never worse than the dive, each dive once; a
    dive that does not beat the incumbent, or ``lns_dive=0``, goes over as it is; and HiGHS ends at least
    as good as what it was handed."""
    from types import SimpleNamespace

    from test_neighbourhoods import _instances
    from viz_place.solvers.contract import Objective, Problem
    from viz_place.solvers.milp.assignment import build_model
    from viz_place.solvers.milp.max_load import IlpNoncontigOptions, _DiveOffers

    def decode(prob, x, values):
        dev = np.full(prob.n, -1, dtype=np.int64)
        for (g, d), var in x.items():
            if values[var.name] > 0.5:
                dev[list(prob.groups[g])] = d
        return dev

    improved = checked = 0
    nested = False
    for seed, inst, prob, allowed, start in _instances(12200, 40):
        problem = Problem(inst.graph, inst.cluster, dict(inst.pins), prob, None, Objective("max_load"))
        value = problem.value(start)
        lp, x, _ = build_model(prob, allowed, IlpNoncontigOptions(backend="highs", threads=1), [], None)
        worker = SimpleNamespace(placement=(start, value), bound=0.0)
        for lns_dive, incumbent in ((0.5, None), (0.5, 2 * value), (0.5, value), (0.0, 2 * value)):
            opts = IlpNoncontigOptions(backend="highs", threads=1, time_limit=10, lns_dive=lns_dive)
            offers = _DiveOffers(problem, worker, x, [], allowed, opts, Hooks(),
                                 deadline=time.perf_counter() + 10)
            handed, values = offers(incumbent, None)
            dev = decode(prob, x, values)
            ev = evaluate_indices(prob, dev, pins=inst.pins)
            assert not ev.violations, (seed, ev.violations)
            assert handed == pytest.approx(ev.max_load, rel=1e-9) and handed <= value * (1 + 1e-9)
            assert offers(incumbent, None) is None                  # each dive once
            searched = lns_dive > 0 and (incumbent is None or value < incumbent)
            assert offers.searches == int(searched), (seed, lns_dive, incumbent)
            if not searched:
                assert np.array_equal(dev, start) and offers.best is None
            elif handed < value * (1 - 1e-9):
                assert offers.best is not None and offers.best[1] == pytest.approx(handed, rel=1e-12)
                improved += incumbent is None
        if improved and not nested:     # the sub-MILPs run inside HiGHS's callback; it takes what they found
            offers = _DiveOffers(problem, worker, x, [], allowed,
                                 IlpNoncontigOptions(backend="highs", threads=1, time_limit=10, lns_dive=0.5),
                                 Hooks(), deadline=time.perf_counter() + 10)
            res = solve_milp(lp, backend="highs", time_limit=10, threads=1,
                             incoming=lambda incumbent, bound: offers(None, bound))
            assert offers.searches == 1 and offers.best is not None, seed
            assert res.status == "optimal" and res.objective <= offers.best[1] * (1 + 1e-6)
            nested = True
        checked += 1
    assert checked >= 15 and improved >= checked // 3 and nested, (checked, improved)


@pytest.mark.parametrize("resists_until, halfway", [(0.3, True), (2.5, False)])
def test_a_resisting_aim_is_dived_from_only_in_the_first_half_of_the_workers_time(monkeypatch, resists_until, halfway):
    """The worker's loop without a gap (run in this process, its column generation stubbed: no threshold is
    ever refuted or fits; with a gap the aim is held instead, see below): an aim that resists early is
    followed by one refutation halfway to the best value (the start of a dive); one that resists only after
    half the worker's time is refuted with all the time left, and no threshold above the aim is ever tried."""
    import queue
    from types import SimpleNamespace
    from viz_place.solvers.milp import set_bound, set_bound_worker
    tried = []

    def refute(types, sources, T, *, deadline, **kw):
        tried.append(T)
        time.sleep(max(0.0, min(deadline, started + resists_until) - time.perf_counter()) if len(tried) == 1 else 0.02)
        return SimpleNamespace(refuted=False, lp_value=0.5, pool=[], centre=None, iterations=1, columns=0, seconds=0.0)
    monkeypatch.setattr(set_bound, "refute", refute)
    monkeypatch.setattr(set_bound, "column_generation_start", lambda prob, allowed, starts: (None, None, None, []))
    monkeypatch.setattr(set_bound_worker, "DIVE_AFTER", resists_until)
    out, best, value, gap = queue.Queue(), SimpleNamespace(value=47.0), 47.0, 0.0
    started = time.perf_counter()
    set_bound_worker._work(None, [], 40.0, gap, [], 4.0, best, out)   # half: 2 s
    target = set_bound_worker.aim(value, 40.0, np.inf, gap)           # halfway from the floor to the value
    assert tried[0] == pytest.approx(target) and len(tried) > 2
    above = [T for T in tried if T > target * (1 + 1e-9)]
    assert above == ([pytest.approx((target + value) / 2)] if halfway else []), tried
    assert tried[1] == (pytest.approx((target + value) / 2) if halfway else pytest.approx(target))


def test_the_halfway_dive_takes_its_share_of_the_time_left_in_all(monkeypatch):
    """The halfway dive beside a resisting aim (no gap; its column generation, then the dive in the relaxation) ends
    by the same deadline, ``DIVE_SHARE`` of the time left when it starts but at most ``DIVE_MAX_SHARE`` of the
    worker's time, so the aim is refuted with the rest (on residual_75_s2_training a dive given all the time
    left once took 140 s and found nothing; on inception_100_s2_training one took 114 s of 250)."""
    import queue
    from types import SimpleNamespace
    from viz_place.solvers.milp import set_bound, set_bound_worker, set_dive
    calls = []

    def refute(types, sources, T, *, deadline, **kw):
        calls.append(("refute", T, time.perf_counter(), deadline))
        halfway = T > target * (1 + 1e-9)
        time.sleep(0.02 if halfway else max(0.0, min(deadline, time.perf_counter() + 0.3) - time.perf_counter()))
        return SimpleNamespace(refuted=False, lp_value=0.0 if halfway else 0.5, pool=[], centre=None,
                               iterations=1, columns=0, seconds=0.0)

    def dive(prob, types, sources, T, *, deadline, **kw):
        calls.append(("dive", T, time.perf_counter(), deadline))
        return None
    monkeypatch.setattr(set_bound, "refute", refute)
    monkeypatch.setattr(set_dive, "dive", dive)
    monkeypatch.setattr(set_bound, "column_generation_start", lambda prob, allowed, starts: (None, None, None, []))
    monkeypatch.setattr(set_bound_worker, "DIVE_AFTER", 0.3)
    value, gap = 47.0, 0.0
    target = set_bound_worker.aim(value, 40.0, np.inf, gap)
    end = time.perf_counter() + 4.0
    set_bound_worker._work(None, [], 40.0, gap, [], 4.0, SimpleNamespace(value=value), queue.Queue())
    kinds = [c[0] for c in calls]
    assert kinds[:3] == ["refute", "refute", "dive"], kinds
    (_, _, started, cg_deadline), (_, T_dive, _, dive_deadline) = calls[1], calls[2]
    assert T_dive == pytest.approx((target + value) / 2)
    share = min(set_bound_worker.DIVE_SHARE * (end - started), set_bound_worker.DIVE_MAX_SHARE * 4.0)
    assert dive_deadline == cg_deadline == pytest.approx(started + share, abs=0.05)
    assert calls[3][:2] == ("refute", pytest.approx(target))     # then the aim again, with the rest of the time


def test_a_resisting_aim_leaves_the_worker_proving_lower_thresholds_from_the_best_bound(monkeypatch):
    """The worker's loop without a gap (column generation stubbed: nothing is ever refuted or fits; each
    attempt runs to its deadline): the aim is halfway from the best bound proven — its own or the integer
    program's (``proven``) — to the value; the prices of an attempt cut short are probed for a lower threshold
    they prove; once the aim resists (``RESIST_MIN_S`` here), the next threshold is halfway from the best bound
    proven up to the lowest threshold that resisted; when the integer program proves more than that, the aim
    is tried again."""
    import queue
    from types import SimpleNamespace
    from viz_place.solvers.milp import set_bound, set_bound_worker
    tried, probes = [], []
    proven = SimpleNamespace(value=45.0)

    def refute(types, sources, T, *, deadline, **kw):
        tried.append(T)
        if len(tried) == 5:
            proven.value = 46.1          # the integer program proves more than every threshold that resisted
        time.sleep(max(0.0, deadline - time.perf_counter()))
        return SimpleNamespace(refuted=False, lp_value=0.5, pool=[], centre=np.ones(3), certificate=-0.1,
                               iterations=1, columns=0, seconds=0.2)

    def certified_threshold(types, exact, pi, lo, hi, *, deadline, steps=6, at_hi=None):
        probes.append((lo, hi))
        return lo + 0.5 if len(probes) == 1 else lo      # the first attempt's prices prove 0.5 more
    monkeypatch.setattr(set_bound, "refute", refute)
    monkeypatch.setattr(set_bound, "certified_threshold", certified_threshold)
    monkeypatch.setattr(set_bound, "column_generation_start", lambda prob, allowed, starts: (None, None, None, []))
    monkeypatch.setattr(set_bound_worker, "DIVE_AFTER", 0.2)
    monkeypatch.setattr(set_bound_worker, "DIVE_MIN_LEFT", 1.0)       # no halfway dive
    monkeypatch.setattr(set_bound_worker, "RESIST_MIN_S", 0.2)
    monkeypatch.setattr(set_bound_worker, "RESIST_SHARE", 0.0)
    out, value, gap = queue.Queue(), 47.0, 0.0
    set_bound_worker._work(None, [], 40.0, gap, [], 2.0, SimpleNamespace(value=value), out, proven)
    said = []
    while not out.empty():
        said.append(out.get())
    assert len(tried) >= 6, tried
    A0, A1 = (45.0 + value) / 2, (45.5 + value) / 2          # halfway from the integer program's bound, then ours
    assert probes[0] == (45.0, pytest.approx(A0))                      # above the integer program's bound
    assert ("bound", 45.5) == said[0][:2] and "prices of" in said[0][2]
    assert tried[:4] == [pytest.approx(A0), pytest.approx(A1), pytest.approx((45.5 + A1) / 2),
                         pytest.approx((45.5 + (45.5 + A1) / 2) / 2)], tried
    assert [m[0] for m in said[1:3]] == ["resists", "resists"] and "lower thresholds next" in said[1][2]
    assert tried[5] == pytest.approx((46.1 + value) / 2), tried   # 46.1 proven above every resisted one: the aim
    assert said[-1][0] == "done"


def test_the_worker_stops_once_the_integer_programs_bound_settles_the_gap(monkeypatch):
    """A bound proven by the integer program that settles the gap ends the worker before any refutation."""
    import queue
    from types import SimpleNamespace
    from viz_place.solvers.milp import set_bound, set_bound_worker
    tried = []
    monkeypatch.setattr(set_bound, "refute", lambda *a, **kw: tried.append(a[2]))
    monkeypatch.setattr(set_bound, "column_generation_start", lambda prob, allowed, starts: (None, None, None, []))
    out = queue.Queue()
    set_bound_worker._work(None, [], 40.0, 0.01, [], 2.0, SimpleNamespace(value=47.0), out,
                           SimpleNamespace(value=46.6))         # 47 / 46.6 - 1 = 0.86 %
    kind, lo, message = out.get_nowait()
    assert (kind, lo, tried) == ("done", 40.0, []) and "46.6 settles the gap" in message


def _run_stubbed_worker(monkeypatch, *, refute, certified_threshold, seconds: float, gap: float = 0.01,
                        value: float = 47.0, **constants) -> list:
    """The worker's loop in this process, its column generation (``refute``) and probes stubbed, some of its
    constants set (``DIVE_AFTER=...``); the floor 40. Returns what it said, in order."""
    import queue
    from types import SimpleNamespace
    from viz_place.solvers.milp import set_bound, set_bound_worker
    monkeypatch.setattr(set_bound, "refute", refute)
    monkeypatch.setattr(set_bound, "certified_threshold", certified_threshold)
    monkeypatch.setattr(set_bound, "column_generation_start", lambda prob, allowed, starts: (None, None, None, []))
    for name, v in constants.items():
        monkeypatch.setattr(set_bound_worker, name, v)
    out = queue.Queue()
    set_bound_worker._work(None, [], 40.0, gap, [], seconds, SimpleNamespace(value=value), out)
    said = []
    while not out.empty():
        said.append(out.get())
    return said


def test_the_worker_probes_prices_during_column_generation_and_keeps_time_for_the_last_attempts(monkeypatch):
    """While one threshold's column generation runs, its best prices are tried on lower thresholds every
    ``PROBE_EVERY`` of the worker's time (``on_round``), each proof reported at once; the attempt stops
    ``PROBE_RESERVE`` of the time before the end, and its last prices are probed in the time kept (before,
    a run's last attempt ended with the time and its prices went unused)."""
    from types import SimpleNamespace
    seconds, attempts, probes = 2.0, [], []

    def refute(types, sources, T, *, deadline, on_round=None, **kw):
        attempts.append((T, time.perf_counter(), deadline))
        while time.perf_counter() < deadline:
            on_round(np.ones(3))          # a round priced exactly: its best prices so far
            time.sleep(0.02)
        return SimpleNamespace(refuted=False, lp_value=0.5, pool=[], centre=np.ones(3), certificate=-0.1,
                               iterations=1, columns=0, seconds=deadline - attempts[-1][1])

    def certified_threshold(types, exact, pi, lo, hi, *, deadline, steps=6, at_hi=None):
        probes.append((time.perf_counter(), lo, hi, deadline))
        return lo + 0.1
    value, gap = 47.0, 0.01
    start = time.perf_counter()
    said = _run_stubbed_worker(monkeypatch, refute=refute, certified_threshold=certified_threshold, seconds=seconds,
                               DIVE_AFTER=100.0, RESIST_MIN_S=100.0,      # one long attempt: no dive, no resisting
                               PROBE_MIN_S=0.3, PROBE_EVERY=0.0, PROBE_RESERVE=0.2)
    (T, _, until), = attempts
    assert T == pytest.approx(value / (1 + gap))
    assert until == pytest.approx(start + seconds * (1 - 0.2), abs=0.05)       # the time kept for the last probe
    during, last = [p for p in probes if p[0] < until], probes[-1]
    assert len(during) >= 3 and all(b[0] - a[0] >= 0.3 - 1e-3 for a, b in zip(during, during[1:])), during
    assert until <= last[0] < start + seconds and last[3] <= start + seconds + 1e-6
    assert [p[1] for p in probes] == pytest.approx([40.0 + 0.1 * i for i in range(len(probes))])  # each from the last
    bounds = [m for m in said if m[0] == "bound"]
    assert [b[1] for b in bounds] == pytest.approx([40.1 + 0.1 * i for i in range(len(probes))])
    assert all("prices of" in b[2] for b in bounds) and said[-1][0] == "done"


def _refute_to_the_deadline(attempts: list, pause: float = 0.02):
    """A stub of :func:`refute` that never refutes nor fits: it records ``(T, deadline)``, reports a round priced
    exactly (prices and their certificate, -0.25) every ``pause`` seconds until the deadline, and ends."""
    from types import SimpleNamespace

    def refute(types, sources, T, *, deadline, on_round=None, **kw):
        attempts.append((T, deadline))
        while time.perf_counter() < deadline:
            on_round(np.ones(3), -0.25)
            time.sleep(pause)
        return SimpleNamespace(refuted=False, lp_value=0.5, pool=[], centre=np.ones(3), certificate=-0.25,
                               iterations=1, columns=0, seconds=1.0)
    return refute


def test_with_a_gap_the_worker_holds_the_aim_to_the_end_and_probes_its_prices(monkeypatch):
    """With a requested gap the aim, value / (1 + gap), is the one threshold that settles it: the worker's loop
    (column generation stubbed: nothing is ever refuted or fits) gives it all its time in one attempt — it
    neither resists nor dives halfway to the value, however short ``DIVE_AFTER`` and ``RESIST_MIN_S`` — and
    proves lower thresholds meanwhile from its prices only, each probe told the certificate at the aim. (On
    inception_100_s2_training, leaving an aim that resisted, and diving halfway from it, ended at 63.03-63.22;
    held, the aim 63.372 was refuted after 165 s of column generation: see docs/proofs.md.)"""
    from viz_place.solvers.milp import set_bound_worker
    seconds, attempts, probes = 1.5, [], []

    def certified_threshold(types, exact, pi, lo, hi, *, deadline, steps=6, at_hi=None):
        probes.append((lo, hi, at_hi))
        return lo + 0.1
    value, gap = 47.0, 0.01
    start = time.perf_counter()
    said = _run_stubbed_worker(monkeypatch, refute=_refute_to_the_deadline(attempts),
                               certified_threshold=certified_threshold, seconds=seconds,
                               DIVE_AFTER=0.1, RESIST_MIN_S=0.1, RESIST_SHARE=0.0, PROBE_MIN_S=0.2, PROBE_EVERY=0.0)
    aim = value / (1 + gap)
    (T, until), = attempts
    assert T == pytest.approx(aim)
    assert until == pytest.approx(start + seconds * (1 - set_bound_worker.PROBE_RESERVE), abs=0.05)
    assert len(probes) >= 3 and all(hi == pytest.approx(aim) and at_hi == -0.25 for _, hi, at_hi in probes)
    kinds = [m[0] for m in said]
    assert "resists" not in kinds and kinds[-1] == "done" and kinds.count("bound") == len(probes), said


def test_probes_during_column_generation_take_at_most_their_share_of_the_time(monkeypatch):
    """Each probe costs a few exact pricings (1-12 s on inception_100_s2_training, where probing every 30 s
    took a fifth of the time column generation needed): probes during an attempt stop once they have taken
    ``PROBE_SHARE`` of the worker's time so far, and start again as that share allows."""
    seconds, probes = 2.0, []

    def certified_threshold(types, exact, pi, lo, hi, *, deadline, steps=6, at_hi=None):
        began = time.perf_counter()
        time.sleep(0.1)                          # a probe of 0.1 s
        probes.append((began, time.perf_counter()))
        return lo
    start = time.perf_counter()
    _run_stubbed_worker(monkeypatch, refute=_refute_to_the_deadline([], pause=0.01),
                        certified_threshold=certified_threshold, seconds=seconds, PROBE_MIN_S=0.0, PROBE_EVERY=0.0, PROBE_RESERVE=0.1, PROBE_SHARE=0.2)
    during = [p for p in probes if p[0] < start + seconds * 0.9 - 0.01]
    assert len(during) >= 3, probes
    for i, (began, _) in enumerate(during):    # before each probe, the ones before it took at most the share
        spent = sum(e - b for b, e in during[:i])
        assert spent <= 0.2 * (began - start) + 1e-3, (i, spent, began - start)
    assert sum(e - b for b, e in during) <= 0.2 * seconds + 0.1 + 1e-3      # at most one probe beyond the share
