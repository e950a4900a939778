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

>>> from viz_place.testing import random_instance
>>> from viz_place.cost import compile_problem
>>> from viz_place.solvers.groups import allowed_devices
>>> inst = random_instance(4)
>>> prob = compile_problem(inst.graph, inst.cluster)
>>> types = device_types(prob, allowed_devices(prob, inst.pins))
>>> sum(len(t.devices) for t in types) == prob.num_devices
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter as _now
from typing import Callable, Sequence

import numpy as np

from ...cost.compiled import CompiledProblem

#: A refutation counts only when its certificate is above this (the prices are a fraction of 1 each).
CERTIFICATE_MARGIN = 1e-6
#: Pricing upper bounds are inflated by this relative amount (HiGHS's own tolerances).
PRICING_SLACK = 1e-7


@dataclass(frozen=True)
class DeviceType:
    """Interchangeable devices: the same allowed groups, compute, memory and communication."""

    devices: tuple[int, ...]
    groups: np.ndarray        # group indices allowed on these devices
    work: np.ndarray          # compute of each group (all its nodes) on one of them, over all groups
    mem: np.ndarray           # memory of each group, over all groups
    capacity: float
    pay: float                # factor on transfer costs (0: pays no communication)

    @property
    def count(self) -> int:
        return len(self.devices)


def device_types(prob: CompiledProblem, allowed: Sequence[Sequence[int]]) -> list[DeviceType]:
    """Devices grouped by everything their load and feasibility depend on (allowed groups included, so
    pinned devices form types of their own)."""
    G = len(prob.groups)
    members = [np.asarray(m, dtype=np.int64) for m in prob.groups]
    mem = np.array([float(prob.size[m].sum()) for m in members])
    allowed_on = [[g for g in range(G) if d in set(allowed[g])] for d in range(prob.num_devices)]
    keyed: dict[tuple, list[int]] = {}
    for d in range(prob.num_devices):
        work = tuple(float(prob.lat[members[g], d].sum()) for g in allowed_on[d])
        pay = float(prob.link[d]) if prob.pays[d] else 0.0
        key = (tuple(allowed_on[d]), work, float(prob.capacity[d]), pay)
        keyed.setdefault(key, []).append(d)
    out = []
    for (groups, _, cap, pay), devs in keyed.items():
        d = devs[0]
        work = np.array([float(prob.lat[members[g], d].sum()) if g in set(groups) else np.inf for g in range(G)])
        out.append(DeviceType(devices=tuple(devs), groups=np.array(groups, dtype=np.int64), work=work, mem=mem,
                              capacity=cap, pay=pay))
    return out


@dataclass(frozen=True)
class Sources:
    """Data sources whose output can cross devices: ``src_group[i]``, ``cost[i]``, and the groups of
    their successors (other than their own) in ``succ_groups[i]``."""

    src_group: np.ndarray
    cost: np.ndarray
    succ_groups: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, prob: CompiledProblem) -> "Sources":
        gs, cs, ss = [], [], []
        for u in range(prob.n):
            cost = float(prob.tcost[u])
            succ = sorted({int(prob.group[v]) for v in prob.data_succs[u]} - {int(prob.group[u])})
            if cost > 0 and succ:
                gs.append(int(prob.group[u]))
                cs.append(cost)
                ss.append(np.array(succ, dtype=np.int64))
        return cls(np.array(gs, dtype=np.int64), np.array(cs), tuple(ss))

    def communication(self, in_set: np.ndarray) -> float:
        """What a device holding the groups flagged in ``in_set`` (bool per group) pays, before its link factor."""
        total = 0.0
        for g, c, succ in zip(self.src_group.tolist(), self.cost.tolist(), self.succ_groups):
            inside = in_set[succ]
            if in_set[g] and not inside.all() or not in_set[g] and inside.any():
                total += c
        return total


def set_load(t: DeviceType, sources: Sources, in_set: np.ndarray) -> float:
    """Load of one device of type ``t`` holding the flagged groups (compute + communication)."""
    work = float(t.work[in_set].sum()) if in_set.any() else 0.0
    return work + (t.pay * sources.communication(in_set) if t.pay else 0.0)


