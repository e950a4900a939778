"""Ideals (down-closed sets) of a DAG, enumerated breadth-first as bitsets.

Ideals are listed level by level (by number of nodes), so every proper
sub-ideal of an ideal comes before it. Each ideal but the empty one records a
``parent`` ideal and the node ``added`` to it; additive per-ideal figures (compute,
size ...) then follow as ``value[i] = value[parent[i]] + w[added[i]]``
(:meth:`Ideals.prefix_sums`).

>>> ids = enumerate_ideals(3, [0, 0, 0], [[], [], []])   # three independent nodes
>>> ids.count
8
>>> ids = enumerate_ideals(3, [0, 1, 2], [[1], [2], []])  # a chain 0 -> 1 -> 2
>>> ids.count, ids.as_ints()
(4, [0, 1, 3, 7])
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...errors import SolverError

try:   # the compiled loops of the DP (viz_place/solvers/dp/_kernel.c); numpy when absent
    from . import _kernel as _compiled
except ImportError:  # pragma: no cover - depends on the build
    _compiled = None


class TooManyIdeals(SolverError):
    """The DAG has more ideals than the configured limit."""

    def __init__(self, found: int, limit: int) -> None:
        self.found = found
        self.limit = limit
        super().__init__(f"more than {limit:,} ideals ({found:,} found before stopping)")


@dataclass(frozen=True)
class Ideals:
    """``bits[i]`` — ideal ``i`` as ``W`` little-endian uint64 words; ``parent``, ``added`` (−1 for ∅);
    ``complete``: every ideal of the DAG is listed (:func:`enumerate_ideals`), not a sub-family."""

    num_nodes: int
    bits: np.ndarray
    parent: np.ndarray
    added: np.ndarray
    level_starts: np.ndarray
    complete: bool = False

    @property
    def count(self) -> int:
        return int(self.bits.shape[0])

    def as_ints(self) -> list[int]:
        return [int.from_bytes(row.tobytes(), "little") for row in self.bits]

    def prefix_sums(self, weights: np.ndarray) -> np.ndarray:
        """Per-ideal sums of per-node ``weights`` (shape ``(K,)`` or ``(K, F)``)."""
        weights = np.asarray(weights)
        if self.parent.size and self.parent[-1] < 0 and self.count > 1:   # no parent links: sum directly
            member = np.unpackbits(self.bits.view(np.uint8), axis=1, bitorder="little")[:, : self.num_nodes]
            return (member.astype(weights.dtype) @ weights.reshape(self.num_nodes, -1)).reshape(
                (self.count,) + weights.shape[1:])
        out = np.zeros((self.count,) + weights.shape[1:], dtype=weights.dtype)
        if _compiled is not None and weights.dtype in (np.float64, np.uint64) and self.count > 1 and out.size:
            _compiled.prefix_sums(self.parent, self.added, np.ascontiguousarray(weights), out)   # the same sums
            return out
        ls = self.level_starts
        for a, b in zip(ls[:-1], ls[1:]):
            if a == 0:
                continue
            out[a:b] = out[self.parent[a:b]] + weights[self.added[a:b]]
        return out

    def members(self, i: int) -> np.ndarray:
        """Node indices in ideal ``i``."""
        return np.flatnonzero(np.unpackbits(self.bits[i].view(np.uint8), bitorder="little")[: self.num_nodes])


def ideals_from_ints(values, num_nodes: int) -> Ideals:
    """An :class:`Ideals` family from arbitrary ideals (Python-int bitsets), ordered by size;
    figures are summed directly (no parent links).

    >>> ideals_from_ints([3, 0, 1], 2).prefix_sums(np.array([1.0, 2.0])).tolist()
    [0.0, 1.0, 3.0]
    """
    values = sorted(set(values), key=lambda x: (x.bit_count(), x))
    n = len(values)
    return Ideals(num_nodes=num_nodes, bits=ints_to_bits(values, num_nodes), parent=np.full(n, -1, dtype=np.int64),
                  added=np.full(n, -1, dtype=np.int64), level_starts=np.array([0, n], dtype=np.int64))


def words_for(num_nodes: int) -> int:
    return max(1, (num_nodes + 63) // 64)


def ints_to_bits(values: list[int], num_nodes: int) -> np.ndarray:
    """Python-int bitsets -> ``(len(values), W)`` uint64 array."""
    w = words_for(num_nodes)
    buf = b"".join(v.to_bytes(8 * w, "little") for v in values)
    return np.frombuffer(buf, dtype="<u8").reshape(len(values), w).astype(np.uint64)


def enumerate_ideals(num_nodes: int, pred_masks: list[int], succs: list[list[int]], *, limit: int = 10**6,
                     check: Callable[[int], None] | None = None) -> Ideals:
    """All ideals of the DAG (nodes ``0..num_nodes-1``, ``pred_masks[v]`` = bitmask of preds of ``v``).

    Raises :class:`TooManyIdeals` as soon as more than ``limit`` are found;
    ``check(count)`` is called every few thousand ideals (progress / cancel).
    With the compiled kernel built, the kernel lists them (the same ideals in the same order,
    ``tests/test_dp_kernel.py``); else the Python loop below.
    """
    if _compiled is not None and num_nodes > 0:
        return _compiled_ideals(num_nodes, pred_masks, succs, limit, check)
    return _python_ideals(num_nodes, pred_masks, succs, limit, check)


def adjacency_arrays(succs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Successor lists as the compiled kernel reads them: ``(ptr, succ)``, node ``v``'s successors being
    ``succ[ptr[v]:ptr[v + 1]]`` (int64).

    >>> [a.tolist() for a in adjacency_arrays([[1, 2], [], [1]])]
    [[0, 2, 2, 3], [1, 2, 1]]
    """
    ptr = [0]
    for x in succs:
        ptr.append(ptr[-1] + len(x))
    succ = np.fromiter(itertools.chain.from_iterable(succs), dtype=np.int64, count=ptr[-1])
    return np.array(ptr, dtype=np.int64), succ


