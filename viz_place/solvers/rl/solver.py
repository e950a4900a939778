"""The ``rl`` solver: place a graph with a trained policy (zero-shot, best-of-K, or fine-tuned).

Starts from the best contiguous fill in topological order (:mod:`.start`) — in ``sample`` and
``finetune`` modes also from the ``dp`` solver's optimal pipeline split (option ``dp_start``, at
most a fifth of ``time_limit``; through the registry, like the MILPs' warm starts) — then
improves it sweep by sweep:

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

In ``sample`` and ``finetune`` modes (max-load), option ``polish`` ends the greedy sweeps and
every round with :func:`~.polish.polish`: a descent by group moves and swaps with the bottleneck
device on the incremental evaluator, which reaches what one-group moves cannot (memory-full
accelerators, a bottleneck that must trade a heavy group for a light one).

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

import math

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import SolverError
from ...model.objective import OBJECTIVE_ALIASES
from ..base import Hooks, SolverOptions, Stopwatch
from ..contract import Problem, SolverResult
from .env import PlacementEnv
from .policy import Policy, shipped_policy
from .rollout import sweep
from .polish import polish
from .start import placement_value, dp_start, random_start, start_candidates
from .train import Learner


@dataclass(frozen=True)
class RLOptions(SolverOptions):
    """Options of the ``rl`` solver."""

    policy: str = field(default="", metadata={"help": "policy file (.npz), read by the caller (the CLI, the "
                                                 "explorer, viz_place.run_solver); empty = the shipped policy"})
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
    dp_start: bool = field(default=True, metadata={"help": "in sample/finetune modes (max_load), also start from "
                                                   "the dp solver's pipeline split (it may use a fifth of "
                                                   "time_limit)"})
    polish: bool = field(default=True, metadata={"help": "in sample/finetune modes (max_load), end every round "
                                                 "with a descent by group moves and swaps with the bottleneck"})
    kicks: float = field(default=0.5, metadata={"help": "in sample/finetune modes, share of rounds that perturb "
                                                "the best placement by moving a few random groups instead of a "
                                                "sampled sweep", "min": 0.0, "max": 1.0})
    restart_after: int = field(default=8, metadata={"help": "after this many rounds without gain, one round "
                                                    "starts from another fill or a random placement (0 = never)",
                                                    "min": 0})
    rollouts: int = field(default=4, metadata={"help": "sampled sweeps per fine-tuning update", "min": 1, "max": 64})
    temperature: float = field(default=1.0, metadata={"help": "softmax temperature of sampled sweeps", "min": 0.01})
    lr: float = field(default=1e-3, metadata={"help": "fine-tuning learning rate (Adam)", "min": 0.0})
    shaping: float = field(default=0.1, metadata={"help": "tie-break weight of the RMS load in the reward", "min": 0.0})
    seed: int = field(default=0, metadata={"help": "random seed", "min": 0})
    weights: Any = field(default=None, compare=False, repr=False, metadata={
        "internal": True, "help": "the policy itself (a Policy): filled from `policy` by the caller, or given "
                                  "from Python (Policy.load(path)); None with an empty `policy`: the shipped one"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.policy, str):
            raise SolverError(f"option 'policy': expected a file path, got {self.policy!r} (pass a Policy "
                              "object as option 'weights')", field="policy")
        if self.weights is not None and not isinstance(self.weights, Policy):
            raise SolverError(f"option 'weights': expected a Policy, got {type(self.weights).__name__}",
                              field="weights")


def policy_of(opts: RLOptions) -> Policy:
    """The policy a run uses: ``weights`` if given, else the shipped one; a ``policy`` file nobody read is an error
    (solvers read no user files: :func:`viz_place.solver_files.read_option_files` reads it)."""
    if opts.weights is not None:
        return opts.weights
    if opts.policy:
        raise SolverError(f"rl: the policy file {opts.policy!r} was not read: solvers read no files; run through "
                          "viz_place.run_solver (or viz_place.solver_files.read_option_files), or pass "
                          "weights=Policy.load(path)", field="policy")
    return shipped_policy()


def _progressed(res) -> bool:
    """Did a sweep lower the objective or, failing that, the shaped value (a better-balanced state)?"""
    return res.best < res.start * (1 - 1e-12) or res.shaped_end < res.shaped_start * (1 - 1e-12)


class _Run:
    """One run of the solver: the environment, the budget and the best placement visited so far."""

    def __init__(self, env: PlacementEnv, opts: RLOptions, hooks: Hooks, watch: Stopwatch, start) -> None:
        self.env, self.opts, self.hooks, self.watch = env, opts, hooks, watch
        self.rng = np.random.default_rng([opts.seed, 7])
        env.reset(start)
        self.best_val, self.best_dev = env.objective(), list(start)
        self.sweeps = 0
        self.cancelled = False

    def out_of_budget(self) -> bool:
        return self.opts.max_evaluations > 0 and self.env.evaluations >= self.opts.max_evaluations

    def stop_search(self) -> bool:
        return self.hooks.cancelled or self.out_of_budget() or self.watch.elapsed > self.opts.time_limit

    def take(self, res) -> bool:
        """Keep ``res``'s best placement if it beats the best so far; whether it did."""
        if res.best_dev is not None and res.best < self.best_val * (1 - 1e-12):
            self.best_val, self.best_dev = res.best, res.best_dev
            return True
        return False

    def polish_here(self) -> bool:
        """Descend from the current state by moves and swaps (option ``polish``, max-load only); keep the
        result if it beats the best so far; whether it did."""
        if not self.opts.polish or self.env.objective_name != "max_load" or self.stop_search():
            return False
        polish(self.env, self.stop_search, self.rng)
        val = self.env.objective()
        if val < self.best_val * (1 - 1e-12):
            self.best_val, self.best_dev = val, list(self.env.dev)
            return True
        return False

    def kick(self) -> None:
        """Perturb the current state: 2 to max(3, groups/15) random free groups to random devices with room."""
        env, rng = self.env, self.rng
        free = env.free_groups
        k = min(len(free), int(rng.integers(2, max(3, len(free) // 15) + 1)))
        for g in rng.choice(len(free), size=k, replace=False).tolist():
            g = free[g]
            cur = env.dev[env.members[g][0]]
            room = [d for d in range(env.D) if d != cur and env.allowed[g, d] and
                    env.inc.memory[d] + env.gsize[g] <= env.cap[d] * (1 + 1e-9)]
            if room:
                env.move_group(g, room[int(rng.integers(len(room)))])
        env.resync()

    def _order(self, shuffled: bool):
        return self.rng.permutation(self.env.free_groups).tolist() if shuffled else None

    def greedy_sweeps(self, policy: Policy) -> float:
        """Exactly ``sweeps`` greedy sweeps in greedy mode, else until one stops helping (after the first, in a
        random group order when ``shuffle``). Returns the zero-shot value (after the first sweep)."""
        opts, hooks = self.opts, self.hooks
        max_greedy = opts.sweeps if opts.mode == "greedy" else 1000
        zero_shot = self.best_val
        for k in range(max_greedy):
            if hooks.cancelled or self.out_of_budget():
                self.cancelled = hooks.cancelled
                break
            shuffled = k > 0 and opts.mode != "greedy" and opts.shuffle
            stop = self.out_of_budget if opts.mode == "greedy" else self.stop_search
            res = sweep(self.env, policy, self.rng, greedy=True, stop=stop, order=self._order(shuffled))
            self.sweeps += 1
            self.take(res)
            if k == 0:
                zero_shot = self.best_val
            hooks.report(None, f"greedy sweep {self.sweeps}: {self.best_val:.6g}", incumbent=self.best_val,
                         data={"sweep": self.sweeps, "objective": res.best, "best": self.best_val})
            if opts.mode != "greedy" and (not _progressed(res) or self.watch.elapsed > opts.time_limit):
                break
        return zero_shot

    def descend(self, policy: Policy) -> tuple[bool, float]:
        """Greedy sweeps from the current state while they help: (whether one beat the best so far,
        the lowest objective they reached — the RL curve's per-round "episode" value)."""
        gained, reached = False, math.inf
        for _ in range(1000):
            if self.stop_search():
                break
            res = sweep(self.env, policy, self.rng, greedy=True, stop=self.stop_search,
                        order=self._order(self.opts.shuffle))
            self.sweeps += 1
            gained = self.take(res) or gained
            reached = min(reached, res.end)
            if not _progressed(res):
                break
        return gained, reached

    def search(self, policy: Policy, starts) -> None:
        """Rounds of perturb-and-descend (``sample`` / ``finetune`` modes; see the module docstring)."""
        opts = self.opts
        learner = None
        if opts.mode == "finetune":
            learner = Learner(policy.copy(), lr=opts.lr, gamma=0.95, clip=1.0, baseline_decay=0.8,
                              rollouts=opts.rollouts, seed=opts.seed)
        pol = policy if learner is None else learner.policy
        self.env.reset(self.best_dev)
        self.polish_here()
        n_samples, last_gain, batch = 0, 0, []
        quiet = 0      # rounds without gain since the last gain or restart
        n_restarts = 0
        while not self.stop_search() and (opts.samples == 0 or n_samples < opts.samples) and \
                (opts.patience == 0 or n_samples - last_gain < opts.patience):
            res = None
            round_val = math.inf       # the objective this round reached (the curve's "episode" line)
            if opts.restart_after > 0 and quiet >= opts.restart_after:
                # Diversify: descend from the next fill (then from random valid placements)
                # instead of perturbing the best one.
                quiet = 0
                n_restarts += 1
                dev0 = starts[n_restarts] if n_restarts < len(starts) else random_start(self.env, self.rng)
                self.env.reset(dev0 if dev0 is not None else self.best_dev)
                gained = False
            elif opts.kicks > 0 and self.rng.random() < opts.kicks:
                # Perturb by a random kick of a few groups; then descend.
                self.env.reset(self.best_dev)
                self.kick()
                gained = False
            else:
                # Perturb: a sampled sweep from the best placement; then descend with greedy sweeps.
                self.env.reset(self.best_dev)
                res = sweep(self.env, pol, self.rng, greedy=False, temperature=opts.temperature,
                            record=learner is not None, stop=self.stop_search)
                gained = self.take(res)
                round_val = min(round_val, res.end)
            n_samples += 1
            descended, reached = self.descend(pol)
            gained = descended or gained
            gained = self.polish_here() or gained
            if self.opts.polish and self.env.objective_name == "max_load":
                reached = min(reached, self.env.objective())
            round_val = min(round_val, reached)
            if gained:
                last_gain, quiet = n_samples, 0
            else:
                quiet += 1
            if learner is not None and res is not None:
                batch.append(res)
                if len(batch) == opts.rollouts:
                    learner.learn(batch, "this", 0.0)
                    batch = []
            self.hooks.report(min(1.0, self.watch.elapsed / opts.time_limit) if opts.time_limit > 0 else None,
                              f"{n_samples} sampled sweeps: best {self.best_val:.6g}", incumbent=self.best_val,
                              data={"sweep": self.sweeps + n_samples, "best": self.best_val,
                                    **({"objective": round_val} if math.isfinite(round_val) else {})})
        self.sweeps += n_samples
        self.cancelled = self.hooks.cancelled


def solve(problem: Problem, opts: RLOptions, hooks: Hooks) -> SolverResult:
    """Place the graph with a learned policy (see the module docstring): a contiguous fill, greedy sweeps, then
    (``sample`` / ``finetune``) rounds of perturb-and-descend."""
    graph, cluster = problem.graph, problem.cluster
    watch = Stopwatch()
    policy = policy_of(opts)
    pin_idx = {graph.index[n]: cluster.device_index(d) for n, d in problem.pins.items()}
    env = PlacementEnv(problem.compiled, pin_idx, objective=opts.objective, shaping=opts.shaping)
    starts = start_candidates(env)
    start_from = "fill"
    if opts.dp_start and opts.mode in ("sample", "finetune") and env.objective_name == "max_load":
        dev = dp_start(problem, opts.time_limit / 5, cancel=lambda: hooks.cancelled or watch.elapsed > opts.time_limit / 5)
        if dev is not None and tuple(dev) not in {tuple(s) for s in starts}:
            starts = sorted([*starts, dev], key=lambda d: placement_value(env, d))
            start_from = "dp" if starts[0] is dev else start_from
    run = _Run(env, opts, hooks, watch, starts[0])
    first_val = run.best_val
    zero_shot = run.greedy_sweeps(policy)
    greedy_val = run.best_val
    if opts.mode in ("sample", "finetune"):
        run.search(policy, starts)
    best_val = run.best_val
    msg = (f"start (contiguous fill) {first_val:.6g}, zero-shot {zero_shot:.6g}, best {best_val:.6g} after "
           f"{run.sweeps} sweeps and {env.evaluations} evaluations")
    stats = {"start": first_val, "zero_shot": zero_shot, "greedy": greedy_val, "best": best_val, "sweeps": run.sweeps,
             "evaluations": env.evaluations, "start_from": start_from}
    return SolverResult(np.asarray(run.best_dev, dtype=np.int64), status="cancelled" if run.cancelled else "heuristic",
                        message=msg, stats=stats)