class Pricer:
    """``max pi(S)`` over the sets one device of type ``t`` can hold within ``T``: a MILP in HiGHS
    (binary ``y`` per allowed group, ``c >= |y(u) - y(v)|`` per source and successor group as in the
    assignment model, load and memory rows)."""

    def __init__(self, t: DeviceType, sources: Sources, threads: int = 1) -> None:
        import highspy
        from .backends import _new_highs
        self.t, self.sources, self.threads = t, sources, int(threads)
        self.h = h = _new_highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("random_seed", 0)
        if threads:
            h.setOptionValue("threads", int(threads))
        h.setOptionValue("mip_rel_gap", 1e-6)
        h.setOptionValue("mip_improving_solution_save", True)
        inf = highspy.kHighsInf
        self.col = {int(g): i for i, g in enumerate(t.groups.tolist())}
        self.c_cols: list[tuple[int, int, np.ndarray]] = []     # (column, source's group, successor groups)
        ng = len(self.col)
        for g in t.groups.tolist():
            h.addCol(0.0, 0.0, 1.0, 0, np.array([], dtype=np.int32), np.array([]))
        h.changeColsIntegrality(ng, np.arange(ng, dtype=np.int32),
                                np.array([highspy.HighsVarType.kInteger] * ng))
        load_idx, load_val = [self.col[g] for g in t.groups.tolist()], [float(t.work[g]) for g in t.groups.tolist()]
        if t.pay:
            for g, c, succ in zip(sources.src_group.tolist(), sources.cost.tolist(), sources.succ_groups):
                yu = self.col.get(g)
                ys = [self.col[s] for s in succ.tolist() if s in self.col]
                if yu is None and not ys:
                    continue
                h.addCol(0.0, 0.0, 1.0, 0, np.array([], dtype=np.int32), np.array([]))
                cu = h.getNumCol() - 1
                self.c_cols.append((cu, g, succ))
                for yv in ys:
                    if yu is not None:
                        self._row(0.0, inf, [cu, yu, yv], [1.0, -1.0, 1.0])
                        self._row(0.0, inf, [cu, yu, yv], [1.0, 1.0, -1.0])
                    else:
                        self._row(0.0, inf, [cu, yv], [1.0, -1.0])
                if yu is not None and len(ys) < len(succ):
                    self._row(0.0, inf, [cu, yu], [1.0, -1.0])
                load_idx.append(cu)
                load_val.append(c * t.pay)
        self.load_row = h.getNumRow()
        self._row(-inf, inf, load_idx, load_val)
        if np.isfinite(t.capacity):
            cap = t.capacity if t.capacity > 0 else 1.0
            self._row(-inf, t.capacity / cap, [self.col[g] for g in t.groups.tolist()],
                      [float(t.mem[g]) / cap for g in t.groups.tolist()])
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.ng = ng

    def _row(self, lo, hi, idx, val) -> None:
        self.h.addRow(lo, hi, len(idx), np.array(idx, dtype=np.int32), np.array(val, dtype=float))

    def _start(self, in_set: np.ndarray) -> None:
        """Hand HiGHS a set that fits as its first incumbent (the communication columns filled in)."""
        values = np.zeros(self.h.getNumCol())
        for g, i in self.col.items():
            values[i] = float(in_set[g])
        for cu, g, succ in self.c_cols:
            inside = in_set[succ]
            values[cu] = float(bool(in_set[g] and not inside.all() or not in_set[g] and inside.any()))
        self.h.setSolution(len(values), np.arange(len(values), dtype=np.int32), values)

    def solve(self, pi: np.ndarray, T: float, time_limit: float, abs_gap: float = 1e-7,
              start: np.ndarray | None = None) -> tuple[float, list[np.ndarray]]:
        """Upper bound on ``max pi(S)`` within ``T`` and the best sets found (bool per group); ``start``: a
        set known to fit (the search starts from it)."""
        import highspy
        from .backends import _match_scheduler
        h = self.h
        groups = self.t.groups
        h.changeColsCost(self.ng, np.arange(self.ng, dtype=np.int32), pi[groups].astype(float))
        h.changeRowBounds(self.load_row, -highspy.kHighsInf, float(T))
        h.setOptionValue("time_limit", max(0.01, float(time_limit)))
        h.setOptionValue("mip_abs_gap", float(abs_gap))
        if start is not None:
            self._start(start)
        _match_scheduler(self.threads)
        started = _now()
        h.run()
        self.last_seconds = _now() - started
        info = h.getInfo()
        status = h.getModelStatus()
        trivial = float(np.clip(pi[groups], 0, None).sum())   # every set's pi is at most its positive part
        S = highspy.HighsModelStatus
        bound = float(info.mip_dual_bound) if status in (S.kOptimal, S.kTimeLimit, S.kInterrupt) else trivial
        if not np.isfinite(bound):
            bound = trivial
        bound = min(bound, trivial)
        sets = []
        if info.primal_solution_status >= 1:
            found = [h.getSolution().col_value] + [sol.col_value for sol in h.getSavedMipSolutions()]
            for values in found:
                y = np.asarray(values[:self.ng]) > 0.5
                s = np.zeros(len(pi), dtype=bool)
                s[groups[y]] = True
                sets.append(s)
        return max(0.0, bound) * (1 + PRICING_SLACK) + PRICING_SLACK, sets


