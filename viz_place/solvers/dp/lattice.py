"""The ideal lattice's downward edges, and walking down it to list every sub-ideal of an ideal once.

``J - v`` is an ideal exactly when ``v`` is a maximal node of ``J`` (none of its
successors is in ``J``). :func:`down_edges` lists, for every ideal of a complete
family, those ``(v, J - v)`` (``v`` ascending), found by hashing: each ideal's
hash is the sum (mod 2**64) of random per-node words, so ``hash(J - v) =
hash(J) - r[v]``; every match is checked bit for bit.

Every proper sub-ideal ``J`` of ``I`` is reached from ``I`` by removing the
nodes of ``I \\ J`` in *decreasing* index order (nodes are numbered
topologically, so the largest node of an up-closed set is maximal), hence
exactly once when each step removes a node below the previous one:
:func:`walk_down` does this for many ideals at once, pruned by a lower bound on
the figure ``lower`` of the sub-ideals wanted (``lower`` grows with the ideal,
so a walk that falls below the bound can stop).

>>> import numpy as np
>>> from viz_place.solvers.dp.ideals import enumerate_ideals
>>> ids = enumerate_ideals(3, [0, 1, 1], [[1, 2], [], []])   # 0 -> 1, 0 -> 2
>>> d = down_edges(ids, [[1, 2], [], []])
>>> [ids.as_ints()[i] for i in range(ids.count)]
[0, 1, 3, 5, 7]
>>> owner, sub = walk_down(d, np.array([4]), np.array([0.0]), np.zeros(5))
>>> sorted(ids.as_ints()[j] for j in sub)        # the proper sub-ideals of {0, 1, 2}
[0, 1, 3, 5]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ideals import Ideals


@dataclass(frozen=True)
class DownEdges:
    """CSR over ideals: ``node[ptr[j]:ptr[j + 1]]`` the maximal nodes of ideal ``j`` (ascending), ``to[...]`` the
    ideal without each; ``below[e]``: how many edges of ``to[e]`` remove a node below ``node[e]`` (the first
    ones: the walk's next steps after edge ``e``)."""

    ptr: np.ndarray
    node: np.ndarray
    to: np.ndarray
    below: np.ndarray


def _mix(x: int) -> int:
    """splitmix64's output function: a well-spread 64-bit word for each integer."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def down_edges(ideals: Ideals, succs: list[list[int]]) -> DownEdges | None:
    """The downward edges of a complete family of ideals, or ``None`` if the hashes cannot tell two ideals apart."""
    bits = ideals.bits
    N, W = bits.shape
    K = ideals.num_nodes
    r = np.array([_mix(v) | 1 for v in range(K)], dtype=np.uint64)     # fixed pseudo-random odd words
    with np.errstate(over="ignore"):
        h = ideals.prefix_sums(r)                       # uint64 sums wrap modulo 2**64
    by_hash = np.argsort(h, kind="stable")
    sorted_h = h[by_hash]
    if N > 1 and not np.all(sorted_h[1:] != sorted_h[:-1]):
        return None
    js, vs = [], []
    for v in range(K):
        word, bit = v >> 6, np.uint64(v & 63)
        m = 0
        for w in succs[v]:
            m |= 1 << w
        succ = np.frombuffer(m.to_bytes(8 * W, "little"), dtype="<u8")
        has = ((bits[:, word] >> bit) & np.uint64(1)).astype(bool)
        if m:
            has &= ~(bits & succ).any(1)
        j = np.flatnonzero(has)
        js.append(j)
        vs.append(np.full(j.size, v, dtype=np.int64))
    j = np.concatenate(js) if js else np.zeros(0, dtype=np.int64)
    v = np.concatenate(vs) if vs else np.zeros(0, dtype=np.int64)
    by_ideal = np.argsort(j, kind="stable")             # ideal-major, nodes ascending
    j, v = j[by_ideal], v[by_ideal]
    with np.errstate(over="ignore"):
        want = h[j] - r[v]
    at = np.minimum(np.searchsorted(sorted_h, want), max(N - 1, 0))
    to = by_hash[at]
    expect = bits[j].copy()
    expect[np.arange(j.size), v >> 6] &= ~(np.uint64(1) << (v & 63).astype(np.uint64))
    if not (sorted_h[at] == want).all() or not (bits[to] == expect).all():
        return None
    ptr = np.concatenate([[0], np.cumsum(np.bincount(j, minlength=N))]).astype(np.int64)
    to = to.astype(np.int64)
    key = j * (K + 1) + v                               # sorted: ideal-major, nodes ascending
    below = np.searchsorted(key, to * (K + 1) + v) - ptr[to]
    return DownEdges(ptr=ptr, node=v, to=to, below=below)


def walk_down(d: DownEdges, ideals: np.ndarray, floor: np.ndarray, lower: np.ndarray):
    """Every pair ``(owner, J)``: ``J`` a proper sub-ideal of ``ideals[owner]`` with ``lower[J] >= floor[owner]``,
    each once (grouped by how many nodes were removed, not by owner)."""
    own = np.arange(ideals.size)
    lo = d.ptr[ideals]
    cnt = d.ptr[ideals + 1] - lo                        # first step: any maximal node
    outs_o, outs_j = [], []
    while own.size:
        total = int(cnt.sum())
        if total == 0:
            break
        e = np.arange(total) + np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
        own = np.repeat(own, cnt)
        cur = d.to[e]
        keep = np.flatnonzero(lower[cur] >= floor[own])
        own, cur, e = own[keep], cur[keep], e[keep]
        outs_o.append(own)
        outs_j.append(cur)
        lo, cnt = d.ptr[cur], d.below[e]                # then only nodes below the one just removed
    if not outs_o:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(outs_o), np.concatenate(outs_j)
