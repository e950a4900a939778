"""Synthetic graph families (no external data): chain, fork-join, residual,
inception-style, transformer block stack, and a training variant of any of them.

Every generator takes an approximate node count and a seed and returns an
:class:`~viz_place.model.OpGraph` with ``cpu`` and ``fpga`` latencies, sizes and
transfer costs drawn from a seeded ``numpy`` generator (same seed, same graph),
and a default cluster of four accelerators and one CPU whose memory lets the
graph fit on about three of them.

>>> g = make_graph("residual", 40, seed=1)
>>> g.num_nodes >= 30, g.default_cluster.device_names[:2]
(True, ('fpga:0', 'fpga:1'))
>>> training_variant(make_graph("chain", 5, seed=0)).num_nodes
10
"""
from __future__ import annotations

from typing import Callable

import networkx as nx
import numpy as np

from ..model import Cluster, OpGraph


class _Builder:
    def __init__(self, seed: int, op_mix: tuple[str, ...]) -> None:
        self.rng = np.random.default_rng(seed)
        self.g = nx.DiGraph()
        self.op_mix = op_mix

    def add(self, op_type: str | None = None, *, heavy: float = 1.0, preds: tuple[str, ...] = ()) -> str:
        rng = self.rng
        nid = str(self.g.number_of_nodes())
        op = op_type or str(rng.choice(self.op_mix))
        fpga = float(rng.uniform(0.2, 2.0) * heavy)
        cpu = float(fpga * rng.uniform(4.0, 12.0))
        out_bytes = float(rng.choice([2, 4, 8, 16]) * 2**20)
        self.g.add_node(nid, name=f"{op.lower()}_{nid}", op_type=op, latency={"cpu": round(cpu, 4), "fpga": round(fpga, 4)},
                        size=float(round(rng.uniform(1, 64)) * 2**20) * heavy, transfer_cost=round(out_bytes / 2**24 * 0.25, 4),
                        output_bytes=out_bytes, flops=float(round(fpga * 1e9)))
        for p in preds:
            self.g.add_edge(p, nid, bytes=self.g.nodes[p]["output_bytes"])
        return nid

    def graph(self, name: str, n_fpgas: int = 4) -> OpGraph:
        total = sum(a["size"] for _, a in self.g.nodes(data=True))
        cluster = Cluster.paper(n_fpgas, 1, float(np.ceil(total / 3 / 2**20) * 2**20))
        return OpGraph(self.g, name=name, default_cluster=cluster)


def chain(n: int = 30, seed: int = 0) -> OpGraph:
    """A straight pipeline of ``n`` ops."""
    b = _Builder(seed, ("Conv", "Relu", "MatMul", "Add"))
    prev: tuple[str, ...] = ()
    for _ in range(max(1, n)):
        prev = (b.add(preds=prev),)
    return b.graph(f"chain_{n}_s{seed}")


def fork_join(n: int = 40, seed: int = 0, width: int = 3) -> OpGraph:
    """Stages that fan out into ``width`` parallel branches and join again."""
    b = _Builder(seed, ("Conv", "MatMul", "Relu"))
    head = b.add("Input", heavy=0.2)
    while b.g.number_of_nodes() < n:
        depth = int(b.rng.integers(1, 4))
        ends = []
        for _ in range(width):
            p = (head,)
            for _ in range(depth):
                p = (b.add(preds=p),)
            ends.append(p[0])
        head = b.add("Concat", heavy=0.3, preds=tuple(ends))
    return b.graph(f"fork_join_{n}_s{seed}")


def residual(n: int = 40, seed: int = 0) -> OpGraph:
    """ResNet-like: conv blocks with skip connections joined by Add."""
    b = _Builder(seed, ("Conv", "BatchNorm", "Relu"))
    head = b.add("Input", heavy=0.2)
    while b.g.number_of_nodes() < n:
        x = head
        for _ in range(int(b.rng.integers(2, 4))):
            x = b.add(preds=(x,))
        head = b.add("Add", heavy=0.2, preds=(x, head))
    return b.graph(f"residual_{n}_s{seed}")


def inception(n: int = 60, seed: int = 0) -> OpGraph:
    """Inception-style modules: four branches of different depth, concatenated."""
    b = _Builder(seed, ("Conv", "Conv", "Pool"))
    head = b.add("Input", heavy=0.2)
    while b.g.number_of_nodes() < n:
        ends = []
        for depth in (1, 2, 3, 2):
            x = head
            for _ in range(depth):
                x = b.add(preds=(x,), heavy=float(b.rng.uniform(0.5, 1.5)))
            ends.append(x)
        head = b.add("Concat", heavy=0.2, preds=tuple(ends))
    return b.graph(f"inception_{n}_s{seed}")


def transformer(n: int = 60, seed: int = 0) -> OpGraph:
    """A stack of transformer blocks: Q/K/V projections, attention, MLP, residual adds."""
    b = _Builder(seed, ("MatMul",))
    head = b.add("Embedding", heavy=0.5)
    while b.g.number_of_nodes() < n:
        q, k, v = (b.add("MatMul", preds=(head,)) for _ in range(3))
        s = b.add("Softmax", heavy=0.5, preds=(q, k))
        a = b.add("MatMul", preds=(s, v))
        o = b.add("MatMul", preds=(a,))
        r1 = b.add("Add", heavy=0.1, preds=(o, head))
        n1 = b.add("LayerNorm", heavy=0.2, preds=(r1,))
        f1 = b.add("MatMul", heavy=2.0, preds=(n1,))
        f2 = b.add("MatMul", heavy=2.0, preds=(f1,))
        head = b.add("Add", heavy=0.1, preds=(f2, n1))
    return b.graph(f"transformer_{n}_s{seed}")


def training_variant(graph: OpGraph) -> OpGraph:
    """Add a backward twin per forward node (2x latency, same colour class).

    Gradients flow against the forward edges (``bwd(v) -> bwd(u)`` for each
    ``u -> v``) and each forward node feeds its own twin (stashed activation).
    """
    g = nx.DiGraph()
    for node in graph.nodes():
        a = node.to_attrs()
        a["color_class"] = node.id
        g.add_node(node.id, **a)
        b = dict(a)
        b.update(name=f"{node.name}_grad", op_type=f"{node.op_type}Grad", backward=True,
                 latency={k: round(2 * t, 4) for k, t in node.latency.items()}, size=node.size * 0.5,
                 flops=None if node.flops is None else 2 * node.flops)
        g.add_node(f"{node.id}g", **b)
    for u, v in graph.edges:
        g.add_edge(u, v, **graph.nx.edges[u, v])
        g.add_edge(f"{v}g", f"{u}g", bytes=graph.nx.edges[u, v].get("bytes"))
    for node in graph.nodes():
        g.add_edge(node.id, f"{node.id}g", bytes=node.output_bytes)
    return OpGraph(g, name=f"{graph.name}_training", default_cluster=graph.default_cluster)


FAMILIES: dict[str, Callable[..., OpGraph]] = {
    "chain": chain, "fork_join": fork_join, "residual": residual,
    "inception": inception, "transformer": transformer,
}


def make_graph(family: str, n: int, seed: int = 0, *, training: bool = False) -> OpGraph:
    """A graph of ``family`` with about ``n`` nodes (``training`` adds backward twins)."""
    if family not in FAMILIES:
        from ..errors import SolverError
        raise SolverError(f"unknown graph family {family!r}; families: {', '.join(FAMILIES)}")
    g = FAMILIES[family](n, seed)
    return training_variant(g) if training else g
