"""A set-partitioning (Dantzig–Wolfe) lower bound on the non-contiguous max-load, by column generation.

A device's load depends on its own set of groups alone: compute over the set, plus (for a device
that pays communication) ``transfer_cost(u) * link`` for every data source ``u`` that is in the set
with a successor outside, or outside with a successor inside. So a placement with max-load at most
``T`` is a partition of the groups into at most ``k_t`` sets per device type ``t`` (identical,
unpinned devices form one type; every other device is a type of its own), each set within ``T`` and
within the device's memory. The linear relaxation of that partition problem sees, set by set, the
communication a set must pay *given* its memory and work — which the assignment MILP's relaxation
cannot see (its ``c[u, d] >= |x(u, d) - x(v, d)|`` rows are nearly free at fractional ``x``).

For a threshold ``T``, :func:`refute` runs column generation on the phase-1 LP (minimise the
uncovered share of the groups) and stops with a certificate that no placement has max-load ``<= T``:
dual prices ``pi[g] <= 1`` (one per group) with

    sum(pi) - sum over types of k_t * max(0, best_t) > 0,

where ``best_t`` is an upper bound on ``max pi(S)`` over the sets ``S`` a device of type ``t`` can
hold within ``T`` (the pricing problem: a small MILP, one device of the assignment model with the
prices as objective, solved by HiGHS; its proven dual bound is what enters). Any placement within
``T`` would give a partition whose sets each have ``pi(S) <= best_t``, so ``sum(pi) <= sum k_t
best_t`` — a contradiction. The certificate holds whatever the prices; column generation is only the
way to find good ones. :func:`set_partition_bound` bisects ``T`` between a proven floor and a
target, keeping every column that stays within the next threshold.

The columns and the pricing problems are in :mod:`.set_pricing`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter as _now
from typing import Callable, Sequence

import numpy as np

from ...cost.compiled import CompiledProblem
from .options import SET_BOUND_AUTO_MIN_S, SET_BOUND_AUTO_SHARE, SET_BOUND_BESIDE_MIN_S
from .set_local import LocalPricer
from .set_master import Master, MasterFailed
from .set_pricing import (PRICING_SLACK, DeviceType, ExactPricer, Pricer, Sources, device_types, exact_pricing_built,
                          set_load)

__all__ = ["DeviceType", "ExactPricer", "LocalPricer", "MasterFailed", "Pricer", "Refutation", "SetBound", "Sources",
           "certificate", "certified_threshold", "column_generation_start", "device_types", "placement_columns", "raise_bound_by_set_partition", "refute", "run_set_bound", "set_load",
           "set_bound_mode", "set_bound_share", "set_partition_bound", "wants_set_bound"]

#: A refutation counts only when its certificate is above this (the prices are a fraction of 1 each).
CERTIFICATE_MARGIN = 1e-6
#: :func:`certified_threshold` first tries the prices this share of the way up from the bound proven (when they
#: fail there, they prove nothing: one pricing), and stops when the bracket is within this share of the threshold.
PROBE_FIRST, PROBE_TOL = 1e-3, 1e-4


@dataclass
class Refutation:
    """Result of :func:`refute` at one threshold."""

    threshold: float
    refuted: bool                 # proven: no placement has max-load <= threshold
    certificate: float            # sum(pi) - sum k_t max(0, best_t) (> 0 when refuted)
    lp_value: float               # last restricted master value (0: the relaxation is feasible)
    iterations: int
    columns: int
    seconds: float
    pool: list = field(default_factory=list)   # every column of the master (type index, bool per group)
    log: list = field(default_factory=list)
    values: np.ndarray | None = None           # the last master solution's value of each column of ``pool``
    centre: np.ndarray | None = None           # the prices of the best certificate (``centre`` of the next)


def refute(types: list[DeviceType], sources: Sources, T: float, *, pricers: list[Pricer],
           columns: Sequence[tuple[int, np.ndarray]] = (), deadline: float, smoothing: float = 0.7,
           pricing_limit: float = 30.0, attempt_every: float = 30.0, starts: int = 3,
           exact: Sequence[ExactPricer] | None = None, fixed: np.ndarray | None = None,
           cancelled: Callable[[], bool] = lambda: False, centre: np.ndarray | None = None,
           on_round: Callable[[np.ndarray], None] | None = None, auto_smoothing: bool = True,
           beam_rounds: bool = True, skip_exact: bool = True) -> Refutation:
    """Column generation at threshold ``T``: a certificate that nothing fits (``refuted``), or the
    relaxation is feasible at ``T`` (``lp_value`` 0), or time ran out (neither).

    Each round first tries cheap columns: the local search's; when it finds none, and with ``exact`` and
    ``beam_rounds``, the beam run of each type's pricing DP alone at the master's prices (up to
    :data:`~.set_pricing.SETS_PER_CALL` sets each; refuting 98.874 on inception_120_s3_training took 450-467 s
    before, 106-551 s after in four runs of five, the paths being chaotic; see docs/proofs.md). Only when neither
    adds a column does a round price for a certificate. With ``exact`` (one :class:`ExactPricer` per type), that round
    prices exactly (the label DP, given up to ``pricing_limit``; the MILP ``pricers`` only where it gives up),
    so it is a certificate attempt and adds the best columns; without it the MILPs price with short limits
    and get their full time every ``attempt_every`` seconds. With ``skip_exact``, the slowest type (priced
    last) skips its exact run when its beam already finds a set dear enough that this round's certificate
    cannot beat the best one (so it can neither prove ``T`` nor move the centre): the round adds the beam's
    columns and moves on.

    Prices are smoothed (Wentges): the pricing problems see ``a * centre + (1 - a) * master``, where the
    centre is the best certificate's prices so far; a round that adds no column for the master's own
    prices halves ``a`` (at 0 this is plain column generation, whose end is the LP's own certificate).
    ``centre``: prices to start from, typically a refutation's at a threshold above ``T`` (every set that
    fits within ``T`` fits there, so those prices certify at least as much here as there). ``on_round``
    is called with the best certificate's prices and that certificate after every round that priced exactly
    (a caller may try them on lower thresholds meanwhile: :func:`certified_threshold`)."""
    t0 = _now()
    G = len(types[0].mem)
    master = Master(G, types, fixed=fixed)
    for ti, s in columns:
        t = types[ti]
        if np.isfinite(t.work[s]).all() and float(t.mem[s].sum()) <= t.capacity and \
                set_load(t, sources, s) <= T:
            master.add(ti, s)
    for ti, t in enumerate(types):   # singletons keep the master near feasibility
        for g in t.groups.tolist():
            s = np.zeros(G, dtype=bool)
            s[g] = True
            if t.mem[g] <= t.capacity and set_load(t, sources, s) <= T:
                master.add(ti, s)
    local = [LocalPricer(t, sources) for t in types]
    limit = first_limit = min(0.5, pricing_limit)
    last_attempt = t0
    best_cert, it, a = -np.inf, 0, float(smoothing)
    seconds_of = [0.0] * len(types)     # each type's last pricing time (the slowest is priced last)
    last_max: list[np.ndarray | None] = [None] * len(types)     # each type's last set priced exactly
    if centre is not None:
        centre = np.where(master.fixed, 0.0, np.asarray(centre, dtype=float))
    log = []
    lp, values = np.inf, None
    while _now() < deadline and not cancelled():
        it += 1
        lp, pi_m, m, values = master.solve()
        if lp <= 1e-9:
            break
        added = 0
        best_local: list[np.ndarray] = []
        for ti, t in enumerate(types):      # cheap columns first: local search from the best columns
            found = [local[ti].improve(pi_m, T, start) for start in master.dearest(ti, pi_m, starts) +
                     [np.zeros(G, dtype=bool)]]
            best_local.append(max(found, key=lambda s: float(pi_m[s].sum())))
            for s in found:
                if float(pi_m[s].sum()) > m[ti] + 1e-9 and master.add(ti, s):
                    added += 1
        if added:
            log.append((round(_now() - t0, 3), round(lp, 6), None, len(master.columns), "local"))
            continue
        if exact is not None and beam_rounds:     # then the pricing DP's beam alone, at the master's prices
            for ti in range(len(types)):
                for s in exact[ti].solve(pi_m, T, max(0.01, deadline - _now()), beam_only=True)[1]:
                    if float(pi_m[s].sum()) > m[ti] + 1e-9 and master.add(ti, s):
                        added += 1
            if added:
                log.append((round(_now() - t0, 3), round(lp, 6), None, len(master.columns), "beam"))
                continue
        pi = pi_m if centre is None or a <= 0 else a * centre + (1 - a) * pi_m
        cert, spent = float(pi.sum()), [0.0] * len(types)
        cover = np.zeros(G)     # what the priced sets cover: 1 - cover is a supergradient of the certificate at pi
        skipped = False         # the last type's exact run skipped: this certificate is below the best (-inf)
        # now and then a certificate attempt: the pricing MILPs get their full time to prove their bounds
        attempt = _now() - last_attempt >= attempt_every
        if attempt:
            last_attempt = _now()
        # the pricing MILPs may stop once their bound is within a share of what the certificate can spare
        slack = max(1e-7, 0.8 * lp / sum(t.count for t in types))
        # the slowest type last (as the last round took): it is told the value at which the certificate would
        # prove T, so the label DP prunes every set that cannot reach it (see _certifying_price)
        order = sorted(range(len(types)), key=lambda ti: seconds_of[ti])
        for ti in order:
            t = types[ti]
            left = deadline - _now()
            if left <= 0:
                cert = -np.inf
                break
            pricer = exact[ti] if exact is not None else pricers[ti]
            start, floor, more = best_local[ti], 0.0, {}
            if exact is not None:       # the start nearest the maximum: the local search at these prices, from the
                # master's best set and from this type's last maximum (prices change little between rounds)
                start = max((local[ti].improve(pi, T, s) for s in (start, last_max[ti]) if s is not None),
                            key=lambda s: float(pi[s].sum()))
                if ti == order[-1]:
                    floor = _certifying_price(cert, t.count)
                    if skip_exact and np.isfinite(best_cert):   # its beam may show that no better centre is here
                        more = {"enough": (cert - best_cert) / t.count}
            ub, sets = pricer.solve(pi, T, min(pricing_limit if attempt or exact is not None else limit, left),
                                    abs_gap=slack, start=start, floor=floor, **more)
            if sets and exact is not None and pricer.last_exact:
                last_max[ti] = sets[0]
            seconds_of[ti] = spent[ti] = round(pricer.last_seconds, 2)
            skipped = skipped or pricer.last_skipped
            cert -= t.count * ub
            if sets and float(pi[sets[0]].sum()) > 0:
                cover += t.count * sets[0]
            for s in sets:
                if float(pi_m[s].sum()) > m[ti] + 1e-9 and master.add(ti, s):
                    added += 1
        if auto_smoothing and centre is not None and (np.isfinite(cert) or skipped):
            # Pessoa et al. (2018): the certificate rises from pi towards the master's prices: smooth less;
            # else more
            sub = np.where(master.fixed, 0.0, 1.0 - cover)
            a = max(0.0, a - 0.1) if float(sub @ (pi_m - centre)) > 0 else min(0.99, a + 0.1 * (1 - a))
        if cert > best_cert:
            best_cert, centre = cert, pi.copy()
        if on_round is not None and centre is not None and cert > -np.inf:
            on_round(centre, best_cert)
        log.append((round(_now() - t0, 3), round(lp, 6), None if skipped else round(cert, 6), len(master.columns),
                    round(a, 3), spent))
        if best_cert > CERTIFICATE_MARGIN:
            break
        if added:
            limit = first_limit
        elif a > 0:
            a = a / 2 if a > 0.05 else 0.0
        elif limit < pricing_limit:
            limit = min(pricing_limit, 4 * limit)   # the pricing MILPs get longer to find a column or a bound
        else:
            break   # nothing improves the master, yet no certificate: the pricing bounds were too weak
    return Refutation(threshold=T, refuted=best_cert > CERTIFICATE_MARGIN, certificate=best_cert, lp_value=lp,
                      iterations=it, columns=len(master.columns), seconds=_now() - t0, log=log,
                      pool=master.columns, values=values, centre=centre)


def _certifying_price(rest: float, count: int) -> float:
    """The price the last type priced may reach with the certificate still above the margin: ``rest`` is the
    certificate before it (``sum(pi)`` less the other types' bounds), ``count`` its devices; the pricing
    returns at most this (inflated by :data:`PRICING_SLACK`) when no set reaches it, which then proves ``T``.

    >>> p = _certifying_price(1.0, 4)
    >>> 1.0 - 4 * (p * (1 + PRICING_SLACK) + PRICING_SLACK) > CERTIFICATE_MARGIN
    True
    """
    return max(0.0, (rest - 2 * CERTIFICATE_MARGIN) / (count * (1 + PRICING_SLACK)) - 2 * PRICING_SLACK)


def certificate(types: list[DeviceType], exact: Sequence[ExactPricer], pi: np.ndarray, T: float, *,
                deadline: float) -> float:
    """The certificate of the prices ``pi`` at threshold ``T`` (as :func:`refute` computes it: ``sum(pi)``
    less each type's count times the best column's price within ``T``, priced exactly); above
    ``CERTIFICATE_MARGIN`` it proves that nothing fits within ``T``. ``-inf`` when ``deadline`` passes."""
    cert = float(pi.sum())
    for ti, t in enumerate(types):
        left = deadline - _now()
        if left <= 0:
            return -np.inf
        ub, _ = exact[ti].solve(pi, T, left)
        cert -= t.count * ub
    return cert


def certified_threshold(types: list[DeviceType], exact: Sequence[ExactPricer], pi: np.ndarray, lo: float,
                        hi: float, *, deadline: float, steps: int = 6, at_hi: float | None = None) -> float:
    """The highest threshold in ``(lo, hi]`` that the prices ``pi`` alone prove nothing fits within (up to
    :data:`PROBE_TOL`), found by secant and bisection steps (``steps`` exact pricings of each type at most; no
    column generation), or ``lo`` when none is: one pricing when ``pi`` fails just above ``lo``. ``at_hi``: the
    certificate of ``pi`` at ``hi`` when the caller knows it (column generation at ``hi`` computed it), which
    saves the pricing there. A column generation that ran out of time at ``hi`` leaves prices that often
    certify a threshold a little lower (its certificate rises as the threshold falls): on
    inception_100_s2_training the prices of 43 s at 63.70 (certificate -0.15 there) prove 63.2 in one
    pricing of 1.5 s, where column generation at 63.3 from the start takes about 60 s.

    >>> from viz_place.testing import random_instance
    >>> from viz_place.cost import compile_problem, simple_lower_bound
    >>> from viz_place.solvers.groups import allowed_devices
    >>> inst = random_instance(13)        # the optimum is 18, the volume bound 9
    >>> prob = compile_problem(inst.graph, inst.cluster)
    >>> types, sources, exact, pool = column_generation_start(prob, allowed_devices(prob, inst.pins))
    >>> r = refute(types, sources, 17.9, pricers=exact, exact=exact, columns=pool, deadline=_now() + 20)
    >>> r.refuted, certified_threshold(types, exact, r.centre, 9.0, 17.9, deadline=_now() + 20)   # all of it
    (True, 17.9)
    >>> 17.9 < certified_threshold(types, exact, r.centre, 9.0, 18.5, deadline=_now() + 20) < 18.0   # 18 fits
    True
    >>> certificate(types, exact, r.centre, 18.0, deadline=_now() + 20) > CERTIFICATE_MARGIN   # 18 fits
    False
    """
    # a certificate falls with the threshold, nearly in a straight line on large graphs (each set's best price
    # grows with the room it is given) and in steps on small ones: so the search is the secant step between a
    # threshold proven and one not, every other step bisection; and prices that prove nothing just above ``lo``
    # (the usual case once they have proven what they can) cost one pricing, not ``steps``
    a = lo + PROBE_FIRST * (hi - lo)
    ca = certificate(types, exact, pi, a, deadline=deadline)
    if not ca > CERTIFICATE_MARGIN:
        return lo
    b, cb = hi, (at_hi if at_hi is not None else certificate(types, exact, pi, hi, deadline=deadline))
    if cb == -np.inf:
        return a
    if cb > CERTIFICATE_MARGIN:
        return hi
    for step in range(steps - 2):
        if b - a <= PROBE_TOL * b:
            break
        # the secant's point a hair towards the proven end (on a straight line it is then proven, not a coin
        # toss), never within a tenth of the bracket's ends
        share = (ca - CERTIFICATE_MARGIN) / (ca - cb) * (1 - 1e-3)
        T = (a + b) / 2 if step % 2 else a + (b - a) * min(0.9, max(0.1, share))
        cert = certificate(types, exact, pi, T, deadline=deadline)
        if cert == -np.inf:
            break
        if cert > CERTIFICATE_MARGIN:
            a, ca = T, cert
        else:
            b, cb = T, cert
    return a


@dataclass
class SetBound:
    """What :func:`set_partition_bound` proved: ``bound`` (a threshold refuted, so the max-load of every
    placement is above it; the ``floor`` it started from when nothing was refuted) and the probes made."""

    bound: float
    probes: list[Refutation]


def placement_columns(prob: CompiledProblem, types: list[DeviceType], dev: Sequence[int]) -> list[tuple[int, np.ndarray]]:
    """The device sets of a placement (device index per node) as columns (type index, bool per group)."""
    of_type = {d: ti for ti, t in enumerate(types) for d in t.devices}
    first = np.array([m[0] for m in prob.groups], dtype=np.int64)
    gdev = np.asarray(dev, dtype=np.int64)[first]
    return [(of_type[d], gdev == d) for d in range(prob.num_devices) if (gdev == d).any()]


def column_generation_start(prob: CompiledProblem, allowed: Sequence[Sequence[int]],
                            starts: Sequence[Sequence[int]] = (), threads: int = 1):
    """What column generation starts from: the device types, the data sources, one :class:`ExactPricer`
    per type (each builds its MILP fallback when needed) and the columns of the ``starts`` placements."""
    types = device_types(prob, allowed)
    sources = Sources.of(prob)
    exact = [ExactPricer(t, sources, threads) for t in types]
    pool: list[tuple[int, np.ndarray]] = [c for dev in starts for c in placement_columns(prob, types, np.asarray(dev))]
    return types, sources, exact, pool


def set_partition_bound(prob: CompiledProblem, allowed: Sequence[Sequence[int]], *, floor: float, target: float,
                        deadline: float, starts: Sequence[Sequence[int]] = (), threads: int = 1,
                        first_share: float = 0.5,
                        report: Callable[[float, str], None] | None = None,
                        cancelled: Callable[[], bool] = lambda: False) -> SetBound:
    """The largest threshold in ``[floor, target]`` that :func:`refute` refutes before ``deadline``
    (bisection; the first probe is ``target``, the one that settles a requested gap, and gets
    ``first_share`` of the time; each later probe may use all that is left). ``starts``: placements (device index per node) whose device sets seed the columns.

    >>> from viz_place.testing import random_instance
    >>> from viz_place.cost import compile_problem, simple_lower_bound
    >>> from viz_place.solvers.groups import allowed_devices
    >>> inst = random_instance(11)
    >>> prob = compile_problem(inst.graph, inst.cluster)
    >>> floor = simple_lower_bound(inst.graph, inst.cluster)[0]
    >>> sb = set_partition_bound(prob, allowed_devices(prob, inst.pins), floor=floor, target=2 * floor,
    ...                          deadline=_now() + 20)
    >>> sb.bound >= floor
    True
    """
    types, sources, exact, pool = column_generation_start(prob, allowed, starts, threads)
    lo, hi = float(floor), float(target)
    probes: list[Refutation] = []
    T = hi
    while hi > lo * (1 + 1e-4) and not cancelled():
        left = deadline - _now()
        if left < 0.5:
            break
        r = refute(types, sources, T, pricers=exact, exact=exact, columns=pool, cancelled=cancelled,
                   deadline=_now() + (left if T < hi else left * first_share))
        probes.append(r)
        pool = r.pool
        if r.refuted:
            lo = T
            if report is not None:
                report(lo, f"set-partitioning bound: nothing fits within {T:.6g} (proven)")
            T = (lo + hi) / 2
        else:
            hi = T    # the relaxation fits at T, or T was out of reach in time: try lower
            T = (lo + T) / 2
    return SetBound(bound=lo, probes=probes)


def set_bound_mode(opts) -> str:
    """How ``ilp-noncontig`` runs the set-partitioning bound: ``"beside"`` (a process of its own beside the
    integer program: ``set_bound_beside``, a second core and the compiled pricing), ``"after"`` (in
    :func:`set_bound_share` of the time, after it) or ``"off"``; ``set_bound`` left at none means beside
    for time limits of at least ``SET_BOUND_BESIDE_MIN_S`` seconds, else after it for at least
    ``SET_BOUND_AUTO_MIN_S`` (see :data:`~.options.SET_BOUND_AUTO_SHARE`).

    >>> from .options import IlpNoncontigOptions
    >>> set_bound_mode(IlpNoncontigOptions(time_limit=10)), set_bound_mode(IlpNoncontigOptions(set_bound=0))
    ('off', 'off')
    >>> set_bound_mode(IlpNoncontigOptions(set_bound=0.3, set_bound_beside=False))
    'after'
    """
    from .set_bound_worker import second_core
    if opts.set_bound == 0:
        return "off"
    beside = opts.set_bound_beside and exact_pricing_built() and second_core()
    if opts.set_bound is not None:
        return "beside" if beside else "after"
    if beside and opts.time_limit >= SET_BOUND_BESIDE_MIN_S:
        return "beside"
    return "after" if opts.time_limit >= SET_BOUND_AUTO_MIN_S and exact_pricing_built() else "off"


def set_bound_share(opts) -> float:
    """The share of the time limit kept for the set-partitioning bound after the integer program:
    ``opts.set_bound``, or when left at none ``SET_BOUND_AUTO_SHARE``; 0 unless :func:`set_bound_mode` is
    ``"after"``.

    >>> from .options import IlpNoncontigOptions
    >>> set_bound_share(IlpNoncontigOptions(time_limit=10)), set_bound_share(IlpNoncontigOptions(set_bound=0.3,
    ...                                                                         set_bound_beside=False))
    (0.0, 0.3)
    """
    if set_bound_mode(opts) != "after":
        return 0.0
    return SET_BOUND_AUTO_SHARE if opts.set_bound is None else opts.set_bound


def wants_set_bound(problem, opts, warm_dev) -> bool:
    """Whether ``ilp-noncontig`` runs the set bound: non-contiguous max-load without overlap, HiGHS, the set
    bound not off (:func:`set_bound_mode`), and some device of the warm start paying at least
    ``opts.set_bound_comm`` of its max-load in communication."""
    from .backends import highs_available
    if opts.contiguous or opts.objective != "max_load" or opts.overlap or set_bound_mode(opts) == "off" or \
            opts.backend == "cbc" or not highs_available():
        return False
    ev = problem.evaluate(warm_dev)
    return ev.max_load > 0 and max((d.communication for d in ev.devices), default=0.0) >= \
        opts.set_bound_comm * ev.max_load


def run_set_bound(problem, allowed, opts, hooks, *, floor: float, warm, deadline: float) -> float:
    """The set-partitioning bound for ``ilp-noncontig``, aimed at the value of ``warm`` (the best placement
    so far) / (1 + gap): the bound that settles the requested gap, value / bound - 1; reports progress;
    ``floor`` if nothing more is proven."""
    value = problem.value(warm)
    target = value / (1 + opts.gap) if opts.gap > 0 else value
    if not np.isfinite(floor) or target <= floor:
        return floor
    hooks.report(0.0, f"set-partitioning bound: column generation towards {target:.6g}", force=True,
                 bound=floor, incumbent=value)

    def report(bound: float, message: str) -> None:
        hooks.report(0.0, message, force=True, bound=bound, incumbent=value)

    try:
        sb = set_partition_bound(problem.compiled, allowed, floor=floor, target=target, deadline=deadline,
                                 starts=[warm], threads=opts.threads, report=report,
                                 first_share=1.0 if opts.gap > 0 else 0.75,   # a requested gap: all on it
                                 cancelled=lambda: hooks.cancelled)
    except MasterFailed as err:     # the bound is an extra: without it the integer program still runs
        hooks.report(0.0, f"set-partitioning bound skipped: {err}", force=True)
        return floor
    return max(floor, sb.bound)


def raise_bound_by_set_partition(problem, allowed, opts, hooks, res, best, *, floor: float,
                                 deadline: float) -> str:
    """``ilp-noncontig``'s last phase (``-o set_bound=F``): the set-partitioning bound aimed at ``best``, the
    best valid placement found (``None``: nothing to do), ``value / (1 + gap)``. When it proves more than the
    integer program's bound, that bound (``res.bound``, a bound over all placements) is raised to it. Returns
    a note for the result's message (empty when it proved nothing more)."""
    from ...cost.bounds import gap as gap_of
    from .backends import OPTIMALITY_TOL
    if best is None:
        return ""
    value = problem.value(best)
    lo = max(floor, res.bound) if res.bound is not None and np.isfinite(res.bound) else floor
    if not np.isfinite(lo) or (gap_of(value, lo) or 0.0) <= max(opts.gap, OPTIMALITY_TOL):
        return ""
    got = run_set_bound(problem, allowed, opts, hooks, floor=lo, warm=best, deadline=deadline)
    if got <= lo * (1 + 1e-12):
        return ""
    res.bound = min(got, value)
    return (f"bound {res.bound:.6g} proven by the set-partitioning bound (column generation, exact pricing), "
            f"above the integer program's {lo:.6g}")

