"""Random small instances and the validity checks every solver's output goes through.

>>> inst = random_instance(0)
>>> inst.graph.num_nodes > 0 and len(inst.cluster.classes) >= 2
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..cost import evaluate
from ..model import Cluster, DeviceClass, OpGraph, Placement


@dataclass
class Instance:
    graph: OpGraph
    cluster: Cluster
    pins: dict[str, str] = field(default_factory=dict)
    seed: int = 0

    def __repr__(self) -> str:
        return (f"Instance(seed={self.seed}, nodes={self.graph.num_nodes}, "
                f"classes={[ (c.name, c.count, c.memory) for c in self.cluster.classes]}, pins={self.pins})")


def random_dag(rng: np.random.Generator, n: int, p: float) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(str(i) for i in range(n))
    for v in range(1, n):
        for u in range(v):
            if rng.random() < p:
                g.add_edge(str(u), str(v))
    return g


def random_instance(seed: int, *, n_min: int = 3, n_max: int = 8, training: bool | None = None,
                    colour_classes: bool = True, memory: bool = True, pins: bool = True,
                    n_classes: int | None = None, unsupported: bool = True) -> Instance:
    """A small random instance: DAG, latencies per kind, colour classes, memory
    limits, pins, 2–3 device classes (one CPU-like that pays no communication).

    Deterministic in ``seed``. Training instances add a backward twin per
    forward node (same colour class, gradient edges reversed).
    """
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_min, n_max + 1))
    g = random_dag(rng, n, float(rng.uniform(0.2, 0.6)))
    training = bool(rng.random() < 0.3) if training is None else training
    n_classes = int(rng.integers(2, 4)) if n_classes is None else n_classes
    kinds = ["cpu", "fpga", "gpu"][:n_classes]
    for v in g.nodes:
        lat = {"cpu": float(rng.integers(2, 20))}
        for k in kinds[1:]:
            if not unsupported or rng.random() > 0.1:
                lat[k] = float(rng.integers(1, 8))
        g.nodes[v].update(latency=lat, size=float(rng.integers(0, 10)), transfer_cost=float(rng.integers(0, 4)),
                          op_type="op")
    if colour_classes and n >= 3:
        for _ in range(int(rng.integers(0, 2))):
            a, b = rng.choice(n, 2, replace=False)
            cc = f"c{a}"
            for x in (a, b):
                if g.nodes[str(x)].get("color_class") is None:
                    g.nodes[str(x)]["color_class"] = cc
    if training:
        tg = nx.DiGraph()
        for v, a in g.nodes(data=True):
            cc = a.get("color_class") or f"n{v}"
            tg.add_node(v, **{**a, "color_class": cc})
            b = dict(a)
            b.update(backward=True, color_class=cc, latency={k: 2 * t for k, t in a["latency"].items()},
                     size=float(rng.integers(0, 5)))
            tg.add_node(f"{v}b", **b)
        for u, v in g.edges:
            tg.add_edge(u, v)
            tg.add_edge(f"{v}b", f"{u}b")
        for v in g.nodes:
            if rng.random() < 0.5:
                tg.add_edge(v, f"{v}b")
        g = tg
    total_size = sum(a["size"] for _, a in g.nodes(data=True))
    classes = [DeviceClass("cpu", "cpu", int(rng.integers(1, 3)), memory=None, pays_communication=False)]
    for k in kinds[1:]:
        mem = float(rng.integers(int(total_size // 3) + 1, int(total_size) + 2)) if memory and rng.random() < 0.6 else None
        classes.append(DeviceClass(k, k, int(rng.integers(1, 3)), memory=mem,
                                   speed=float(rng.choice([1.0, 1.0, 2.0])), pays_communication=True,
                                   link_factor=float(rng.choice([1.0, 1.0, 0.5]))))
    cluster = Cluster(tuple(classes))
    graph = OpGraph(g, name=f"random_{seed}", default_cluster=cluster)
    pin_map: dict[str, str] = {}
    if pins and rng.random() < 0.35:
        v = str(rng.integers(n))
        node = graph.node(v)
        options = [d.name for d in cluster.devices if d.cls.kind in node.latency]
        if options:
            dev = str(rng.choice(options))
            cc = node.color_class
            for other in graph.node_ids:
                if other == v or (cc is not None and graph.node(other).color_class == cc):
                    if cluster.device_class_of(dev).kind in graph.node(other).latency:
                        pin_map[other] = dev
            if any(cluster.device_class_of(dev).kind not in graph.node(o).latency
                   for o in graph.node_ids if cc is not None and graph.node(o).color_class == cc):
                pin_map = {}
    return Instance(graph, cluster, pin_map, seed)


def check_placement(graph: OpGraph, cluster: Cluster, placement: Placement, pins=None, *,
                    objective: str | None = None, rel_tol: float = 1e-9) -> list[str]:
    """Problems with a solver's output (empty list = valid).

    Every node placed once on an existing device; colour classes together;
    pins honoured; memory within limits; ops only where supported — i.e. the
    evaluator finds no violation — and the solver's claimed value equals the
    evaluator's figure for its objective.
    """
    problems = []
    missing = [n for n in graph.node_ids if n not in placement.assignment]
    if missing:
        return [f"unplaced nodes {missing[:5]}"]
    extra = [n for n in placement.assignment if not graph.has_node(n)]
    if extra:
        return [f"unknown nodes {extra[:5]}"]
    bad = [d for d in placement.assignment.values() if not cluster.has_device(d)]
    if bad:
        return [f"unknown devices {sorted(set(bad))[:5]}"]
    ev = evaluate(graph, cluster, placement, pins=pins)
    problems.extend(ev.violations)
    objective = objective or placement.objective
    if placement.claimed_value is not None and objective:
        actual = ev.value(objective)
        claimed = placement.claimed_value
        if not (math.isclose(claimed, actual, rel_tol=rel_tol, abs_tol=1e-12) or (math.isinf(claimed) and math.isinf(actual))):
            problems.append(f"claimed {objective} {claimed!r} but the evaluator says {actual!r}")
    return problems


def assert_valid(graph, cluster, placement, pins=None, **kw) -> None:
    problems = check_placement(graph, cluster, placement, pins, **kw)
    assert not problems, f"{placement.solver}: " + "; ".join(problems)
