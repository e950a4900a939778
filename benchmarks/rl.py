"""The learned placer against the exact DP optimum and the simple baselines.

For generated graphs of the families the shipped policy was trained on, at sizes
and seeds it never saw (50-1,000 nodes), prints max-load divided by the DP
optimum (optimal contiguous split) for:

* ``random``   — each group on a uniformly random device that can take it (masked, best of 10),
* ``start``    — the contiguous fill the RL solver starts from (:mod:`viz_place.solvers.rl.start`),
* ``rl-0``     — the shipped policy, zero-shot (one greedy sweep),
* ``rl``       — the shipped policy with at most ``--budget`` seconds of search
  (greedy sweeps, then perturb-and-descend rounds with fine-tuning; ``--patience N`` stops after
  N rounds without gain),
* ``ls=evals`` — local search (the ``local-search`` baseline's algorithm: best-improving group moves,
  restarts) given exactly as many evaluations (candidate placements tried) as ``rl`` used,
* ``ls=time``  — with ``--ls-time``: the ``local-search`` solver itself given as many seconds as ``rl`` took,
* ``topo-fill``— the ``topo-fill`` baseline solver,

and the training curve of the shipped policy. Timings are wall and CPU seconds.

    .venv/bin/python benchmarks/rl.py                 # ~10 minutes on a loaded 2-core machine
    .venv/bin/python benchmarks/rl.py --budget 60 --graphs all
    .venv/bin/python benchmarks/rl.py --budget 20 --workloads   # the 8 published operator graphs
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np

from viz_place.cost import IncrementalEvaluator, compile_problem, evaluate_indices
from _common import WORKLOADS, workloads_available
from viz_place.errors import VizPlaceError
from viz_place.io import load_graph
from viz_place.samples import make_graph
from viz_place import run_solver   # reads --policy FILE for the solver (viz_place.solver_files)
from viz_place.solvers import get_solver, list_solvers
from viz_place.solvers.rl import load_policy, shipped_policy_path
from viz_place.solvers.rl.env import PlacementEnv
from viz_place.solvers.rl.start import initial_placement
from viz_place.testing import check_placement

#: (family, nodes, seed, training) — seeds >= 1000 were never used in training (which draws 30..150-node graphs).
DEFAULT = [("residual", 60, 1001, False), ("transformer", 200, 1002, False), ("inception", 400, 1003, False),
           ("fork_join", 120, 1004, True), ("chain", 1000, 1005, False), ("residual", 1000, 1006, False)]
MORE = [("transformer", 1000, 1007, False), ("inception", 90, 1008, False), ("fork_join", 600, 1009, False),
        ("chain", 50, 1010, True), ("residual", 300, 1011, True), ("transformer", 500, 1012, False)]


def local_search_evals(prob, budget: int, seed: int) -> float:
    """Hill climbing with exactly ``budget`` evaluations (one evaluation = one candidate device tried for a
    group), as the ``local-search`` baseline does it, but from the same start as ``rl`` (the best contiguous
    fill, :func:`viz_place.solvers.rl.start.initial_placement`), then from random masked starts;
    each group moves to the device that lowers (max-load, sum of squared loads) most; a pass without
    improvement ends a start. All figures from the shared incremental evaluator."""
    env = PlacementEnv(prob)
    rng = np.random.default_rng(seed)
    used = 0
    best = math.inf
    start = initial_placement(env)
    cap = prob.capacity.tolist()
    while used < budget:
        inc = IncrementalEvaluator(prob, start)
        loads = inc.loads
        key = (max(loads), sum(x * x for x in loads))
        improved = True
        while improved and used < budget:
            improved = False
            for g in rng.permutation(env.free_groups) if env.free_groups else []:
                members = env.members[g]
                cur = inc.dev[members[0]]
                best_d, best_key = cur, key
                for d in np.flatnonzero(env.allowed[g]):
                    d = int(d)
                    if d == cur or inc.memory[d] + env.gsize[g] > cap[d] * (1 + 1e-9) or used >= budget:
                        continue
                    for i in members:
                        inc.move(i, d)
                    loads = inc.loads
                    k = (max(loads), sum(x * x for x in loads))
                    used += 1
                    if k < best_key:
                        best_d, best_key = d, k
                    for i in members:
                        inc.move(i, cur)
                if best_d != cur:
                    for i in members:
                        inc.move(i, best_d)
                    key, improved = best_key, True
        best = min(best, evaluate_indices(prob, np.array(inc.dev)).max_load)
        if not env.free_groups:
            break
        start = random_start(env, rng)
    return best


def random_start(env: PlacementEnv, rng) -> list[int]:
    prob = env.prob
    while True:
        mem = np.zeros(prob.num_devices)
        dev = [0] * prob.n
        for g, members in enumerate(env.members):
            room = np.flatnonzero(env.allowed[g] & (mem + env.gsize[g] <= prob.capacity * (1 + 1e-9)))
            if room.size == 0:
                break
            d = int(rng.choice(room))
            for i in members:
                dev[i] = d
            mem[d] += env.gsize[g]
        else:
            return dev


def random_value(prob, tries: int, seed: int) -> float:
    """Best max-load of ``tries`` random masked placements (groups on random devices with room)."""
    env = PlacementEnv(prob)
    rng = np.random.default_rng(seed)
    return min(evaluate_indices(prob, np.array(random_start(env, rng))).max_load for _ in range(tries))


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="RL placer vs DP optimum and baselines")
    ap.add_argument("--budget", type=float, default=60.0, help="max seconds of RL search per graph (default 60)")
    ap.add_argument("--patience", type=int, default=0,
                    help="stop RL search after this many rounds without gain (default 0: use the whole budget)")
    ap.add_argument("--graphs", choices=("default", "all"), default="default")
    ap.add_argument("--policy", default="", help="policy file (default: the shipped one)")
    ap.add_argument("--workloads", action="store_true",
                    help="instead: the published operator graphs (../shared/workloads), families never trained on")
    ap.add_argument("--ls-time", action="store_true", help="also run the local-search solver for as long as rl ran")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    names = {s.name for s in list_solvers()}
    have_dp, have_ls, have_tf = "dp" in names, "local-search" in names, "topo-fill" in names
    policy = load_policy(args.policy)
    print(f"policy: {args.policy or shipped_policy_path().name} (trained on {policy.meta.get('families')}, "
          f"sizes {policy.meta.get('sizes')}); budget {args.budget:g} s, patience {args.patience}")
    if not have_dp:
        print("dp: not available — ratios are to the best value found instead")
    if args.ls_time and not have_ls:
        print("local-search: not available (the ls=time column stays empty)")
    specs = DEFAULT + (MORE if args.graphs == "all" else [])
    rows = []
    header = ("graph", "nodes", "opt", "random", "start", "rl-0", "rl", "ls=evals", "ls=time", "topo-fill",
              "rl s (cpu)", "evals", "dp s")
    print("  ".join(header))
    graphs = [lambda fam=fam, n=n, seed=seed, training=training:
              make_graph(fam, n // 2 if training else n, seed=seed, training=training)
              for fam, n, seed, training in specs]
    if args.workloads:
        if workloads_available():
            paths = sorted((WORKLOADS / "throughput-inputs" / "OperatorGraphs").glob("*.json"))
            graphs = [lambda path=path: load_graph(path) for path in paths]
        else:
            print(f"--workloads: {WORKLOADS} not found; using the generated graphs")
    for make in graphs:
        g = make()
        cluster = g.default_cluster
        prob = compile_problem(g, cluster)
        row: dict = {"graph": g.name, "nodes": prob.n}
        opt, dp_s = None, None
        if have_dp:
            try:
                p, dp_s, _ = timed(lambda: run_solver("dp", g, cluster))
                opt = p.claimed_value
            except VizPlaceError as err:
                row["dp_error"] = str(err)
        zero = run_solver("rl", g, cluster, options={"policy": args.policy, "mode": "greedy"})
        full, rl_s, rl_cpu = timed(lambda: run_solver("rl", g, cluster, options={
            "policy": args.policy, "mode": "finetune", "time_limit": args.budget, "patience": args.patience,
            "seed": 0}))
        for p in (zero, full):
            problems = check_placement(g, cluster, p)
            assert not problems, problems
        evals = full.options["stats"]["evaluations"]
        topo_start = full.options["stats"]["start"]
        ls_val = local_search_evals(prob, evals, 0)
        ls_time = None
        if have_ls and args.ls_time:
            ls_time = run_solver("local-search", g, cluster, options={"time_limit": rl_s, "seed": 0}).claimed_value
        tf_val = run_solver("topo-fill", g, cluster).claimed_value if have_tf else None
        rnd = random_value(prob, 10, 0)
        ref = opt if opt else min(v for v in (zero.claimed_value, full.claimed_value, ls_val) if v)
        row.update(opt=opt, random=rnd / ref, start=topo_start / ref, rl0=zero.claimed_value / ref,
                   rl=full.claimed_value / ref, ls=ls_val / ref, ls_time=None if ls_time is None else ls_time / ref,
                   topo_fill=None if tf_val is None else tf_val / ref, rl_seconds=rl_s, rl_cpu=rl_cpu,
                   evaluations=evals, dp_seconds=dp_s)
        rows.append(row)

        def f(x, spec=".4f"):
            return "-" if x is None else format(x, spec)
        print("  ".join([g.name, str(prob.n), f(opt, ".4g"), f(row["random"]), f(row["start"]), f(row["rl0"]),
                         f(row["rl"]), f(row["ls"]), f(row["ls_time"]), f(row["topo_fill"]), f"{rl_s:.1f} ({rl_cpu:.1f})", str(evals),
                         f(dp_s, ".1f")]), flush=True)
    rl_ratios = [r["rl"] for r in rows]
    print(f"\nrl / optimum: median {statistics.median(rl_ratios):.4f}, worst {max(rl_ratios):.4f} "
          f"(targets 1.10 / 1.25); zero-shot median {statistics.median(r['rl0'] for r in rows):.4f}")
    with_ls = [r for r in rows if r["ls"] is not None]
    if with_ls:
        wins = sum(r["rl"] < r["ls"] - 1e-9 for r in with_ls)
        ties = sum(abs(r["rl"] - r["ls"]) <= 1e-9 for r in with_ls)
        print(f"rl better than local search at equal evaluations on {wins}/{len(with_ls)} graphs ({ties} ties)")
    hist_path = shipped_policy_path().with_name("rl_policy_history.json")
    if not args.policy and hist_path.is_file():
        hist = json.loads(hist_path.read_text())
        print(f"\ntraining curve of the shipped policy ({len(hist)} updates, {hist[-1]['seconds']:.0f} s wall):")
        print("updates    mean objective/start (fresh starts)   best so far")
        step = max(1, len(hist) // 8)
        for lo in range(0, len(hist), step):
            chunk = [h for h in hist[lo:lo + step] if not h["from_best"]]
            mean = statistics.mean(h["objective"] for h in chunk) if chunk else float("nan")
            print(f"{lo + 1:>5}-{min(lo + step, len(hist)):<5} {mean:.4f}                               "
                  f"{hist[min(lo + step, len(hist)) - 1]['best']:.4f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