class LocalPricer:
    """A fast heuristic for the pricing problem: from a start set, single-group additions, removals and
    swaps that raise ``pi(S)`` while the load stays within ``T`` and the memory within capacity (the load
    kept up to date incrementally). It proposes columns; it proves nothing (the MILP :class:`Pricer`
    gives the bound)."""

    def __init__(self, t: DeviceType, sources: Sources) -> None:
        self.t, self.sources = t, sources
        G = len(t.mem)
        src = sources.src_group.tolist()
        # per group, the sources its move touches: (source, own group is g, g is a successor group)
        touch: list[dict[int, list[bool]]] = [{} for _ in range(G)]
        for i, (g, succ) in enumerate(zip(src, sources.succ_groups)):
            touch[g].setdefault(i, [False, False])[0] = True
            for h in succ.tolist():
                touch[h].setdefault(i, [False, False])[1] = True
        self.touch = [[(i, o, n) for i, (o, n) in d.items()] for d in touch] if t.pay else [[] for _ in range(G)]
        self.src = src
        self.nsucc = [len(succ) for succ in sources.succ_groups]
        self.cost = (sources.cost * t.pay).tolist() if t.pay else [0.0] * len(src)
        self.work = [float(w) if np.isfinite(w) else 0.0 for w in t.work]
        self.mem = t.mem.tolist()
        self.allowed = np.isfinite(t.work)

    def _delta(self, g: int, S: list[bool], inside: list[int]) -> float:
        """Change of communication if ``g`` is toggled."""
        d = 0.0
        step = -1 if S[g] else 1
        src, nsucc, cost = self.src, self.nsucc, self.cost
        for i, is_own, is_succ in self.touch[g]:
            ins = inside[i]
            own = S[src[i]]
            new_ins = ins + step if is_succ else ins
            new_own = (not own) if is_own else own
            before = (ins < nsucc[i]) if own else (ins > 0)
            after = (new_ins < nsucc[i]) if new_own else (new_ins > 0)
            if before != after:
                d += cost[i] if after else -cost[i]
        return d

    def _toggle(self, g: int, S: list[bool], inside: list[int]) -> None:
        step = -1 if S[g] else 1
        for i, _, is_succ in self.touch[g]:
            if is_succ:
                inside[i] += step
        S[g] = not S[g]

    def improve(self, pi: np.ndarray, T: float, start: np.ndarray, rounds: int = 4) -> np.ndarray:
        """A set at least as good as ``start`` (which must fit) under prices ``pi``."""
        t = self.t
        S = start.tolist()
        inside = [int(start[succ].sum()) for succ in self.sources.succ_groups]
        load = set_load(t, self.sources, start)
        mem = float(t.mem[start].sum())
        cap, work, gm, price = t.capacity, self.work, self.mem, pi.tolist()
        cand = [g for g in np.argsort(-pi).tolist() if self.allowed[g]]
        for _ in range(rounds):
            moved = False
            for g in cand:                      # additions (best price first) and removals
                if S[g] and price[g] < 0 or not S[g] and price[g] > 0:
                    sign = -1.0 if S[g] else 1.0
                    dl = sign * work[g] + self._delta(g, S, inside)
                    dm = sign * gm[g]
                    if load + dl <= T and mem + dm <= cap:
                        self._toggle(g, S, inside)
                        load, mem, moved = load + dl, mem + dm, True
            outs = [h for h in cand[::-1] if S[h]]
            for g in cand:                      # swaps: a dearer group in for a cheaper one out
                if S[g] or price[g] <= 0:
                    continue
                for h in outs:
                    if not S[h] or price[h] >= price[g] or mem - gm[h] + gm[g] > cap:
                        continue
                    dl1 = -work[h] + self._delta(h, S, inside)
                    self._toggle(h, S, inside)
                    dl2 = work[g] + self._delta(g, S, inside)
                    if load + dl1 + dl2 <= T:
                        self._toggle(g, S, inside)
                        load, mem, moved = load + dl1 + dl2, mem - gm[h] + gm[g], True
                        break
                    self._toggle(h, S, inside)
            if not moved:
                break
        return np.array(S, dtype=bool)


