"""Train the policy shipped in viz_place/data/rl_policy.npz (and its training curve).

    .venv/bin/python scripts/train_policy.py            # ~5-10 minutes on a 2-core machine

The mix: the five generated families, 30-150 nodes, a quarter with backward twins,
2-6 accelerators with varied memory, and (``memory_bound=0.3``) about 30% of the graphs on
accelerators that together hold only 60-95% of the weights, where non-contiguous
placements win most.

Deterministic: the same seed and number of updates give the same policy (the
--minutes cap only matters if a slow machine hits it).
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # tiny matrix products: one core is faster on a shared machine

import argparse
import json
import sys
import time
from pathlib import Path

from viz_place.solvers.rl import TrainConfig, train_policy

DATA = Path(__file__).resolve().parents[1] / "viz_place" / "data"
SHIPPED = TrainConfig(families=("chain", "fork_join", "residual", "inception", "transformer"),
                      sizes=(30, 150), n_graphs=40, updates=1200, rollouts=4, memory_bound=0.3, seed=0,
                      minutes=18.0)


def compact(history: list[dict]) -> list[dict]:
    """The training curve as shipped: figures rounded, graph names dropped."""
    return [{"episode": h["episode"], "from_best": h["from_best"], "objective": round(h["objective"], 5),
             "best": round(h["best"], 5), "seconds": round(h["seconds"], 1)} for h in history]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(DATA / "rl_policy.npz"))
    ap.add_argument("--updates", type=int, default=SHIPPED.updates)
    ap.add_argument("--seed", type=int, default=SHIPPED.seed)
    args = ap.parse_args(argv)
    cfg = TrainConfig(**{**SHIPPED.__dict__, "updates": args.updates, "seed": args.seed})
    t_cpu, t_wall = time.process_time(), time.monotonic()

    def progress(ev) -> None:
        if ev.data["episode"] % 100 == 0:
            print(f"update {ev.data['episode']}/{cfg.updates}: objective {ev.data['objective']:.4f} of start, "
                  f"best {ev.data['best']:.4f}, {time.monotonic() - t_wall:.0f} s", flush=True)

    policy, history = train_policy(cfg, progress=progress)
    out = policy.save(args.out)
    Path(out).with_name(Path(out).stem + "_history.json").write_text(json.dumps(compact(history)))
    print(f"wrote {out}: {len(history)} updates, {time.monotonic() - t_wall:.0f} s wall, "
          f"{time.process_time() - t_cpu:.0f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
