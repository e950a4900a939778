"""The ``expert`` baseline: a given split (a human expert's, or any placement), evaluated as is.

The split comes in the option ``assignment`` (node id -> device name). Solvers
read no files: the CLI's ``-o path=FILE`` (our placement JSON or the paper's
split format) is read by the caller (:func:`viz_place.solver_files.read_option_files`),
which fills ``assignment``; ``path`` is kept to say where the split came from.
Violations (memory, a split colour class...) are listed in the message, status ``"manual"``.

>>> from viz_place.solvers import run_solver
>>> from viz_place.model import OpGraph, Cluster
>>> g = OpGraph.from_records([{"id": "a", "latency": {"cpu": 3.0, "fpga": 1.0}}], [])
>>> p = run_solver("expert", g, Cluster.paper(1, 1, None), options={"assignment": {"a": "fpga:0"}})
>>> p.status, p.claimed_value
('manual', 1.0)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import PlacementError, SolverError
from ...model import Placement, check_complete
from ...model.objective import OBJECTIVE_ALIASES
from ..base import Hooks, SolverOptions
from ..contract import Problem, SolverResult

OBJECTIVES = ("max_load", "latency")


@dataclass(frozen=True)
class ExpertOptions(SolverOptions):
    assignment: dict[str, str] = field(default_factory=dict, metadata={
        "help": "the split: node id -> device name (the CLI fills it from -o path=FILE)"})
    path: str = field(default="", metadata={"help": "file the split was read from (our placement JSON or the "
                                                    "paper's split); the caller reads it"})
    objective: str = field(default="max_load", metadata={"help": "value to report: max_load or latency",
                                                         "choices": OBJECTIVES, "aliases": OBJECTIVE_ALIASES})


def solve_expert(problem: Problem, opts: ExpertOptions, hooks: Hooks) -> SolverResult:
    """The given split; its value is the evaluator's; violations are listed in the message."""
    if not opts.assignment:
        if opts.path:
            raise SolverError(f"expert: the split in {opts.path} was not loaded: solvers read no files; pass it as "
                              "option 'assignment' (viz_place.solver_files.read_option_files, or the CLI's "
                              "-o path=FILE, does this)", field="path")
        raise SolverError("expert: option 'assignment' is required: the split, node id -> device "
                          "(from the CLI: -o path=FILE with our placement JSON or the paper's split format)",
                          field="assignment")
    graph, cluster, pins = problem.graph, problem.cluster, problem.pins
    placement = Placement(dict(opts.assignment))
    check_complete(graph, cluster, placement)
    where = f"the split in {opts.path}" if opts.path else "the split given"
    for node, dev in pins.items():
        if placement[node] != dev:
            raise PlacementError(f"expert: node {node!r} is pinned to {dev} but {where} puts it on "
                                 f"{placement[node]}", node=node, device=dev)
    ev = problem.evaluate(problem.compiled.to_index_array(placement))
    msg = f"split loaded from {opts.path}" if opts.path else "split given as an assignment"
    if ev.violations:
        msg += "; violations: " + "; ".join(ev.violations)
    return SolverResult(dict(placement.assignment), status="manual", message=msg)
