"""The top-level names of ``import viz_place as vp`` are pinned: adding or removing one is a decision."""
from __future__ import annotations

import subprocess
import sys

import viz_place as vp

PUBLIC = {
    "OpGraph", "Cluster", "DeviceClass", "Placement", "validate_pins",
    "load_graph", "load_placement", "load_sample", "sample_names",
    "evaluate", "Evaluation", "IncrementalEvaluator", "simple_lower_bound",
    "run_solver", "list_solvers", "get_solver",
    "VizPlaceError", "GraphValidationError", "DeviceError", "PlacementError", "InputFormatError",
    "SolverError", "InfeasibleError", "InternalError", "__version__",
}


def test_all_is_the_pinned_public_api():
    assert set(vp.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(vp, name) is not None, name


def test_top_level_names_are_the_subpackages_objects():
    from viz_place import cost, errors, io, model, samples, solvers
    from viz_place import solver_files
    assert vp.run_solver is solver_files.run_solver and vp.list_solvers is solvers.list_solvers
    assert vp.evaluate is cost.evaluate and vp.simple_lower_bound is cost.simple_lower_bound
    assert vp.load_graph is io.load_graph and vp.load_sample is samples.load_sample
    assert vp.Placement is model.Placement and vp.errors is errors
    assert "dp" in [s.name for s in vp.list_solvers()]


def test_internals_are_not_at_the_top_level():
    for name in ("compile_problem", "CompiledProblem", "evaluate_indices", "prepare", "build_placement"):
        assert not hasattr(vp, name), name


def test_import_does_not_load_the_solvers():
    code = "import sys, viz_place; print('viz_place.solvers' in sys.modules, 'pulp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
