"""``viz-place train-rl`` — train a placement policy over generated graph families.

Example::

    viz-place train-rl --family residual,transformer --out my_policy.npz --minutes 5 --seed 0
    viz-place solve sample_graph --solver rl --policy my_policy.npz --time-limit 30
    viz-place train-rl --family residual --out p.npz --workers 2          # rollouts on a local Dask cluster
    viz-place train-rl --family residual --out p.npz --scheduler tcp://HOST:8786

With ``--workers N`` or ``--scheduler ADDRESS`` every update's rollouts run on Dask workers,
each from its own random stream: the same seed gives the same policy whatever the number
of workers (``--workers 0``: the same streams in this process). Without either, training
runs in this process exactly as before (the shipped policy's streams).
"""
from __future__ import annotations

from ..errors import SolverError
from ..io import atomic_write_json
from .common import finite_number, fmt, jsonable, non_negative_int, print_json


def add_parsers(sub) -> None:
    p = sub.add_parser("train-rl", help="train an RL placement policy on generated graph families")
    p.add_argument("--family", required=True,
                   help="comma-separated graph families (chain, fork_join, residual, inception, transformer)")
    p.add_argument("--out", required=True, metavar="FILE", help="where to save the policy (.npz)")
    p.add_argument("--minutes", type=finite_number, metavar="M", help="stop after M minutes (default: run all updates)")
    p.add_argument("--updates", type=int, default=1200, help="REINFORCE updates (default 1200, as the shipped policy)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    p.add_argument("--sizes", default="30,150", metavar="MIN,MAX", help="node counts of training graphs")
    p.add_argument("--graphs", type=int, default=40, help="number of training graphs (default 40)")
    p.add_argument("--objective", choices=("max_load", "latency", "throughput"), default="max_load",
                   help="what the policy learns to minimise (throughput = max_load)")
    p.add_argument("--history", metavar="FILE", help="also write the training curve (JSON) here")
    p.add_argument("--rollouts", type=int, default=4, help="sampled sweeps per update (default 4)")
    p.add_argument("--memory-bound", type=finite_number, default=0.0, metavar="SHARE",
                   help="share of training graphs whose accelerators hold only 60-95%% of the weights "
                        "(default 0; the shipped policy: 0.3)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help="run rollouts on N local Dask worker processes (0: per-rollout streams, in this process)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run rollouts on an existing Dask cluster")
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
                      updates=args.updates, seed=args.seed, minutes=args.minutes, objective=args.objective,
                      rollouts=args.rollouts, memory_bound=args.memory_bound)
    every = max(1, cfg.updates // 20)

    def progress(ev) -> None:
        if not args.json and ev.data.get("episode", 0) % every == 0:
            print(f"update {ev.data['episode']}: objective {fmt(ev.data['objective'])} of start, "
                  f"best {fmt(ev.data['best'])}", flush=True)

    if args.workers is None and args.scheduler is None:
        policy, history = train_policy(cfg, progress=progress)
    else:
        import sys
        from ..runtime.rl_distributed import train_policy_distributed
        if args.workers is not None and args.workers < 0:
            raise SolverError(f"--workers must be >= 0, got {args.workers}")

        def on_engine(engine) -> None:
            link = engine.dashboard_link
            print(f"rollouts on Dask at {engine.address}" + (f"; dashboard: {link}" if link else ""),
                  file=sys.stderr, flush=True)

        policy, history = train_policy_distributed(cfg, scheduler=args.scheduler, workers=args.workers,
                                                   progress=progress, on_engine=on_engine)
    out = policy.save(args.out)
    if args.history:
        atomic_write_json(args.history, jsonable(history))
    summary = {"out": str(out), "updates": len(history), "families": list(families),
               "seconds": history[-1]["seconds"] if history else 0.0,
               "rollouts_on": policy.meta.get("rollouts_on", "this process"),
               "workers_used": policy.meta.get("workers_used")}
    if args.json:
        print_json(summary)
    else:
        print(f"trained {len(history)} updates in {fmt(summary['seconds'])} s; wrote {out}")
    return 0
