"""Every docstring example in the core modules runs (numpydoc habit: examples are tests)."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "viz_place", "viz_place.errors", "viz_place.model", "viz_place.model.devices", "viz_place.model.graph",
    "viz_place.model.placement", "viz_place.cost", "viz_place.cost.compiled", "viz_place.cost.evaluate",
    "viz_place.cost.incremental", "viz_place.cost.latency", "viz_place.io.atomic", "viz_place.io.nodelink",
    "viz_place.solvers.base", "viz_place.solvers.registry", "viz_place.samples", "viz_place.samples.generators",
    "viz_place.testing", "viz_place.model.objective", "viz_place.cost.bounds", "viz_place.solvers.contract",
    "viz_place.solvers", "viz_place.start", "viz_place.solver_files",
    "viz_place.model.modules", "viz_place.io.torch_modules",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
