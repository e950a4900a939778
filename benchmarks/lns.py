"""Re-solving device subsets (large-neighbourhood search) from an ``ilp-noncontig`` incumbent.

Runs ``ilp-noncontig`` (HiGHS, default options but ``lns=0``) for ``--milp`` seconds on a generated graph
(default the training graph that stays above 1 % in 300 s), then
:func:`viz_place.solvers.milp.neighbourhoods.improve_by_subsets` from its placement for ``--seconds``
(subsets of ``--size`` devices holding the bottleneck, each sub-MILP at most ``--sub-time`` seconds), and
prints every subproblem (time, devices, free groups, status, max-load after, kept) and the values.
``--table S`` instead runs ``ilp-noncontig`` for ``S`` seconds with ``lns=0`` and with the default
share on the 8 published layer workloads and the generated graphs of ``benchmarks/compare.py --long``,
and prints value and gap (``value / proven bound - 1``) of both. ``--spread-table S`` runs the subset search's
first pass (pairs, then three devices) for ``S`` seconds from ``--starts`` polished local-search placements of
``--graph``, with the sub-MILP's tie-break (``SPREAD``, less load in all) off and on, and prints both values.

    .venv/bin/python benchmarks/lns.py --milp 120 --seconds 180
    .venv/bin/python benchmarks/lns.py --graph transformer:150:1 --milp 60 --seconds 60 --size 2
    .venv/bin/python benchmarks/lns.py --table 10
    .venv/bin/python benchmarks/lns.py --spread-table 70 --graph inception:120:3:training --starts 4
"""
from __future__ import annotations

import argparse
import time

from _common import WORKLOADS, workloads_available
from compare import GENERATED
from viz_place import load_graph, run_solver
from viz_place.cost import compile_problem, evaluate, evaluate_indices, gap
from viz_place.samples import make_graph
from viz_place.solvers.groups import allowed_devices
from viz_place.solvers.milp.max_load import IlpNoncontigOptions
from viz_place.solvers.milp.neighbourhoods import LNS_SIZE, SPREAD, improve_by_subsets


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="residual:75:2:training", help="family:nodes:seed[:training]")
    ap.add_argument("--milp", type=float, default=120.0, help="seconds of ilp-noncontig first (default 120)")
    ap.add_argument("--seconds", type=float, default=180.0, help="seconds of subset search (default 180)")
    ap.add_argument("--size", type=int, default=LNS_SIZE, help=f"devices per subset at first (default {LNS_SIZE})")
    ap.add_argument("--sub-time", type=float, default=10.0, help="seconds per sub-MILP at most (default 10)")
    ap.add_argument("--table", type=float, default=0.0, metavar="S",
                    help="instead: S-second runs with lns=0 and the default on the layer and generated graphs")
    ap.add_argument("--spread-table", type=float, default=0.0, metavar="S",
                    help="instead: S seconds of first pass from --starts placements, tie-break off and on")
    ap.add_argument("--starts", type=int, default=4, help="polished local-search starts of --spread-table")
    args = ap.parse_args(argv)
    if args.table:
        return table(args.table)
    fam, n, seed, *rest = args.graph.split(":")
    g = make_graph(fam, int(n), int(seed), training=bool(rest and rest[0] == "training"))
    if args.spread_table:
        return spread_table(g, args.spread_table, args.starts)
    cluster = g.default_cluster
    p = run_solver("ilp-noncontig", g, cluster, options={"time_limit": args.milp, "threads": 1,
                                                         "backend": "highs", "lns": 0.0})
    bound = p.lower_bound if p.bound_set == "any" else None
    start = evaluate(g, cluster, p).max_load
    print(f"{g.name}: ilp-noncontig {args.milp:g} s (lns off): {start:.6g}, bound {bound:.6g}, "
          f"gap {100 * gap(start, bound):.2f}%" if bound else f"{g.name}: ilp-noncontig: {start:.6g}")
    prob = compile_problem(g, cluster)
    t0 = time.perf_counter()
    out = improve_by_subsets(prob, allowed_devices(prob, {}), prob.to_index_array(p), size=args.size,
                             time_limit=args.seconds, sub_time=args.sub_time,
                             opts=IlpNoncontigOptions(backend="highs", threads=1))
    print(f"{'seconds':>8} {'devices':<16} {'free':>5} {'status':<9} {'max-load':>10} kept")
    for sec, subset, free, status, value, kept in out.log:
        names = ",".join(prob.device_names[d] for d in subset)
        print(f"{sec:8.1f} {names:<16} {free:5d} {status:<9} {value if value is None else f'{value:.6g}':>10} "
              f"{'yes' if kept else ''}")
    end = out.key[0]
    print(f"subset search: {start:.6g} -> {end:.6g} in {time.perf_counter() - t0:.1f} s "
          f"({out.improvements} improvements, {len(out.log)} subproblems)"
          + (f"; gap against the MILP's bound {100 * gap(end, bound):.2f}%" if bound else ""))
    return 0


