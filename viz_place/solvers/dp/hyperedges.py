"""Per-ideal hyperedge tables of the DP: which hyperedges each ideal cuts, and what the communication of
``I \\ J`` needs, all as packed per-chain counts (:class:`~.ideals.Lanes`).

A *hyperedge* ``h`` is a source supernode with the supernodes of its consumers,
with the transfer cost ``tc(h)`` of the source's output. An ideal ``X`` *cuts*
``h`` when ``h`` has nodes inside and outside ``X``. Every test here is a
subset test between down-closed sets, one subtraction per word on packed
per-chain counts:

* ``down(h)`` (``h`` and its ancestors) ``⊆ X`` iff ``h ⊆ X``;
* ``X ⊆ free(h)`` (the nodes not above any node of ``h``) iff ``X`` misses ``h``;
* so ``X`` cuts ``h`` iff neither holds.

For a pair ``J ⊆ I`` and a hyperedge ``h`` cut by ``I``, the communication
correction (:meth:`~.tables.Tables.comm`) needs ``[J meets h]`` (``J ⊄
free(h)``) and ``[h ∩ I ⊆ J]`` (the down-closure of ``h ∩ I``, one per (ideal,
cut hyperedge) entry, ``⊆ J``).

>>> import numpy as np
>>> from viz_place.solvers.dp.ideals import Lanes, enumerate_ideals
>>> succs = [[1], [2], []]                                # a chain 0 -> 1 -> 2
>>> ids = enumerate_ideals(3, [0, 1, 2], succs)            # {}, {0}, {0,1}, {0,1,2}
>>> lanes = Lanes.for_chains([[0, 1, 2]], 3)
>>> hx = hyperedge_tables(ids, succs, [(0b101, 2.0)], [[0, 1, 2]], lanes, ids.prefix_sums(lanes.node_weights()))
>>> hx.cut_ptr.tolist(), hx.wcut.tolist()                 # {0} and {0,1} cut the hyperedge {0, 2}
([0, 0, 1, 2, 2], [0.0, 2.0, 2.0, 0.0])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ideals import Ideals, Lanes, adjacency_arrays

try:   # the compiled loops of the DP (viz_place/solvers/dp/_kernel.c); numpy when absent
    from . import _kernel as _compiled
except ImportError:  # pragma: no cover - depends on the build
    _compiled = None


@dataclass(frozen=True)
class HyperedgeTables:
    htc: np.ndarray       # (H,) transfer cost of each hyperedge
    wcut: np.ndarray      # (N,) transfer cost of the hyperedges each ideal cuts
    cut_ptr: np.ndarray   # (N + 1,) the hyperedges ideal i cuts: cut_h[cut_ptr[i]:cut_ptr[i + 1]] (ascending)
    cut_h: np.ndarray     # (E,)
    cut_down: np.ndarray  # (E, P) packed down-closure of h ∩ I for each (ideal I, cut hyperedge h) entry
    free: np.ndarray      # (H, P) packed free(h): the nodes above no node of h
    dk: np.ndarray        # (N, P) packed down-closure of each ideal with the hyperedges it cuts


def _node_lists(hyperedges) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the nodes of each hyperedge (a Python-int bitmask)."""
    nodes, ptr = [], [0]
    for mask, _ in hyperedges:
        m = mask
        while m:
            low = m & -m
            m ^= low
            nodes.append(low.bit_length() - 1)
        ptr.append(len(nodes))
    return np.array(nodes, dtype=np.int64), np.array(ptr, dtype=np.int64)


