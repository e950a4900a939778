"""The numeric core of the throughput DP: the thresholded recursion over the per-ideal tables (:mod:`.tables`).

State: (ideal ``I``, devices used so far in each class ``u``). ``best[I, u]`` is
the smallest max-load of a chain ∅ = I0 ⊂ I1 ⊂ … ⊂ Ik = I that puts each
``I_t \\ I_{t-1}`` (with its backward twins) on its own device, using at most
``u_c`` devices of class ``c``::

    best[I, u] = min over c with u_c > 0, J ⊊ I ideal of  max(best[J, u - e_c], cost_c(I \\ J))

Figures of ``I \\ J`` come from per-ideal tables: compute, size, unsupported
and forbidden counts are differences of prefix sums; communication is
``w(I) + w(J) − Σ_{h cut by I and J} tc(h)·(2 − [h meets I \\ J])``, where ``h``
runs over *hyperedges* (a source node with the supernodes of its consumers)
and ``w(X)`` is the transfer cost of the hyperedges an ideal ``X`` cuts.

A run takes a threshold ``T``: pairs whose cost exceeds ``T`` are skipped. With
``lower`` a class-free compute lower bound and ``rho_c`` the largest ratio of
``lower`` to class-``c`` compute over nodes, a device of class ``c`` holds at
most ``rho_c·T`` of ``lower``; so a state (ideal, devices used) is *alive* only
if the used devices can hold the ideal and the unused ones the rest, and the
candidates ``J`` for ``I`` lie in a window of ideals sorted by ``lower``. The
subset test ``J ⊆ I`` runs on per-chain counts (a chain decomposition of the
DAG) packed into uint64 lanes: one subtraction per word. A finite result
``≤ T`` is the exact optimum; ``inf`` means the optimum exceeds ``T``.

A run fills ``best`` for a group of consecutive ideals at a time, every
(J, I) pair of the group in flat numpy arrays (no Python work per ideal).

>>> import numpy as np
>>> from viz_place.solvers.dp.ideals import enumerate_ideals
>>> ids = enumerate_ideals(2, [0, 1], [[1], []])
>>> t = Tables.build(ids, succs=[[1], []], lat=np.array([[1.0], [2.0]]), size=np.zeros(2),
...                  forbid=np.zeros((2, 1), bool), hyperedges=[], counts=[2], pays=[False], link=[1.0], cap=[np.inf])
>>> run(t, np.inf).value
2.0
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .lattice import walk_down
from .tables import _REL, Tables

try:   # the compiled inner loop (viz_place/solvers/dp/_kernel.c), built at install; numpy below when absent
    from . import _kernel as _compiled
except ImportError:  # pragma: no cover - depends on the build
    _compiled = None

#: The kernels a pass can run: ``"c"`` (compiled, when built) and ``"numpy"``; ``"auto"`` picks the first available.
KERNELS = ("auto", "c", "numpy")


def kernel_name(kernel: str = "auto") -> str:
    """The kernel a pass asked for ``kernel`` runs: ``"c"`` when the extension is built (or asked for), else
    ``"numpy"``.

    >>> kernel_name("numpy")
    'numpy'
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, not {kernel!r}")
    if kernel == "c" and _compiled is None:
        raise ValueError("kernel 'c': the compiled DP kernel (viz_place.solvers.dp._kernel) is not built here; "
                         "reinstall with a C compiler (pip install -e .) or use kernel 'numpy'")
    return "numpy" if kernel == "numpy" or _compiled is None else "c"


@dataclass
class RunResult:
    value: float
    chain: list[tuple[int, int, int]]  # (class, J, I) from the last set backwards
    pairs: int                          # (J, I) pairs that passed the window and subset test
    complete: bool = True
    kernel: str = "numpy"               # the kernel that ran the pass ("c" or "numpy")


