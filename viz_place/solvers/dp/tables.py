"""Per-ideal tables of the throughput DP (:mod:`.recursion`): compute, size, unsupported and forbidden figures
as prefix sums over the ideals, the packed per-chain counts for the subset test, and the hyperedge tables behind
the communication of ``I \\ J`` (:meth:`Tables.comm`).

>>> import numpy as np
>>> from viz_place.solvers.dp.ideals import enumerate_ideals
>>> ids = enumerate_ideals(2, [0, 1], [[1], []])
>>> t = Tables.build(ids, succs=[[1], []], lat=np.array([[1.0], [2.0]]), size=np.zeros(2),
...                  forbid=np.zeros((2, 1), bool), hyperedges=[], counts=[2], pays=[False], link=[1.0], cap=[np.inf])
>>> t.comp[:, 0].tolist()          # compute of the ideals {}, {0}, {0, 1} on the one class
[0.0, 1.0, 3.0]
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .hyperedges import hyperedge_tables
from .ideals import Ideals, Lanes, chain_decomposition
from .lattice import DownEdges, down_edges

_REL = 1e-9
#: (pair, cut hyperedge) items of the communication correction handled at once (bounds its temporary arrays).
_ITEMS = 1 << 22


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
    htc: np.ndarray         # (H,) transfer cost of each hyperedge (see :mod:`.hyperedges`)
    wcut: np.ndarray        # (N,) transfer cost of the hyperedges each ideal cuts
    cut_ptr: np.ndarray     # (N + 1,) the hyperedges ideal i cuts are cut_h[cut_ptr[i]:cut_ptr[i + 1]]
    cut_h: np.ndarray
    cut_down: np.ndarray    # (E, P) packed down-closure of h ∩ I per (ideal, cut hyperedge) entry
    free: np.ndarray        # (H, P) packed nodes above no node of each hyperedge
    succs: list[list[int]]
    counts: tuple[int, ...]
    pays: np.ndarray
    link: np.ndarray
    cap: np.ndarray
    need_unsup: np.ndarray  # (k,) bool: some node is unsupported on class c
    need_forbid: np.ndarray
    need_size: np.ndarray   # (k,) bool: the whole graph does not fit class c

    @classmethod
    def build(cls, ideals: Ideals, *, succs: list[list[int]], lat: np.ndarray, size: np.ndarray,
              forbid: np.ndarray, hyperedges: list[tuple[int, float]], counts, pays, link, cap,
              chains: list[list[int]] | None = None) -> "Tables":
        """``lat`` (K, k) supernode latency per class (``inf`` = unsupported); ``forbid`` (K, k) bool;
        ``hyperedges`` as (bitmask over supernodes, transfer cost); ``succs`` the DAG (topological numbering);
        ``chains`` a chain decomposition of it (default: :func:`~.ideals.chain_decomposition`)."""
        lat = np.asarray(lat, dtype=float)
        K, k = lat.shape
        unsupported = np.isinf(lat)
        finite = np.where(unsupported, 0.0, lat)
        low_node = np.where(unsupported.all(1), 0.0, np.where(unsupported, np.inf, lat).min(1))
        feats = np.concatenate([finite, unsupported.astype(float), np.asarray(forbid, dtype=float),
                                np.asarray(size, dtype=float)[:, None], low_node[:, None]], axis=1)
        pre = ideals.prefix_sums(feats)
        comp, unsup, forb = pre[:, :k], np.rint(pre[:, k:2 * k]), np.rint(pre[:, 2 * k:3 * k])
        size_p, lower = pre[:, 3 * k], pre[:, 3 * k + 1]
        order = lower.argsort(kind="stable")
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(unsupported | (finite <= 0), 0.0, low_node[:, None] / np.where(finite > 0, finite, 1.0))
        rho = np.minimum(1.0, ratio.max(0, initial=0.0))
        rho = np.where(rho > 0, rho * (1 + 1e-12), 1.0)
        chains = chain_decomposition(K, succs) if chains is None else chains
        lanes = Lanes.for_chains(chains, K)
        pk = ideals.prefix_sums(lanes.node_weights())
        hx = hyperedge_tables(ideals, succs, hyperedges, chains, lanes, pk)
        size_arr = np.asarray(size, dtype=float)
        cap = np.asarray(cap, dtype=float)
        return cls(ideals=ideals, comp=comp, unsup=unsup, forbid=forb, size=size_p, lower=lower, order=order,
                   lower_sorted=lower[order], rho=rho, pk=pk, dk=hx.dk, guard=lanes.guard, htc=hx.htc, wcut=hx.wcut,
                   cut_ptr=hx.cut_ptr, cut_h=hx.cut_h, cut_down=hx.cut_down, free=hx.free, succs=succs, counts=tuple(counts), pays=np.asarray(pays, dtype=bool),
                   link=np.asarray(link, dtype=float), cap=cap,
                   need_unsup=unsupported.any(0), need_forbid=np.asarray(forbid, dtype=bool).any(0),
                   need_size=np.array([float(size_arr.sum()) > cc for cc in cap], dtype=bool))

    @cached_property
    def down(self) -> DownEdges | None:
        """The lattice's downward edges (complete families only): candidates by walking down, built on first use."""
        return down_edges(self.ideals, self.succs) if self.ideals.complete else None

    @cached_property
    def flat(self):
        """``pk, dk, free, cut_down, guard``, as 1-D arrays and a scalar guard when one word holds every lane."""
        arrays = (self.pk, self.dk, self.free, self.cut_down)
        if self.guard.size == 1:
            return (*(np.ascontiguousarray(a[:, 0]) for a in arrays), self.guard[0])
        return (*arrays, self.guard)

    @cached_property
    def compiled_args(self) -> tuple:
        """The tables as the compiled kernel reads them (C-contiguous, fixed dtypes; see ``_kernel.c``)."""
        f8, u8, i8 = np.float64, np.uint64, np.int64
        c = np.ascontiguousarray
        need = np.concatenate([self.need_unsup, self.need_forbid, self.need_size]).astype(np.uint8)
        return (c(self.comp, f8), c(self.unsup, f8), c(self.forbid, f8), c(self.size, f8), c(self.pk, u8),
                c(self.guard, u8), c(self.dk, u8), c(self.wcut, f8), c(self.cut_ptr, i8), c(self.cut_h, i8),
                c(self.cut_down, u8), c(self.free, u8), c(self.htc, f8), c(self.pays, np.uint8), c(self.link, f8),
                c(self.cap * (1 + _REL), f8), need)

    def comm(self, I: np.ndarray, J: np.ndarray) -> np.ndarray:
        """Transfer cost paid by a device holding ``I \\ J`` for each pair ``(I[p], J[p])`` (before link factors).

        For a hyperedge ``h`` cut by both ``I`` and ``J`` with ``a = h ∩ I`` the
        correction to ``w(I) + w(J)`` is ``tc(h)·(1 + [a ⊆ J])`` (1: ``h`` feeds
        ``I \\ J``; 2: ``h`` jumps over it); a hyperedge cut by only one of them
        needs none.
        """
        out = self.wcut[I] + self.wcut[J]
        if self.htc.size == 0 or I.size == 0:
            return out
        pk, dk, free, cut_down, g = self.flat
        # only a J whose cut hyperedges' down-closure leaves I can share a cut hyperedge with I
        rows = np.flatnonzero(~_within(dk[J], pk[I], g))
        if rows.size == 0:
            return out
        Ir, Jr = I[rows], J[rows]
        cnt = self.cut_ptr[Ir + 1] - self.cut_ptr[Ir]           # hyperedges cut by I, listed per ideal (CSR)
        ends = np.cumsum(cnt)
        if ends.size == 0 or ends[-1] == 0:
            return out
        corr = np.zeros(rows.size)
        # (row, cut hyperedge of I) items, at most _ITEMS at a time
        cuts = np.searchsorted(ends, np.arange(_ITEMS, int(ends[-1]), _ITEMS), "right")
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), rows.size]):
            if a == b:
                continue
            c = cnt[a:b]
            total = int(c.sum())
            item = np.repeat(np.arange(b - a), c)
            e = np.arange(total) + np.repeat(self.cut_ptr[Ir[a:b]] - (np.cumsum(c) - c), c)
            h = self.cut_h[e]
            pj = pk[Jr[a:b][item]]
            meets = ~_within(pj, free[h], g)                            # J meets h: h is cut by J too
            inside = _within(cut_down[e], pj, g)                        # h ∩ I ⊆ J
            corr[a:b] = np.bincount(item, self.htc[h] * (meets.astype(float) + inside), minlength=b - a)
        out[rows] -= corr
        return out