def _compiled_ideals(num_nodes: int, pred_masks: list[int], succs: list[list[int]], limit: int, check) -> Ideals:
    ptr, succ = adjacency_arrays(succs)
    got = _compiled.ideals(ints_to_bits(pred_masks, num_nodes), ptr, succ, min(limit, 2**62), check)
    if got is None:
        raise TooManyIdeals(limit + 1, limit)
    bits, parent, added, starts = got
    return Ideals(num_nodes=num_nodes, bits=np.frombuffer(bits, dtype=np.uint64).reshape(-1, words_for(num_nodes)),
                  parent=np.frombuffer(parent, dtype=np.int64), added=np.frombuffer(added, dtype=np.int64),
                  level_starts=np.frombuffer(starts, dtype=np.int64), complete=True)


def _python_ideals(num_nodes: int, pred_masks: list[int], succs: list[list[int]], limit: int, check) -> Ideals:
    """:func:`enumerate_ideals` in Python (where the kernel is not built)."""
    sources = 0
    for v in range(num_nodes):
        if pred_masks[v] == 0:
            sources |= 1 << v
    ideals = [0]
    parent = [-1]
    added = [-1]
    level_starts = [0, 1]
    level: dict[int, int] = {0: sources}   # ideal -> available nodes
    index_of = {0: 0}
    count = 1
    while level:
        nxt: dict[int, int] = {}
        for ideal, avail in level.items():
            pi = index_of[ideal]
            a = avail
            while a:
                low = a & -a
                a ^= low
                new = ideal | low
                if new in nxt:
                    continue
                v = low.bit_length() - 1
                av = avail ^ low
                for w in succs[v]:
                    if pred_masks[w] & ~new == 0:
                        av |= 1 << w
                nxt[new] = av
                ideals.append(new)
                parent.append(pi)
                added.append(v)
                count += 1
                if count > limit:
                    raise TooManyIdeals(count, limit)
                if check is not None and count % 4096 == 0:
                    check(count)
        index_of = {ideal: level_starts[-1] + k for k, ideal in enumerate(nxt)}
        if nxt:
            level_starts.append(level_starts[-1] + len(nxt))
        level = nxt
    return Ideals(num_nodes=num_nodes, bits=ints_to_bits(ideals, num_nodes),
                  parent=np.array(parent, dtype=np.int64), added=np.array(added, dtype=np.int64),
                  level_starts=np.array(level_starts, dtype=np.int64), complete=True)


def prefix_ideals(num_nodes: int) -> Ideals:
    """The ``num_nodes + 1`` prefixes of the order ``0, 1, ...`` (ideals of any DAG numbered topologically)."""
    values = [(1 << k) - 1 for k in range(num_nodes + 1)]
    return Ideals(num_nodes=num_nodes, bits=ints_to_bits(values, num_nodes),
                  parent=np.arange(-1, num_nodes, dtype=np.int64), added=np.arange(-1, num_nodes, dtype=np.int64),
                  level_starts=np.arange(num_nodes + 2, dtype=np.int64))


