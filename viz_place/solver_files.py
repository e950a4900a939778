"""Solver options that name files: the caller reads them, the solver never does.

Solvers read and write no files (DESIGN.md §3). Where a command line or a form
lets a user name a file for a solver, :func:`read_option_files` (above both
:mod:`viz_place.io` and :mod:`viz_place.solvers`) reads it and fills the option
the solver takes: ``expert``'s ``-o path=FILE`` (our placement JSON or the
paper's split format) becomes its ``assignment``.

>>> read_option_files("dp", None, None, {"time_limit": 5})
{'time_limit': 5}
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from .model import Cluster, OpGraph


def read_option_files(solver: str, graph: OpGraph | None, cluster: Cluster | None, options: Any) -> Any:
    """``options`` (a dict or an options instance) with every file option read into the value the solver takes."""
    if solver != "expert" or options is None:
        return options
    as_dict = dict(options) if isinstance(options, Mapping) else dataclasses.asdict(options)
    path = as_dict.get("path")
    if not path or as_dict.get("assignment"):
        return options
    from .io import load_placement
    placement, _file_pins = load_placement(path, graph, cluster)
    as_dict["assignment"] = dict(placement.assignment)
    return as_dict if isinstance(options, Mapping) else dataclasses.replace(options, assignment=as_dict["assignment"])