def _states(counts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Usage vectors (S, k) in mixed-radix order and the stride of each class."""
    strides = np.ones(len(counts), dtype=np.int64)
    for c in range(1, len(counts)):
        strides[c] = strides[c - 1] * (counts[c - 1] + 1)
    us = np.array(list(itertools.product(*[range(x + 1) for x in reversed(counts)])), dtype=np.int64)[:, ::-1]
    return us, strides


#: Window entries (candidate J scanned for some I) handled at once: bounds the temporary arrays of one group.
_BATCH = 1 << 19
#: ... for the compiled kernel, which builds no arrays of pairs: groups only bound the time between progress and
#: cancel checks (a few milliseconds each)
_BATCH_C = 1 << 23
#: Window entries of a group from which its candidates are found by walking down the lattice (else by scanning).
_WALK = 1 << 18
#: ... and where fewer than this share of the last group's window entries were candidates.
_WALK_BELOW = 0.25


class _Pass:
    """The state of one thresholded DP pass (see the module docstring): the tables ``best`` and, for the chain,
    the previous ideal and the class chosen per state.

    Ideals are listed by size and ``J ⊊ I`` is smaller than ``I``, so a group of
    consecutive ideals (:meth:`group`) needs only earlier groups and itself; its
    candidates ``J`` are the earlier ideals a chain within ``T`` reaches
    (``reached``, sorted by ``lower``) and the group's own.
    """

    def __init__(self, t: Tables, threshold: float, kernel: str = "numpy") -> None:
        self.t = t
        self.kernel = kernel
        N = t.ideals.count
        self.k = len(t.counts)
        self.usage, self.strides = _states(t.counts)
        S = self.usage.shape[0]
        # per class c: the states with u_c > 0 and the state each comes from (one device of class c fewer)
        self.targets, self.sources = [], []
        for c in range(self.k):
            sel = (self.usage[:, c] > 0).nonzero()[0]   # state index == mixed-radix value, so sel is sorted
            self.targets.append(sel)
            self.sources.append(sel - self.strides[c])
        self.best = np.full((N, S), np.inf)
        self.best[0] = 0.0
        self.prev_ideal = np.full((N, S), -1, dtype=np.int32)   # J of the last set I \\ J of the best chain
        self.prev_class = np.full((N, S), -1, dtype=np.int8)    # the class of the device holding it
        scale = max(1.0, float(t.lower[-1]), float(t.comp[-1].max()) if N else 0.0)
        self.tol = _REL * scale
        self.bounded = math.isfinite(threshold)
        self.T = threshold * (1 + _REL) + self.tol if self.bounded else np.inf
        self.low_total = float(t.lower[-1])
        if self.bounded:
            counts = np.array(t.counts, dtype=np.int64)
            self.cap_used = self.usage @ (t.rho * self.T) + self.tol             # lower-mass the used devices hold
            self.cap_left = (counts - self.usage) @ (t.rho * self.T) + self.tol  # ... and the unused ones
        self.pays_any = bool(t.pays.any())
        if kernel == "numpy":     # per-class compute columns for :meth:`feasible_pairs` (the compiled kernel reads t)
            self.comp_of = [np.ascontiguousarray(t.comp[:, c]) for c in range(self.k)]
        self.active = [c for c in range(self.k) if t.counts[c] > 0]
        # the reached ideals (some state finite: a chain within T reaches them), by position in ``order``;
        # a J without one can never improve best[I], so only these are candidates
        self.pos_of = np.empty(N, dtype=np.int64)
        self.pos_of[t.order] = np.arange(N)
        self.reached = self.pos_of[:1].copy()
        self.is_reached = np.zeros(N, dtype=bool)
        self.is_reached[0] = True     # (r_low, r_ideal: indexed by each group, :meth:`group`)
        if kernel == "c":
            tptr = np.array([0, *itertools.accumulate(x.size for x in self.targets)], dtype=np.int64)
            self.c_states = (np.ascontiguousarray(np.concatenate(self.targets), dtype=np.int64), tptr,
                             np.ascontiguousarray(self.strides, dtype=np.int64))
        self.group_lo = self.group_hi = 0    # the ideals being filled (:meth:`group`)
        self.hit_rate = 1.0                  # the share of the last group's window entries that were candidates
        self.pairs = 0

    def _index_reached(self, extra: np.ndarray | None = None) -> None:
        """Candidates for the next group: the reached ideals, and the positions ``extra`` (the group's own)."""
        t = self.t
        cand = self.reached if extra is None else np.sort(np.concatenate([self.reached, extra]))
        self.r_low = t.lower_sorted[cand]          # ascending
        self.r_ideal = t.order[cand]
        if self.kernel == "numpy":
            self.r_top = np.ascontiguousarray(t.pk[self.r_ideal].T)   # (P, M) packed counts, one row per word

    def add_reached(self, ideals: np.ndarray) -> None:
        new = ideals[np.isfinite(self.best[ideals]).any(1)]
        self.is_reached[new] = True
        if new.size:
            self.reached = np.sort(np.concatenate([self.reached, self.pos_of[new]]))

    def windows_against_all(self):
        """:meth:`windows` of every ideal but the empty one, every ideal a candidate (to size the groups)."""
        N = self.t.ideals.count
        saved = self.reached
        self.reached = np.arange(N)
        self._index_reached()
        try:
            return self.windows(np.arange(1, N))
        finally:
            self.reached = saved

    def windows(self, I: np.ndarray):
        """Per class, the window ``[lo, hi]`` of ``lower`` where a candidate ``J`` must lie (``None``: unbounded);
        the slice ``[start, stop)`` of ``reached`` covering them; the alive states (ideal, devices used), or
        ``None`` when every state is."""
        t, li, tol = self.t, self.t.lower[I], self.tol
        if not self.bounded:
            plan = [(c, None, None) for c in self.active]
            stop = np.searchsorted(self.r_low, li + tol, "right")
            return plan, (np.full(I.size, -np.inf), li + tol, np.zeros_like(stop), stop), None
        alive = (li[:, None] <= self.cap_used) & ((self.low_total - li)[:, None] <= self.cap_left)
        plan, lo_all, hi_all = [], np.full(I.size, np.inf), np.full(I.size, -np.inf)
        for c in self.active:
            a = alive[:, self.targets[c]]
            src = self.sources[c]
            most_left = np.where(a, self.cap_left[src], -np.inf).max(1)
            most_used = np.where(a, self.cap_used[src], -np.inf).max(1)
            lo = np.maximum(li - t.rho[c] * self.T - tol, self.low_total - most_left)
            hi = np.minimum(li + tol, most_used)
            ok = a.any(1) & (lo <= hi)
            if not ok.any():
                continue
            lo, hi = np.where(ok, lo, np.inf), np.where(ok, hi, -np.inf)
            plan.append((c, lo, hi))
            lo_all, hi_all = np.minimum(lo_all, lo), np.maximum(hi_all, hi)
        start = np.searchsorted(self.r_low, lo_all, "left")
        return plan, (lo_all, hi_all, start, np.maximum(start, np.searchsorted(self.r_low, hi_all, "right"))), alive

    def candidates(self, I: np.ndarray, win):
        """All pairs ``(owner, J)``: ``J ⊊ I[owner]`` a reached ideal in the owner's window ``[lo, hi]`` of
        ``lower``, owners ascending; and ``lower[J]``. On a complete family by walking down the lattice, else by
        the packed subset test over the window's ideals (``reached[start:stop]``)."""
        t, g = self.t, self.t.guard
        lo_all, hi_all, start, stop = win
        entries = int((stop - start).sum())
        # walking pays when windows are large and few of their entries are candidates (as in the last group)
        if entries >= _WALK and self.hit_rate < _WALK_BELOW and t.down is not None:
            owner, J = walk_down(t.down, I, lo_all, t.lower)
            lc = t.lower[J]
            keep = np.flatnonzero((self.is_reached[J] | (J >= self.group_lo)) & (lc <= hi_all[owner]))
            self.hit_rate = keep.size / max(entries, 1)
            owner = owner[keep]
            by_owner = np.argsort(owner.astype(np.uint16) if I.size <= 1 << 16 else owner, kind="stable")
            return owner[by_owner], J[keep[by_owner]], lc[keep[by_owner]]
        lens = stop - start
        total = int(lens.sum())
        if total == 0:
            return None
        owner = np.repeat(np.arange(I.size), lens)
        pos = np.arange(total) + np.repeat(start - (np.cumsum(lens) - lens), lens)
        top = t.pk[I] | g
        mask = ((np.repeat(top[:, 0], lens) - self.r_top[0, pos]) & g[0]) == g[0]
        for w in range(1, g.size):
            mask &= ((np.repeat(top[:, w], lens) - self.r_top[w, pos]) & g[w]) == g[w]
        sel = np.flatnonzero(mask)
        pos = pos[sel]
        self.hit_rate = sel.size / total
        return owner[sel], self.r_ideal[pos], self.r_low[pos]

    def feasible_pairs(self, I: np.ndarray, plan, win):
        """Per class of ``plan``: the pairs ``(owner, J, cost)`` with ``I[owner] \\ J`` fitting the class within
        ``T`` (compute plus paid communication; supported, not forbidden, within memory), owners ascending."""
        got = self.candidates(I, win)
        if got is None or got[0].size == 0:
            return None
        owner, J, lc = got
        t, T = self.t, self.T
        II = I[owner]
        keep = np.flatnonzero(J != II)                   # the group's own ideals are candidates: drop J = I
        owner, J, lc, II = owner[keep], J[keep], lc[keep], II[keep]
        self.pairs += int(J.size)
        oks = []
        need = np.zeros(J.size, dtype=bool) if self.pays_any else None
        # communication is at least |w(I) - w(J)| (the shared cut hyperedges weigh at most the lighter side):
        # a pair whose compute plus that already exceeds T needs no exact figure
        gap = np.abs(t.wcut[II] - t.wcut[J]) * (1 - 1e-12) if self.pays_any and self.bounded else None
        for c, lo, hi in plan:
            comp = self.comp_of[c][II] - self.comp_of[c][J]
            ok = comp <= T
            if lo is not None:
                ok &= (lc >= lo[owner]) & (lc <= hi[owner])
            if t.need_unsup[c]:
                ok &= t.unsup[J, c] == t.unsup[II, c]
            if t.need_forbid[c]:
                ok &= t.forbid[J, c] == t.forbid[II, c]
            if t.need_size[c]:
                ok &= t.size[II] - t.size[J] <= t.cap[c] * (1 + _REL)
            if t.pays[c] and gap is not None:
                ok &= comp + t.link[c] * gap <= T
            oks.append((ok, comp))
            if t.pays[c]:
                need |= ok
        comm = None
        if self.pays_any:
            rows = np.flatnonzero(need)
            comm = np.zeros(J.size)
            if rows.size:
                comm[rows] = t.comm(II[rows], J[rows])
        out = []
        for (c, _, _), (ok, comp) in zip(plan, oks):
            sel = np.flatnonzero(ok)
            cost = comp[sel] + t.link[c] * comm[sel] if t.pays[c] else comp[sel]
            if self.bounded:
                fit = cost <= self.T
                sel, cost = sel[fit], cost[fit]
            out.append((owner[sel], J[sel], cost))
        return out

    def group(self, a: int, b: int) -> None:
        """Fill ``best`` for the ideals ``a .. b-1`` (consecutive, so by size). Their candidates are the reached
        smaller ideals and the group's own; the states are then filled by number of devices used, since
        ``best[I, u]`` needs only states with one device fewer."""
        t = self.t
        I = np.arange(a, b)
        I = I[t.lower[I].argsort(kind="stable")]     # by lower, as :meth:`relax` needs
        self.group_lo, self.group_hi = a, b
        self._index_reached(extra=self.pos_of[I])
        plan, win, alive = self.windows(I)
        if self.kernel == "c":
            if plan:
                self._compiled_group(I, plan, win, alive)
            self.add_reached(I)
            return
        pairs = self.feasible_pairs(I, plan, win) if plan else None
        if pairs is not None:
            used = self.usage.sum(1)
            for layer in range(1, int(used.max()) + 1):
                for (c, _, _), (own, J, cost) in zip(plan, pairs):
                    states = self.targets[c][used[self.targets[c]] == layer]
                    self.relax(c, I, alive, own, J, cost, states)
        self.add_reached(I)

    def _compiled_group(self, I: np.ndarray, plan, win, alive) -> None:
        """:meth:`group`'s candidates, costs and relaxation in the compiled kernel (the same tables, bit for bit)."""
        t = self.t
        _, _, start, stop = win
        empty = np.zeros(0)
        if plan[0][1] is None:
            lo = hi = empty
        else:
            lo = np.ascontiguousarray(np.stack([p[1] for p in plan]), dtype=np.float64)
            hi = np.ascontiguousarray(np.stack([p[2] for p in plan]), dtype=np.float64)
        self.pairs += _compiled.group(
            *t.compiled_args, *self.c_states, self.best, self.prev_ideal, self.prev_class,
            np.ascontiguousarray(I, dtype=np.int64), np.ascontiguousarray(start, dtype=np.int64),
            np.ascontiguousarray(stop, dtype=np.int64), np.ascontiguousarray(self.r_ideal, dtype=np.int64),
            np.ascontiguousarray(self.r_low, dtype=np.float64), np.array([p[0] for p in plan], dtype=np.int64),
            lo, hi, np.zeros(0, np.uint8) if alive is None else np.ascontiguousarray(alive, dtype=np.uint8),
            float(self.T), self.bounded, bool(self.pays_any and self.bounded))

    def relax(self, c: int, I: np.ndarray, alive, own, Js, cost, states) -> None:
        """``best[I, u] = min(best[I, u], max(best[J, u - e_c], cost_c(I \\ J)))`` over the feasible pairs
        (``I[own]``, ``Js``) for each target state ``u`` in ``states`` (of class ``c``), the first best ``J`` (in
        ``reached`` order) kept for the chain. ``I`` is sorted by ``lower``, so the ideals where a state is alive
        are a slice of ``I`` and their pairs a slice of the pairs (owners ascending)."""
        if Js.size == 0:
            return
        n = I.size
        gstart = np.flatnonzero(np.diff(own, prepend=-1))   # first pair of each owner
        for u in map(int, states):
            if alive is None:
                o0, o1 = 0, n
            else:
                col = alive[:, u]
                if not col.any():
                    continue
                o0, o1 = int(col.argmax()), n - int(col[::-1].argmax())
            p0, p1 = (int(x) for x in np.searchsorted(own, (o0, o1)))
            if p0 == p1:
                continue
            g0, g1 = np.searchsorted(gstart, (p0, p1))
            first = gstart[g0:g1] - p0
            vals = np.maximum(self.best[Js[p0:p1], u - self.strides[c]], cost[p0:p1])
            v = np.minimum.reduceat(vals, first)
            rows = I[own[p0 + first]]
            better = v < self.best[rows, u]
            if not better.any():
                continue
            group = np.repeat(np.arange(first.size), np.diff(np.append(first, p1 - p0)))
            arg = np.minimum.reduceat(np.where(vals == v[group], np.arange(p1 - p0), p1 - p0), first)
            b = np.flatnonzero(better)       # the first pair reaching each improved minimum
            self.best[rows[b], u] = v[b]
            self.prev_ideal[rows[b], u] = Js[p0 + arg[b]]
            self.prev_class[rows[b], u] = c

    def result(self) -> RunResult:
        """The value at (all ideals, every device available) and its chain of sets, last first."""
        N, full = self.t.ideals.count, self.usage.shape[0] - 1
        value = float(self.best[N - 1, full])
        chain: list[tuple[int, int, int]] = []
        if math.isfinite(value):
            i, u = N - 1, full
            while i != 0:
                c, j = int(self.prev_class[i, u]), int(self.prev_ideal[i, u])
                chain.append((c, j, i))
                i, u = j, u - int(self.strides[c])
        return RunResult(value=value, chain=chain, pairs=self.pairs)


def run(t: Tables, threshold: float, *, check: Callable[[float], None] | None = None,
        kernel: str = "auto") -> RunResult:
    """One DP pass skipping every set whose cost exceeds ``threshold`` (see the module docstring); ``kernel``:
    ``"c"`` (compiled), ``"numpy"`` or ``"auto"`` (compiled when built; :func:`kernel_name`)."""
    dp = run_pass(t, threshold, check=check, kernel=kernel)
    res = dp.result()
    res.kernel = dp.kernel
    return res


def run_pass(t: Tables, threshold: float, *, check: Callable[[float], None] | None = None,
             kernel: str = "auto") -> _Pass:
    """:func:`run`, handing back the finished pass itself (its tables ``best``, ``prev_ideal``, ``prev_class``)."""
    dp = _Pass(t, threshold, kernel_name(kernel))
    N = t.ideals.count
    if check is not None:
        check(0.0)
    sizes = np.bitwise_count(t.ideals.bits).sum(1)
    if (sizes[1:] < sizes[:-1]).any():
        raise ValueError("ideals must be listed by size")
    # groups of consecutive ideals whose windows (against every ideal) hold about `batch` entries in all
    batch = _BATCH if dp.kernel == "numpy" else _BATCH_C
    if N * N <= 2 * batch:
        edges = [1, N]                 # every window fits at once
    else:
        _, win, _ = dp.windows_against_all()
        ends = np.cumsum(win[3] - win[2])
        cuts = np.searchsorted(ends, np.arange(batch, int(ends[-1]) if ends.size else 0, batch), "right") + 1
        edges = sorted({1, N, *[int(x) for x in cuts if 1 < x < N]})
    for a, b in zip(edges[:-1], edges[1:]):
        if check is not None:
            check(a / N)
        dp.group(a, b)
    return dp