def _within(small: np.ndarray, big: np.ndarray, guard) -> np.ndarray:
    """Row by row ``small ⊆ big`` on packed counts: (m,) rows with a scalar guard (one word), or (m, P) rows."""
    if small.ndim == 1:
        return (((big | guard) - small) & guard) == guard
    return packed_subset_mask(big | guard, small, guard)


def packed_subset_mask(top: np.ndarray, packed: np.ndarray, guard: np.ndarray) -> np.ndarray:
    """Row by row, is ``packed[p]`` (m, P) a subset of the ideal whose packed counts OR guard bits are ``top[p]``?

    An ideal meets each chain of the chain decomposition in a prefix, so
    ``J ⊆ I`` iff on every chain J's count is at most I's. The counts sit in
    lanes of a uint64 word, each lane with a guard bit above its count
    (:class:`~.ideals.Lanes`); with the guard bits set in ``top = I | guard``,
    ``top - J`` borrows from a lane's guard bit exactly when that lane's count
    of J exceeds I's, and the guard stops the borrow from reaching the next
    lane. So ``(top - J) & guard == guard`` — one subtraction per word — tests
    every chain at once.

    >>> guard = np.array([0b100_100], dtype=np.uint64)          # two lanes of 3 bits: counts 0..3
    >>> top = np.array([[0b010_001]] * 3, dtype=np.uint64) | guard     # I: count 2 on chain 1, 1 on chain 0
    >>> packed = np.array([[0b001_001], [0b010_000], [0b000_010]], dtype=np.uint64)
    >>> packed_subset_mask(top, packed, guard).tolist()
    [True, True, False]
    """
    mask = ((top[:, 0] - packed[:, 0]) & guard[0]) == guard[0]
    for w in range(1, guard.size):
        mask &= ((top[:, w] - packed[:, w]) & guard[w]) == guard[w]
    return mask