def chain_decomposition(num_nodes: int, succs: list[list[int]], *, exact_limit: int = 1500) -> list[list[int]]:
    """Chains (totally ordered node lists) covering every node once.

    Minimum (Dilworth, by bipartite matching on the transitive closure) up to
    ``exact_limit`` nodes, greedy first-fit beyond. Nodes must be numbered
    topologically. An ideal meets every chain in a prefix, so it is fixed by
    the number of its nodes on each chain.

    >>> sorted(len(c) for c in chain_decomposition(4, [[1, 2], [3], [3], []]))
    [1, 3]
    """
    reach = [0] * num_nodes
    for v in range(num_nodes - 1, -1, -1):
        r = 0
        for w in succs[v]:
            r |= (1 << w) | reach[w]
        reach[v] = r
    nxt = [-1] * num_nodes
    if num_nodes <= exact_limit:
        _max_matching(reach, nxt)
        has_prev = set(w for w in nxt if w >= 0)
        chains = []
        for v in range(num_nodes):
            if v in has_prev:
                continue
            c = [v]
            while nxt[c[-1]] >= 0:
                c.append(nxt[c[-1]])
            chains.append(c)
        return chains
    chains: list[list[int]] = []
    for v in range(num_nodes):
        for c in chains:
            if reach[c[-1]] >> v & 1:
                c.append(v)
                break
        else:
            chains.append([v])
    return chains


def _max_matching(reach: list[int], nxt: list[int]) -> None:
    """A maximum matching ``v -> nxt[v]`` of the bipartite graph "v reaches w" (``reach[v]``: bitmask of the
    nodes ``v`` reaches), into ``nxt`` (-1: unmatched): a greedy start (each node to its lowest free
    successor), then augmenting paths (Kuhn's algorithm, iterative, bitsets for the visited set)."""
    n = len(reach)
    owner = [-1] * n            # right node w -> the left node matched to it
    taken = 0
    for v in range(n):
        free = reach[v] & ~taken
        if free:
            w = (free & -free).bit_length() - 1
            nxt[v], owner[w] = w, v
            taken |= 1 << w
    for root in range(n):
        if nxt[root] >= 0 or not reach[root]:
            continue
        # depth-first search for an augmenting path from root; each right node is visited once
        visited = 0
        stack = [(root, reach[root])]
        via: list[int] = []     # right node chosen at each depth of the stack
        while stack:
            v, cand = stack[-1]
            cand &= ~visited
            if not cand:
                stack.pop()
                if via:
                    via.pop()
                continue
            low = cand & -cand
            stack[-1] = (v, cand ^ low)
            visited |= low
            w = low.bit_length() - 1
            if owner[w] < 0:                  # free: flip the path root -> ... -> v -> w
                path = [u for u, _ in stack]
                rights = via + [w]
                for u, r in zip(path, rights):
                    nxt[u], owner[r] = r, u
                break
            via.append(w)
            stack.append((owner[w], reach[owner[w]]))


