"""Weakly connected parts of an induced subgraph, over integer adjacency lists.

One helper for every place that splits a set of nodes into the pieces that touch
(the latency schedule's pieces of a device, the drawing's parallel branches).

>>> weak_components([0, 1, 3, 4], preds=[[], [0], [1], [], [3]], succs=[[1], [2], [], [4], []])
[[0, 1], [3, 4]]
"""
from __future__ import annotations

from itertools import chain
from typing import Iterable, Sequence


def weak_components(nodes: Iterable[int], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
                    ) -> list[list[int]]:
    """The parts of the subgraph induced by ``nodes`` that edges in either direction connect,
    in the order of their first node in ``nodes``; each part in discovery order (callers sort)."""
    order = list(nodes)
    inside = set(order)
    seen: set[int] = set()
    comps = []
    for s in order:
        if s in seen:
            continue
        seen.add(s)
        comp, stack = [], [s]
        while stack:
            v = stack.pop()
            comp.append(v)
            for w in chain(preds[v], succs[v]):
                if w in inside and w not in seen:
                    seen.add(w)
                    stack.append(w)
        comps.append(comp)
    return comps
