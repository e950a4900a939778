"""Running things for real, above solvers and io in the layering.

* design sweeps and RL rollouts on Dask: :mod:`.design_sweep` (``sweep(...)``), :mod:`.sweep_cells`
  (cells, hashes, one solve), :mod:`.sweep_store` (results CSV, ``SweepTable``), :mod:`.dask_engine`
  (LocalCluster or an existing scheduler), :mod:`.rl_distributed` (REINFORCE rollouts on workers);
* exported PyTorch pipelines: :func:`run_pipeline` — a placement of a PyTorch model as a pipeline of
  CPU processes, measured beside the evaluator's prediction (:mod:`.run`); :func:`calibrate_link` —
  the ping-pong that prices the transport (:mod:`.calibrate`); :func:`runtime_problem` — the graph
  and devices of such a run, for the solvers (:mod:`.costs`; needs the ``torch`` extra).

Names are imported lazily, so ``import viz_place`` imports neither Dask nor torch.

>>> from viz_place.runtime import sweep, DaskEngine, run_pipeline
>>> callable(sweep) and callable(run_pipeline)
True
"""
from __future__ import annotations

import importlib

_LAZY = {"sweep": ".design_sweep", "SweepProgress": ".design_sweep", "SweepTable": ".sweep_store", "Cell": ".sweep_cells",
         "plan_cells": ".sweep_cells", "run_cell": ".sweep_cells", "DaskEngine": ".dask_engine",
         "train_policy_distributed": ".rl_distributed",
         "LinkCalibration": ".calibrate", "calibrate_link": ".calibrate", "read_link": ".calibrate",
         "write_link": ".calibrate", "runtime_cluster": ".costs", "runtime_problem": ".costs",
         "to_runtime_placement": ".costs", "PipelineRunError": ".errors", "ModelRecipe": ".recipe",
         "graph_source": ".recipe", "PipelineRun": ".run", "StageFigures": ".run", "run_pipeline": ".run"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