class MasterFailed(RuntimeError):
    """The restricted master LP did not solve to optimality (a back-end failure: no prices, no bound)."""


class Master:
    """The restricted phase-1 master LP: ``sum over columns holding g of x + s_g = 1`` per group,
    ``sum of x of type t <= k_t``, minimise ``sum(s)``."""

    def __init__(self, G: int, types: list[DeviceType], threads: int = 1) -> None:
        import highspy
        from .backends import _new_highs
        self.G, self.threads = G, int(threads)
        self.h = h = _new_highs()
        h.setOptionValue("output_flag", False)
        if threads:
            h.setOptionValue("threads", self.threads)
        h.setOptionValue("random_seed", 0)
        inf = highspy.kHighsInf
        for _ in range(G):
            h.addRow(1.0, 1.0, 0, np.array([], dtype=np.int32), np.array([]))
        for t in types:
            h.addRow(-inf, float(t.count), 0, np.array([], dtype=np.int32), np.array([]))
        for g in range(G):
            h.addCol(1.0, 0.0, inf, 1, np.array([g], dtype=np.int32), np.array([1.0]))
        self.columns: list[tuple[int, np.ndarray]] = []
        self._seen: set[tuple[int, bytes]] = set()

    def add(self, type_index: int, in_set: np.ndarray) -> bool:
        """Add a column (a set for a device of that type); False if it is already there or empty."""
        key = (type_index, np.packbits(in_set).tobytes())
        if key in self._seen or not in_set.any():
            return False
        import highspy
        self._seen.add(key)
        rows = np.concatenate([np.flatnonzero(in_set), [self.G + type_index]]).astype(np.int32)
        self.h.addCol(0.0, 0.0, highspy.kHighsInf, len(rows), rows, np.ones(len(rows)))
        self.columns.append((type_index, in_set.copy()))
        return True

    def solve(self) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """Objective, group prices ``pi``, type prices ``m >= 0`` and the column values."""
        import highspy
        from .backends import _match_scheduler
        h = self.h
        _match_scheduler(self.threads)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise MasterFailed(f"its master LP ended {h.modelStatusToString(h.getModelStatus())!r}")
        sol = h.getSolution()
        dual = np.asarray(sol.row_dual)
        pi = np.minimum(dual[:self.G], 1.0)     # the prices of a certificate are at most 1 (the s columns)
        m = np.maximum(0.0, -dual[self.G:])
        return float(h.getInfo().objective_function_value), pi, m, np.asarray(sol.col_value[self.G:])


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


def refute(types: list[DeviceType], sources: Sources, T: float, *, pricers: list[Pricer],
           columns: Sequence[tuple[int, np.ndarray]] = (), deadline: float, smoothing: float = 0.7,
           pricing_limit: float = 30.0, attempt_every: float = 30.0, starts: int = 3,
           cancelled: Callable[[], bool] = lambda: False) -> Refutation:
    """Column generation at threshold ``T``: a certificate that nothing fits (``refuted``), or the
    relaxation is feasible at ``T`` (``lp_value`` 0), or time ran out (neither).

    Prices are smoothed (Wentges): the pricing problems see ``a * centre + (1 - a) * master``, where the
    centre is the best certificate's prices so far; a round that adds no column for the master's own
    prices halves ``a`` (at 0 this is plain column generation, whose end is the LP's own certificate)."""
    t0 = _now()
    G = len(types[0].mem)
    master = Master(G, types)
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
    best_cert, centre, it, a = -np.inf, None, 0, float(smoothing)
    log = []
    lp = np.inf
    while _now() < deadline and not cancelled():
        it += 1
        lp, pi_m, m, _ = master.solve()
        if lp <= 1e-9:
            break
        added = 0
        best_local: list[np.ndarray] = []
        for ti, t in enumerate(types):      # cheap columns first: local search from the best columns
            own = [s for tj, s in master.columns if tj == ti]
            own.sort(key=lambda s: -float(pi_m[s].sum()))
            found = [local[ti].improve(pi_m, T, start) for start in own[:starts] + [np.zeros(G, dtype=bool)]]
            best_local.append(max(found, key=lambda s: float(pi_m[s].sum())))
            for s in found:
                if float(pi_m[s].sum()) > m[ti] + 1e-9 and master.add(ti, s):
                    added += 1
        if added:
            log.append((round(_now() - t0, 3), round(lp, 6), None, len(master.columns), "local"))
            continue
        pi = pi_m if centre is None or a <= 0 else a * centre + (1 - a) * pi_m
        cert, spent = float(pi.sum()), []
        # now and then a certificate attempt: the pricing MILPs get their full time to prove their bounds
        attempt = _now() - last_attempt >= attempt_every
        if attempt:
            last_attempt = _now()
        # the pricing MILPs may stop once their bound is within a share of what the certificate can spare
        slack = max(1e-7, 0.8 * lp / sum(t.count for t in types))
        for ti, t in enumerate(types):
            left = deadline - _now()
            if left <= 0:
                cert = -np.inf
                break
            ub, sets = pricers[ti].solve(pi, T, min(pricing_limit if attempt else limit, left), abs_gap=slack,
                                         start=best_local[ti])
            spent.append(round(pricers[ti].last_seconds, 2))
            cert -= t.count * ub
            for s in sets:
                if float(pi_m[s].sum()) > m[ti] + 1e-9 and master.add(ti, s):
                    added += 1
        if cert > best_cert:
            best_cert, centre = cert, pi.copy()
        log.append((round(_now() - t0, 3), round(lp, 6), round(cert, 6), len(master.columns), round(a, 3), spent))
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
                      pool=master.columns)


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


