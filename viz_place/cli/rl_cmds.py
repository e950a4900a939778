"""``viz-place train-rl`` — train a placement policy over generated graph families.

Example::

    viz-place train-rl --family residual,transformer --out my_policy.npz --minutes 5 --seed 0
    viz-place solve sample_graph --solver rl --policy my_policy.npz --time-limit 30
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import SolverError
from .common import fmt, print_json


def add_parsers(sub) -> None:
    p = sub.add_parser("train-rl", help="train an RL placement policy on generated graph families")
    p.add_argument("--family", required=True,
                   help="comma-separated graph families (chain, fork_join, residual, inception, transformer)")
    p.add_argument("--out", required=True, metavar="FILE", help="where to save the policy (.npz)")
    p.add_argument("--minutes", type=float, metavar="M", help="stop after M minutes (default: run all updates)")
    p.add_argument("--updates", type=int, default=1200, help="REINFORCE updates (default 1200, as the shipped policy)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--sizes", default="30,150", metavar="MIN,MAX", help="node counts of training graphs")
    p.add_argument("--graphs", type=int, default=40, help="number of training graphs (default 40)")
    p.add_argument("--objective", choices=("max_load", "latency", "throughput"), default="max_load",
                   help="what the policy learns to minimise (throughput = max_load)")
    p.add_argument("--history", metavar="FILE", help="also write the training curve (JSON) here")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of progress lines")
    p.set_defaults(run=run_train)


def parse_sizes(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in text.split(","))
    except ValueError:
        raise SolverError(f"--sizes {text!r}: expected MIN,MAX (two whole numbers)") from None
    return lo, hi


def run_train(args) -> int:
    from ..solvers.rl import TrainConfig, train_policy
    families = tuple(f.strip() for f in args.family.split(",") if f.strip())
    cfg = TrainConfig(families=families, sizes=parse_sizes(args.sizes), n_graphs=args.graphs,
                      updates=args.updates, seed=args.seed, minutes=args.minutes, objective=args.objective)
    every = max(1, cfg.updates // 20)

    def progress(ev) -> None:
        if not args.json and ev.data.get("episode", 0) % every == 0:
            print(f"update {ev.data['episode']}: objective {fmt(ev.data['objective'])} of start, "
                  f"best {fmt(ev.data['best'])}", flush=True)

    policy, history = train_policy(cfg, progress=progress)
    out = policy.save(args.out)
    if args.history:
        Path(args.history).write_text(json.dumps(history, indent=0))
    summary = {"out": str(out), "updates": len(history), "families": list(families),
               "seconds": history[-1]["seconds"] if history else 0.0}
    if args.json:
        print_json(summary)
    else:
        print(f"trained {len(history)} updates in {fmt(summary['seconds'])} s; wrote {out}")
    return 0
