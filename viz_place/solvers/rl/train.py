"""Training with REINFORCE: over a family of generated graphs, or fine-tuning on one graph.

Each update takes one problem, runs ``rollouts`` sampled sweeps from the same
start, computes discounted rewards-to-go, subtracts a per-step baseline (an
exponential moving average of the return at that step — step = the group being
placed — per problem and kind of start), normalises the advantages, adds an
entropy bonus that decays linearly to zero, clips the gradient's global norm
and takes an Adam step. Starts alternate between the contiguous fill (:mod:`.start`) and the
best placement found so far on that problem, mirroring how the solver improves a
placement sweep after sweep. Everything random flows from one seed: the same
config gives the same policy (when no time limit cuts the run short).

>>> cfg = TrainConfig(families=("chain",), sizes=(8, 12), n_graphs=2, updates=2, rollouts=2, seed=0)
>>> policy, history = train_policy(cfg)
>>> len(history)
2
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ...cost import compile_problem
from ...errors import SolverError
from ...model import Cluster
from ...model.objective import OBJECTIVE_ALIASES
from ...samples import FAMILIES, make_graph
from ..base import Hooks
from .env import PlacementEnv
from .policy import Adam, Policy, clip_by_norm
from .rollout import reinforce_gradient, returns, sweep
from .start import initial_placement


@dataclass(frozen=True)
class TrainConfig:
    """Settings of a training run (all validated; see :func:`train_policy`).

    ``sizes`` is the (min, max) approximate node count of generated graphs;
    ``training_fraction`` the share of graphs with backward twins; ``vary_devices``
    varies the accelerator count (2–6) and memory so the policy sees many device sets;
    ``memory_bound`` is the share of graphs (with ``vary_devices``) whose accelerators together hold only
    60–95% of the weights, so the rest must go to the host — where non-contiguous placements win most.
    """

    families: tuple[str, ...] = ("residual", "transformer")
    sizes: tuple[int, int] = (30, 150)
    n_graphs: int = 24
    training_fraction: float = 0.25
    vary_devices: bool = True
    memory_bound: float = 0.0
    updates: int = 300
    rollouts: int = 4
    lr: float = 3e-3
    entropy: float = 0.02
    gamma: float = 0.95
    clip: float = 1.0
    baseline_decay: float = 0.8
    hidden: tuple[int, ...] = (32, 32)
    objective: str = "max_load"
    shaping: float = 0.1
    seed: int = 0
    minutes: float | None = None

    def __post_init__(self) -> None:
        fams = tuple(self.families)
        object.__setattr__(self, "families", fams)
        if not fams:
            raise SolverError("train: at least one graph family is required")
        for f in fams:
            if f not in FAMILIES:
                raise SolverError(f"train: unknown graph family {f!r}; families: {', '.join(FAMILIES)}")
        lo, hi = self.sizes
        if not (2 <= lo <= hi):
            raise SolverError(f"train: sizes must be (min, max) with 2 <= min <= max, got {self.sizes}")
        for name, lo_ok in (("n_graphs", 1), ("updates", 1), ("rollouts", 1)):
            if int(getattr(self, name)) < lo_ok:
                raise SolverError(f"train: {name} must be >= {lo_ok}, got {getattr(self, name)}")
        for name in ("lr", "entropy", "gamma", "clip", "baseline_decay", "training_fraction", "shaping",
                     "memory_bound"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise SolverError(f"train: {name} must be a finite number >= 0, got {v!r}")
        if self.memory_bound > 1:
            raise SolverError(f"train: memory_bound is a share of the graphs, at most 1, got {self.memory_bound!r}",
                              field="memory_bound")
        if self.minutes is not None and not (self.minutes > 0):
            raise SolverError(f"train: minutes must be > 0, got {self.minutes!r}")
        object.__setattr__(self, "objective", OBJECTIVE_ALIASES.get(self.objective, self.objective))
        if self.objective not in ("max_load", "latency"):
            raise SolverError(f"train: objective must be 'max_load' or 'latency', got {self.objective!r}",
                              field="objective")


def graph_pool(cfg: TrainConfig) -> list[tuple[Any, Cluster]]:
    """The (graph, cluster) problems of a training run, generated from ``cfg.seed``."""
    rng = np.random.default_rng([cfg.seed, 17])
    pool = []
    for k in range(cfg.n_graphs):
        fam = cfg.families[k % len(cfg.families)]
        n = int(rng.integers(cfg.sizes[0], cfg.sizes[1] + 1))
        training = bool(rng.random() < cfg.training_fraction)
        g = make_graph(fam, n // 2 if training else n, seed=int(rng.integers(1 << 30)), training=training)
        cluster = g.default_cluster
        if cfg.vary_devices:
            count = int(rng.integers(2, 7))
            total = sum(nd.size for nd in g.nodes())
            mem = float(np.ceil(total / max(count - 1, 1) * rng.uniform(1.0, 1.6)))
            cluster = Cluster.paper(count, 1, mem if rng.random() < 0.8 else None)
            if cfg.memory_bound > 0 and rng.random() < cfg.memory_bound:     # drawn only then: old pools unchanged
                cluster = Cluster.paper(count, 1, float(np.ceil(total * rng.uniform(0.6, 0.95) / count)))
        pool.append((g, cluster))
    return pool


class Learner:
    """Policy, optimiser and baselines; :meth:`update` does one REINFORCE step on a problem."""

    def __init__(self, policy: Policy, *, lr: float, gamma: float, clip: float, baseline_decay: float,
                 rollouts: int, seed: int) -> None:
        self.policy = policy
        self.opt = Adam(policy.params, lr=lr)
        self.gamma, self.clip, self.decay, self.rollouts = gamma, clip, baseline_decay, rollouts
        self.rng = np.random.default_rng([seed, 29])
        self.baselines: dict[Any, dict[int, float]] = {}

    def update(self, env: PlacementEnv, start_dev: Sequence[int], key: Any, entropy: float,
               stop: Callable[[], bool] | None = None) -> dict[str, Any]:
        """``rollouts`` sampled sweeps from ``start_dev``, one gradient step; returns figures."""
        results = []
        for _ in range(self.rollouts):
            env.reset(start_dev)
            results.append(sweep(env, self.policy, self.rng, greedy=False, record=True, stop=stop))
        return self.learn(results, key, entropy)

    def learn(self, results: list, key: Any, entropy: float) -> dict[str, Any]:
        """One gradient step from recorded sweeps (:class:`~.rollout.SweepResult`) of one problem."""
        base = self.baselines.setdefault(key, {})
        rows, actions, adv, batch = [], [], [], {}
        for res in results:
            G = returns(res.rewards, self.gamma)
            for g, ret in zip(res.groups, G):
                batch.setdefault(g, []).append(float(ret))
            for g, x, a, ret in zip(res.groups, res.rows, res.actions, G):
                b = base.get(g)
                if b is None:
                    b = float(np.mean(batch[g]))
                rows.append(x)
                actions.append(a)
                adv.append(ret - b)
        for g, vals in batch.items():
            m = float(np.mean(vals))
            base[g] = m if g not in base else self.decay * base[g] + (1 - self.decay) * m
        best = min(results, key=lambda r: r.best)
        out = {"start": results[0].start, "best": best.best, "best_dev": best.best_dev,
               "mean_end": float(np.mean([r.end for r in results])), "steps": len(rows), "entropy": 0.0}
        if rows:
            adv_arr = np.asarray(adv)
            sd = adv_arr.std()
            adv_arr = adv_arr / (sd if sd > 1e-12 else 1.0)
            grads, H = reinforce_gradient(self.policy, rows, actions, adv_arr, entropy)
            out["grad_norm"] = clip_by_norm(grads, self.clip)
            self.opt.step(grads)
            out["entropy"] = H
        return out


def fit_input_scaling(policy: Policy, envs: Sequence[PlacementEnv], starts: Sequence[Sequence[int]], seed: int) -> None:
    """Set the policy's input mean/std from rows seen in one greedy sweep per problem."""
    rng = np.random.default_rng([seed, 31])
    rows = []
    for env, dev in zip(envs, starts):
        env.reset(dev)
        res = sweep(env, policy, rng, greedy=False, record=True)
        rows.extend(res.rows)
    if not rows:
        return
    X = np.concatenate(rows, axis=0)
    policy.x_mean = X.mean(axis=0)
    sd = X.std(axis=0)
    policy.x_std = np.where(sd > 1e-6, sd, 1.0)


