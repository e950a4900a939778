"""The columns and pricing of the set-partitioning bound (:mod:`.set_bound`).

* :func:`device_types` — interchangeable devices (the same allowed groups, compute, memory and
  communication) form one type; a column is a set of groups for one device of a type;
* :class:`Sources` and :func:`set_load` — a set's load on a device of a type: its compute plus, for a
  device that pays communication, every data source in the set with a successor outside or outside
  with a successor inside (the evaluator's rule);
* :class:`Pricer` — ``max pi(S)`` over the sets that fit within ``T`` and the memory: a MILP in HiGHS
  whose proven dual bound is what a certificate may use;
* :class:`ExactPricer` — the same maximum exactly, by a compiled label DP (``_pricing.c``), with the
  MILP as its fallback;
* :class:`.set_local.LocalPricer` (its own module) — a fast local search for such sets (columns only;
  it proves nothing).

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

from dataclasses import dataclass
from time import perf_counter as _now
from typing import Sequence

import numpy as np

from ...cost.compiled import CompiledProblem
from .set_multipliers import search, search_stepwise

#: Pricing upper bounds are inflated by this relative amount (HiGHS's own tolerances).
PRICING_SLACK = 1e-7

#: Labels the exact pricing DP may hold in one layer before it gives the problem to the MILP.
LABEL_LIMIT = 1 << 22
#: Labels per layer of the beam run before the exact DP (devices that pay communication; 0 = none): the beam
#: keeps those with the highest Lagrangian completion bound, and its best set starts the exact DP. On
#: inception_120_s3_training's accelerators at the prices of 30-120 s of column generation, the beam (0.15 s) came
#: within 0.1-0.3 % of the maximum, and the exact DP after it took 0.59 s instead of 2.22, 2.64 instead of 4.97
#: and 6.51 instead of 7.10 (see docs/proofs.md).
BEAM_LABELS = 2000

#: Sets :meth:`ExactPricer.solve` returns at most: the maximum and the best others the beam and the exact run met
#: (more columns per pricing, fewer rounds of column generation).
SETS_PER_CALL = 10

try:   # the compiled label DP of ExactPricer (optional: without it the MILP prices)
    from . import _pricing
except ImportError:
    _pricing = None


def exact_pricing_built() -> bool:
    """Whether the compiled label DP of :class:`ExactPricer` is built (else the pricing MILP prices)."""
    return _pricing is not None


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

    def successor_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The successor groups as the compiled code reads them: source ``i``'s are
        ``succ[ptr[i]:ptr[i + 1]]`` (int64 ``ptr``, ``succ``)."""
        ptr = np.zeros(len(self.succ_groups) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(s) for s in self.succ_groups])
        succ = np.concatenate(list(self.succ_groups)) if self.succ_groups else np.zeros(0)
        return ptr, np.ascontiguousarray(succ, dtype=np.int64)

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

    #: The MILP always prices in full (:meth:`ExactPricer.solve`'s ``enough`` may skip).
    last_skipped = False

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
              start: np.ndarray | None = None, floor: float = 0.0) -> tuple[float, list[np.ndarray]]:
        """Upper bound on ``max pi(S)`` within ``T`` and the best sets found (bool per group); ``start``: a
        set known to fit (the search starts from it); ``floor`` is for :meth:`ExactPricer.solve` (here the
        bound is always the MILP's own)."""
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


