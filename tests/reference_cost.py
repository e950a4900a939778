"""A deliberately naive re-statement of the cost model, written from the paper's
text and the authors' evaluator (``computeLoadForResultOrg`` in dp.cpp), used
only to cross-check :func:`viz_place.cost.evaluate`."""
from __future__ import annotations


def reference_loads(graph, cluster, assignment, overlap=False):
    """device -> (compute, communication, load, memory) by dictionaries and loops."""
    compute = {d: 0.0 for d in cluster.device_names}
    memory = {d: 0.0 for d in cluster.device_names}
    comm = {d: 0.0 for d in cluster.device_names}
    for n in graph.node_ids:
        d = assignment[n]
        cls = cluster.device_class_of(d)
        compute[d] += graph.node(n).latency[cls.kind] / cls.speed
        memory[d] += graph.node(n).size
    receivers = {}
    for u, v in graph.edges:
        if graph.nx.edges[u, v].get("artificial"):
            continue
        if assignment[u] != assignment[v]:
            receivers.setdefault(u, set()).add(assignment[v])
    for u, devs in receivers.items():
        c = graph.node(u).transfer_cost
        for d in devs | {assignment[u]}:
            cls = cluster.device_class_of(d)
            if cls.pays_communication:
                comm[d] += c * cls.link_factor
    out = {}
    for d in cluster.device_names:
        load = max(compute[d], comm[d]) if overlap else compute[d] + comm[d]
        out[d] = (compute[d], comm[d], load, memory[d])
    return out


def reference_latency(graph, cluster, assignment):
    """Latency for placements whose accelerator sets are contiguous (one piece each),
    straight from the latency IP's constraints, solved by fixed-point iteration."""
    accel = {d for d in cluster.device_names if cluster.device_class_of(d).pays_communication}
    lat = {n: 0.0 for n in graph.node_ids}
    start = {d: 0.0 for d in accel}
    for _ in range(graph.num_nodes + 2):
        finish = {}
        for d in accel:
            members = [n for n in graph.node_ids if assignment[n] == d]
            if not members:
                continue
            cls = cluster.device_class_of(d)
            comp = sum(graph.node(n).latency[cls.kind] / cls.speed for n in members)
            ins = {u for u, v in graph.edges if assignment[v] == d and assignment[u] != d
                   and not graph.nx.edges[u, v].get("artificial")}
            outs = {u for u, v in graph.edges if assignment[u] == d and assignment[v] != d
                    and not graph.nx.edges[u, v].get("artificial")}
            s = max([lat[u] for u, v in graph.edges if assignment[v] == d and assignment[u] != d] + [0.0])
            start[d] = s
            finish[d] = s + comp + cls.link_factor * sum(graph.node(u).transfer_cost for u in ins | outs)
        new = {}
        for n in graph.node_ids:
            d = assignment[n]
            if d in accel:
                new[n] = finish[d]
            else:
                cls = cluster.device_class_of(d)
                new[n] = max([lat[u] for u in graph.predecessors(n)] + [0.0]) + graph.node(n).latency[cls.kind] / cls.speed
        if new == lat:
            break
        lat = new
    return max(lat.values())
