"""The ``rl`` solver: place a graph with a trained policy (zero-shot, best-of-K, or fine-tuned).

Starts from the best contiguous fill in topological order (:mod:`.start`), then improves it
sweep by sweep:

* ``mode="greedy"`` — ``sweeps`` greedy sweeps (one by default: the zero-shot placement);
* ``mode="sample"`` — greedy sweeps until one stops helping, then rounds of one
  sampled sweep (``temperature``) from the best placement so far followed by greedy
  sweeps while they help (best of K perturb-and-descend rounds; after every
  ``restart_after`` rounds without gain one round descends from another
  contiguous fill, or once those are used up from a random valid placement), until ``time_limit``, ``samples`` rounds, ``patience``
  rounds without gain or ``max_evaluations``;
* ``mode="finetune"`` (default) — like ``sample``, and every ``rollouts`` sampled
  sweeps also update a copy of the policy by REINFORCE on this graph, so later
  rounds use the fine-tuned policy.

The best placement visited is returned; its ``claimed_value`` is computed by
:func:`viz_place.solvers.run_solver` with the evaluator (the single source of truth). Its
``options["stats"]`` records the objective of the start, after the first (zero-shot)
sweep, after the greedy sweeps and of the result, the number of sweeps and of evaluations (candidate placements tried).

>>> from viz_place.samples import make_graph
>>> from viz_place.solvers import run_solver
>>> g = make_graph("residual", 30, seed=3)
>>> p = run_solver("rl", g, g.default_cluster, options=RLOptions(mode="greedy"))
>>> p.solver, p.status, p.objective
('rl', 'heuristic', 'max_load')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import SolverError
from ...model.objective import OBJECTIVE_ALIASES
from ..base import Hooks, SolverOptions, Stopwatch
from ..contract import Problem, SolverResult
from .env import PlacementEnv
from .policy import load_policy
from .rollout import sweep
from .start import random_start, start_candidates
from .train import Learner


@dataclass(frozen=True)
class RLOptions(SolverOptions):
    """Options of the ``rl`` solver."""

    policy: str = field(default="", metadata={"help": "policy file (.npz); empty = the shipped policy"})
    mode: str = field(default="finetune", metadata={"help": "greedy: zero-shot sweep(s); sample: best of sampled "
                                                    "sweeps; finetune: REINFORCE on this graph",
                                                    "choices": ("greedy", "sample", "finetune")})
    objective: str = field(default="max_load", metadata={"help": "what to minimise: max_load (throughput) or "
                                                         "latency", "choices": ("max_load", "latency"),
                                                         "aliases": OBJECTIVE_ALIASES})
    time_limit: float = field(default=10.0, metadata={"help": "seconds of search after the greedy sweeps", "min": 0.0})
    sweeps: int = field(default=1, metadata={"help": "greedy sweeps in greedy mode", "min": 1, "max": 1000})
    samples: int = field(default=0, metadata={"help": "max sampled sweeps (0 = until the time limit)", "min": 0})
    max_evaluations: int = field(default=0, metadata={"help": "stop after this many candidate evaluations "
                                                      "(0 = no limit)", "min": 0})
    patience: int = field(default=0, metadata={"help": "stop after this many sampled sweeps without improvement "
                                               "(0 = search until the time limit)", "min": 0})
    shuffle: bool = field(default=True, metadata={"help": "in sample/finetune modes, greedy sweeps after the first "
                                                  "visit the groups in a random order (else topological)"})
    restart_after: int = field(default=8, metadata={"help": "after this many rounds without gain, one round "
                                                    "starts from another fill or a random placement (0 = never)",
                                                    "min": 0})
    rollouts: int = field(default=4, metadata={"help": "sampled sweeps per fine-tuning update", "min": 1, "max": 64})
    temperature: float = field(default=1.0, metadata={"help": "softmax temperature of sampled sweeps", "min": 0.01})
    lr: float = field(default=1e-3, metadata={"help": "fine-tuning learning rate (Adam)", "min": 0.0})
    shaping: float = field(default=0.1, metadata={"help": "tie-break weight of the RMS load in the reward", "min": 0.0})
    seed: int = field(default=0, metadata={"help": "random seed", "min": 0})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.policy, str):
            raise SolverError(f"option 'policy': expected a file path, got {self.policy!r}", field="policy")


def _progressed(res) -> bool:
    """Did a sweep lower the objective or, failing that, the shaped value (a better-balanced state)?"""
    return res.best < res.start * (1 - 1e-12) or res.shaped_end < res.shaped_start * (1 - 1e-12)


def solve(problem: Problem, opts: RLOptions, hooks: Hooks) -> SolverResult:
    """Place the graph with a learned policy (see the module docstring)."""
    graph, cluster, pins, prob = problem.graph, problem.cluster, problem.pins, problem.compiled
    watch = Stopwatch()
    policy = load_policy(opts.policy)
    pin_idx = {graph.index[n]: cluster.device_index(d) for n, d in pins.items()}
    env = PlacementEnv(prob, pin_idx, objective=opts.objective, shaping=opts.shaping)
    rng = np.random.default_rng([opts.seed, 7])
    starts = start_candidates(env)
    start = starts[0]
    env.reset(start)
    best_val, best_dev = env.objective(), list(start)
    first_val = best_val
    sweeps_done = 0
    cancelled = False

    def out_of_budget() -> bool:
        return (opts.max_evaluations > 0 and env.evaluations >= opts.max_evaluations)

    def stop_search() -> bool:
        return hooks.cancelled or out_of_budget() or watch.elapsed > opts.time_limit

    def take(res) -> bool:
        nonlocal best_val, best_dev
        if res.best_dev is not None and res.best < best_val * (1 - 1e-12):
            best_val, best_dev = res.best, res.best_dev
            return True
        return False

    # Greedy sweeps: exactly `sweeps` in greedy mode, else until a sweep stops helping.
    # In the search modes, sweeps after the first visit the groups in a random order (``shuffle``).
    max_greedy = opts.sweeps if opts.mode == "greedy" else 1000
    zero_shot = best_val
    for k in range(max_greedy):
        if hooks.cancelled or out_of_budget():
            cancelled = hooks.cancelled
            break
        shuffled = k > 0 and opts.mode != "greedy" and opts.shuffle
        res = sweep(env, policy, rng, greedy=True, stop=out_of_budget,
                    order=rng.permutation(env.free_groups).tolist() if shuffled else None)
        sweeps_done += 1
        take(res)
        if k == 0:
            zero_shot = best_val
        hooks.report(None, f"greedy sweep {sweeps_done}: {best_val:.6g}", incumbent=best_val,
                     data={"sweep": sweeps_done, "objective": res.best, "best": best_val})
        if opts.mode != "greedy" and (not _progressed(res) or watch.elapsed > opts.time_limit):
            break
    greedy_val = best_val
    if opts.mode in ("sample", "finetune"):
        learner = None
        if opts.mode == "finetune":
            learner = Learner(policy.copy(), lr=opts.lr, gamma=0.95, clip=1.0, baseline_decay=0.8,
                              rollouts=opts.rollouts, seed=opts.seed)
        pol = policy if learner is None else learner.policy
        n_samples, last_gain, batch = 0, 0, []
        quiet = 0      # rounds without gain since the last gain or restart
        n_restarts = 0
        while not stop_search() and (opts.samples == 0 or n_samples < opts.samples) and \
                (opts.patience == 0 or n_samples - last_gain < opts.patience):
            res = None
            if opts.restart_after > 0 and quiet >= opts.restart_after:
                # Diversify: descend from the next fill (then from random valid placements)
                # instead of perturbing the best one.
                quiet = 0
                n_restarts += 1
                dev0 = starts[n_restarts] if n_restarts < len(starts) else random_start(env, rng)
                env.reset(dev0 if dev0 is not None else best_dev)
                gained = False
            else:
                # Perturb: a sampled sweep from the best placement; then descend with greedy sweeps.
                env.reset(best_dev)
                res = sweep(env, pol, rng, greedy=False, temperature=opts.temperature, record=learner is not None,
                            stop=stop_search)
                gained = take(res)
            n_samples += 1
            for _ in range(1000):
                if stop_search():
                    break
                res2 = sweep(env, pol, rng, greedy=True, stop=stop_search,
                             order=rng.permutation(env.free_groups).tolist() if opts.shuffle else None)
                sweeps_done += 1
                gained = take(res2) or gained
                if not _progressed(res2):
                    break
            if gained:
                last_gain, quiet = n_samples, 0
            else:
                quiet += 1
            if learner is not None and res is not None:
                batch.append(res)
                if len(batch) == opts.rollouts:
                    learner.learn(batch, "this", 0.0)
                    batch = []
            hooks.report(min(1.0, watch.elapsed / opts.time_limit) if opts.time_limit > 0 else None,
                         f"{n_samples} sampled sweeps: best {best_val:.6g}", incumbent=best_val,
                         data={"sweep": sweeps_done + n_samples, "best": best_val})
        sweeps_done += n_samples
        cancelled = hooks.cancelled
    msg = (f"start (contiguous fill) {first_val:.6g}, zero-shot {zero_shot:.6g}, best {best_val:.6g} after "
           f"{sweeps_done} sweeps and {env.evaluations} evaluations")
    stats = {"start": first_val, "zero_shot": zero_shot, "greedy": greedy_val, "best": best_val, "sweeps": sweeps_done,
             "evaluations": env.evaluations}
    return SolverResult(np.asarray(best_dev, dtype=np.int64), status="cancelled" if cancelled else "heuristic",
                        message=msg, stats=stats)
