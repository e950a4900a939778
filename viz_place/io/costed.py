"""From importer records (ops with FLOPs, weights and tensor bytes) to a costed
:class:`~viz_place.model.OpGraph`: shared by the ONNX and torch.fx importers.

The graph gets latencies per device kind from the roofline model
(:mod:`viz_place.model.roofline`, milliseconds), transfer costs from output
bytes, and a default cluster (one Xeon host ``cpu`` + four A100 ``gpu`` unless
told otherwise), so it can be solved as is.

Training (``training=True``) adds one backward node per forward op, named
``<id>__grad``: 2x the forward FLOPs, ``size`` = the forward op's weight bytes
(the weight gradients), the same colour class as its forward twin, gradient
edges reversed (``bwd(v) -> bwd(u)`` for each ``u -> v``, carrying the bytes of
``u``'s output) and an edge ``v -> bwd(v)`` for the stashed activation.

>>> ops = [OpRecord("a", "a", "MatMul", 2e6, 4e4, 8e3), OpRecord("b", "b", "Relu", 2e3, 0.0, 8e3)]
>>> g = build_graph(ops, [("a", "b", 8e3)], name="tiny", training=True)
>>> g.num_nodes, g.node("a__grad").flops, g.node("a__grad").color_class == g.node("a").color_class
(4, 4000000.0, True)
>>> sorted(g.default_cluster.kinds)
['cpu', 'gpu']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import networkx as nx

from ..model import Cluster, OpGraph
from ..model.roofline import RooflineSpec, apply_roofline, default_specs, roofline_cluster


@dataclass(frozen=True)
class OpRecord:
    """One imported op: FLOPs, bytes of folded weights, bytes of its (used) outputs,
    and the layer (module scope) it belongs to, where the model says."""

    id: str
    name: str
    op_type: str
    flops: float
    weight_bytes: float
    output_bytes: float
    estimated: bool = False
    layer: str | None = None


def estimate_notes(ops: Iterable[OpRecord]) -> list[str]:
    """One note per op type whose FLOPs were estimated (never a silent guess)."""
    by_type: dict[str, list[str]] = {}
    for op in ops:
        if op.estimated:
            by_type.setdefault(op.op_type, []).append(op.id)
    notes = []
    for op_type, ids in by_type.items():
        shown = ", ".join(repr(i) for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        notes.append(f"op type {op_type!r} has no FLOPs rule: estimated 1 FLOP per output element "
                     f"for {len(ids)} node(s): {shown}")
    return notes


def build_graph(ops: Sequence[OpRecord], edges: Iterable[tuple[str, str, float]], *, name: str,
                notes: Sequence[str] = (), specs: Mapping[str, RooflineSpec] | None = None,
                cluster: Cluster | None = None, training: bool = False) -> OpGraph:
    """A costed graph from importer records (see the module docstring).

    ``specs`` maps device kinds to roofline figures (default ``cpu`` + ``gpu``);
    ``cluster`` is the user's device set (its kinds need figures in ``specs``),
    otherwise one class per kind is made by :func:`roofline_cluster`.
    """
    specs = dict(specs) if specs is not None else default_specs()
    g = nx.DiGraph()
    for op in ops:
        g.add_node(op.id, name=op.name, op_type=op.op_type, latency={}, size=float(op.weight_bytes),
                   output_bytes=float(op.output_bytes), flops=float(op.flops), layer=op.layer)
    for u, v, nbytes in edges:
        g.add_edge(u, v, bytes=float(nbytes))
    all_notes = list(notes) + estimate_notes(ops)
    if training:
        g = _with_backward(g)
        all_notes.append("training graph: one backward node per op (2x FLOPs, weight-gradient memory, "
                         "same colour class as its forward twin)")
    base = OpGraph(g, name=name, notes=all_notes)
    devices = roofline_cluster(specs, base=cluster) if cluster is not None else roofline_cluster(specs)
    return apply_roofline(base, specs, cluster=devices)


def _with_backward(fwd: nx.DiGraph) -> nx.DiGraph:
    g = nx.DiGraph()
    for v, a in fwd.nodes(data=True):
        g.add_node(v, **a, color_class=v)
    for v, a in fwd.nodes(data=True):
        grad_bytes = sum(fwd.edges[u, v]["bytes"] for u in fwd.predecessors(v))
        g.add_node(f"{v}__grad", name=f"{a['name']}_grad", op_type=f"{a['op_type']}Grad", latency={},
                   size=a["size"], output_bytes=float(grad_bytes), flops=2.0 * a["flops"], backward=True,
                   color_class=v)
    for u, v, a in fwd.edges(data=True):
        g.add_edge(u, v, **a)
        g.add_edge(f"{v}__grad", f"{u}__grad", bytes=a["bytes"])
    for v, a in fwd.nodes(data=True):
        g.add_edge(v, f"{v}__grad", bytes=a["output_bytes"])
    return g
