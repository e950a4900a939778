"""The numeric core of the throughput DP: per-ideal tables and the thresholded recursion.

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

from .ideals import Ideals, Lanes, chain_decomposition, words_for

_REL = 1e-9


@dataclass
class Tables:
    """Everything a DP run needs, built once per solve (``k`` device classes)."""

    ideals: Ideals
    comp: np.ndarray        # (N, k) compute of the ideal on class c (unsupported ops count 0)
    unsup: np.ndarray       # (N, k) number of supernodes unsupported on class c
    forbid: np.ndarray      # (N, k) number of supernodes forbidden on class c (pins)
    size: np.ndarray        # (N,)
    lower: np.ndarray       # (N,) class-free compute lower bound
    order: np.ndarray       # ideals sorted by ``lower``
    lower_sorted: np.ndarray
    rho: np.ndarray         # (k,) max over nodes of lower / class compute
    pk: np.ndarray          # (N, P) packed per-chain counts of each ideal
    dk: np.ndarray          # (N, P) same for the down-closure of the hyperedges each ideal cuts
    guard: np.ndarray       # (P,)
    pk_sorted: np.ndarray   # (P, N) ``pk`` in ``order``, one contiguous row per word (window scans)
    hmask: np.ndarray       # (H, W) supernode bitset of each hyperedge
    htc: np.ndarray         # (H,) transfer cost of each hyperedge
    cut: np.ndarray         # (N, WH) bitset of hyperedges each ideal cuts
    wcut: np.ndarray        # (N,) transfer cost of the hyperedges each ideal cuts
    counts: tuple[int, ...]
    pays: np.ndarray
    link: np.ndarray
    cap: np.ndarray
    need_unsup: np.ndarray  # (k,) bool: some node is unsupported on class c
    need_forbid: np.ndarray
    need_size: np.ndarray   # (k,) bool: the whole graph does not fit class c

    @classmethod
    def build(cls, ideals: Ideals, *, succs: list[list[int]], lat: np.ndarray, size: np.ndarray,
              forbid: np.ndarray, hyperedges: list[tuple[int, float]], counts, pays, link, cap) -> "Tables":
        """``lat`` (K, k) supernode latency per class (``inf`` = unsupported); ``forbid`` (K, k) bool;
        ``hyperedges`` as (bitmask over supernodes, transfer cost); ``succs`` the DAG (topological numbering)."""
        lat = np.asarray(lat, dtype=float)
        K, k = lat.shape
        unsupported = np.isinf(lat)
        finite = np.where(unsupported, 0.0, lat)
        low_node = np.where(unsupported.all(1), 0.0, np.min(np.where(unsupported, np.inf, lat), 1))
        feats = np.concatenate([finite, unsupported.astype(float), np.asarray(forbid, dtype=float),
                                np.asarray(size, dtype=float)[:, None], low_node[:, None]], axis=1)
        pre = ideals.prefix_sums(feats)
        comp, unsup, forb = pre[:, :k], np.rint(pre[:, k:2 * k]), np.rint(pre[:, 2 * k:3 * k])
        size_p, lower = pre[:, 3 * k], pre[:, 3 * k + 1]
        order = np.argsort(lower, kind="stable")
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(unsupported | (finite <= 0), 0.0, low_node[:, None] / np.where(finite > 0, finite, 1.0))
        rho = np.minimum(1.0, ratio.max(0, initial=0.0))
        rho = np.where(rho > 0, rho * (1 + 1e-12), 1.0)
        W = words_for(K)
        H = len(hyperedges)
        hmask = np.zeros((H, W), dtype=np.uint64)
        htc = np.zeros(H)
        for h, (mask, tc) in enumerate(hyperedges):
            # a Python int bitmask over supernodes -> W little-endian uint64 words (bit v of the int = node v)
            hmask[h] = np.frombuffer(mask.to_bytes(8 * W, "little"), dtype="<u8")
            htc[h] = tc
        N = ideals.count
        WH = words_for(H)
        cut = np.zeros((N, WH), dtype=np.uint64)
        wcut = np.zeros(N)
        bits = ideals.bits
        # down-closure of every hyperedge, to bound which ideals a cut hyperedge reaches
        anc = [0] * K      # anc[v]: bitmask of v and all its ancestors (an int, bit u = node u)
        preds: list[list[int]] = [[] for _ in range(K)]
        for v in range(K):
            for w in succs[v]:
                preds[w].append(v)
        for v in range(K):
            a = 1 << v
            for p in preds[v]:
                a |= anc[p]
            anc[v] = a
        closure = bits.copy()
        for h, (mask, _) in enumerate(hyperedges):
            inside = (bits & hmask[h]).any(1)
            outside = (~bits & hmask[h]).any(1)
            c = inside & outside
            if not c.any():
                continue
            cut[c, h // 64] |= np.uint64(1) << np.uint64(h % 64)     # set bit h of the hyperedge bitset
            wcut[c] += htc[h]
            down, m = 0, mask
            while m:                                   # for each node v of the hyperedge, lowest first:
                low = m & -m                           # the lowest set bit of m (two's complement trick)
                m ^= low                               # ... cleared from m
                down |= anc[low.bit_length() - 1]      # bit_length - 1 = its index v; add v's ancestors
            closure[c] |= np.frombuffer(down.to_bytes(8 * W, "little"), dtype="<u8")
        chains = chain_decomposition(K, succs)
        lanes = Lanes.for_chains(chains, K)
        chain_masks = np.zeros((len(chains), W), dtype=np.uint64)
        for ci, ch in enumerate(chains):
            m = 0
            for v in ch:
                m |= 1 << v
            chain_masks[ci] = np.frombuffer(m.to_bytes(8 * W, "little"), dtype="<u8")
        pk = ideals.prefix_sums(lanes.node_weights())
        dk = lanes.pack(closure, chain_masks)
        size_arr = np.asarray(size, dtype=float)
        cap = np.asarray(cap, dtype=float)
        return cls(ideals=ideals, comp=comp, unsup=unsup, forbid=forb, size=size_p, lower=lower, order=order,
                   lower_sorted=lower[order], rho=rho, pk=pk, dk=dk, guard=lanes.guard,
                   pk_sorted=np.ascontiguousarray(pk[order].T), hmask=hmask, htc=htc,
                   cut=cut, wcut=wcut, counts=tuple(counts), pays=np.asarray(pays, dtype=bool),
                   link=np.asarray(link, dtype=float), cap=cap,
                   need_unsup=unsupported.any(0), need_forbid=np.asarray(forbid, dtype=bool).any(0),
                   need_size=np.array([float(size_arr.sum()) > cc for cc in cap], dtype=bool))

    def subsets(self, i: int, J: np.ndarray, packed: np.ndarray | None = None) -> np.ndarray:
        """Mask over ``J``: ``packed[J]`` (default: the ideals) ⊆ ideal ``i`` (see :func:`packed_subset_mask`)."""
        packed = self.pk if packed is None else packed
        g = self.guard
        top = self.pk[i] | g
        if g.size == 1:
            return ((top[0] - packed[J, 0]) & g[0]) == g[0]
        return (((top - packed[J]) & g) == g).all(1)

    def comm(self, i: int, J: np.ndarray) -> np.ndarray:
        """Transfer cost paid by a device holding ``I_i \\ I_j`` for each ``j`` in ``J`` (before link factors).

        For a hyperedge ``h`` cut by ``I`` with ``a = h ∩ I``, the correction is
        ``tc(h)·([a meets J] + [a ⊆ J])`` (0: ``h`` not cut by ``J``; 1: ``h`` feeds
        ``I \\ J`` and beyond; 2: ``h`` jumps over ``I \\ J``).
        """
        out = self.wcut[i] + self.wcut[J]
        if self.htc.size == 0 or J.size == 0:
            return out
        rows = np.flatnonzero(~self.subsets(i, J, self.dk))   # only these can share a cut hyperedge with I
        if rows.size == 0:
            return out
        # the hyperedges I cuts: the set bits of its uint64 bitset, read byte by byte in little-endian bit order
        hs = np.flatnonzero(np.unpackbits(self.cut[i].view(np.uint8), bitorder="little"))
        hs = hs[hs < self.htc.size]
        if hs.size == 0:
            return out
        a = self.hmask[hs] & self.ideals.bits[i]                                        # (L, W)
        Jb = self.ideals.bits[J[rows]]                                                  # (r, W)
        meets = inside = None
        for w in range(a.shape[1]):           # word by word: 2-D ops, no reductions over a short axis
            aw, jw = a[:, w][None, :], Jb[:, w][:, None]
            m, o = (aw & jw) != 0, (aw & ~jw) == 0
            meets, inside = (m, o) if meets is None else (meets | m, inside & o)
        out[rows] -= (meets.astype(float) + inside) @ self.htc[hs]
        return out


@dataclass
class RunResult:
    value: float
    chain: list[tuple[int, int, int]]  # (class, J, I) from the last set backwards
    pairs: int                          # (J, I) pairs that passed the window and subset test
    complete: bool = True


def _states(counts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Usage vectors (S, k) in mixed-radix order and the stride of each class."""
    strides = np.ones(len(counts), dtype=np.int64)
    for c in range(1, len(counts)):
        strides[c] = strides[c - 1] * (counts[c - 1] + 1)
    us = np.array(list(itertools.product(*[range(x + 1) for x in reversed(counts)])), dtype=np.int64)[:, ::-1]
    return us, strides