@dataclass(frozen=True)
class Lanes:
    """Packing of per-chain counts into uint64 lanes with a guard bit each.

    ``x ⊆ y`` for two ideals (or down-closed sets) is then
    ``((y | guard) - x) & guard == guard`` on every word.
    """

    chain_of: np.ndarray   # (K,) chain index of each node
    word: np.ndarray       # (C,) word of each chain
    shift: np.ndarray      # (C,) bit offset of each chain's lane
    guard: np.ndarray      # (P,) guard bits per word

    @classmethod
    def for_chains(cls, chains: list[list[int]], num_nodes: int) -> "Lanes":
        """One lane per chain, just wide enough for its count plus the guard bit, packed first-fit into words."""
        chain_of = [0] * num_nodes
        for ci, c in enumerate(chains):
            for v in c:
                chain_of[v] = ci
        word, shift = [], []
        fill: list[int] = []            # bits used per word
        for c in chains:
            width = len(c).bit_length() + 1
            w = next((w for w, used in enumerate(fill) if used + width <= 64), len(fill))
            if w == len(fill):
                fill.append(0)
            word.append(w)
            shift.append(fill[w])
            fill[w] += width
        guard = [0] * max(1, len(fill))
        for w, sh, c in zip(word, shift, chains):
            guard[w] |= 1 << (sh + len(c).bit_length())
        return cls(chain_of=np.array(chain_of, dtype=np.int64), word=np.array(word, dtype=np.int64),
                   shift=np.array(shift, dtype=np.int64), guard=np.array(guard, dtype=np.uint64))

    def node_weights(self) -> np.ndarray:
        """(K, P) uint64: a one in the lane of each node's chain (prefix-sum these over ideals)."""
        K, P = self.chain_of.size, self.guard.size
        word, shift = self.word.tolist(), self.shift.tolist()
        flat = [0] * (K * P)
        for v, c in enumerate(self.chain_of.tolist()):
            flat[v * P + word[c]] = 1 << shift[c]
        return np.array(flat, dtype=np.uint64).reshape(K, P)

    def pack_counts(self, counts: np.ndarray) -> np.ndarray:
        """(M, P) uint64 packing of per-chain counts (M, C)."""
        # the lanes of one word are disjoint bits: their sum is their packing
        shifted = counts.astype(np.uint64) << self.shift.astype(np.uint64)
        if self.guard.size == 1:
            return shifted.sum(1, dtype=np.uint64).reshape(-1, 1)
        out = np.zeros((counts.shape[0], self.guard.size), dtype=np.uint64)
        for w in range(self.guard.size):
            out[:, w] = shifted[:, self.word == w].sum(1, dtype=np.uint64)
        return out

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        """(M, C) int64 per-chain counts of packed rows (M, P)."""
        out = np.zeros((packed.shape[0], self.word.size), dtype=np.int64)
        for ci in range(self.word.size):
            above = int(self.guard[self.word[ci]]) >> int(self.shift[ci])
            guard_bit = above & -above                         # this lane's guard: the lowest guard at or above it
            out[:, ci] = (packed[:, self.word[ci]] >> np.uint64(self.shift[ci])) & np.uint64(guard_bit - 1)
        return out


def topological_orders(num_nodes: int, succs: list[list[int]], count: int, *, seed: int = 0) -> list[list[int]]:
    """``count`` different topological orders: the numbering itself, largest-available-first,
    depth-first, then random tie-breaking (deterministic in ``seed``).

    >>> topological_orders(3, [[], [], []], 2)
    [[0, 1, 2], [2, 1, 0]]
    """
    import heapq
    import random
    rng = random.Random(seed)
    indeg0 = [0] * num_nodes
    for v in range(num_nodes):
        for w in succs[v]:
            indeg0[w] += 1
    out = [list(range(num_nodes))]
    kinds = ["max", "dfs"] + ["random"] * max(0, count - 3)
    for kind in kinds[: count - 1]:
        indeg = list(indeg0)
        key = [rng.random() for _ in range(num_nodes)] if kind == "random" else None
        heap: list = []
        stack: list[int] = []

        def push(v):
            if kind == "dfs":
                stack.append(v)
            else:
                heapq.heappush(heap, (-v if kind == "max" else key[v], v))
        for v in range(num_nodes):
            if indeg[v] == 0:
                push(v)
        order = []
        while heap or stack:
            v = stack.pop() if kind == "dfs" else heapq.heappop(heap)[1]
            order.append(v)
            for w in succs[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    push(w)
        out.append(order)
    return out


def prefix_family(num_nodes: int, orders: list[list[int]]) -> Ideals:
    """The union of the prefix ideals of several topological orders (a cheap sub-family of all ideals)."""
    seen: dict[int, tuple[int, int]] = {0: (-1, -1)}   # ideal -> (parent ideal, added node)
    for order in orders:
        cur = 0
        for v in order:
            nxt = cur | (1 << v)
            seen.setdefault(nxt, (cur, v))
            cur = nxt
    values = sorted(seen, key=lambda x: (x.bit_count(), x))
    index = {v: k for k, v in enumerate(values)}
    parent = np.array([index[seen[v][0]] if v else -1 for v in values], dtype=np.int64)
    added = np.array([seen[v][1] for v in values], dtype=np.int64)
    sizes = np.array([v.bit_count() for v in values])
    level_starts = np.concatenate([np.flatnonzero(np.diff(sizes, prepend=-1)), [len(values)]]).astype(np.int64)
    return Ideals(num_nodes=num_nodes, bits=ints_to_bits(values, num_nodes), parent=parent, added=added,
                  level_starts=level_starts)