class ExactPricer:
    """``max pi(S)`` over the sets one device of type ``t`` can hold within ``T``, exactly: a label DP
    over the groups in index order (``_pricing.c``; the state is the status of the sources whose groups
    are partly decided, a label is (price, load, memory), dominated labels and labels that fractional
    knapsack or Lagrangian completion bounds rule out are dropped). Its value is the maximum itself, so
    a certificate built on it is as strong as the prices allow. Falls back to the MILP :class:`Pricer` (with its time limit)
    when the extension is missing, a layer would exceed :data:`LABEL_LIMIT` labels or the time limit
    runs out (the MILP then gets what is left of it). For devices that pay communication, a beam run of the
    same DP (:data:`BEAM_LABELS` per layer, ``beam``; 0 = none) first finds a set near the maximum, which
    starts the exact run.

    >>> from viz_place.testing import random_instance
    >>> from viz_place.cost import compile_problem
    >>> from viz_place.solvers.groups import allowed_devices
    >>> inst = random_instance(2)
    >>> prob = compile_problem(inst.graph, inst.cluster)
    >>> t = device_types(prob, allowed_devices(prob, inst.pins))[0]
    >>> pricer, pi = ExactPricer(t, Sources.of(prob)), np.ones(len(prob.groups))
    >>> best, sets = pricer.solve(pi, T=1e9, time_limit=1)
    >>> round(best) == len(t.groups)     # everything fits in one device: every group
    True
    >>> pricer.solve(pi, T=1e9, time_limit=1, floor=best - 0.5)[0] == best      # a floor passed: the maximum
    True
    >>> ub, sets = pricer.solve(pi, T=1e9, time_limit=1, floor=best + 0.5)      # not reached: the floor
    >>> round(ub, 4) == round(best + 0.5, 4), sets
    (True, [])
    """

    def __init__(self, t: DeviceType, sources: Sources, threads: int = 1) -> None:
        self.t, self.sources, self.threads = t, sources, threads
        self.work = np.ascontiguousarray(t.work, dtype=np.float64)
        self.mem = np.ascontiguousarray(t.mem, dtype=np.float64)
        if t.pay:
            self.own = np.ascontiguousarray(sources.src_group, dtype=np.int64)
            self.cost = np.ascontiguousarray(sources.cost * t.pay, dtype=np.float64)
            self.ptr, self.succ = sources.successor_arrays()
        else:   # a device that pays no communication: a knapsack
            self.own, self.cost = np.zeros(0, dtype=np.int64), np.zeros(0)
            self.ptr, self.succ = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self._milp: Pricer | None = None
        self.last_seconds, self.last_exact, self.last_skipped = 0.0, False, False
        self.last_labels = self.last_widest = 0          # labels kept in all, in the widest layer
        self.last_root = float("inf")                    # the Lagrangian bound on the whole problem
        self._ab: tuple[float, float] | None = None      # the last multipliers found (see _multipliers)
        self.beam = BEAM_LABELS
        self.keep = SETS_PER_CALL

    def solve(self, pi: np.ndarray, T: float, time_limit: float, abs_gap: float = 1e-7,
              start: np.ndarray | None = None, floor: float = 0.0,
              beam_only: bool = False, enough: float = np.inf) -> tuple[float, list[np.ndarray]]:
        """As :meth:`Pricer.solve` (``abs_gap`` only matters to the fallback). ``beam_only``: the beam run alone
        (columns, no bound: ``inf``; no sets for a type without a beam). ``enough``: when the beam finds a set
        worth that much, the exact run is skipped, and the exact run stops at the first such set
        (``last_skipped``; the bound is ``inf``, the set comes first): a caller that needs
        the maximum only when it is below a value (:func:`.set_bound.refute`: a certificate that could beat the
        best one) is told at once that it is not. ``floor``: only a maximum above
        it matters — the label DP prunes every set that cannot pass it, and when none does it returns
        ``floor`` itself (an upper bound, not reached) and no new set. The maximum is exact when above
        ``floor`` (or above ``pi(start)``). A caller that needs the maximum only when it passes a value (a
        certificate's need, :func:`.set_bound.refute`) saves labels: on inception_120_s3_training's
        accelerators at the prices of a minute of column generation, the maximum as the floor keeps 14 M labels
        in 3.5 s, no floor 33 M in 6.7 s (examples: the class's).
        """
        started = _now()
        out, self.last_skipped = None, False
        if beam_only and (_pricing is None or not self.beam or not self.t.pay):
            self.last_seconds, self.last_exact = 0.0, False
            return float("inf"), []
        if _pricing is not None:
            lb = float(pi[start].sum()) if start is not None and start.any() else 0.0
            lb = max(lb, float(floor))
            lam, mu = self._multipliers(pi, T)
            pi_c = np.ascontiguousarray(pi, dtype=np.float64)
            args = (self.work, self.mem, self.own, self.cost, self.ptr, self.succ, float(self.t.capacity), float(T))
            more: list[bytes] = []      # the best sets each run met (columns besides the maximum)
            if self.beam and self.t.pay:     # a beam first: a set near the maximum, so the exact DP prunes more
                got = _pricing.price(pi_c, *args, lb, LABEL_LIMIT, lam, mu,
                                     max(0.01, float(time_limit) - (_now() - started)), self.beam, self.keep)
                if got is not None:
                    more.append(got[6])
                    if got[2]:
                        start = _as_set(got[1])
                        lb = max(lb, float(pi[start].sum()))
            if beam_only or (start is not None and start.any() and float(pi[start].sum()) >= enough):
                # the beam's columns alone; or a set worth `enough` is known (the start or the beam's): no exact run
                self.last_seconds, self.last_exact, self.last_skipped = _now() - started, False, not beam_only
                first = [start.copy()] if start is not None and start.any() else []
                return float("inf"), first + _best_others(pi, more, first, self.keep - len(first))
            out = _pricing.price(pi_c, *args, lb, LABEL_LIMIT, lam, mu,   # the search counts in the time
                                 max(0.01, float(time_limit) - (_now() - started)), 0, self.keep, float(enough))
        if out is None:
            if self._milp is None:
                self._milp = Pricer(self.t, self.sources, self.threads)
            ub, sets = self._milp.solve(pi, T, max(0.01, time_limit - (_now() - started)), abs_gap=abs_gap,
                                        start=start)
            self.last_seconds, self.last_exact = _now() - started, False
            return ub, sets
        value, raw, found, self.last_labels, self.last_widest, self.last_root, last_more, stopped = out
        self.last_seconds, self.last_exact, self.last_skipped = _now() - started, not stopped, bool(stopped)
        sets = [_as_set(raw)] if found else \
            ([start.copy()] if start is not None and start.any() else [])
        ub = np.inf if stopped else max(0.0, value) * (1 + PRICING_SLACK) + PRICING_SLACK
        return ub, sets + _best_others(pi, more + [last_more], sets, self.keep - 1)

    def _multipliers(self, pi: np.ndarray, T: float) -> tuple[np.ndarray, np.ndarray]:
        """Multipliers for the DP's Lagrangian completion bounds. Any non-negative values give valid bounds
        (so this changes the time, never the result); tight ones prune far more labels. In units of the
        critical price per unit of work (``lam0``, of the fractional knapsack of the positive prices within
        ``T``) and per unit of memory (``mu0``): a pattern search (:mod:`.set_multipliers`) for the pair
        whose bound on the whole problem is smallest, started from the last call's (prices change little
        from round to round), then that pair and four around it. Without communication (a knapsack, solved
        in milliseconds) or when the DP keeps no completion tables: the fixed mixes of before."""
        ok = np.isfinite(self.work) & (pi > 0)
        lam0 = _critical_ratio(pi[ok], self.work[ok], T)
        cap = float(self.t.capacity)
        mu0 = _critical_ratio(pi[ok], self.mem[ok], cap) if np.isfinite(cap) else 0.0
        pairs = [(lam0, 0.0), (0.75 * lam0, 0.25 * mu0), (0.5 * lam0, 0.5 * mu0), (0.25 * lam0, 0.75 * mu0),
                 (0.0, mu0)] if mu0 > 0 else [(lam0, 0.0), (0.75 * lam0, 0.0), (1.25 * lam0, 0.0)]
        fixed = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
        if not self.t.pay or lam0 <= 0:
            return fixed
        searched = self._search_multipliers(pi, T, lam0, mu0)
        if searched is None:
            return fixed
        a, b = searched
        ring = [(a, b), (0.8 * a, b), (1.2 * a, b), (a, 0.7 * b), (a, 1.3 * b)] if mu0 > 0 else \
            [(a, 0.0), (0.8 * a, 0.0), (1.2 * a, 0.0)]
        return np.array([x * lam0 for x, _ in ring]), np.array([y * mu0 for _, y in ring])

    def _roots(self, pi: np.ndarray, T: float, lam: list[float], mu: list[float]) -> np.ndarray | None:
        """The Lagrangian bound on the whole problem for each multiplier pair (``None``: the DP keeps no
        completion tables for this type: too many sources open at once)."""
        out = _pricing.price(np.ascontiguousarray(pi, dtype=np.float64), self.work, self.mem, self.own, self.cost,
                             self.ptr, self.succ, float(self.t.capacity), float(T), 0.0, 0,
                             np.asarray(lam, dtype=np.float64), np.asarray(mu, dtype=np.float64), 1.0)
        return np.asarray(out[1:]) if out is not None and len(out) == len(lam) + 1 else None

    def _search_multipliers(self, pi: np.ndarray, T: float, lam0: float, mu0: float) -> tuple[float, float] | None:
        """The pattern search of :meth:`_multipliers` (:func:`.set_multipliers.search`): ``(a, b)`` with
        multipliers ``a * lam0, b * mu0``, from the last call's pair."""
        a, b = self._ab if self._ab is not None else (0.75, 0.25 if mu0 > 0 else 0.0)
        return self._keep(search(self._scaled_roots(pi, T, lam0, mu0), a, b, with_memory=mu0 > 0))

    def _search_stepwise(self, pi: np.ndarray, T: float, lam0: float, mu0: float, a: float, b: float,
                         best: float | None = None, at: int = 0) -> tuple[float, float] | None:
        """The same search one step at a time (:func:`.set_multipliers.search_stepwise`), from ``(a, b)``."""
        return self._keep(search_stepwise(self._scaled_roots(pi, T, lam0, mu0), a, b, with_memory=mu0 > 0,
                                          best=best, at=at))

    def _scaled_roots(self, pi: np.ndarray, T: float, lam0: float, mu0: float):
        """:meth:`_roots` at pairs ``(a, b)`` in units of ``lam0`` and ``mu0``."""
        return lambda pairs: self._roots(pi, T, [x * lam0 for x, _ in pairs], [y * mu0 for _, y in pairs])

    def _keep(self, pair: tuple[float, float] | None) -> tuple[float, float] | None:
        """``pair`` (the search's end), kept as the next search's start."""
        if pair is not None:
            self._ab = pair
        return pair