def packed_subset_mask(top: np.ndarray, packed: np.ndarray, guard: np.ndarray) -> np.ndarray:
    """Which columns of ``packed`` (P, m) are subsets of the ideal whose packed counts OR guard bits are ``top`` (P,).

    An ideal meets each chain of the chain decomposition in a prefix, so
    ``J ⊆ I`` iff on every chain J's count is at most I's. The counts sit in
    lanes of a uint64 word, each lane with a guard bit above its count
    (:class:`~.ideals.Lanes`); with the guard bits set in ``top = I | guard``,
    ``top - J`` borrows from a lane's guard bit exactly when that lane's count
    of J exceeds I's, and the guard stops the borrow from reaching the next
    lane. So ``(top - J) & guard == guard`` — one subtraction per word — tests
    every chain at once.

    >>> guard = np.array([0b100_100], dtype=np.uint64)          # two lanes of 3 bits: counts 0..3
    >>> top = np.array([0b010_001], dtype=np.uint64) | guard     # I: count 2 on chain 1, 1 on chain 0
    >>> packed = np.array([[0b001_001, 0b010_000, 0b000_010]], dtype=np.uint64)
    >>> packed_subset_mask(top, packed, guard).tolist()
    [True, True, False]
    """
    mask = ((top[0] - packed[0]) & guard[0]) == guard[0]
    for w in range(1, guard.size):
        mask &= ((top[w] - packed[w]) & guard[w]) == guard[w]
    return mask


