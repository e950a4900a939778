"""The cost model: one evaluator for every number the tool shows.

>>> from viz_place.cost import evaluate, IncrementalEvaluator, compile_problem
"""
from .bounds import gap, simple_lower_bound
from .compiled import CompiledProblem, compile_problem
from .evaluate import DeviceFigures, Evaluation, communication_by_device, evaluate, evaluate_indices
from .incremental import DeviceChange, IncrementalEvaluator, MoveDelta
from .latency import pieces_of, single_sample_latency

__all__ = ["CompiledProblem", "compile_problem", "DeviceFigures", "Evaluation", "evaluate",
           "evaluate_indices", "communication_by_device", "IncrementalEvaluator", "MoveDelta",
           "DeviceChange", "pieces_of", "single_sample_latency", "simple_lower_bound", "gap"]
