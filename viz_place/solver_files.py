"""Solver options that name files: the caller reads them, the solver never does.

Solvers read and write no files (the README's *Layout*). Where a command line,
a form or a Python call names a file for a solver, :func:`read_option_files`
(above both :mod:`viz_place.io` and :mod:`viz_place.solvers`) reads it and
fills the option the solver takes:

* ``expert``'s ``path`` (our placement JSON or the paper's split format)
  becomes its ``assignment``;
* ``rl``'s ``policy`` (a ``.npz`` written by ``viz-place train-rl``) becomes
  its ``weights`` (a :class:`~viz_place.solvers.rl.Policy`); an empty
  ``policy`` is the shipped one, package data the solver finds itself.

The option naming the file is kept, so the placement records where it came
from. :func:`run_solver` (``viz_place.run_solver`` at the top level) is
:func:`viz_place.solvers.run_solver` with this step first, so
``options={"policy": "mine.npz"}`` works from Python as on the command line.

>>> read_option_files("dp", None, None, {"time_limit": 5})
{'time_limit': 5}
>>> from viz_place.samples import make_graph
>>> g = make_graph("chain", 4)
>>> p = run_solver("expert", g, g.default_cluster, options={"assignment": {n: "cpu:0" for n in g.node_ids}})
>>> p.status, p.solver
('manual', 'expert')
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from .model import Cluster, OpGraph, Placement


def _fill(options: Any, **values: Any) -> Any:
    return {**options, **values} if isinstance(options, Mapping) else dataclasses.replace(options, **values)


def _get(options: Any, name: str) -> Any:
    return options.get(name) if isinstance(options, Mapping) else getattr(options, name, None)


def read_option_files(solver: str, graph: OpGraph | None, cluster: Cluster | None, options: Any) -> Any:
    """``options`` (a dict or an options instance) with every file option read into the value the solver takes."""
    if options is None:
        return options
    if solver == "expert":
        path = _get(options, "path")
        if not path or _get(options, "assignment"):
            return options
        from .io import load_placement
        placement, _file_pins = load_placement(path, graph, cluster)
        return _fill(options, assignment=dict(placement.assignment))
    if solver == "rl":
        path = _get(options, "policy")
        if not path or _get(options, "weights") is not None:
            return options
        from .solvers.rl import Policy
        return _fill(options, weights=Policy.load(path))
    return options


def run_solver(name: str, graph: OpGraph, cluster: Cluster, *, pins=None, options: Any = None, progress=None,
               cancel=None) -> Placement:
    """:func:`viz_place.solvers.run_solver` after :func:`read_option_files` (options naming files are read here)."""
    from .solvers import run_solver as run
    return run(name, graph, cluster, pins=pins, options=read_option_files(name, graph, cluster, options),
               progress=progress, cancel=cancel)
