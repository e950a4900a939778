"""``viz-place info`` and ``viz-place evaluate``.

>>> import os, tempfile
>>> from viz_place.cli.main import main
>>> out = os.path.join(tempfile.mkdtemp(), "p.json")
>>> main(["solve", "chain", "--solver", "topo-fill", "--out", out])         # doctest: +ELLIPSIS
topo-fill: max_load value 8.6565 (heuristic) in ... s
max-load 8.6565, throughput 0.11552, latency 30.3599, bottleneck fpga:3
wrote .../p.json
0
>>> main(["evaluate", "chain", out, "--json"])                               # doctest: +ELLIPSIS
{
 "max_load": ...
0
"""
from __future__ import annotations

from ..cost import evaluate
from ..io import load_placement
from .common import add_graph_args, cluster_for, fmt, load_graph_arg, print_json, print_table


def add_parsers(sub) -> None:
    p = sub.add_parser("info", help="summarise a graph: nodes, edges, devices, FLOPs")
    add_graph_args(p)
    p.set_defaults(run=run_info)
    p = sub.add_parser("evaluate", help="evaluate a placement: max-load, throughput, latency, memory")
    add_graph_args(p, pins=True)
    p.add_argument("placement", help="our placement JSON or the paper's split format")
    p.add_argument("--overlap", action="store_true", help="overlap communication with compute (max, not sum)")
    p.set_defaults(run=run_evaluate)


def run_info(args) -> int:
    g = load_graph_arg(args.graph, args)
    cluster = g.default_cluster if not args.devices else cluster_for(g, args.devices)
    fwd = sum(1 for n in g.nodes() if not n.backward)
    out = {"name": g.name, "nodes": g.num_nodes, "edges": g.num_edges, "forward_nodes": fwd,
           "backward_nodes": g.num_nodes - fwd, "devices": cluster.summary() if cluster else [],
           "flops": g.total_flops, "kinds": list(g.kinds), "colocation_groups": len(g.colocation_groups),
           "source": g.source, "notes": g.notes}
    if args.json:
        print_json(out)
        return 0
    print(f"graph {g.name}: {out['nodes']} nodes ({fwd} forward, {out['backward_nodes']} backward), "
          f"{out['edges']} edges, {out['colocation_groups']} colocation groups")
    print(f"latency kinds: {', '.join(g.kinds) or '-'}; FLOPs: {fmt(g.total_flops)}")
    if cluster:
        print_table(["class", "kind", "count", "memory", "speed", "pays comm", "link"],
                    [[c.name, c.kind, c.count, "unlimited" if c.memory is None else c.memory, c.speed, c.pays_communication,
                      c.link_factor]
                     for c in cluster.classes])
    for note in g.notes[:5]:
        print(f"note: {note}")
    if len(g.notes) > 5:
        print(f"note: ... and {len(g.notes) - 5} more")
    return 0


def run_evaluate(args) -> int:
    from .common import pins_for
    g = load_graph_arg(args.graph, args)
    cluster = cluster_for(g, args.devices)
    placement, file_pins = load_placement(args.placement, g, cluster)
    pins = pins_for(g, cluster, args.pins) if args.pins else file_pins
    ev = evaluate(g, cluster, placement, pins=pins, overlap=args.overlap)
    if args.json:
        print_json(ev.to_dict())
        return 0
    print(f"max-load {fmt(ev.max_load)} (throughput {fmt(ev.throughput)}), latency {fmt(ev.latency)}, "
          f"bottleneck {ev.bottleneck}, {'feasible' if ev.feasible else 'INFEASIBLE'}")
    print_table(["device", "load", "compute", "communication", "memory", "capacity"],
                [[d.name, d.load, d.compute, d.communication, d.memory, d.memory_capacity] for d in ev.devices])
    for v in ev.violations:
        print(f"violation: {v}")
    if ev.latency_issue:
        print(f"latency: {ev.latency_issue}")
    return 0
