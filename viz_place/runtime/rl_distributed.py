"""REINFORCE training with the rollouts of each update fanned out to Dask workers.

The training problems travel to each worker once (scattered; each worker builds its
environments lazily and keeps them); the policy's weights are scattered once per update;
each rollout draws from its own random stream, seeded by ``(seed, update, rollout
index)``, and the results are gathered in rollout order before the gradient step. So the
same seed gives the same policy whatever the number of workers — none (``workers=0``,
in this process), one, or a cluster.

>>> from viz_place.solvers.rl import TrainConfig
>>> cfg = TrainConfig(families=("chain",), sizes=(8, 12), n_graphs=2, updates=2, rollouts=2, seed=0)
>>> p0, h0 = train_policy_distributed(cfg, workers=0)
>>> p1, h1 = train_policy_distributed(cfg, workers=0)
>>> all((a == b).all() for a, b in zip(p0.params, p1.params)), len(h0)
(True, 2)
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from ..cost import compile_problem
from ..solvers.rl.env import PlacementEnv
from ..solvers.rl.policy import Policy
from ..solvers.rl.rollout import SweepResult, sweep
from ..solvers.rl.train import TrainConfig, graph_pool, train_policy
from .sweep_cells import _worker_name, one_thread_per_worker


def rollout_seed(seed: int, update: int, index: int) -> list[int]:
    """The seed of one rollout's random stream (independent of where it runs)."""
    return [int(seed), 53, int(update), int(index)]


class ProblemPool:
    """The (graph, cluster) problems of a training run; environments are built on first use,
    one per problem and thread, and kept (on a worker: for the whole run)."""

    def __init__(self, problems: Sequence[tuple[Any, Any]], objective: str, shaping: float) -> None:
        self.problems = list(problems)
        self.objective, self.shaping = objective, shaping
        self._envs: dict[tuple[int, int], PlacementEnv] = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"problems": self.problems, "objective": self.objective, "shaping": self.shaping}

    def __setstate__(self, state):
        self.__init__(state["problems"], state["objective"], state["shaping"])

    def env(self, k: int) -> PlacementEnv:
        key = (threading.get_ident(), k)
        with self._lock:
            env = self._envs.get(key)
        if env is None:
            g, c = self.problems[k]
            env = PlacementEnv(compile_problem(g, c), objective=self.objective, shaping=self.shaping)
            with self._lock:
                self._envs[key] = env
        return env


def run_rollout(pool: ProblemPool, k: int, start: Sequence[int], policy: Policy, seed: int, update: int,
                index: int) -> tuple[SweepResult, str]:
    """One sampled sweep of problem ``k`` from ``start``; returns (result, worker name)."""
    one_thread_per_worker()
    env = pool.env(k)
    env.reset(list(start))
    res = sweep(env, policy, np.random.default_rng(rollout_seed(seed, update, index)), greedy=False, record=True)
    return res, _worker_name()


class Rollouts:
    """The ``rollouts`` hook of :func:`~viz_place.solvers.rl.train.train_policy`: in this
    process (``engine=None``) or on an engine's workers. ``workers_used`` collects who ran them."""

    def __init__(self, cfg: TrainConfig, engine=None) -> None:
        self.cfg, self.engine = cfg, engine
        self.pool = ProblemPool(graph_pool(cfg), cfg.objective, cfg.shaping)
        self.pool_future = engine.scatter(self.pool) if engine is not None else None
        self.workers_used: set[str] = set()

    def __call__(self, *, update: int, problem: int, start: Sequence[int], policy: Policy) -> list[SweepResult]:
        n, seed = self.cfg.rollouts, self.cfg.seed
        if self.engine is None:
            out = [run_rollout(self.pool, problem, start, policy, seed, update, i) for i in range(n)]
        else:
            weights = self.engine.scatter(policy)            # once per update, to every worker
            futs = [self.engine.submit(run_rollout, self.pool_future, problem, list(start), weights, seed, update, i,
                                       name="viz-place-rollout") for i in range(n)]
            out = self.engine.client.gather(futs)            # in rollout order, whoever finished first
            self.engine.client.cancel([weights])
        self.workers_used.update(w for _, w in out)
        return [r for r, _ in out]


def train_policy_distributed(cfg: TrainConfig, *, scheduler: str | None = None, workers: int | None = None,
                             engine=None, processes: bool = True, dashboard: bool = True, progress=None,
                             cancel=None, on_engine=None) -> tuple[Policy, list[dict[str, Any]]]:
    """:func:`~viz_place.solvers.rl.train.train_policy` with rollouts on Dask workers.

    ``engine`` (a :class:`~viz_place.runtime.dask_engine.DaskEngine`), or ``scheduler`` (an
    address), or an embedded ``LocalCluster`` of ``workers`` processes; ``workers=0`` runs
    the rollouts in this process (same streams, same policy). ``on_engine(engine)`` is
    called once the cluster is up (the CLI prints the dashboard link). The history's
    records carry no worker names; ``policy.meta["workers_used"]`` counts them.
    """
    own = None
    if engine is None and not (workers == 0 and scheduler is None):
        from .dask_engine import DaskEngine
        engine = own = DaskEngine(scheduler, workers, processes=processes, dashboard=dashboard)
    try:
        if engine is not None and on_engine is not None:
            on_engine(engine)
        hook = Rollouts(cfg, engine)
        policy, history = train_policy(cfg, progress=progress, cancel=cancel, rollouts=hook)
        policy.meta["rollouts_on"] = "dask" if engine is not None else "this process"
        policy.meta["workers_used"] = len(hook.workers_used)
        return policy, history
    finally:
        if own is not None:
            own.close()
