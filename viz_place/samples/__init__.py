"""Synthetic graph families and the shipped sample graphs.

>>> from viz_place.samples import make_graph, sample_names
>>> "residual" in sample_names()
True
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from .generators import FAMILIES, chain, fork_join, inception, make_graph, residual, training_variant, transformer

#: The package holding the shipped sample graphs (the repository's top-level ``sample_graphs/`` folder).
SAMPLES_PACKAGE = "viz_place.sample_graphs"


def sample_dir() -> Path:
    """The folder of the shipped sample graphs: package data ``viz_place.sample_graphs`` (found through
    :mod:`importlib.resources`, so it works from an installed wheel), or ``VIZ_PLACE_SAMPLES`` when set."""
    env = os.environ.get("VIZ_PLACE_SAMPLES")
    if env:
        return Path(env)
    return Path(str(resources.files(SAMPLES_PACKAGE)))


def sample_names() -> list[str]:
    """Names of the shipped sample graphs (file stems in :func:`sample_dir`)."""
    d = sample_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def load_sample(name: str):
    """Load a shipped sample graph by name.

    >>> load_sample("chain").num_nodes > 0
    True
    """
    from ..errors import InputFormatError
    from ..io import load_graph
    path = sample_dir() / f"{name}.json"
    if not path.is_file():
        raise InputFormatError(f"unknown sample graph {name!r}; samples: {', '.join(sample_names()) or 'none'}")
    return load_graph(path)


__all__ = ["FAMILIES", "chain", "fork_join", "inception", "make_graph", "residual", "training_variant",
           "transformer", "sample_dir", "sample_names", "load_sample"]