def _as_set(raw: bytes) -> np.ndarray:
    """A set as the compiled DP returns it (one byte per group) as a bool per group."""
    return np.frombuffer(raw, dtype=np.uint8).astype(bool)


def _best_others(pi: np.ndarray, raws: list[bytes], first: list[np.ndarray], n: int) -> list[np.ndarray]:
    """Up to ``n`` sets from the DP runs' pools (``raws``: ``G`` bytes per set), the dearest at ``pi`` first, none
    of them in ``first`` or twice.

    >>> pi = np.array([1.0, 2.0, 3.0])
    >>> [s.astype(int).tolist() for s in _best_others(pi, [bytes([1, 1, 0, 0, 0, 1]), bytes([0, 0, 1])],
    ...                                                 [np.array([False, False, True])], 5)]
    [[1, 1, 0]]
    """
    G = len(pi)
    seen = {s.tobytes() for s in first}
    out = []
    for raw in raws:
        for at in range(0, len(raw), G):
            s = _as_set(raw[at:at + G])
            if s.tobytes() not in seen:
                seen.add(s.tobytes())
                out.append(s)
    out.sort(key=lambda s: -float(pi[s].sum()))
    return out[:n]


def _critical_ratio(value: np.ndarray, weight: np.ndarray, cap: float) -> float:
    """Value per weight of the item a fractional knapsack of capacity ``cap`` takes last (0 if all fit)."""
    w = np.maximum(weight, 0.0)
    ratio = np.divide(value, w, out=np.full(len(value), np.inf), where=w > 0)
    order = np.argsort(-ratio)
    filled = np.cumsum(w[order])
    at = int(np.searchsorted(filled, cap, side="left"))
    return float(ratio[order[at]]) if at < len(order) and np.isfinite(ratio[order[at]]) else 0.0
