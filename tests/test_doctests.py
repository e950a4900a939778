"""Every docstring example of ``viz_place`` (``viz_place.widgets`` included) runs: no hand-kept list.

The modules are found by walking the installed package's folders (the
top-level ``widgets/`` folder is installed as ``viz_place.widgets``), so a new
module is covered without editing this file. A module whose import needs an
optional package that is missing is skipped with that package's name; a module
whose *examples* need one says so in ``__doctest_requires__`` (a tuple of
import names). Examples run in a fresh temporary folder, so files they write
land there.
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import os
import pkgutil

import pytest

import viz_place

ROOTS = ("viz_place", "viz_place.widgets")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _walk(path: str, prefix: str):
    for info in pkgutil.iter_modules([path]):
        name = prefix + info.name
        yield name
        if info.ispkg:
            yield from _walk(os.path.join(path, info.name), name + ".")


def module_names() -> list[str]:
    """Every module of the package, found on disk without importing anything but the roots' specs."""
    names = set()
    for root in ROOTS:
        spec = importlib.util.find_spec(root)
        names.add(root)
        for path in spec.submodule_search_locations or ():
            names.update(_walk(path, root + "."))
    return sorted(n for n in names if not n.endswith("__main__"))


def _import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] != "viz_place":
            pytest.skip(f"{name} needs the optional package {err.name!r}")
        raise


def test_the_walk_finds_every_layer():
    names = module_names()
    for expected in ("viz_place", "viz_place.cost.evaluate", "viz_place.solvers.dp.recursion",
                     "viz_place.widgets", "viz_place.widgets.state", "viz_place.render.figures"):
        assert expected in names
    assert len(names) > 80


@pytest.mark.parametrize("name", module_names())
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    import signal
    sigint = signal.getsignal(signal.SIGINT)
    try:   # importing viz_place.cli.entry takes over SIGINT (for the console script): not for the tests after
        module = _import_or_skip(name)
    finally:
        signal.signal(signal.SIGINT, sigint)
    for req in getattr(module, "__doctest_requires__", ()):
        if importlib.util.find_spec(req) is None:
            pytest.skip(f"the examples of {name} need the optional package {req!r}")
    monkeypatch.chdir(tmp_path)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring example(s) failed in {name}"
