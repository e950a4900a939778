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

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import SolverError


class TooManyIdeals(SolverError):
    """The DAG has more ideals than the configured limit."""

    def __init__(self, found: int, limit: int) -> None:
        self.found = found
        self.limit = limit
        super().__init__(f"more than {limit:,} ideals ({found:,} found before stopping)")


@dataclass(frozen=True)
class Ideals:
    """``bits[i]`` — ideal ``i`` as ``W`` little-endian uint64 words; ``parent``, ``added`` (−1 for ∅)."""

    num_nodes: int
    bits: np.ndarray
    parent: np.ndarray
    added: np.ndarray
    level_starts: np.ndarray

    @property
    def count(self) -> int:
        return int(self.bits.shape[0])

    def as_ints(self) -> list[int]:
        return [int.from_bytes(row.tobytes(), "little") for row in self.bits]

    def prefix_sums(self, weights: np.ndarray) -> np.ndarray:
        """Per-ideal sums of per-node ``weights`` (shape ``(K,)`` or ``(K, F)``)."""
        weights = np.asarray(weights)
        out = np.zeros((self.count,) + weights.shape[1:], dtype=weights.dtype)
        ls = self.level_starts
        for a, b in zip(ls[:-1], ls[1:]):
            if a == 0:
                continue
            out[a:b] = out[self.parent[a:b]] + weights[self.added[a:b]]
        return out

    def members(self, i: int) -> np.ndarray:
        """Node indices in ideal ``i``."""
        return np.flatnonzero(np.unpackbits(self.bits[i].view(np.uint8), bitorder="little")[: self.num_nodes])


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
    """
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
                  level_starts=np.array(level_starts, dtype=np.int64))


def prefix_ideals(num_nodes: int) -> Ideals:
    """The ``num_nodes + 1`` prefixes of the order ``0, 1, ...`` (ideals of any DAG numbered topologically)."""
    values = [(1 << k) - 1 for k in range(num_nodes + 1)]
    return Ideals(num_nodes=num_nodes, bits=ints_to_bits(values, num_nodes),
                  parent=np.arange(-1, num_nodes, dtype=np.int64), added=np.arange(-1, num_nodes, dtype=np.int64),
                  level_starts=np.arange(num_nodes + 2, dtype=np.int64))
