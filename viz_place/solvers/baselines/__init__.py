"""The paper's baselines, each a registered solver (entry points: the ``solve_*`` functions).

| solver | module | what it does |
|---|---|---|
| ``greedy-latency`` | :mod:`.fills` | fill accelerators in topological order while memory allows, rest on CPU |
| ``single-device`` | :mod:`.single_device` | everything on the best single device that can hold it |
| ``topo-fill`` | :mod:`.fills` | fill accelerators in topological order, each up to an equal share of compute |
| ``expert`` | :mod:`.expert` | a given split, evaluated as is |
| ``pipedream`` | :mod:`.pipedream` | linearise, then split the chain optimally over the devices |
| ``local-search`` | :mod:`.local_search` | hill climbing with group moves from random starts (seeded) |
| ``balanced-memory`` | :mod:`.module_order` | equal parameter bytes per device along the module order (accelerate, DeepSpeed) |
| ``uniform-layers`` | :mod:`.module_order` | equal numbers of repeated blocks per stage (DeepSpeed ``uniform``) |

Every result goes through :func:`viz_place.solvers.run_solver`: the claimed value is the evaluator's figure.

>>> from viz_place.solvers import get_solver
>>> get_solver("pipedream").objective
'max_load'
"""
from ..groups import host_assignment
from ..registry import SolverInfo, register
from .expert import ExpertOptions, solve_expert
from .fills import GreedyLatencyOptions, TopoFillOptions, solve_greedy_latency, solve_topo_fill, topo_fill
from .local_search import LocalSearchOptions, solve_local_search
from .module_order import BalancedMemoryOptions, UniformLayersOptions, solve_balanced_memory, solve_uniform_layers
from .pipedream import PipeDreamOptions, solve_pipedream
from .single_device import SingleDeviceOptions, solve_single_device

register(SolverInfo("greedy-latency", solve_greedy_latency, GreedyLatencyOptions, "latency",
                    "the paper's greedy: fill accelerators in topological order while memory allows, rest on CPU"))
register(SolverInfo("single-device", solve_single_device, SingleDeviceOptions, "any",
                    "everything on the best single device that can hold it"))
register(SolverInfo("topo-fill", solve_topo_fill, TopoFillOptions, "max_load",
                    "fill devices in topological order up to an equal share of compute"))
register(SolverInfo("expert", solve_expert, ExpertOptions, "any",
                    "a given split (option assignment; the CLI reads -o path=FILE: placement JSON or the paper's "
                    "split format)",
                    options_for=lambda graph, cluster, pins: {"assignment": host_assignment(graph, cluster, pins)}))
register(SolverInfo("pipedream", solve_pipedream, PipeDreamOptions, "max_load",
                    "PipeDream-style: linearise, then the optimal split of the chain over the devices"))
register(SolverInfo("local-search", solve_local_search, LocalSearchOptions, "max_load",
                    "hill climbing on max-load with group moves from random starts (seeded)",
                    check_options={"restarts": 2, "time_limit": 30.0}))
register(SolverInfo("balanced-memory", solve_balanced_memory, BalancedMemoryOptions, "max_load",
                    "equal parameter bytes per device along the module order (device_map='balanced', DeepSpeed "
                    "'parameters'; PyTorch imports only)", needs=("module_paths",)))
register(SolverInfo("uniform-layers", solve_uniform_layers, UniformLayersOptions, "max_load",
                    "equal numbers of repeated blocks per stage (DeepSpeed partition_method='uniform'; "
                    "PyTorch imports only)", needs=("module_paths",)))

__all__ = ["BalancedMemoryOptions", "UniformLayersOptions", "solve_balanced_memory", "solve_uniform_layers",
           "ExpertOptions", "GreedyLatencyOptions", "LocalSearchOptions", "PipeDreamOptions", "SingleDeviceOptions",
           "TopoFillOptions", "solve_expert", "solve_greedy_latency", "solve_local_search", "solve_pipedream",
           "solve_single_device", "solve_topo_fill", "topo_fill"]
