"""Sweeps (episodes) of the policy over an environment, and the REINFORCE gradient of a batch.

>>> import numpy as np
>>> from viz_place.samples import make_graph
>>> from viz_place.cost import compile_problem
>>> from viz_place.solvers.rl.env import PlacementEnv, topo_fill, IN_DIM
>>> from viz_place.solvers.rl.policy import Policy
>>> g = make_graph("residual", 20, seed=0)
>>> env = PlacementEnv(compile_problem(g, g.default_cluster))
>>> env.reset(topo_fill(env))
>>> res = sweep(env, Policy.new(seed=0), np.random.default_rng(0), greedy=True)
>>> res.best <= res.start
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .env import PlacementEnv
from .policy import Policy


@dataclass
class SweepResult:
    """One sweep: the recorded steps (if asked), the objective (and the shaped value the rewards
    come from) at start and end, and the best state seen."""

    start: float
    end: float
    best: float
    best_dev: list[int] | None
    shaped_start: float = 0.0
    shaped_end: float = 0.0
    groups: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)


def sweep(env: PlacementEnv, policy: Policy, rng: np.random.Generator, *, greedy: bool,
          temperature: float = 1.0, record: bool = False, stop: Callable[[], bool] | None = None,
          order: Sequence[int] | None = None) -> SweepResult:
    """Visit every free group once (topological order) and move it where the policy says.

    ``greedy`` takes the best-scored device, else samples from the softmax at
    ``temperature``. Rewards are the decrease of the shaped objective divided by
    the objective at the start of the sweep. ``best_dev`` is a copy of the best
    placement visited (``None`` if nothing beat the start). ``order`` visits the
    groups in another order (default: :attr:`PlacementEnv.free_groups`, topological).
    """
    start = env.objective()
    scale = start if start > 0 else 1.0
    env.refresh_schedule()
    best, best_dev = start, None
    cur_J = env.shaped(env.inc.loads, start)
    out = SweepResult(start, start, start, None, cur_J, cur_J)
    for n_step, g in enumerate(env.free_groups if order is None else order):
        if stop is not None and n_step % 16 == 0 and stop():
            break
        obs = env.observe(g)
        if obs is None:
            continue
        cand, rows, new_J, new_obj = obs
        z = policy.logits(rows)
        if greedy:
            a = int(np.argmax(z))
        else:
            z = z / temperature
            p = np.exp(z - z.max())
            c = np.cumsum(p)
            a = min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(c) - 1)
        env.apply(g, int(cand[a]), float(new_obj[a]))
        if record:
            out.groups.append(g)
            out.rows.append(rows)
            out.actions.append(a)
            out.rewards.append((cur_J - float(new_J[a])) / scale)
        cur_J = float(new_J[a])
        if new_obj[a] < best * (1 - 1e-12):
            best, best_dev = float(new_obj[a]), list(env.dev)
    out.end = env.objective()
    out.shaped_end = cur_J
    out.best, out.best_dev = best, best_dev
    return out


def returns(rewards: list[float], gamma: float) -> np.ndarray:
    """Discounted reward-to-go ``G_t = r_t + gamma G_{t+1}``."""
    out = np.zeros(len(rewards))
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    return out


def segment_softmax(z: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Softmax of ``z`` within consecutive segments of lengths ``lens``."""
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    zmax = np.maximum.reduceat(z, offs)
    e = np.exp(z - np.repeat(zmax, lens))
    s = np.add.reduceat(e, offs)
    return e / np.repeat(s, lens)


def reinforce_gradient(policy: Policy, rows: list[np.ndarray], actions: list[int], advantages: np.ndarray,
                       entropy: float) -> tuple[list[np.ndarray], float]:
    """Gradient of ``-(1/N) sum_t [A_t log pi(a_t) + entropy * H_t]`` and the mean entropy.

    All steps go through the network as one matrix (rows stacked); the softmax
    is taken per step.
    """
    N = len(rows)
    lens = np.array([r.shape[0] for r in rows])
    X = np.concatenate(rows, axis=0)
    z = policy.logits(X)
    p = segment_softmax(z, lens)
    logp = np.log(np.maximum(p, 1e-300))
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    H = -np.add.reduceat(p * logp, offs)
    onehot = np.zeros_like(p)
    onehot[offs + np.asarray(actions)] = 1.0
    A = np.repeat(np.asarray(advantages, dtype=float), lens)
    Hr = np.repeat(H, lens)
    dz = -(A * (onehot - p) - entropy * p * (logp + Hr)) / N
    return policy.backward(X, dz), float(H.mean()) if N else 0.0


def loss_value(policy: Policy, rows: list[np.ndarray], actions: list[int], advantages: np.ndarray,
               entropy: float) -> float:
    """The loss whose gradient :func:`reinforce_gradient` returns (for checks)."""
    N = len(rows)
    total = 0.0
    for x, a, A in zip(rows, actions, advantages):
        z = policy.logits(x)
        z = z - z.max()
        logp = z - math.log(np.exp(z).sum())
        p = np.exp(logp)
        total += -(A * logp[a] + entropy * float(-(p * logp).sum()))
    return total / N
