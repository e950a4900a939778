"""Design sweep on Dask: the 16 published throughput workloads × {2, 4, 8} accelerators ×
{dp, pipedream, topo-fill} (144 cells), on an embedded LocalCluster of 1 and of 2 worker
processes (one thread each). Prints wall time and speed-up, the summed cell time (the work)
and the longest cell (no number of workers can beat it), the summed CPU time of the cells
(their work, whatever else shares the machine), the machine's load average, and checks
that both runs give the same values.

    .venv/bin/python benchmarks/sweep.py                   # 1 and 2 workers
    .venv/bin/python benchmarks/sweep.py --workers 1,2,4   # (more workers than cores oversubscribe)
    .venv/bin/python benchmarks/sweep.py --only bert       # workloads whose path contains 'bert'

Cluster start-up (processes, imports on every worker, a one-cell warm-up) is timed apart
from the sweep.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import WORKLOADS, workloads_available

SOLVERS = ("dp", "pipedream", "topo-fill")
COUNTS = (2, 4, 8)


def workload_paths(only: str | None) -> dict[str, str]:
    root = WORKLOADS / "throughput-inputs"
    paths = sorted(root.glob("*/*.json"))
    return {f"{p.parent.name}/{p.stem}": str(p) for p in paths if only is None or only in str(p)}


def run(n_workers: int, graphs, out: Path) -> dict:
    from viz_place.runtime.dask_engine import DaskEngine
    from viz_place.runtime.design_sweep import sweep
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    engine = DaskEngine(workers=n_workers, processes=True, dashboard=False)
    try:
        engine.preload()                                   # imports on every worker, not timed
        first = next(iter(graphs))
        sweep({first: graphs[first]}, ["topo-fill"], accelerators=[2], engine=engine)   # warm-up
        startup = time.perf_counter() - t0
        t1 = time.perf_counter()
        table = sweep(graphs, list(SOLVERS), accelerators=list(COUNTS), engine=engine, out=out)
        wall = time.perf_counter() - t1
    finally:
        engine.close()
    secs = [r["seconds"] for r in table]
    longest = max(table, key=lambda r: r["seconds"])
    return {"workers": n_workers, "cells": len(table), "wall": wall, "startup": startup, "work": sum(secs),
            "cpu": sum(r["cpu_seconds"] for r in table), "load": (load0 + os.getloadavg()[0]) / 2,
            "longest": longest["seconds"], "longest_cell": f"{longest['graph']} {longest['solver']} "
            f"×{longest['accelerators']}", "errors": sum(r["status"] in ("error", "failed") for r in table),
            "values": {r["key"]: r["value"] for r in table}, "by_worker": _by_worker(table)}


def _by_worker(table) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in table:
        out[r["worker"]] = out.get(r["worker"], 0) + 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--only", help="only workloads whose path contains this text")
    args = ap.parse_args(argv)
    if not workloads_available():
        print(f"skipped: published workloads not found at {WORKLOADS}")
        return 0
    from viz_place.io import load_graph
    graphs = {k: load_graph(p) for k, p in workload_paths(args.only).items()}
    counts = [int(x) for x in args.workers.split(",")]
    print(f"{len(graphs)} workloads x {len(COUNTS)} accelerator counts x {len(SOLVERS)} solvers "
          f"= {len(graphs) * len(COUNTS) * len(SOLVERS)} cells; machine: {os.cpu_count()} cores", flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            results.append(run(n, graphs, Path(tmp) / f"sweep_{n}.csv"))
            r = results[-1]
            print(f"  {n} worker(s): {r['wall']:.1f} s (start-up {r['startup']:.1f} s), cells per worker "
                  f"{r['by_worker']}", flush=True)
    base = results[0]["wall"]
    print()
    print("| workers | cells | wall (s) | speed-up | summed cell wall (s) | summed cell CPU (s) | longest cell (s) "
          "| lower bound on wall (s) | start-up (s) | load average |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        best = max(r["work"] / r["workers"], r["longest"])
        print(f"| {r['workers']} | {r['cells']} | {r['wall']:.1f} | {base / r['wall']:.2f} | {r['work']:.1f} | "
              f"{r['cpu']:.1f} | {r['longest']:.1f} | {best:.1f} | {r['startup']:.1f} | {r['load']:.1f} |")
    print("\n(lower bound on wall = max(summed cell wall / workers, longest cell); load average of the machine "
          "(1 min) during the run: above the core count, the cells wait for CPU)")
    print(f"\nlongest cell: {results[0]['longest_cell']}; cells with errors: {results[0]['errors']}")
    same = all(r["values"] == results[0]["values"] for r in results)
    print(f"same values with every worker count: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
