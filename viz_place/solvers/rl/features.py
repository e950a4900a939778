"""Label-free structural features of the nodes and colocation groups of a graph.

Nothing here depends on node ids or on the order nodes were inserted: every
figure comes from the node's own numbers, from aggregates over its ancestors,
descendants and *parallel* nodes (neither ancestor nor descendant), and from a
few rounds of mean message passing along and against the edges. Renumbering the
nodes therefore permutes the rows and changes nothing else (a test checks it).

Ancestor and descendant sets are Python-int bitsets (one OR per edge), turned
into weighted sums with :func:`numpy.unpackbits` in row blocks — no all-pairs
shortest paths.

Per node (before message passing, :data:`BASE_NAMES`): its latency, size and
transfer cost relative to the graph's means, its speed-up on accelerators, the
share of devices that can run it, in/out degree, backward flag, its top/bottom
level and criticality on the latency-weighted critical path, and for each of
ancestors / descendants / parallel nodes the share of nodes and of work.

>>> from viz_place.samples import make_graph
>>> from viz_place.cost import compile_problem
>>> g = make_graph("chain", 6, seed=0)
>>> emb = group_embeddings(compile_problem(g, g.default_cluster))
>>> emb.shape == (6, GROUP_DIM)
True
"""
from __future__ import annotations

import numpy as np

from ...cost import CompiledProblem

BASE_NAMES = (
    "lat", "size", "tcost", "speedup", "supported", "indeg", "outdeg", "backward",
    "top_level", "bottom_level", "critical",
    "anc_count", "anc_work", "desc_count", "desc_work", "par_count", "par_work",
)
BASE_DIM = len(BASE_NAMES)
#: message-passing rounds along the edges (means over predecessors) and against them.
ROUNDS = 2
NODE_DIM = BASE_DIM * (1 + 2 * ROUNDS)
#: group embedding = mean node embedding + [log size of group, group work / a device's fair share].
GROUP_DIM = NODE_DIM + 2
_BLOCK = 512


def _bitset_sums(bits: list[int], n: int, weights: np.ndarray) -> np.ndarray:
    """Row ``v``: ``weights`` summed over the set bits of ``bits[v]``."""
    out = np.empty((n, weights.shape[1]))
    nbytes = (n + 7) // 8
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        raw = b"".join(bits[v].to_bytes(nbytes, "little") for v in range(lo, hi))
        mat = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(hi - lo, nbytes),
                            axis=1, count=n, bitorder="little")
        out[lo:hi] = mat @ weights
    return out


def _reachability(prob: CompiledProblem) -> tuple[list[int], list[int]]:
    """Ancestor and descendant bitsets (bit ``u`` of ``anc[v]`` set iff u reaches v)."""
    n = prob.n
    anc = [0] * n
    for v in range(n):          # node order is topological
        m = 0
        for u in prob.preds[v]:
            m |= anc[u] | (1 << u)
        anc[v] = m
    desc = [0] * n
    for v in range(n - 1, -1, -1):
        m = 0
        for w in prob.succs[v]:
            m |= desc[w] | (1 << w)
        desc[v] = m
    return anc, desc


def _levels(prob: CompiledProblem, work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = prob.n
    top = np.zeros(n)
    for v in range(n):
        for u in prob.preds[v]:
            t = top[u] + work[u]
            if t > top[v]:
                top[v] = t
    bottom = work.copy()
    for v in range(n - 1, -1, -1):
        for w in prob.succs[v]:
            b = work[v] + bottom[w]
            if b > bottom[v]:
                bottom[v] = b
    return top, bottom


def _mean_over(neigh: tuple[tuple[int, ...], ...], x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for v, ns in enumerate(neigh):
        if ns:
            out[v] = x[list(ns)].mean(axis=0)
    return out


def node_work(prob: CompiledProblem) -> np.ndarray:
    """Per node its smallest finite latency over the devices (0 where none is finite)."""
    lat = np.where(np.isfinite(prob.lat), prob.lat, np.inf)
    w = lat.min(axis=1) if prob.num_devices else np.zeros(prob.n)
    return np.where(np.isfinite(w), w, 0.0)


def base_features(prob: CompiledProblem) -> np.ndarray:
    """The ``(n, BASE_DIM)`` per-node figures named in :data:`BASE_NAMES`."""
    n = prob.n
    if n == 0:
        return np.zeros((0, BASE_DIM))
    lat = prob.lat
    finite = np.isfinite(lat)
    work = node_work(prob)
    mean_work = work.mean() or 1.0
    total_work = work.sum() or 1.0
    mean_size = prob.size.mean() or 1.0
    accel, host = prob.pays, ~prob.pays
    big = np.where(finite, lat, np.inf)

    def best(cols: np.ndarray) -> np.ndarray:
        return big[:, cols].min(axis=1) if cols.any() else np.full(n, np.inf)

    a, h = best(accel), best(host)
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = np.where(np.isfinite(a) & np.isfinite(h) & (a > 0), np.log(np.maximum(h, 1e-12) / np.maximum(a, 1e-12)), 0.0)
    speedup = np.clip(speedup, -5.0, 5.0)
    indeg = np.array([len(p) for p in prob.preds], dtype=float)
    outdeg = np.array([len(s) for s in prob.succs], dtype=float)
    top, bottom = _levels(prob, work)
    cp = float((top + bottom).max()) or 1.0
    anc, desc = _reachability(prob)
    weights = np.stack([np.ones(n), work], axis=1)
    sa = _bitset_sums(anc, n, weights)
    sd = _bitset_sums(desc, n, weights)
    tot = weights.sum(axis=0)
    sp = tot[None, :] - sa - sd - weights
    cols = [
        work / mean_work, prob.size / mean_size, prob.tcost / mean_work, speedup,
        finite.mean(axis=1), np.log1p(indeg), np.log1p(outdeg), prob.backward.astype(float),
        top / cp, bottom / cp, (top + bottom) / cp,
        sa[:, 0] / n, sa[:, 1] / total_work, sd[:, 0] / n, sd[:, 1] / total_work,
        sp[:, 0] / n, sp[:, 1] / total_work,
    ]
    return np.stack(cols, axis=1)


def node_embeddings(prob: CompiledProblem) -> np.ndarray:
    """Base features plus ``ROUNDS`` rounds of mean message passing each way: ``(n, NODE_DIM)``."""
    x = base_features(prob)
    parts = [x]
    fwd, bwd = x, x
    for _ in range(ROUNDS):
        fwd = _mean_over(prob.preds, fwd)
        parts.append(fwd)
    for _ in range(ROUNDS):
        bwd = _mean_over(prob.succs, bwd)
        parts.append(bwd)
    return np.concatenate(parts, axis=1)


def group_embeddings(prob: CompiledProblem) -> np.ndarray:
    """Per colocation group (``prob.groups`` order): mean node embedding, log group size, and the
    group's work as a fraction of one device's fair share (total work / number of devices)."""
    emb = node_embeddings(prob)
    work = node_work(prob)
    share = (work.sum() / max(prob.num_devices, 1)) or 1.0
    out = np.empty((len(prob.groups), GROUP_DIM))
    for gi, members in enumerate(prob.groups):
        idx = list(members)
        out[gi, :NODE_DIM] = emb[idx].mean(axis=0)
        out[gi, NODE_DIM] = np.log(len(idx))
        out[gi, NODE_DIM + 1] = work[idx].sum() / share
    return out
