"""Learned placement after Placeto: a graph-embedding policy that improves a placement
sweep by sweep, trained with REINFORCE over families of generated graphs (numpy only).

Registers the solver ``rl``. Pieces: :mod:`.features` (label-free node features
from bitsets and message passing), :mod:`.env` (the environment, masking, the
topological fill), :mod:`.policy` (MLP, Adam, save/load), :mod:`.rollout`
(sweeps, REINFORCE gradient), :mod:`.train` (training runs), :mod:`.solver`.

>>> from viz_place.solvers import get_solver
>>> get_solver("rl").objective
'any'
"""
from ..registry import SolverInfo, register
from .env import PlacementEnv, topo_fill
from .policy import Policy, load_policy, shipped_policy, shipped_policy_path
from .solver import RLOptions, solve
from .train import TrainConfig, train_policy

#: Entry point of the ``rl`` solver (the contract of :mod:`viz_place.solvers.contract`).
register(SolverInfo(
    name="rl",
    solve=solve,
    options_cls=RLOptions,
    objective="any",
    description="learned placer after Placeto: a trained policy improves a contiguous fill sweep by sweep "
                "(zero-shot, best-of-K sampled, or fine-tuned on the graph)",
    exact=False,
    check_options={"mode": "sample", "samples": 4, "time_limit": 30.0},   # budgets that do not bind: repeatable
))

__all__ = ["PlacementEnv", "topo_fill", "Policy", "load_policy", "shipped_policy", "shipped_policy_path", "RLOptions", "solve",
           "TrainConfig", "train_policy"]
