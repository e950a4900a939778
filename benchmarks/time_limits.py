"""Do the MILP solvers stop within their time limit + 2 s? (warm start, model building and writing count)

Runs ``ilp``, ``ilp -o device_cycles=true``, ``ilp-noncontig`` and ``latency-ilp``
with CBC (and HiGHS when installed) on InceptionV3 training (652 nodes), in
process (the solver's own wall time) and through the CLI (``viz-place solve
--time-limit S``: adds Python start-up and reading the graph).

    .venv/bin/python benchmarks/time_limits.py                  # --time-limit 5
    .venv/bin/python benchmarks/time_limits.py --time-limit 10 --backends cbc
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import WORKLOADS, workloads_available  # noqa: E402

from viz_place.io import load_graph  # noqa: E402
from viz_place.solvers import run_solver  # noqa: E402
from viz_place.solvers.milp import available_backends  # noqa: E402

RUNS = (("ilp", {}), ("ilp", {"device_cycles": True}), ("ilp-noncontig", {}), ("latency-ilp", {}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--backends", default=",".join(available_backends()))
    ap.add_argument("--graph", default=str(WORKLOADS / "throughput-inputs" / "LayerGraphs" / "inceptionv3_training.json"))
    args, _ = ap.parse_known_args(argv)
    if not Path(args.graph).exists():
        print(f"skipped: {args.graph} not found" + ("" if workloads_available() else " (no published workloads)"))
        return 0
    graph = load_graph(args.graph)
    cli = Path(sys.executable).with_name("viz-place")
    tl = args.time_limit
    print(f"graph {Path(args.graph).name} ({graph.num_nodes} nodes), --time-limit {tl:g}")
    print("| solver | backend | in-process wall (s) | over the limit | CLI wall (s) | status |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for backend in args.backends.split(","):
        for name, extra in RUNS:
            t0 = time.perf_counter()
            p = run_solver(name, graph, graph.default_cluster, options={"time_limit": tl, "backend": backend, **extra})
            wall = time.perf_counter() - t0
            worst = max(worst, wall - tl)
            cmd = [str(cli), "solve", args.graph, "--solver", name, "--time-limit", f"{tl:g}", "--backend", backend]
            cmd += [a for k, v in extra.items() for a in ("-o", f"{k}={str(v).lower()}")]
            t1 = time.perf_counter()
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            cli_wall = time.perf_counter() - t1
            label = name + "".join(f" -o {k}={str(v).lower()}" for k, v in extra.items())
            print(f"| {label} | {backend} | {wall:.2f} | {wall - tl:+.2f} | {cli_wall:.2f}{'' if rc == 0 else f' (exit {rc})'} "
                  f"| {p.status} |", flush=True)
    print(f"worst in-process overshoot {worst:+.2f} s (target +2 s)")
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
