"""Running exported placements for real (above solvers and io in the layering).

* :func:`run_pipeline` — a placement of a PyTorch model as a pipeline of CPU processes,
  measured and set beside the evaluator's prediction (:mod:`viz_place.runtime.run`);
* :func:`calibrate_link` — the ping-pong that prices the transport
  (:mod:`viz_place.runtime.calibrate`);
* :func:`runtime_problem` — the graph and devices of such a run, for the solvers
  (:mod:`viz_place.runtime.costs`).

Needs the ``torch`` extra.
"""
from .calibrate import LinkCalibration, calibrate_link, read_link, write_link
from .costs import runtime_cluster, runtime_problem, to_runtime_placement
from .errors import PipelineRunError
from .recipe import ModelRecipe, graph_source
from .run import PipelineRun, StageFigures, run_pipeline

__all__ = ["LinkCalibration", "ModelRecipe", "PipelineRun", "PipelineRunError", "StageFigures", "calibrate_link",
           "graph_source", "read_link", "run_pipeline", "runtime_cluster", "runtime_problem",
           "to_runtime_placement", "write_link"]
