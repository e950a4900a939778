"""Running things for real, above solvers and io: design sweeps and RL rollouts on Dask.

Modules: :mod:`.design_sweep` (``sweep(...)``), :mod:`.sweep_cells` (cells, hashes, one solve),
:mod:`.sweep_store` (results CSV, ``SweepTable``), :mod:`.dask_engine` (LocalCluster or an
existing scheduler), :mod:`.rl_distributed` (REINFORCE rollouts on workers).
Names are imported lazily, so ``import viz_place`` does not import Dask.

>>> from viz_place.runtime import sweep, DaskEngine
>>> callable(sweep)
True
"""
from __future__ import annotations

import importlib

_LAZY = {"sweep": ".design_sweep", "SweepProgress": ".design_sweep", "SweepTable": ".sweep_store", "Cell": ".sweep_cells",
         "plan_cells": ".sweep_cells", "run_cell": ".sweep_cells", "DaskEngine": ".dask_engine",
         "train_policy_distributed": ".rl_distributed"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
