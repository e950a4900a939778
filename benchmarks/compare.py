"""Exact solvers against the baselines on the published layer workloads.

Throughput: every layer graph in ``throughput-inputs/LayerGraphs`` x {dp, ilp,
ilp-noncontig, pipedream, topo-fill, single-device, local-search, expert (where
the paper ships a human split)}. Latency: every graph in
``latency-inputs/LayerGraphs`` x {latency-ilp, greedy-latency}. Each run has a
time limit (``--time-limit``, default 15 s; the whole benchmark then takes about
10 minutes). Prints one table per objective and where the non-contiguous ILP
beats the contiguous one.

    .venv/bin/python benchmarks/compare.py [--time-limit S] [--backend auto|cbc|highs] [--only NAME] [--json]

Wall time is what a user waits; CPU time is this process's (CBC runs in a child
process, so its CPU time is not counted there).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from _common import WORKLOADS, workloads_available
from viz_place.cost import evaluate
from viz_place.errors import VizPlaceError
from viz_place.io import load_graph
from viz_place.solver_files import read_option_files
from viz_place.solvers import get_solver, list_solvers, run_solver

THROUGHPUT = ("dp", "ilp", "ilp-noncontig", "pipedream", "topo-fill", "single-device", "local-search", "expert")
LATENCY = ("latency-ilp", "greedy-latency")


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
               feasible=ev.feasible, message=p.message[:200])
    return row


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
    args = ap.parse_args(argv)
    if not workloads_available():
        print(f"skipped: {WORKLOADS} not found")
        return 0
    have = {s.name for s in list_solvers()}
    tp_rows, lat_rows = [], []
    for path in sorted((WORKLOADS / "throughput-inputs" / "LayerGraphs").glob("*.json")):
        if args.only not in path.stem:
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
    for path in sorted((WORKLOADS / "latency-inputs" / "LayerGraphs").glob("*.json")):
        if args.only not in path.stem:
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
        print(json.dumps({"throughput": tp_rows, "latency": lat_rows}, indent=1))
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