def set_partition_bound(prob: CompiledProblem, allowed: Sequence[Sequence[int]], *, floor: float, target: float,
                        deadline: float, starts: Sequence[Sequence[int]] = (), threads: int = 1,
                        report: Callable[[float, str], None] | None = None,
                        cancelled: Callable[[], bool] = lambda: False) -> SetBound:
    """The largest threshold in ``[floor, target]`` that :func:`refute` refutes before ``deadline``
    (bisection; the first probe is ``target``, the one that settles a requested gap; each probe gets half
    of the time left). ``starts``: placements (device index per node) whose device sets seed the columns.

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
    types = device_types(prob, allowed)
    sources = Sources.of(prob)
    pricers = [Pricer(t, sources, threads) for t in types]
    pool: list[tuple[int, np.ndarray]] = [c for dev in starts for c in placement_columns(prob, types, dev)]
    lo, hi = float(floor), float(target)
    probes: list[Refutation] = []
    T = hi
    while hi > lo * (1 + 1e-4) and not cancelled():
        left = deadline - _now()
        if left < 0.5:
            break
        r = refute(types, sources, T, pricers=pricers, columns=pool, cancelled=cancelled,
                   deadline=_now() + (left if T < hi else left / 2))
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


def wants_set_bound(problem, opts, warm_dev) -> bool:
    """Whether ``ilp-noncontig`` runs the set bound: non-contiguous max-load without overlap, a share of the
    time for it, and some device of the warm start paying at least ``opts.set_bound_comm`` of its max-load in
    communication."""
    from .backends import highs_available
    if opts.contiguous or opts.objective != "max_load" or opts.overlap or opts.set_bound <= 0 or \
            opts.backend == "cbc" or not highs_available():
        return False
    ev = problem.evaluate(warm_dev)
    return ev.max_load > 0 and max((d.communication for d in ev.devices), default=0.0) >= \
        opts.set_bound_comm * ev.max_load


def run_set_bound(problem, allowed, opts, hooks, *, floor: float, warm, deadline: float) -> float:
    """The set-partitioning bound for ``ilp-noncontig``, aimed at the warm start's value over ``1 + gap``
    (which would settle the requested gap); reports progress; ``floor`` if nothing more is proven."""
    value = problem.value(warm)
    target = value * (1 - opts.gap) if opts.gap > 0 else value
    if not np.isfinite(floor) or target <= floor:
        return floor
    hooks.report(0.0, f"set-partitioning bound: column generation towards {target:.6g}", force=True,
                 bound=floor, incumbent=value)

    def report(bound: float, message: str) -> None:
        hooks.report(0.0, message, force=True, bound=bound, incumbent=value)

    try:
        sb = set_partition_bound(problem.compiled, allowed, floor=floor, target=target, deadline=deadline,
                                 starts=[warm], threads=opts.threads, report=report,
                                 cancelled=lambda: hooks.cancelled)
    except MasterFailed as err:     # the bound is an extra: without it the integer program still runs
        hooks.report(0.0, f"set-partitioning bound skipped: {err}", force=True)
        return floor
    return max(floor, sb.bound)