def spread_table(g, seconds: float, starts: int) -> int:
    """The first pass (pairs, then three devices) for ``seconds`` from ``starts`` placements (local search with
    seeds 0, 1, ..., each polished for 15 s), with the sub-MILP's tie-break off (``spread`` 0) and on."""
    from viz_place.solvers.milp.polish import polish
    prob = compile_problem(g, g.default_cluster)
    allowed = allowed_devices(prob, {})
    opts = IlpNoncontigOptions(backend="highs", threads=1)
    spread = SPREAD
    print(f"{g.name}: first pass (pairs, then three devices), {seconds:g} s from each start; HiGHS, 1 thread")
    print(f"{'start':<6} {'polished':>10} {'spread 0':>10} {f'spread {spread:g}':>13}")
    for s in range(starts):
        ls = run_solver("local-search", g, g.default_cluster, options={"seed": s, "restarts": 2, "time_limit": 15})
        dev = polish(prob, allowed, prob.to_index_array(ls), time_limit=15.0, pinned=set(), seed=s)
        row = [f"{evaluate_indices(prob, dev).max_load:10.6g}"]
        for value in (0.0, spread):
            out = improve_by_subsets(prob, allowed, dev, size=LNS_SIZE, max_size=LNS_SIZE + 1,
                                     time_limit=seconds, sub_time=10.0, opts=opts, spread=value)
            row.append(f"{out.key[0]:10.6g}")
        print(f"{s:<6} {row[0]} {row[1]} {row[2]:>13}", flush=True)
    return 0


def table(seconds: float) -> int:
    """``ilp-noncontig`` for ``seconds`` with ``lns=0`` and with the default, side by side."""
    from viz_place.solvers.milp.max_load import IlpNoncontigOptions
    cases = []
    if workloads_available():
        cases += [(p.stem, lambda p=p: load_graph(p))
                  for p in sorted((WORKLOADS / "throughput-inputs" / "LayerGraphs").glob("*.json"))]
    else:
        print(f"(layer workloads skipped: {WORKLOADS} not found)")
    cases += [(None, lambda f=f, n=n, s=s, t=t: make_graph(f, n, s, training=t)) for f, n, s, t in GENERATED]
    default = IlpNoncontigOptions().lns           # None: the automatic share (see lns_share)
    label = "lns=auto" if default is None else f"lns={default:g}"
    print(f"ilp-noncontig, {seconds:g} s, HiGHS, 1 thread; gap = value / proven bound - 1")
    print(f"{'graph':<28} {'lns=0':>10} {'gap':>7} {label:>10} {'gap':>7}")
    for name, build in cases:
        g = build()
        row = []
        for share in (0.0, default):
            p = run_solver("ilp-noncontig", g, g.default_cluster,
                           options={"time_limit": seconds, "threads": 1, "backend": "highs", "lns": share})
            value = evaluate(g, g.default_cluster, p).max_load
            bound = p.lower_bound if p.bound_set == "any" else None
            row += [f"{value:10.6g}", f"{100 * gap(value, bound):6.2f}%" if bound else f"{'-':>7}"]
        print(f"{name or g.name:<28} {' '.join(row)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
