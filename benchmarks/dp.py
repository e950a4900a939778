"""The exact throughput DP on every published throughput workload.

Each workload runs in its own subprocess (so peak memory is that run's own);
file loading is not timed. Prints supernodes, ideals, (J, I) pairs the DP
examined, solver wall and CPU seconds, peak resident memory, the optimum
(max-load) and, where the issue lists it, the authors' C++ time.

    .venv/bin/python benchmarks/dp.py            # all workloads
    .venv/bin/python benchmarks/dp.py gnmt       # those whose path contains 'gnmt'
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

from _common import WORKLOADS, workloads_available

#: The authors' C++ DP on this machine (issue 3), seconds.
AUTHORS = {
    "LayerGraphs/gnmt_inference": 11.2, "LayerGraphs/gnmt_training": 19.7,
    "OperatorGraphs/bert_L-12_training": 22.4, "OperatorGraphs/bert_l-6_training": 13.3,
    "OperatorGraphs/bert_l-12_inference": 9.8, "LayerGraphs/inceptionv3_inference": 1020.0,
}


def run_one(path: str) -> dict:
    from viz_place.io import load_graph
    from viz_place.solvers import run_solver
    g = load_graph(path)
    wall, cpu = time.perf_counter(), time.process_time()
    p = run_solver("dp", g, g.default_cluster)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = p.options["stats"]
    return {"nodes": g.num_nodes, "supernodes": stats["supernodes"], "ideals": stats["ideals"],
            "pairs": stats["pairs"], "wall": wall, "cpu": cpu, "value": p.claimed_value, "status": p.status,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--one":
        print(json.dumps(run_one(argv[1])))
        return 0
    if not workloads_available():
        print(f"skipped: {WORKLOADS} not found")
        return 0
    paths = sorted((WORKLOADS / "throughput-inputs").glob("*/*.json"))
    if argv:
        paths = [p for p in paths if any(a in str(p) for a in argv)]
    head = (f"{'workload':38s} {'nodes':>5s} {'super':>5s} {'ideals':>7s} {'pairs':>11s} {'wall s':>7s} "
            f"{'cpu s':>7s} {'peak MB':>8s} {'optimum (max-load)':>19s} {'status':>8s} {'authors s':>9s}")
    print(head)
    print("-" * len(head))
    for path in paths:
        name = f"{path.parent.name}/{path.stem}"
        out = subprocess.run([sys.executable, __file__, "--one", str(path)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{name:38s} failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
            continue
        r = json.loads(out.stdout)
        authors = AUTHORS.get(name)
        print(f"{name:38s} {r['nodes']:5d} {r['supernodes']:5d} {r['ideals']:7,d} {r['pairs']:11,d} "
              f"{r['wall']:7.2f} {r['cpu']:7.2f} {r['peak_mb']:8.0f} {r['value']:19.10g} {r['status']:>8s} "
              f"{'' if authors is None else format(authors, '.1f'):>9s}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