def train_policy(cfg: TrainConfig, *, policy: Policy | None = None, progress=None, cancel=None,
                 rollouts: Callable[..., list] | None = None) -> tuple[Policy, list[dict[str, Any]]]:
    """Train a policy over ``cfg``'s graph family; returns ``(policy, history)``.

    ``progress`` receives :class:`~viz_place.solvers.base.Progress` events whose
    ``data`` has ``episode``, ``objective`` (best value of the update's sweeps
    divided by the value at its start — lower is better) and ``best`` (the best
    such ratio so far). ``cancel`` (an Event or callable) stops training early;
    the policy trained so far is returned.

    ``rollouts(update=u, problem=k, start=dev, policy=p)``, when given, produces the
    update's sampled sweeps (a list of :class:`~.rollout.SweepResult`, in rollout order)
    instead of this process: :mod:`viz_place.runtime.rl_distributed` runs them on Dask
    workers. Its random streams differ from the in-process ones (one per rollout).
    """
    hooks = Hooks(progress, cancel, min_interval=0.0)
    pool = graph_pool(cfg)
    envs = [PlacementEnv(compile_problem(g, c), objective=cfg.objective, shaping=cfg.shaping) for g, c in pool]
    fills = [initial_placement(e) for e in envs]
    if policy is None:
        policy = Policy.new(hidden=tuple(cfg.hidden), seed=cfg.seed)
        fit_input_scaling(policy, envs, fills, cfg.seed)
    policy.meta.update({"families": list(cfg.families), "sizes": list(cfg.sizes), "objective": cfg.objective,
                        "seed": cfg.seed, "updates": cfg.updates, "memory_bound": cfg.memory_bound,
                        "n_graphs": cfg.n_graphs})
    learner = Learner(policy, lr=cfg.lr, gamma=cfg.gamma, clip=cfg.clip, baseline_decay=cfg.baseline_decay,
                      rollouts=cfg.rollouts, seed=cfg.seed)
    best_dev: list[list[int]] = [list(f) for f in fills]
    best_val = [None] * len(envs)
    order_rng = np.random.default_rng([cfg.seed, 41])
    t0 = time.monotonic()
    limit = None if cfg.minutes is None else cfg.minutes * 60.0
    history: list[dict[str, Any]] = []
    best_ratio = math.inf
    for u in range(cfg.updates):
        elapsed = time.monotonic() - t0
        if hooks.cancelled or (limit is not None and elapsed > limit):
            break
        frac = u / cfg.updates          # the schedule never depends on the clock: reproducible
        k = int(order_rng.integers(len(envs)))
        from_best = bool(order_rng.random() < 0.5) and best_val[k] is not None
        start = best_dev[k] if from_best else fills[k]
        entropy = cfg.entropy * max(0.0, 1.0 - frac)
        if rollouts is None:
            res = learner.update(envs[k], start, (k, from_best), entropy, stop=lambda: hooks.cancelled)
        else:
            res = learner.learn(rollouts(update=u, problem=k, start=list(start), policy=learner.policy),
                                (k, from_best), entropy)
        if res["best_dev"] is not None and (best_val[k] is None or res["best"] < best_val[k]):
            best_val[k], best_dev[k] = res["best"], res["best_dev"]
        ratio = res["best"] / res["start"] if res["start"] > 0 else 1.0
        best_ratio = min(best_ratio, ratio)
        rec = {"episode": u + 1, "graph": pool[k][0].name, "from_best": from_best, "objective": ratio,
               "best": best_ratio, "entropy": res["entropy"], "seconds": time.monotonic() - t0}
        history.append(rec)
        hooks.report(frac, f"update {u + 1}/{cfg.updates}: objective {ratio:.4f} of start",
                     incumbent=ratio, data={k2: rec[k2] for k2 in ("episode", "objective", "best")})
    return policy, history
