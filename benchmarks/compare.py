"""Exact solvers against the baselines on the published layer workloads.

Throughput: every layer graph in ``throughput-inputs/LayerGraphs`` x {dp, ilp,
ilp-noncontig, pipedream, topo-fill, single-device, local-search, expert (where
the paper ships a human split)}. Latency: every graph in
``latency-inputs/LayerGraphs`` x {latency-ilp, greedy-latency}. Each run has a
time limit (``--time-limit``, default 15 s; the whole benchmark then takes about
10 minutes). Prints one table per objective and where the non-contiguous ILP
beats the contiguous one.

    .venv/bin/python benchmarks/compare.py [--time-limit S] [--backend auto|cbc|highs] [--only NAME] [--json]
        [--long S [--long-only] [--long-gap G] [--threads N] [--generated SPEC,...]]

``--long S`` adds the proof column: ``ilp-noncontig`` for ``S`` seconds (e.g.
300) on every layer workload, stopping once the gap ``value / bound - 1`` is at
most ``--long-gap`` (default 1 %), with its status, bound, gap and the time the
gap first reached the target (from the progress reports); then the same on
generated graphs of up to ~150 colocation groups (:data:`GENERATED`, or
``--generated family:nodes:seed[:training],...``). ``--long-only`` skips the
short table. ``--threads`` (default 1) is the MILP back-end's thread count.

Wall time is what a user waits; CPU time is this process's in the short table
(CBC runs in a child process, so its CPU time is not counted there), and in the
long table this process's and its children's (the set-partitioning bound runs in
a process of its own beside the integer program; see ``set_bound_beside``).
``--long-options`` passes more ``ilp-noncontig`` options (numbers, ``true``,
``false``, ``none``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from _common import WORKLOADS, workloads_available
from viz_place.cost import evaluate, gap as gap_of
from viz_place.errors import VizPlaceError
from viz_place.io import load_graph
from viz_place.solver_files import read_option_files
from viz_place.solvers import get_solver, list_solvers, run_solver

THROUGHPUT = ("dp", "ilp", "ilp-noncontig", "pipedream", "topo-fill", "single-device", "local-search", "expert")
LATENCY = ("latency-ilp", "greedy-latency")

#: Generated graphs of the long table: family, nodes (forward nodes for training), seed, training.
GENERATED = (("residual", 50, 1, False), ("residual", 75, 2, True), ("inception", 100, 1, False),
             ("transformer", 150, 1, False))


def _options(name: str, args) -> dict:
    info = get_solver(name)
    fields = {f for f in info.options_cls.__dataclass_fields__}
    opts = {}
    if "time_limit" in fields:
        opts["time_limit"] = args.time_limit
    if "backend" in fields:
        opts["backend"] = args.backend
    if name == "local-search":
        opts.update(seed=0, restarts=4)
    return opts


def run(graph, cluster, name: str, objective: str, args, extra=None) -> dict:
    row = {"solver": name}
    t, c = time.perf_counter(), time.process_time()
    try:
        options = read_option_files(name, graph, cluster, {**_options(name, args), **(extra or {})})
        p = run_solver(name, graph, cluster, options=options)
    except VizPlaceError as err:
        row.update(status="error", value=None, wall=time.perf_counter() - t, cpu=time.process_time() - c,
                   message=str(err)[:200])
        return row
    ev = evaluate(graph, cluster, p)
    row.update(status=p.status, value=ev.value(objective), wall=time.perf_counter() - t, cpu=time.process_time() - c,
               feasible=ev.feasible, message=p.message[:200], bound=p.lower_bound, bound_set=p.bound_set)
    return row


def _option_value(text: str):
    """An option's value from ``--long-options``: ``true``/``false``, ``none`` or a number."""
    low = text.strip().lower()
    return {"true": True, "false": False, "none": None}[low] if low in ("true", "false", "none") else float(text)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the set bound's process beside the integer
    program counts)."""
    import resource
    return time.process_time() + sum(getattr(resource.getrusage(resource.RUSAGE_CHILDREN), f)
                                     for f in ("ru_utime", "ru_stime"))


def long_run(graph, cluster, args) -> dict:
    """``ilp-noncontig`` for ``args.long`` seconds: status, value, proven bound (for any placement),
    gap, and when the progress reports first showed a gap within ``args.long_gap``."""
    seen: list[tuple[float, float | None, float | None]] = []
    t0 = time.perf_counter()

    def progress(ev) -> None:
        if ev.incumbent is not None or ev.bound is not None:
            seen.append((time.perf_counter() - t0, ev.incumbent, ev.bound))

    opts = {"time_limit": args.long, "backend": args.backend, "gap": args.long_gap, "threads": args.threads,
            **{k: _option_value(v) for k, v in (kv.split("=", 1) for kv in args.long_options.split(",") if kv)}}
    row = {"solver": "ilp-noncontig", "nodes": graph.num_nodes, "groups": len(graph.colocation_groups)}
    c = _cpu()
    try:
        p = run_solver("ilp-noncontig", graph, cluster, options=opts, progress=progress)
    except VizPlaceError as err:
        row.update(status="error", value=None, bound=None, gap=None, wall=time.perf_counter() - t0,
                   cpu=_cpu() - c, reached=None, message=str(err)[:200])
        return row
    wall = time.perf_counter() - t0
    value = evaluate(graph, cluster, p).value("max_load")
    best_inc, best_bound, reached = math.inf, -math.inf, None
    for t, inc, bound in seen:
        best_inc = min(best_inc, inc) if inc is not None else best_inc
        best_bound = max(best_bound, bound) if bound is not None else best_bound
        g = gap_of(best_inc if math.isfinite(best_inc) else None, best_bound if best_bound > 0 else None)
        if g is not None and g <= args.long_gap * (1 + 1e-9):
            reached = t
            break
    gap = gap_of(value, p.lower_bound if p.bound_set == "any" else None)
    if reached is None and gap is not None and gap <= args.long_gap * (1 + 1e-9):
        reached = wall
    row.update(status=p.status, value=value, bound=p.lower_bound, gap=gap, wall=wall, cpu=_cpu() - c,
               reached=reached, message=p.message[:300])
    return row


def long_table(title: str, rows: list[dict], args, short: dict | None = None) -> None:
    print(f"\n{title}")
    head = (f"{'workload':<28} {'groups':>6} {'value':>10} {'bound':>10} {'gap':>7} {'status':<9} {'wall s':>7} "
            f"{'cpu s':>7} {'<=' + format(100 * args.long_gap, 'g') + '% at s':>10}"
            + (f" {'gap@short':>9}" if short else ""))
    print(head)
    print("-" * len(head))
    for r in rows:
        def num(x, spec=".6g"):
            return format(x, spec) if x is not None else "-"
        gap = f"{100 * r['gap']:.2f}%" if r.get("gap") is not None else "-"
        line = (f"{r['workload']:<28} {r['groups']:>6} {num(r['value']):>10} {num(r['bound']):>10} {gap:>7} "
                f"{r['status']:<9} {r['wall']:>7.1f} {r['cpu']:>7.1f} {num(r.get('reached'), '.1f'):>10}")
        if short:
            s = short.get(r["workload"])
            sg = gap_of(s["value"], s.get("bound")) if s and s.get("bound_set") == "any" else None
            line += f" {(f'{100 * sg:.2f}%' if sg is not None else '-'):>9}"
        print(line)
    ok = [r["workload"] for r in rows if r.get("gap") is not None and r["gap"] <= args.long_gap * (1 + 1e-9)]
    print(f"within {100 * args.long_gap:g}%: {len(ok)} of {len(rows)}" + (f" ({', '.join(ok)})" if ok else ""))


def _generated(args) -> list[tuple[str, int, int, bool]]:
    if not args.generated:
        return list(GENERATED)
    out = []
    for spec in args.generated.split(","):
        parts = spec.split(":")
        out.append((parts[0], int(parts[1]), int(parts[2]) if len(parts) > 2 else 0,
                    len(parts) > 3 and parts[3] in ("t", "training", "1", "true")))
    return out


def table(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    head = f"{'workload':<24} {'solver':<15} {'value':>12} {'ratio':>7} {'status':<20} {'wall s':>7} {'cpu s':>7}"
    print(head)
    print("-" * len(head))
    best: dict[str, float] = {}
    for r in rows:
        if r["value"] is not None and r.get("feasible") and math.isfinite(r["value"]):
            best[r["workload"]] = min(best.get(r["workload"], math.inf), r["value"])
    for r in rows:
        v = r["value"]
        b = best.get(r["workload"])
        ratio = f"{v / b:.3f}" if v is not None and b else "-"
        val = f"{v:.6g}" if v is not None else "-"
        print(f"{r['workload']:<24} {r['solver']:<15} {val:>12} {ratio:>7} {r['status']:<20} "
              f"{r['wall']:>7.1f} {r['cpu']:>7.1f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=15.0, help="seconds per run (default 15)")
    ap.add_argument("--backend", default="auto", help="MILP back-end: auto, cbc or highs")
    ap.add_argument("--only", default="", help="only workloads whose name contains this")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of tables")
    ap.add_argument("--long", type=float, default=0.0, metavar="S",
                    help="also run ilp-noncontig for S seconds (e.g. 300) on the layer and generated graphs")
    ap.add_argument("--long-only", action="store_true", help="with --long: skip the short table")
    ap.add_argument("--long-gap", type=float, default=0.01, help="with --long: stop at this gap (default 0.01)")
    ap.add_argument("--threads", type=int, default=1, help="MILP back-end threads in the long runs (default 1)")
    ap.add_argument("--long-options", default="", metavar="K=V,...",
                    help="with --long: more ilp-noncontig options, e.g. set_bound_beside=false,set_bound=0.55,lns=0.15")
    ap.add_argument("--generated", default="", help="with --long: family:nodes:seed[:training],... "
                                                    "(default: the GENERATED list)")
    args = ap.parse_args(argv)
    from viz_place.samples import make_graph
    if not workloads_available():
        print(f"skipped: {WORKLOADS} not found")
        return 0
    have = {s.name for s in list_solvers()}
    tp_rows, lat_rows, long_rows, gen_rows = [], [], [], []
    for path in sorted((WORKLOADS / "throughput-inputs" / "LayerGraphs").glob("*.json")):
        if args.only not in path.stem:
            continue
        if args.long and "ilp-noncontig" in have:
            g = load_graph(path)
            row = long_run(g, g.default_cluster, args)
            row["workload"] = path.stem
            long_rows.append(row)
            print(f"  {path.stem} ilp-noncontig {args.long:g} s: {row['value']} ({row['status']}, gap "
                  f"{row['gap']}, {row['wall']:.1f} s)", file=sys.stderr, flush=True)
        if args.long_only:
            continue
        g = load_graph(path)
        c = g.default_cluster
        for name in THROUGHPUT:
            if name not in have:
                continue
            extra = None
            if name == "expert":
                split = WORKLOADS / "human-experts" / f"{path.stem}_expert.json"
                if not split.exists():
                    continue
                extra = {"path": str(split)}
            row = run(g, c, name, "max_load", args, extra)
            row["workload"] = path.stem
            tp_rows.append(row)
            print(f"  {path.stem} {name}: {row['value']} ({row['status']}, {row['wall']:.1f} s)", file=sys.stderr,
                  flush=True)
    if args.long and "ilp-noncontig" in have:
        for fam, n, seed, training in _generated(args):
            g = make_graph(fam, n, seed, training=training)
            if args.only not in g.name:
                continue
            row = long_run(g, g.default_cluster, args)
            row["workload"] = g.name
            gen_rows.append(row)
            print(f"  {g.name} ilp-noncontig {args.long:g} s: {row['value']} ({row['status']}, gap {row['gap']}, "
                  f"{row['wall']:.1f} s)", file=sys.stderr, flush=True)
    for path in sorted((WORKLOADS / "latency-inputs" / "LayerGraphs").glob("*.json")):
        if args.only not in path.stem or args.long_only:
            continue
        g = load_graph(path)
        c = g.default_cluster
        for name in LATENCY:
            if name not in have:
                continue
            row = run(g, c, name, "latency", args)
            row["workload"] = path.stem
            lat_rows.append(row)
            print(f"  {path.stem} {name}: {row['value']} ({row['status']}, {row['wall']:.1f} s)", file=sys.stderr,
                  flush=True)
    if args.json:
        print(json.dumps({"throughput": tp_rows, "latency": lat_rows, "long": long_rows, "generated": gen_rows},
                         indent=1))
        return 0
    if args.long:
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        what = (f"ilp-noncontig, {args.long:g} s per run, back-end {args.backend}, {args.threads} thread(s), "
                f"stop at gap {100 * args.long_gap:g}% (gap = value / proven bound over all placements - 1)")
        short = {r["workload"]: r for r in tp_rows if r["solver"] == "ilp-noncontig"} or None
        long_table(f"{what} — layer workloads", long_rows, args, short)
        long_table(f"{what} — generated graphs", gen_rows, args)
        if load:
            print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        if args.long_only:
            return 0
    print(f"time limit per run: {args.time_limit:g} s, MILP back-end: {args.backend}")
    table("Throughput (max-load, lower is better) — layer graphs", tp_rows)
    table("Latency (single sample, lower is better) — layer graphs", lat_rows)
    print("\nNon-contiguous vs contiguous ILP (max-load):")
    by = {(r["workload"], r["solver"]): r for r in tp_rows}
    for w in dict.fromkeys(r["workload"] for r in tp_rows):
        a, b = by.get((w, "ilp")), by.get((w, "ilp-noncontig"))
        if not a or not b or a["value"] is None or b["value"] is None:
            continue
        gain = 100 * (a["value"] - b["value"]) / a["value"] if a["value"] else 0.0
        verdict = "non-contiguous better" if gain > 1e-6 else ("equal" if abs(gain) <= 1e-6 else "contiguous better")
        print(f"  {w:<24} ilp {a['value']:.6g} ({a['status']})  ilp-noncontig {b['value']:.6g} ({b['status']})  "
              f"{gain:+.2f}%  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
