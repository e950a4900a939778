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

A run takes a threshold ``T``: pairs whose cost exceeds ``T`` are skipped, and
candidate ``J`` for an ideal ``I`` come from a window of ideals sorted by a
class-free compute lower bound, then a vectorised bitset subset test. A finite
result ``≤ T`` is the exact optimum; ``inf`` means the optimum exceeds ``T``.

>>> import numpy as np
>>> from viz_place.solvers.ideals import enumerate_ideals
>>> ids = enumerate_ideals(2, [0, 1], [[1], []])
>>> t = Tables.build(ids, lat=np.array([[1.0], [2.0]]), size=np.zeros(2), forbid=np.zeros((2, 1), bool),
...                  hyperedges=[], counts=[2], pays=[False], link=[1.0], cap=[np.inf])
>>> run(t, np.inf).value
2.0
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .ideals import Ideals, words_for

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
    hmask: np.ndarray       # (H, W) supernode bitset of each hyperedge
    htc: np.ndarray         # (H,) transfer cost of each hyperedge
    cut: np.ndarray         # (N, WH) bitset of hyperedges each ideal cuts
    wcut: np.ndarray        # (N,) transfer cost of the hyperedges each ideal cuts
    counts: tuple[int, ...]
    pays: np.ndarray
    link: np.ndarray
    cap: np.ndarray

    @classmethod
    def build(cls, ideals: Ideals, *, lat: np.ndarray, size: np.ndarray, forbid: np.ndarray,
              hyperedges: list[tuple[int, float]], counts, pays, link, cap) -> "Tables":
        """``lat`` (K, k) supernode latency per class (``inf`` = unsupported); ``forbid`` (K, k) bool;
        ``hyperedges`` as (bitmask over supernodes, transfer cost)."""
        lat = np.asarray(lat, dtype=float)
        K, k = lat.shape
        unsupported = np.isinf(lat)
        finite = np.where(unsupported, 0.0, lat)
        feats = np.concatenate([finite, unsupported.astype(float), np.asarray(forbid, dtype=float),
                                np.asarray(size, dtype=float)[:, None],
                                np.where(unsupported.all(1), 0.0, np.min(np.where(unsupported, np.inf, lat), 1))[:, None]],
                               axis=1)
        pre = ideals.prefix_sums(feats)
        comp, unsup, forb = pre[:, :k], np.rint(pre[:, k:2 * k]), np.rint(pre[:, 2 * k:3 * k])
        size_p, lower = pre[:, 3 * k], pre[:, 3 * k + 1]
        order = np.argsort(lower, kind="stable")
        W = words_for(K)
        H = len(hyperedges)
        hmask = np.zeros((H, W), dtype=np.uint64)
        htc = np.zeros(H)
        for h, (mask, tc) in enumerate(hyperedges):
            hmask[h] = np.frombuffer(mask.to_bytes(8 * W, "little"), dtype="<u8")
            htc[h] = tc
        N = ideals.count
        WH = words_for(H)
        cut = np.zeros((N, WH), dtype=np.uint64)
        wcut = np.zeros(N)
        bits = ideals.bits
        for h in range(H):
            inside = (bits & hmask[h]).any(1)
            outside = (~bits & hmask[h]).any(1)
            c = inside & outside
            cut[c, h // 64] |= np.uint64(1) << np.uint64(h % 64)
            wcut[c] += htc[h]
        return cls(ideals=ideals, comp=comp, unsup=unsup, forbid=forb, size=size_p, lower=lower, order=order,
                   lower_sorted=lower[order], hmask=hmask, htc=htc, cut=cut, wcut=wcut, counts=tuple(counts),
                   pays=np.asarray(pays, dtype=bool), link=np.asarray(link, dtype=float),
                   cap=np.asarray(cap, dtype=float))

    def comm(self, i: int, J: np.ndarray) -> np.ndarray:
        """Transfer cost paid by a device holding ``I_i \\ I_j`` for each ``j`` in ``J`` (before link factors)."""
        out = self.wcut[i] + self.wcut[J]
        if self.htc.size == 0 or J.size == 0:
            return out
        ci = self.cut[i]
        common = self.cut[J] & ci
        rows = np.flatnonzero(common.any(1))
        if rows.size == 0:
            return out
        hs = np.flatnonzero(np.unpackbits(ci.view(np.uint8), bitorder="little"))
        hs = hs[hs < self.htc.size]
        words, shifts = hs // 64, (hs % 64).astype(np.uint64)
        has = ((common[rows][:, words] >> shifts) & np.uint64(1)).astype(bool)        # (r, L)
        hI = self.hmask[hs] & self.ideals.bits[i]                                       # (L, W)
        Jb = self.ideals.bits[J[rows]]                                                  # (r, W)
        hit = (hI[None, :, :] & ~Jb[:, None, :]).any(2)                                 # (r, L)
        out[rows] -= ((2.0 - hit) * has) @ self.htc[hs]
        return out


@dataclass
class RunResult:
    value: float
    chain: list[tuple[int, int, int]]  # (class, J, I) from the last set backwards
    pairs: int                          # (J, I) pairs that passed the window and subset test
    complete: bool = True


def _states(counts: tuple[int, ...]) -> tuple[int, np.ndarray]:
    """Number of usage vectors and the mixed-radix stride of each class."""
    strides = np.ones(len(counts), dtype=np.int64)
    for c in range(1, len(counts)):
        strides[c] = strides[c - 1] * (counts[c - 1] + 1)
    return int(np.prod([x + 1 for x in counts])), strides


def run(t: Tables, threshold: float, *, check: Callable[[float], None] | None = None) -> RunResult:
    """One DP pass skipping every set whose cost exceeds ``threshold`` (see the module docstring)."""
    ids = t.ideals
    N = ids.count
    k = len(t.counts)
    S, strides = _states(t.counts)
    us = np.array(list(itertools.product(*[range(x + 1) for x in reversed(t.counts)])))[:, ::-1]
    state_index = us @ strides
    tgt, prev = [], []
    for c in range(k):
        sel = state_index[us[:, c] > 0]
        tgt.append(np.sort(sel))
        prev.append(np.sort(sel) - strides[c])
    best = np.full((N, S), np.inf)
    best[0] = 0.0
    chJ = np.full((N, S), -1, dtype=np.int32)
    chC = np.full((N, S), -1, dtype=np.int8)
    bits = ids.bits
    top = float(t.lower[-1]) if N else 0.0
    tol = _REL * max(1.0, top, float(np.max(t.comp[-1])) if N else 0.0)
    T = threshold * (1 + _REL) + tol if math.isfinite(threshold) else np.inf
    pays_any = bool(t.pays.any())
    pairs = 0
    for i in range(1, N):
        if check is not None and i % 512 == 0:
            check(i / N)
        lo = np.searchsorted(t.lower_sorted, t.lower[i] - T, "left") if math.isfinite(T) else 0
        hi = np.searchsorted(t.lower_sorted, t.lower[i] + tol, "right")
        cand = t.order[lo:hi]
        cand = cand[cand < i]
        if cand.size == 0:
            continue
        cand = cand[~(bits[cand] & ~bits[i]).any(1)]
        if cand.size == 0:
            continue
        pairs += int(cand.size)
        size = t.size[i] - t.size[cand]
        comm = None
        oks = []
        for c in range(k):
            comp = t.comp[i, c] - t.comp[cand, c]
            ok = ((comp <= T) & (t.unsup[cand, c] == t.unsup[i, c]) & (t.forbid[cand, c] == t.forbid[i, c])
                  & (size <= t.cap[c] * (1 + _REL)))
            oks.append((ok, comp))
        if pays_any:
            need = np.zeros(cand.size, dtype=bool)
            for c in range(k):
                if t.pays[c] and t.counts[c]:
                    need |= oks[c][0]
            rows = np.flatnonzero(need)
            comm = np.zeros(cand.size)
            if rows.size:
                comm[rows] = t.comm(i, cand[rows])
        row_best = best[i]
        for c in range(k):
            if t.counts[c] == 0:
                continue
            ok, comp = oks[c]
            cost = comp + t.link[c] * comm if t.pays[c] else comp
            ok &= cost <= T
            sel = np.flatnonzero(ok)
            if sel.size == 0:
                continue
            J = cand[sel]
            A = best[J][:, prev[c]]                       # (m, S_c)
            np.maximum(A, cost[sel][:, None], out=A)
            am = A.argmin(0)
            v = A[am, np.arange(A.shape[1])]
            better = v < row_best[tgt[c]]
            if better.any():
                ts = tgt[c][better]
                row_best[ts] = v[better]
                chJ[i, ts] = J[am[better]]
                chC[i, ts] = c
    full = S - 1
    value = float(best[N - 1, full])
    chain: list[tuple[int, int, int]] = []
    if math.isfinite(value):
        i, u = N - 1, full
        while i != 0:
            c, j = int(chC[i, u]), int(chJ[i, u])
            chain.append((c, j, i))
            i, u = j, u - int(strides[c])
    return RunResult(value=value, chain=chain, pairs=pairs)
