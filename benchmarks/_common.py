"""Helpers shared by the benchmarks: where the published workloads are."""
from __future__ import annotations

import os
from pathlib import Path

WORKLOADS = Path(os.environ.get("VIZ_PLACE_WORKLOADS",
                                Path(__file__).resolve().parents[2] / "shared" / "workloads"))


def workloads_available() -> bool:
    return WORKLOADS.is_dir()


def timed_solve(graph, solver: str = "dp", **kwargs) -> dict:
    """Run ``solver`` on ``graph`` (its default cluster) and time just the solve: wall and CPU seconds
    (``time.process_time()`` around :func:`~viz_place.solvers.run_solver`, after a ``gc.collect()`` of the import
    garbage), the figures the DP reports
    (supernodes, ideals, (J, I) pairs), the claimed value, the status and this process's peak resident MB."""
    import gc
    import resource
    import time

    from viz_place.solvers import run_solver
    # the garbage of importing the solvers (hundreds of modules) is not the solve's: collect it before timing,
    # else the full collection it is due runs inside the first solve (20-30 ms here)
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    p = run_solver(solver, graph, graph.default_cluster, **kwargs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = p.options.get("stats", {})
    return {"nodes": graph.num_nodes, "supernodes": stats.get("supernodes"), "ideals": stats.get("ideals"),
            "pairs": stats.get("pairs"), "kernel": stats.get("kernel"), "wall": wall, "cpu": cpu, "value": p.claimed_value, "status": p.status,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_isolated(script: str, *args: str) -> dict | str:
    """``python script --one ARGS...`` in a fresh subprocess (so peak memory and imports are that run's own);
    the JSON object on its last stdout line, or the reason it failed (a string)."""
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, script, "--one", *args], capture_output=True, text=True)
    if out.returncode != 0:
        return out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"
    return json.loads(out.stdout.strip().splitlines()[-1])