def _per_node_counts(K: int, succs: list[list[int]], chains: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per node and chain: how many chain nodes are ancestors-or-self of it, and how many are not
    descendants-or-self of it (the down-set ``free`` of that node)."""
    if _compiled is not None and K:
        chain_of, pos = [0] * K, [0] * K
        for ci, ch in enumerate(chains):
            for p, v in enumerate(ch):
                chain_of[v], pos[v] = ci, p
        succ_ptr, succ = adjacency_arrays(succs)
        below = np.empty((K, len(chains)), dtype=np.int64)
        free = np.empty((K, len(chains)), dtype=np.int64)
        i8 = np.int64
        _compiled.node_counts(succ_ptr, succ, np.array(chain_of, dtype=i8), np.array(pos, dtype=i8),
                              np.array([len(c) for c in chains], dtype=i8), below, free)
        return below, free
    anc = [0] * K
    preds: list[list[int]] = [[] for _ in range(K)]
    for v in range(K):
        for w in succs[v]:
            preds[w].append(v)
    for v in range(K):
        a = 1 << v
        for p in preds[v]:
            a |= anc[p]
        anc[v] = a
    desc = [0] * K
    for v in range(K - 1, -1, -1):
        d = 1 << v
        for w in succs[v]:
            d |= desc[w]
        desc[v] = d
    cm = []
    for ch in chains:
        m = 0
        for v in ch:
            m |= 1 << v
        cm.append(m)
    lens = [len(ch) for ch in chains]
    below = np.array([[(anc[v] & m).bit_count() for m in cm] for v in range(K)], dtype=np.int64).reshape(K, len(cm))
    free = np.array([[n - (desc[v] & m).bit_count() for m, n in zip(cm, lens)] for v in range(K)],
                    dtype=np.int64).reshape(K, len(cm))
    return below, free


def hyperedge_tables(ideals: Ideals, succs: list[list[int]], hyperedges: list[tuple[int, float]],
                     chains: list[list[int]], lanes: Lanes, pk: np.ndarray) -> HyperedgeTables:
    """The tables of the module docstring for ``ideals`` (packed counts ``pk``) and ``hyperedges``
    (bitmask over supernodes, transfer cost)."""
    N, K, H = ideals.count, ideals.num_nodes, len(hyperedges)
    g = lanes.guard
    htc = np.array([tc for _, tc in hyperedges], dtype=float)
    if H == 0:
        z = np.zeros((0, g.size), dtype=np.uint64)
        return HyperedgeTables(htc, np.zeros(N), np.zeros(N + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), z,
                               z, pk.copy())
    below, free_n = _per_node_counts(K, succs, chains)
    hn, hptr = _node_lists(hyperedges)
    h_down = np.maximum.reduceat(below[hn], hptr[:-1], axis=0)     # (H, C): a union of down-sets: max per chain
    h_free = np.minimum.reduceat(free_n[hn], hptr[:-1], axis=0)    # an intersection of down-sets: min per chain
    down_pk, free_pk = lanes.pack_counts(h_down), lanes.pack_counts(h_free)
    if _compiled is not None and ideals.bits.dtype == np.uint64:
        return _compiled_tables(ideals, lanes, pk, htc, hn, hptr, below, h_down, down_pk, free_pk)
    # X cuts h iff not down(h) ⊆ X and not X ⊆ free(h): a block of ideals at a time
    rows_i, rows_h = [], []
    step = max(1, (1 << 22) // H)
    for a in range(0, N, step):
        top = pk[a:a + step, None, :] | g                             # (n, 1, P)
        inside = (((top - down_pk[None]) & g) == g).all(2)            # h ⊆ X
        misses = ((((free_pk | g)[None] - pk[a:a + step, None, :]) & g) == g).all(2)
        i, h = np.nonzero(~inside & ~misses)
        rows_i.append(i + a)
        rows_h.append(h)
    cut_i, cut_h = np.concatenate(rows_i), np.concatenate(rows_h)      # ideal-major, hyperedges ascending
    per_ideal = np.bincount(cut_i, minlength=N)
    cut_ptr = np.concatenate([[0], np.cumsum(per_ideal)]).astype(np.int64)
    wcut = np.bincount(cut_i, weights=htc[cut_h], minlength=N).astype(float)
    counts = lanes.unpack(pk)                                          # (N, C)
    some = np.flatnonzero(per_ideal)
    if some.size:
        counts[some] = np.maximum(counts[some], np.maximum.reduceat(h_down[cut_h], cut_ptr[some], axis=0))
    dk = lanes.pack_counts(counts)
    # per entry (I, h): the down-closure of h ∩ I, the max over the nodes of h inside I
    size = hptr[cut_h + 1] - hptr[cut_h]
    item_v = hn[np.arange(int(size.sum())) + np.repeat(hptr[cut_h] - (np.cumsum(size) - size), size)]
    item_i = np.repeat(cut_i, size)
    bits = ideals.bits
    inside_i = ((bits[item_i, item_v >> 6] >> (item_v & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)
    part = np.where(inside_i[:, None], below[item_v], 0)
    starts = np.concatenate([[0], np.cumsum(size)[:-1]]) if size.size else np.zeros(0, dtype=np.int64)
    cut_down = lanes.pack_counts(np.maximum.reduceat(part, starts, axis=0)) if size.size else \
        np.zeros((0, g.size), dtype=np.uint64)
    return HyperedgeTables(htc, wcut, cut_ptr, cut_h.astype(np.int64), cut_down, free_pk, dk)


def _compiled_tables(ideals: Ideals, lanes: Lanes, pk, htc, hn, hptr, below, h_down, down_pk, free_pk):
    """:func:`hyperedge_tables` in the compiled kernel: the same tables (the same sums in the same order)."""
    N, P = ideals.count, lanes.guard.size
    c = np.ascontiguousarray
    word, shift = c(lanes.word, np.int64), c(lanes.shift, np.int64)
    # each lane's count bits: below its guard bit
    guard = lanes.guard.tolist()
    mask = np.array([(1 << (guard[w] >> s & -(guard[w] >> s)).bit_length() - 1) - 1
                     for w, s in zip(word.tolist(), shift.tolist())], dtype=np.uint64)
    args = (c(pk, np.uint64), c(lanes.guard, np.uint64), c(down_pk, np.uint64), c(free_pk, np.uint64), c(htc, np.float64),
            c(ideals.bits, np.uint64), c(hn, np.int64), c(hptr, np.int64), c(below, np.int64), c(h_down, np.int64),
            word, shift, mask)
    per_ideal = np.zeros(N, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    _compiled.cuts(*args, per_ideal, none, none, np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0))
    cut_ptr = np.concatenate([[0], np.cumsum(per_ideal)]).astype(np.int64)
    E = int(cut_ptr[-1])
    cut_h, cut_down = np.empty(E, dtype=np.int64), np.empty((E, P), dtype=np.uint64)
    dk, wcut = np.empty((N, P), dtype=np.uint64), np.empty(N)
    _compiled.cuts(*args, per_ideal, cut_ptr, cut_h, cut_down, dk, wcut)
    return HyperedgeTables(htc, wcut, cut_ptr, cut_h, cut_down, free_pk, dk)