class _Pass:
    """The state of one thresholded DP pass (see the module docstring): the tables ``best`` and, for the chain,
    the previous ideal and the class chosen per state."""

    def __init__(self, t: Tables, threshold: float) -> None:
        self.t = t
        N = t.ideals.count
        self.k = len(t.counts)
        self.usage, self.strides = _states(t.counts)
        S = self.usage.shape[0]
        # per class c: the states with u_c > 0 and the state each comes from (one device of class c fewer)
        self.targets, self.sources = [], []
        for c in range(self.k):
            sel = np.flatnonzero(self.usage[:, c] > 0)   # state index == mixed-radix value, so sel is sorted
            self.targets.append(sel)
            self.sources.append(sel - self.strides[c])
        self.best = np.full((N, S), np.inf)
        self.best[0] = 0.0
        self.prev_ideal = np.full((N, S), -1, dtype=np.int32)   # J of the last set I \\ J of the best chain
        self.prev_class = np.full((N, S), -1, dtype=np.int8)    # the class of the device holding it
        scale = max(1.0, float(t.lower[-1]), float(np.max(t.comp[-1])) if N else 0.0)
        self.tol = _REL * scale
        self.bounded = math.isfinite(threshold)
        self.T = threshold * (1 + _REL) + self.tol if self.bounded else np.inf
        self.low_total = float(t.lower[-1])
        if self.bounded:
            counts = np.array(t.counts, dtype=np.int64)
            self.cap_used = self.usage @ (t.rho * self.T) + self.tol             # lower-mass the used devices hold
            self.cap_left = (counts - self.usage) @ (t.rho * self.T) + self.tol  # ... and the unused ones
        self.pays_any = bool(t.pays.any())
        self.active = [c for c in range(self.k) if t.counts[c] > 0]
        # reach[p]: the ideal at position p of ``order`` has a finite state (a chain within T reaches it);
        # a J without one can never improve best[I], so it is dropped before any cost is computed
        self.pos_of = np.empty(N, dtype=np.int64)
        self.pos_of[t.order] = np.arange(N)
        self.reach = np.zeros(N, dtype=bool)
        self.reach[self.pos_of[0]] = True
        self.pairs = 0

    def windows(self, i: int):
        """Per class, the alive target states, their source states and the window ``[lo, hi]`` of ``lower`` where
        a candidate ``J`` must lie; plus the slice ``[start, stop)`` of ``order`` covering every window."""
        t, li, tol = self.t, self.t.lower[i], self.tol
        if not self.bounded:
            plan = [(c, self.targets[c], self.sources[c], -np.inf, np.inf) for c in self.active]
            return plan, 0, int(np.searchsorted(t.lower_sorted, li + tol, "right"))
        alive = (li <= self.cap_used) & (self.low_total - li <= self.cap_left)
        plan, lo_all, hi_all = [], np.inf, -np.inf
        for c in self.active:
            a = alive[self.targets[c]]
            if not a.any():
                continue
            src = self.sources[c][a]
            lo = max(li - t.rho[c] * self.T - tol, self.low_total - float(self.cap_left[src].max()))
            hi = min(li + tol, float(self.cap_used[src].max()))
            if lo > hi:
                continue
            plan.append((c, self.targets[c][a], src, lo, hi))
            lo_all, hi_all = min(lo_all, lo), max(hi_all, hi)
        if not plan:
            return plan, 0, 0
        return plan, int(np.searchsorted(t.lower_sorted, lo_all, "left")), \
            int(np.searchsorted(t.lower_sorted, hi_all, "right"))

    def candidates(self, i: int, start: int, stop: int):
        """Ideals ``J ⊊ I_i`` among ``order[start:stop]`` (the packed subset test) that some chain within ``T``
        reaches, and their positions in ``order``."""
        t = self.t
        mask = packed_subset_mask(t.pk[i] | t.guard, t.pk_sorted[:, start:stop], t.guard)
        mask &= self.reach[start:stop]
        pos = np.flatnonzero(mask) + start
        cand = t.order[pos]
        keep = cand != i
        return cand[keep], pos[keep]

    def feasible_sets(self, i: int, plan, cand: np.ndarray, pos: np.ndarray):
        """Per class of ``plan``: ``(a, ok, compute)`` over its window ``cand[a:b]`` (``ok``: ``I \\ J`` fits the
        class — compute within ``T``, supported, not forbidden, within memory); and which candidates need their
        communication (some paying class accepts them)."""
        t, T = self.t, self.T
        lc = t.lower_sorted[pos] if self.bounded else None      # ascending: each class's window is a slice
        oks = []
        need = np.zeros(cand.size, dtype=bool) if self.pays_any else None
        for c, _targets, _sources, lo, hi in plan:
            if lc is not None:
                a, b = int(np.searchsorted(lc, lo, "left")), int(np.searchsorted(lc, hi, "right"))
            else:
                a, b = 0, cand.size
            cs = cand[a:b]
            comp = t.comp[i, c] - t.comp[cs, c]
            ok = comp <= T
            if t.need_unsup[c]:
                ok &= t.unsup[cs, c] == t.unsup[i, c]
            if t.need_forbid[c]:
                ok &= t.forbid[cs, c] == t.forbid[i, c]
            if t.need_size[c]:
                ok &= t.size[i] - t.size[cs] <= t.cap[c] * (1 + _REL)
            oks.append((a, ok, comp))
            if t.pays[c]:
                need[a:b] |= ok
        return oks, need

    def relax(self, i: int, plan, oks, cand: np.ndarray, comm: np.ndarray | None) -> None:
        """``best[I, u] = min(best[I, u], max(best[J, u - e_c], cost_c(I \\ J)))`` over the feasible ``J``."""
        t, row_best = self.t, self.best[i]
        for (c, targets, sources, _, _), (a, ok, comp) in zip(plan, oks):
            sel = np.flatnonzero(ok)
            if sel.size == 0:
                continue
            cost = comp[sel] + t.link[c] * comm[a + sel] if t.pays[c] else comp[sel]
            sel = sel + a
            if self.bounded:
                fit = cost <= self.T
                sel, cost = sel[fit], cost[fit]
                if sel.size == 0:
                    continue
            J = cand[sel]
            A = self.best[J][:, sources]     # (m, a): best[J, u - e_c] per candidate and state (rows, then columns)
            np.maximum(A, cost[:, None], out=A)
            v = A.min(0)
            better = v < row_best[targets]
            if better.any():
                ts = targets[better]
                row_best[ts] = v[better]
                self.reach[self.pos_of[i]] = True
                self.prev_ideal[i, ts] = J[A[:, better].argmin(0)]
                self.prev_class[i, ts] = c

    def step(self, i: int) -> None:
        """Fill ``best[I_i, :]``."""
        plan, start, stop = self.windows(i)
        if (self.bounded and not plan) or stop <= start:
            return
        cand, pos = self.candidates(i, start, stop)
        if cand.size == 0:
            return
        self.pairs += int(cand.size)
        oks, need = self.feasible_sets(i, plan, cand, pos)
        comm = None
        if self.pays_any:
            rows = np.flatnonzero(need)
            comm = np.zeros(cand.size)
            if rows.size:
                comm[rows] = self.t.comm(i, cand[rows])
        self.relax(i, plan, oks, cand, comm)

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


def run(t: Tables, threshold: float, *, check: Callable[[float], None] | None = None) -> RunResult:
    """One DP pass skipping every set whose cost exceeds ``threshold`` (see the module docstring)."""
    dp = _Pass(t, threshold)
    N = t.ideals.count
    for i in range(1, N):
        if check is not None and i % 512 == 0:
            check(i / N)
        dp.step(i)
    return dp.result()
